"""Windows: a struct or array confined to exactly N bytes."""

import bytewright as bw
import pytest


class Inner(bw.Struct):
    a: bw.U16
    rest: bytes = bw.field(len=bw.REST)


class Outer(bw.Struct):
    size: bw.U8
    inner: Inner = bw.field(size="size")
    trailer: bw.U8


def test_window_size_derived():
    data = Outer(inner=Inner(a=1, rest=b"xyz"), trailer=9).pack()
    assert data == b"\x05\x00\x01xyz\x09"
    back = Outer.unpack(data)
    assert back.size == 5 and back.inner.rest == b"xyz" and back.trailer == 9


def test_window_supplied_wrong():
    with pytest.raises(bw.PackError) as ei:
        Outer(size=4, inner=Inner(a=1, rest=b"xyz"), trailer=9).pack()
    assert ei.value.path == "size"
    assert "is 4" in str(ei.value)


def test_window_overrun_has_path():
    with pytest.raises(bw.DecodeError) as ei:
        Outer.unpack(b"\x01\x00\x01\x09")
    e = ei.value
    assert e.path == "inner.a"
    assert "window" in str(e)
    assert str(e).startswith("inner.a: needs 2 bytes at offset 1, 1 left")


def test_window_underrun_has_path():
    class Fixed(bw.Struct):
        a: bw.U16

    class W(bw.Struct):
        size: bw.U8
        f: Fixed = bw.field(size="size")

    assert W(f=Fixed(a=3)).pack() == b"\x02\x00\x03"
    with pytest.raises(bw.DecodeError) as ei:
        W.unpack(b"\x03\x00\x03\x00")
    assert ei.value.path == "f"
    # A window that is larger than the rest of the input is incomplete.
    assert isinstance(W.parse(b"\x03\x00\x03"), bw.Incomplete)


def test_window_expression_and_constant():
    class Fixed(bw.Struct):
        a: bw.U16
        b: bw.U16

    class W(bw.Struct):
        words: bw.U8
        f: Fixed = bw.field(size="words * 2")
        g: Fixed = bw.field(size=4)

    data = W(f=Fixed(a=1, b=2), g=Fixed(a=3, b=4)).pack()
    assert data == b"\x02\x00\x01\x00\x02\x00\x03\x00\x04"
    assert W.unpack(data).words == 2


def test_array_window_until_end():
    class A(bw.Struct):
        nbytes: bw.U8
        xs: list[bw.U16] = bw.field(size="nbytes")
        last: bw.U8

    data = A(xs=[1, 2, 3], last=7).pack()
    assert data == b"\x06\x00\x01\x00\x02\x00\x03\x07"
    assert A.unpack(data).xs == [1, 2, 3]
    with pytest.raises(bw.DecodeError) as ei:
        A.unpack(b"\x03\x00\x01\x00\x07")
    assert ei.value.path.startswith("xs")


def test_nested_window_error_path():
    class Leaf(bw.Struct):
        n: bw.U8
        data: bytes = bw.field(len="n")

    class Mid(bw.Struct):
        count: bw.U8
        leaves: list[Leaf] = bw.field(count="count")

    class Top(bw.Struct):
        size: bw.U16
        mid: Mid = bw.field(size="size")

    data = Top(mid=Mid(leaves=[Leaf(data=b"ab"), Leaf(data=b"c")])).pack()
    assert data == b"\x00\x06\x02\x02ab\x01c"
    bad = b"\x00\x06\x02\x02ab\x05c"
    with pytest.raises(bw.DecodeError) as ei:
        Top.unpack(bad)
    assert ei.value.path == "mid.leaves[1].data"
    assert ei.value.offset == 7
