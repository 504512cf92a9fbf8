"""Structs declared under ``from __future__ import annotations`` (string annotations)."""

from __future__ import annotations

import bytewright as bw
import pytest


class Leaf(bw.Struct):
    n: bw.U8
    data: bytes = bw.field(len="n")


class Tree(bw.Struct, byteorder="little"):
    count: bw.U16
    leaves: list[Leaf] = bw.field(count="count")
    tag: bw.U32


def test_module_level_string_annotations():
    t = Tree(leaves=[Leaf(data=b"ab")], tag=7)
    data = t.pack()
    assert data == b"\x01\x00\x02ab\x07\x00\x00\x00"
    assert Tree.unpack(data) == t


def test_local_classes_with_string_annotations():
    class Inner(bw.Struct):
        v: bw.U8

    class Outer(bw.Struct):
        inner: Inner

    assert Outer(inner=Inner(v=1)).pack() == b"\x01"
    assert Outer.unpack(b"\x02") == Outer(inner=Inner(v=2))


def test_unknown_string_annotation_is_an_error_on_use():
    class Outer(bw.Struct):
        inner: Missing  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(NameError):
        Outer(inner=None)
