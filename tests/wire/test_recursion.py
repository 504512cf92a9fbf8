"""Recursive types: self and mutual references, the depth limit, cyclic values."""

from __future__ import annotations

import threading

import bytewright as bw
import pytest


class Node(bw.Struct):
    value: bw.U8
    n: bw.U8
    children: list[Node] = bw.field(count="n")


class Dir(bw.Struct):
    """Mutual recursion: a Dir holds Entries, an Entry may hold a Dir."""

    n: bw.U8
    entries: list[Entry] = bw.field(count="n")


class Entry(bw.Struct):
    is_dir: bw.U8
    sub: Dir = bw.field(when="is_dir", default=None)


class Tlv(bw.Struct):
    """A BER-like TLV tree: constructed tags (bit 0x20) hold a window of children."""

    tag: bw.U8
    length: bw.U8
    value: bytes = bw.field(len="length", when="tag & 0x20 == 0", default=b"")
    children: list[Tlv] = bw.field(size="length", when="tag & 0x20", default=None)


def chain(depth: int) -> Node:
    node = Node(value=depth, children=[])
    for i in range(depth - 1, 0, -1):
        node = Node(value=i, children=[node])
    return node


def chain_wire(depth: int) -> bytes:
    return b"".join(bytes([i & 0xFF, 1]) for i in range(1, depth)) + bytes([depth & 0xFF, 0])


def test_self_reference_round_trip():
    tree = Node(value=1, children=[Node(value=2, children=[]), chain(3)])
    wire = tree.pack()
    assert wire == b"\x01\x02" + b"\x02\x00" + b"\x01\x01\x02\x01\x03\x00"
    assert Node.unpack(wire) == tree
    assert bw.compile(Node).unpack(b"\x05\x01\x06\x00") == {
        "value": 5,
        "n": 1,
        "children": [{"value": 6, "n": 0, "children": []}],
    }


def test_mutual_recursion_round_trip():
    d = Dir(entries=[Entry(is_dir=0), Entry(is_dir=1, sub=Dir(entries=[Entry(is_dir=0)]))])
    wire = d.pack()
    assert wire == b"\x02\x00\x01\x01\x00"
    assert Dir.unpack(wire) == d


def test_tlv_tree():
    leaf1 = Tlv(tag=0x02, length=1, value=b"\x05")
    leaf2 = Tlv(tag=0x04, length=2, value=b"hi")
    seq = Tlv(tag=0x30, length=7, children=[leaf1, leaf2])
    wire = seq.pack()
    assert wire == bytes.fromhex("3007 020105 04026869".replace(" ", ""))
    back = Tlv.unpack(wire)
    assert back.children[1].value == b"hi" and back.children[0].tag == 2
    with pytest.raises(bw.DecodeError) as ei:
        Tlv.unpack(bytes.fromhex("3006 020105 040268"))  # inner length overruns the window
    assert ei.value.path.startswith("children[1]")


def test_default_depth_limit_is_64():
    assert Node.unpack(chain_wire(64)).value == 1
    with pytest.raises(bw.DecodeError) as ei:
        Node.unpack(chain_wire(65))
    assert "depth limit" in str(ei.value) and "64" in str(ei.value)
    assert ei.value.path == "children[0]" + ".children[0]" * 63


@pytest.mark.parametrize("depth", [100_000])
def test_very_deep_input_is_a_clean_decode_error(depth):
    wire = chain_wire(depth)
    for codec in (Node, bw.compile(Node), bw.compile(Node, limits=bw.Limits(max_depth=10**6))):
        with pytest.raises(bw.DecodeError) as ei:
            codec.unpack(wire)
        assert "depth limit" in str(ei.value)
    with pytest.raises(bw.DecodeError):
        Dir.unpack(b"\x01\x01" * depth + b"\x00")
    with pytest.raises(bw.DecodeError):
        Tlv.unpack(b"\x30\xff" * depth)


def test_hard_cap_applies_in_a_thread_with_a_small_stack():
    result: list[object] = []
    limited = bw.compile(Node, limits=bw.Limits(max_depth=10**6))

    def work():
        try:
            limited.unpack(chain_wire(5000))
        except bw.DecodeError as e:
            result.append(e)
        ok = limited.unpack(chain_wire(900))
        result.append(ok["value"])

    old = threading.stack_size(4 * 1024 * 1024)
    try:
        t = threading.Thread(target=work)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    assert isinstance(result[0], bw.DecodeError) and "1000" in str(result[0])
    assert result[1] == 1


def test_class_keyword_limits():
    class Shallow(bw.Struct, limits=bw.Limits(max_depth=3)):
        value: bw.U8
        n: bw.U8
        children: list[Shallow] = bw.field(count="n")

    assert Shallow.unpack(chain_wire(3)).children[0].children[0].value == 3
    with pytest.raises(bw.DecodeError) as ei:
        Shallow.unpack(chain_wire(4))
    assert ei.value.path == "children[0].children[0].children[0]"
    assert ei.value.offset == 6


def test_compile_limits_override():
    deep = bw.compile(Node, limits=bw.Limits(max_depth=200))
    assert deep.unpack(chain_wire(200))["value"] == 1
    with pytest.raises(bw.DecodeError):
        deep.unpack(chain_wire(201))


def test_pack_depth_limit():
    assert len(chain(64).pack()) == 128
    with pytest.raises(bw.PackError) as ei:
        chain(65).pack()
    assert "depth limit" in str(ei.value)


def test_cyclic_value_is_pack_error():
    n = Node(value=1, children=[])
    n.children.append(n)
    with pytest.raises(bw.PackError) as ei:
        n.pack()
    assert "cyclic" in str(ei.value)
    d: dict = {"value": 1, "children": []}
    d["children"].append(d)
    with pytest.raises(bw.PackError):
        bw.compile(Node).pack(d)


def test_bad_limits():
    with pytest.raises(bw.SchemaError):
        bw.Limits(max_depth=-1)
    with pytest.raises(bw.SchemaError):
        bw.Limits(max_depth=1.5)


class Expr(bw.Struct, registry="op"):
    """A recursive registry: an expression tree whose variants contain expressions."""

    op: bw.U8


class Lit(Expr, tag=1):
    v: bw.I32


class Add(Expr, tag=2):
    n: bw.U8
    args: list[Expr] = bw.field(count="n")


class Neg(Expr, tag=3):
    arg: Expr


def evaluate(e: Expr) -> int:
    if isinstance(e, Lit):
        return e.v
    if isinstance(e, Neg):
        return -evaluate(e.arg)
    return sum(evaluate(a) for a in e.args)


def test_recursive_registry_round_trip():
    # Declaring Add and Neg used to recurse without end (RecursionError at class creation).
    e = Add(args=[Lit(v=1), Neg(arg=Add(args=[Lit(v=2), Lit(v=3)])), Add(args=[])])
    wire = e.pack()
    assert wire == (
        b"\x02\x03"
        + b"\x01\x00\x00\x00\x01"
        + b"\x03\x02\x02"
        + b"\x01\x00\x00\x00\x02\x01\x00\x00\x00\x03"
        + b"\x02\x00"
    )
    back = Expr.unpack(wire)
    assert type(back) is Add and back == e and evaluate(back) == -4
    assert Add.unpack(wire) == e
    assert type(Neg.unpack(b"\x03\x01\x00\x00\x00\x07").arg) is Lit
    d = bw.compile(Expr).unpack(b"\x03\x01\x00\x00\x00\x07")
    assert d == {"op": 3, "arg": {"op": 1, "v": 7}}
    assert bw.compile(Expr).pack(d) == b"\x03\x01\x00\x00\x00\x07"


def test_recursive_registry_depth_limit():
    with pytest.raises(bw.DecodeError) as ei:
        Expr.unpack(b"\x03" * 100_000 + b"\x01\x00\x00\x00\x00")
    assert "depth limit" in str(ei.value)
    e: Expr = Lit(v=0)
    for _ in range(100):
        e = Neg(arg=e)
    with pytest.raises(bw.PackError):
        e.pack()
