"""Varints: LEB128 (VarUInt) and zigzag (VarInt), cross-checked with a reference encoder."""

from __future__ import annotations

import bytewright as bw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
U64 = st.integers(0, 2**64 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)


def leb128(u: int) -> bytes:
    """Reference encoder (the protobuf wire format's base-128 varint)."""
    out = bytearray()
    while True:
        b, u = u & 0x7F, u >> 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(i: int) -> int:
    return (i << 1) ^ (i >> 63)


class UV(bw.Struct):
    v: bw.VarUInt


class SV(bw.Struct):
    v: bw.VarInt


class Pair(bw.Struct):
    a: bw.VarUInt
    b: bw.VarInt
    tail: bw.U8


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (150, b"\x96\x01"),  # the protobuf documentation's example
        (300, b"\xac\x02"),
        (2**64 - 1, b"\xff" * 9 + b"\x01"),
    ],
)
def test_known_unsigned_vectors(value, wire):
    assert UV(v=value).pack() == wire
    assert UV.unpack(wire).v == value


@pytest.mark.parametrize(
    ("value", "mapped"),
    [(0, 0), (-1, 1), (1, 2), (-2, 3), (2**31 - 1, 2**32 - 2), (-(2**31), 2**32 - 1)],
)
def test_known_zigzag_vectors(value, mapped):
    assert SV(v=value).pack() == leb128(mapped)
    assert SV.unpack(leb128(mapped)).v == value


@SETTINGS
@given(U64)
def test_unsigned_round_trip_whole_range(u):
    wire = UV(v=u).pack()
    assert wire == leb128(u)
    assert UV.unpack(wire).v == u


@SETTINGS
@given(I64)
def test_signed_round_trip_whole_range(i):
    wire = SV(v=i).pack()
    assert wire == leb128(zigzag(i))
    assert SV.unpack(wire).v == i


@SETTINGS
@given(U64, I64, st.integers(0, 255))
def test_sequence_of_varints(a, b, tail):
    wire = Pair(a=a, b=b, tail=tail).pack()
    assert wire == leb128(a) + leb128(zigzag(b)) + bytes([tail])
    assert Pair.unpack(wire) == Pair(a=a, b=b, tail=tail)
    assert bw.compile(Pair).unpack(wire) == {"a": a, "b": b, "tail": tail}


@pytest.mark.parametrize("value", [-1, 2**64])
def test_unsigned_out_of_range_is_pack_error(value):
    with pytest.raises(bw.PackError) as ei:
        UV(v=value).pack()
    assert ei.value.path == "v"


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1])
def test_signed_out_of_range_is_pack_error(value):
    with pytest.raises(bw.PackError) as ei:
        SV(v=value).pack()
    assert ei.value.path == "v"


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"\x80\x00", "overlong"),
        (b"\xff\x00", "overlong"),
        (b"\x80\x80\x80\x00", "overlong"),
        (b"\xff" * 9 + b"\x02", "overflows"),
        (b"\xff" * 9 + b"\x7f", "overflows"),
        (b"\x80" * 9 + b"\x81\x00", "overflows"),
        (b"\x80" * 10 + b"\x01", "overflows"),
    ],
)
def test_malformed_is_decode_error(wire, message):
    for codec in (UV, SV, bw.compile(UV)):
        with pytest.raises(bw.DecodeError) as ei:
            codec.unpack(wire)
        assert message in str(ei.value)
        assert ei.value.path == "v" and ei.value.offset == 0


def test_malformed_offset_points_at_the_varint():
    with pytest.raises(bw.DecodeError) as ei:
        Pair.unpack(b"\x05\x80\x00\x01")
    assert ei.value.path == "b" and ei.value.offset == 1


@pytest.mark.parametrize("wire", [b"", b"\x80", b"\xff" * 5, b"\xff" * 9])
def test_truncated_is_incomplete_then_decode_error(wire):
    part = UV.parse(wire)
    assert not part and part.needed == 1
    with pytest.raises(bw.DecodeError) as ei:
        UV.unpack(wire)
    assert ei.value.path == "v"


def test_incomplete_after_varint():
    assert Pair.parse(b"\x81\x01\x02") == Incomplete(1)
    assert Pair.parse(b"\x81\x01\x02\x09") == (Pair(a=129, b=1, tail=9), 4)


Incomplete = bw.Incomplete


class Blob(bw.Struct):
    n: bw.VarUInt
    data: bytes = bw.field(len="n")


class Counted(bw.Struct):
    n: bw.VarUInt
    items: list[bw.VarInt] = bw.field(count="n")


def test_varint_derived_length():
    assert Blob(data=b"").pack() == b"\x00"
    assert Blob(data=b"x" * 300).pack() == b"\xac\x02" + b"x" * 300
    back = Blob.unpack(b"\xac\x02" + b"x" * 300)
    assert back.n == 300 and back.data == b"x" * 300
    assert Blob(n=3, data=b"abc").pack() == b"\x03abc"
    with pytest.raises(bw.PackError) as ei:
        Blob(n=4, data=b"abc").pack()
    assert ei.value.path in ("n", "data") and "4" in str(ei.value)
    assert bw.compile(Blob).pack({"data": b"hi"}) == b"\x02hi"


def test_varint_derived_count():
    c = Counted(items=[0, -1, 1, -64, 64])
    wire = c.pack()
    assert wire == b"\x05" + b"".join(leb128(zigzag(i)) for i in [0, -1, 1, -64, 64])
    assert Counted.unpack(wire).items == [0, -1, 1, -64, 64]


def test_varint_length_over_the_limit_is_decode_error():
    limited = bw.compile(Blob, limits=bw.Limits(max_len=10))
    with pytest.raises(bw.DecodeError) as ei:
        limited.unpack(leb128(2**63) + b"x")
    assert ei.value.path == "data" and "exceeds the limit 10" in str(ei.value)


def test_truncated_payload_after_varint_length():
    part = Blob.parse(b"\xac\x02" + b"x" * 100)
    assert not part and part.needed == 200


def test_varint_list_to_rest():
    class Many(bw.Struct):
        vs: list[bw.VarUInt] = bw.field(count=bw.REST)

    values = [0, 1, 127, 128, 2**32, 2**64 - 1]
    wire = b"".join(leb128(v) for v in values)
    assert Many(vs=values).pack() == wire
    assert Many.unpack(wire).vs == values
    with pytest.raises(bw.DecodeError) as ei:
        Many.unpack(wire + b"\x80")
    assert ei.value.path == "vs[6]"


def test_varint_static_and_min_size():
    codec = bw.compile(Pair)
    assert codec.static_size is None and codec.min_size == 3
