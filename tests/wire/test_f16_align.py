"""F16 (cross-checked with struct's 'e' format) and alignment per field and per struct."""

from __future__ import annotations

import itertools
import math
import struct

import bytewright as bw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class H(bw.Struct):
    v: bw.F16


class HLittle(bw.Struct, byteorder="little"):
    v: bw.F16


class HAll(bw.Struct):
    vs: list[bw.F16] = bw.field(count=bw.REST)


ALL_PATTERNS = b"".join(struct.pack(">H", i) for i in range(1 << 16))


def same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def test_every_bit_pattern_decodes_like_struct():
    ours = HAll.unpack(ALL_PATTERNS).vs
    theirs = [v for (v,) in struct.iter_unpack(">e", ALL_PATTERNS)]
    assert len(ours) == 1 << 16
    bad = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if not same_float(a, b)]
    assert bad == []


def test_every_non_nan_value_packs_to_its_own_bits():
    values = [v for (v,) in struct.iter_unpack(">e", ALL_PATTERNS) if not math.isnan(v)]
    assert HAll(vs=values).pack() == b"".join(struct.pack(">e", v) for v in values)


def test_midpoints_round_half_to_even_like_struct():
    finite = sorted({v for (v,) in struct.iter_unpack(">e", ALL_PATTERNS) if math.isfinite(v)})
    mids = [(a + b) / 2 for a, b in itertools.pairwise(finite)]
    mids += [math.nextafter(m, math.inf) for m in mids] + [
        math.nextafter(m, -math.inf) for m in mids
    ]
    assert HAll(vs=mids).pack() == b"".join(struct.pack(">e", m) for m in mids)


@SETTINGS
@given(st.floats(allow_nan=False))
def test_random_doubles_pack_like_struct(x):
    try:
        want = struct.pack(">e", x)
    except OverflowError:
        with pytest.raises(bw.PackError) as ei:
            H(v=x).pack()
        assert ei.value.path == "v" and "too large for f16" in str(ei.value)
        return
    assert H(v=x).pack() == want
    assert HLittle(v=x).pack() == want[::-1]
    assert same_float(H.unpack(want).v, struct.unpack(">e", want)[0])


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (1.0, b"\x3c\x00"),
        (-2.0, b"\xc0\x00"),
        (65504.0, b"\x7b\xff"),  # the largest finite half
        (65519.99, b"\x7b\xff"),  # rounds down to it
        (2.0**-24, b"\x00\x01"),  # the smallest subnormal
        (2.0**-25, b"\x00\x00"),  # halfway to zero: ties to even
        (3 * 2.0**-25, b"\x00\x02"),  # halfway between 1 and 2 subnormal steps: to even
        (2.0**-14, b"\x04\x00"),  # the smallest normal
        (-0.0, b"\x80\x00"),
        (math.inf, b"\x7c\x00"),
        (-math.inf, b"\xfc\x00"),
        (math.nan, b"\x7e\x00"),
        (1, b"\x3c\x00"),  # ints are accepted
    ],
)
def test_known_values(value, wire):
    assert H(v=value).pack() == wire
    assert struct.pack(">e", value) == wire


@pytest.mark.parametrize("value", [65520.0, 1e6, -70000.0, 1e308])
def test_overflow_is_pack_error(value):
    with pytest.raises(OverflowError):
        struct.pack(">e", value)
    with pytest.raises(bw.PackError) as ei:
        H(v=value).pack()
    assert ei.value.path == "v"
    with pytest.raises(bw.PackError):
        bw.compile(H).pack({"v": value})


def test_f16_rejects_non_numbers():
    with pytest.raises(bw.PackError) as ei:
        H(v="1.0").pack()
    assert ei.value.path == "v" and "expected float" in str(ei.value)


def test_f16_static_size():
    assert bw.compile(H).static_size == 2


# --- alignment ---------------------------------------------------------------------------


class Aligned(bw.Struct):
    tag: bw.U8
    value: bw.U32 = bw.field(align=4)
    short: bw.U16
    wide: bw.U64 = bw.field(align=8)


def test_field_alignment_pads_with_zeros():
    a = Aligned(tag=1, value=2, short=3, wide=4)
    wire = a.pack()
    assert wire == struct.pack(">B3xIH6xQ", 1, 2, 3, 4)  # the C layout
    assert len(wire) == 24 == bw.compile(Aligned).static_size
    assert Aligned.unpack(wire) == a


def test_alignment_padding_is_skipped_on_unpack():
    wire = bytearray(Aligned(tag=1, value=2, short=3, wide=4).pack())
    wire[1:4] = b"\xff\xff\xff"
    assert Aligned.unpack(bytes(wire)) == Aligned(tag=1, value=2, short=3, wide=4)


def test_alignment_already_met_adds_nothing():
    class NoPad(bw.Struct):
        a: bw.U32
        b: bw.U32 = bw.field(align=4)

    assert NoPad(a=1, b=2).pack() == struct.pack(">II", 1, 2)


def test_alignment_after_variable_field():
    class Var(bw.Struct):
        n: bw.U8
        data: bytes = bw.field(len="n")
        x: bw.U32 = bw.field(align=4)

    for k in range(9):
        wire = Var(data=b"d" * k, x=7).pack()
        pad = (4 - (1 + k) % 4) % 4
        assert wire == bytes([k]) + b"d" * k + bytes(pad) + b"\x00\x00\x00\x07"
        assert Var.unpack(wire).x == 7
    assert bw.compile(Var).static_size is None


class Rec(bw.Struct, align=4):
    kind: bw.U8
    n: bw.U16


def test_struct_alignment_pads_the_end():
    assert Rec(kind=1, n=2).pack() == b"\x01\x00\x02\x00"
    assert bw.compile(Rec).static_size == 4
    assert Rec.unpack(b"\x01\x00\x02\x00") == Rec(kind=1, n=2)


def test_struct_alignment_in_arrays():
    class Table(bw.Struct):
        count: bw.U8
        recs: list[Rec] = bw.field(count="count")

    t = Table(recs=[Rec(kind=i, n=i * 256) for i in range(3)])
    wire = t.pack()
    assert wire == b"\x03" + b"".join(bytes([i, i, 0, 0]) for i in range(3))
    assert Table.unpack(wire) == t


def test_alignment_is_relative_to_the_struct_start():
    class Inner(bw.Struct):
        a: bw.U8
        b: bw.U16 = bw.field(align=2)

    class Outer(bw.Struct):
        x: bw.U8
        inner: Inner

    assert Outer(x=9, inner=Inner(a=1, b=2)).pack() == b"\x09\x01\x00\x00\x02"


def test_truncated_alignment_padding_is_incomplete():
    part = Aligned.parse(b"\x01\x00")
    assert not part and part.needed == 2  # the rest of the padding
    with pytest.raises(bw.DecodeError):
        Aligned.unpack(b"\x01\x00")


@pytest.mark.parametrize("bad", [0, -4, True, "4"])
def test_bad_alignment_is_schema_error(bad):
    with pytest.raises(bw.SchemaError):

        class F(bw.Struct):
            a: bw.U8 = bw.field(align=bad)

    with pytest.raises(bw.SchemaError):

        class S(bw.Struct, align=bad):
            a: bw.U8


def test_alignment_dict_codec():
    assert bw.compile(Aligned).pack({"tag": 1, "value": 2, "short": 3, "wide": 4}) == (
        struct.pack(">B3xIH6xQ", 1, 2, 3, 4)
    )
