"""Scalars: every type in both byte orders, cross-checked against struct.pack / int.to_bytes."""

import math
import struct

import bytewright as bw
import pytest

INTS = [
    (bw.U8, "B", 1, False),
    (bw.U16, "H", 2, False),
    (bw.U32, "I", 4, False),
    (bw.U64, "Q", 8, False),
    (bw.I8, "b", 1, True),
    (bw.I16, "h", 2, True),
    (bw.I32, "i", 4, True),
    (bw.I64, "q", 8, True),
]
ORDERS = [("big", ">"), ("little", "<")]


def one(ann, order):
    return bw.make_struct("One", [("v", ann)], byteorder=order)


def extremes(width, signed):
    bits = width * 8
    if signed:
        return [-(2 ** (bits - 1)), -1, 0, 1, 2 ** (bits - 1) - 1]
    return [0, 1, 0x5A, 2**bits - 1]


@pytest.mark.parametrize("order,prefix", ORDERS)
@pytest.mark.parametrize("ann,fmt,width,signed", INTS)
def test_int_exact_bytes(ann, fmt, width, signed, order, prefix):
    cls = one(ann, order)
    codec = bw.compile(cls)
    assert codec.static_size == width
    for v in extremes(width, signed):
        want = struct.pack(prefix + fmt, v)
        assert cls(v=v).pack() == want
        assert codec.pack({"v": v}) == want
        assert cls.unpack(want).v == v
        assert codec.unpack(want) == {"v": v}


@pytest.mark.parametrize("order,prefix", ORDERS)
@pytest.mark.parametrize("ann,fmt,width,signed", INTS)
def test_int_out_of_range(ann, fmt, width, signed, order, prefix):
    cls = one(ann, order)
    bits = width * 8
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    for bad in (lo - 1, hi + 1):
        with pytest.raises(bw.PackError) as ei:
            cls(v=bad).pack()
        assert ei.value.path == "v"


# Ints are read from their 30-bit digits where the interpreter allows: every digit count
# boundary, both signs, and values one past each width, through pack and pack_many.
DIGIT_EDGES = sorted(
    {
        s * (2**e + d)
        for e in (0, 29, 30, 31, 59, 60, 61, 62, 63, 64, 89, 90)
        for d in (-1, 0, 1)
        for s in (1, -1)
    }
)


@pytest.mark.parametrize("ann,fmt,width,signed", [i for i in INTS if i[2] == 8])
def test_int_digit_boundaries_pack_like_struct(ann, fmt, width, signed):
    cls = one(ann, "little")
    codec = bw.compile(cls)
    lo, hi = (-(2**63), 2**63 - 1) if signed else (0, 2**64 - 1)
    fits = [v for v in DIGIT_EDGES if lo <= v <= hi]
    for v in DIGIT_EDGES:
        if lo <= v <= hi:
            assert codec.pack({"v": v}) == struct.pack("<" + fmt, v)
        else:
            with pytest.raises(bw.PackError):
                codec.pack({"v": v})
    rows = [(v,) for v in fits]
    assert bytes(cls.pack_many(rows)) == b"".join(struct.pack("<" + fmt, v) for v in fits)
    for v in DIGIT_EDGES:
        if not lo <= v <= hi:
            with pytest.raises(bw.PackError):
                cls.pack_many([(0,), (v,)])


@pytest.mark.parametrize("order", ["big", "little"])
@pytest.mark.parametrize("ann,signed", [(bw.U24, False), (bw.I24, True)])
def test_24_bit(ann, signed, order):
    cls = one(ann, order)
    vals = [-(2**23), -1, 0, 1, 2**23 - 1] if signed else [0, 1, 0x123456, 2**24 - 1]
    for v in vals:
        want = v.to_bytes(3, order, signed=signed)
        assert cls(v=v).pack() == want
        assert cls.unpack(want).v == v
    bad = 2**23 if signed else 2**24
    with pytest.raises(bw.PackError):
        cls(v=bad).pack()
    with pytest.raises(bw.PackError):
        cls(v=-(2**23) - 1 if signed else -1).pack()


@pytest.mark.parametrize("order,prefix", ORDERS)
@pytest.mark.parametrize("ann,fmt", [(bw.F32, "f"), (bw.F64, "d")])
def test_floats(ann, fmt, order, prefix):
    cls = one(ann, order)
    for v in (0.0, -0.0, 1.5, -2.25, 1e30, math.inf, -math.inf):
        want = struct.pack(prefix + fmt, v)
        assert cls(v=v).pack() == want
        back = cls.unpack(want).v
        assert back == struct.unpack(prefix + fmt, want)[0]
        assert math.copysign(1, back) == math.copysign(1, v)
    nan = cls.unpack(struct.pack(prefix + fmt, math.nan)).v
    assert math.isnan(nan)
    # F32 rounds like struct does
    assert cls(v=0.1).pack() == struct.pack(prefix + fmt, 0.1)
    assert isinstance(cls.unpack(cls(v=3).pack()).v, float)


def test_bool():
    cls = one(bw.Bool, None)
    assert cls(v=True).pack() == b"\x01"
    assert cls(v=False).pack() == b"\x00"
    assert cls.unpack(b"\x01").v is True
    assert cls.unpack(b"\x00").v is False


def test_mixed_layout_matches_struct():
    class M(bw.Struct, byteorder="little"):
        a: bw.U8
        b: bw.I16
        c: bw.U32
        d: bw.I64
        e: bw.F32
        f: bw.F64
        g: bw.Bool
        h: bw.U64

    vals = dict(a=200, b=-300, c=0xDEADBEEF, d=-(2**40), e=1.25, f=-3.5, g=True, h=2**64 - 1)
    want = struct.pack("<BhIqfd?Q", *vals.values())
    assert M(**vals).pack() == want
    assert M.unpack(want) == M(**vals)
    assert bw.compile(M).static_size == len(want)


def test_default_byteorder_is_big():
    class D(bw.Struct):
        v: bw.U32

    assert D(v=1).pack() == b"\x00\x00\x00\x01"


def test_field_byteorder_override():
    class Ovr(bw.Struct, byteorder="big"):
        a: bw.U16
        b: bw.U16 = bw.field(byteorder="little")
        c: bw.U32

    data = Ovr(a=0x0102, b=0x0304, c=0x05060708).pack()
    assert data == b"\x01\x02\x04\x03\x05\x06\x07\x08"
    assert Ovr.unpack(data) == Ovr(a=0x0102, b=0x0304, c=0x05060708)


def test_field_byteorder_override_applies_to_array_items():
    class Ovr(bw.Struct, byteorder="big"):
        n: bw.U8
        xs: list[bw.U16] = bw.field(count="n", byteorder="little")

    assert Ovr(xs=[1, 0x0203]).pack() == b"\x02\x01\x00\x03\x02"


def test_nested_inherits_container_byteorder():
    class Inner(bw.Struct):
        v: bw.U16

    class InnerBig(bw.Struct, byteorder="big"):
        v: bw.U16

    class Outer(bw.Struct, byteorder="little"):
        a: Inner
        b: InnerBig
        c: bw.U16

    data = Outer(a=Inner(v=0x0102), b=InnerBig(v=0x0304), c=0x0506).pack()
    assert data == b"\x02\x01\x03\x04\x06\x05"

    # The same Inner in a big-endian container is big-endian.
    class Outer2(bw.Struct, byteorder="big"):
        a: Inner

    assert Outer2(a=Inner(v=0x0102)).pack() == b"\x01\x02"
    assert Inner(v=0x0102).pack() == b"\x01\x02"


def test_nested_inherits_through_two_levels():
    class C(bw.Struct):
        v: bw.U32

    class B(bw.Struct):
        c: C

    class A(bw.Struct, byteorder="little"):
        b: B

    assert A(b=B(c=C(v=1))).pack() == b"\x01\x00\x00\x00"


def test_subclass_inherits_byteorder_and_fields():
    class Base(bw.Struct, byteorder="little"):
        a: bw.U16

    class Child(Base):
        b: bw.U16

    assert Child(a=1, b=2).pack() == b"\x01\x00\x02\x00"


def test_wrong_python_type_is_pack_error():
    cls = one(bw.U16, None)
    with pytest.raises(bw.PackError) as ei:
        cls(v="x").pack()
    assert ei.value.path == "v"
    with pytest.raises(bw.PackError):
        one(bw.F64, None)(v="1.0").pack()


def test_float_too_large_for_f32():
    with pytest.raises(OverflowError):
        struct.pack(">f", 1e40)
    with pytest.raises(bw.PackError) as ei:
        one(bw.F32, None)(v=1e40).pack()
    assert ei.value.path == "v"
    assert str(ei.value) == "v: 1e40 is too large for f32"
    # Infinity is representable, as with struct.
    assert one(bw.F32, None)(v=math.inf).pack() == struct.pack(">f", math.inf)


def test_invalid_bool_byte():
    cls = one(bw.Bool, None)
    with pytest.raises(bw.DecodeError) as ei:
        cls.unpack(b"\x02")
    assert ei.value.path == "v" and ei.value.offset == 0


def test_int_rejects_float_and_accepts_bool():
    cls = one(bw.U8, None)
    with pytest.raises(bw.PackError):
        cls(v=2.0).pack()
    assert cls(v=True).pack() == b"\x01"
