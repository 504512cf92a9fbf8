"""A nested class's compiled codec is reused (copied) by the codecs of classes that contain
it, when it was compiled in the same context; the result is the codec a full compile of the
schema text gives, and a different context (byte order, limits) compiles it again."""

import bytewright as bw
import pytest
from bytewright._native import compile_struct


def rebuilt(cls):
    """The class's typed codec compiled again from its whole schema text (as unpickling does)."""
    kind, args = cls.__bw__.codec.__reduce__()
    return kind(*args)


def reused(cls):
    """The codecs whose programs the typed codec of ``cls`` copies (as when it compiled: its
    own description not cached yet)."""
    cls.__bw__._cache.clear()
    parts: list[bw.Codec] = []
    compile_struct(cls, True, cls.__bw__.limits, None, parts)
    return parts


class Item(bw.Struct):
    n: bw.U8 = bw.derived()
    data: bytes = bw.field(len="n")
    code: bw.U16


class Pair(bw.Struct):
    first: Item
    second: Item


class Items(bw.Struct):
    count: bw.U16 = bw.derived()
    pairs: list[Pair] = bw.field(count="count")
    tail: bw.U32


def test_nested_codecs_are_reused_and_equal_a_full_compile():
    assert reused(Pair) == [Item.__bw__.codec, Item.__bw__.codec]
    assert reused(Items) == [Pair.__bw__.codec]
    value = Items(
        pairs=[
            Pair(first=Item(data=b"ab", code=1), second=Item(data=b"", code=0xBEEF)),
            Pair(first=Item(data=b"xyz", code=2), second=Item(data=b"q", code=3)),
        ],
        tail=7,
    )
    wire = value.pack()
    pairs = b"\x02ab\x00\x01" + b"\x00\xbe\xef" + b"\x03xyz\x00\x02" + b"\x01q\x00\x03"
    assert wire == b"\x00\x02" + pairs + b"\x00\x00\x00\x07"
    full = rebuilt(Items)
    assert full.pack(value) == wire
    assert Items.unpack(wire) == full.unpack(wire) == value
    assert (full.static_size, full.min_size) == (
        Items.__bw__.codec.static_size,
        Items.__bw__.codec.min_size,
    )
    assert full.derived_fields(0) == Items.__bw__.codec.derived_fields(0) == ["count"]
    assert Items.__bw__.codec.derived_fields(2) == ["n"]  # Pair is id 1, its first Item id 2


def test_a_nested_class_in_another_byte_order_is_compiled_again():
    class Word(bw.Struct):  # big-endian alone, little inside Little
        v: bw.U16

    class Little(bw.Struct, byteorder="little"):
        word: Word
        other: Word = bw.field(byteorder="big")

    assert reused(Little) == [Word.__bw__.codec]  # only `other`, whose order is big
    assert Word(v=1).pack() == b"\x00\x01"
    assert Little(word=Word(v=1), other=Word(v=1)).pack() == b"\x01\x00\x00\x01"
    assert rebuilt(Little).pack(Little(word=Word(v=1), other=Word(v=1))) == b"\x01\x00\x00\x01"


def test_a_nested_class_under_other_limits_is_compiled_again():
    class Blob(bw.Struct):
        n: bw.U8 = bw.derived()
        data: bytes = bw.field(len="n")

    class Small(bw.Struct, limits=bw.Limits(max_len=2)):
        blob: Blob

    assert reused(Small) == []
    assert Blob.unpack(b"\x03abc") == Blob(data=b"abc")
    with pytest.raises(bw.DecodeError, match="exceeds the limit 2"):
        Small.unpack(b"\x03abc")


def test_recursive_and_registry_classes_compile_as_before():
    class Node(bw.Struct):
        value: bw.U8
        more: bw.U8 = bw.derived()
        children: list["Node"] = bw.field(count="more")

    class Tree(bw.Struct):
        root: Node
        leaf: Node

    tree = Tree(
        root=Node(value=1, children=[Node(value=2, children=[])]), leaf=Node(value=3, children=[])
    )
    wire = tree.pack()
    assert wire == b"\x01\x01\x02\x00\x03\x00"
    assert Tree.unpack(wire) == rebuilt(Tree).unpack(wire) == tree

    class Shape(bw.Struct, registry="kind"):
        kind: bw.U8

    class Dot(Shape, tag=1):
        x: bw.U8

    class Scene(bw.Struct):
        first: Dot
        any: Shape

    scene = Scene(first=Dot(x=4), any=Dot(x=5))
    assert scene.pack() == b"\x01\x04\x01\x05"
    assert Scene.unpack(b"\x01\x04\x01\x05") == scene
