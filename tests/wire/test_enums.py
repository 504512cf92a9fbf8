"""Enums: IntEnum / IntFlag fields, the unknown-value policy, and what dict codecs see."""

from __future__ import annotations

import enum

import bytewright as bw
import pytest


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2
    BLUE = 3


class Perm(enum.IntFlag):
    R = 4
    W = 2
    X = 1


class Paint(bw.Struct):
    color: Color = bw.enum(bw.U8)
    perm: Perm = bw.enum(bw.U16)


class StrictPaint(bw.Struct):
    color: Color = bw.enum(bw.U8, unknown="raise")
    perm: Perm = bw.enum(bw.U16, unknown="raise")


def test_decode_to_members():
    p = Paint.unpack(b"\x02\x00\x05")
    assert p.color is Color.GREEN
    assert type(p.perm) is Perm and p.perm == Perm.R | Perm.X
    assert Perm.R in p.perm and Perm.W not in p.perm


def test_pack_accepts_members_and_ints():
    assert Paint(color=Color.BLUE, perm=Perm.R | Perm.W).pack() == b"\x03\x00\x06"
    assert Paint(color=3, perm=6).pack() == b"\x03\x00\x06"
    assert Paint(color=Color.BLUE, perm=Perm(0)).pack() == b"\x03\x00\x00"


def test_round_trip_equality():
    p = Paint(color=Color.RED, perm=Perm.X)
    assert Paint.unpack(p.pack()) == p


def test_unknown_keep_gives_the_raw_int():
    p = Paint.unpack(b"\x09\x00\x00")
    assert p.color == 9 and type(p.color) is int
    assert p.pack() == b"\x09\x00\x00"


def test_unknown_flag_bits_kept():
    p = Paint.unpack(b"\x01\x01\x07")
    assert int(p.perm) == 0x107
    assert p.pack() == b"\x01\x01\x07"


def test_unknown_raise_is_decode_error_with_path():
    with pytest.raises(bw.DecodeError) as ei:
        StrictPaint.unpack(b"\x09\x00\x00")
    assert ei.value.path == "color" and "9 is not a valid Color" in str(ei.value)
    assert ei.value.offset is not None


def test_unknown_flag_bits_raise():
    assert StrictPaint.unpack(b"\x01\x00\x07").perm == Perm.R | Perm.W | Perm.X
    with pytest.raises(bw.DecodeError) as ei:
        StrictPaint.unpack(b"\x01\x00\x08")
    assert ei.value.path == "perm" and "0x8" in str(ei.value)


def test_unknown_raise_in_nested_path():
    class Outer(bw.Struct):
        n: bw.U8
        items: list[StrictPaint] = bw.field(count="n")

    with pytest.raises(bw.DecodeError) as ei:
        Outer.unpack(b"\x02\x01\x00\x00\x07\x00\x00")
    assert ei.value.path == "items[1].color"


def test_plain_enum_annotation_with_type_keeps_unknown():
    class P(bw.Struct):
        color: Color = bw.field(type=bw.U8)

    assert P.unpack(b"\x02").color is Color.GREEN
    assert P.unpack(b"\x07").color == 7


def test_enum_over_a_bit_field():
    class Kind(enum.IntEnum):
        DATA = 1
        ACK = 2

    class Fc(bw.Struct):
        kind: Kind = bw.enum(bw.Bits(3))
        rest: int = bw.bits(5)

    f = Fc.unpack(b"\x40")
    assert f.kind is Kind.ACK and f.rest == 0
    assert Fc(kind=Kind.DATA, rest=1).pack() == b"\x21"


def test_enum_field_in_expressions_uses_the_wire_value():
    class Op(enum.IntEnum):
        PING = 1
        DATA = 2

    class Msg(bw.Struct):
        op: Op = bw.enum(bw.U8)
        arg: bw.U16 = bw.field(when="op == 2", default=0)

    assert Msg(op=Op.DATA, arg=5).pack() == b"\x02\x00\x05"
    assert Msg(op=Op.PING).pack() == b"\x01"
    assert Msg.unpack(b"\x01") == Msg(op=Op.PING, arg=0)
    assert Msg.unpack(b"\x02\x00\x07").arg == 7


def test_dict_codec_sees_plain_ints():
    codec = bw.compile(Paint)
    d = codec.unpack(b"\x02\x00\x05")
    assert d == {"color": 2, "perm": 5}
    assert type(d["color"]) is int and type(d["perm"]) is int
    assert codec.pack({"color": Color.BLUE, "perm": 1}) == b"\x03\x00\x01"
    # The dict codec of a strict class does not apply the policy.
    assert bw.compile(StrictPaint).unpack(b"\x09\x00\x00") == {"color": 9, "perm": 0}


def test_enum_value_out_of_wire_range_is_pack_error():
    class Big(enum.IntEnum):
        HUGE = 300

    class P(bw.Struct):
        v: Big = bw.enum(bw.U8)

    with pytest.raises(bw.PackError) as ei:
        P(v=Big.HUGE).pack()
    assert ei.value.path == "v" and "does not fit u8" in str(ei.value)


def test_wrong_type_on_pack_is_pack_error():
    with pytest.raises(bw.PackError) as ei:
        Paint(color="red", perm=0).pack()
    assert ei.value.path == "color"


def test_schema_errors():
    with pytest.raises(bw.SchemaError) as ei:
        bw.enum(bw.U8, unknown="rase")
    assert "did you mean 'raise'?" in str(ei.value)
    with pytest.raises(bw.SchemaError) as ei:

        class NoEnum(bw.Struct):
            v: bw.U8 = bw.enum(bw.U8)

    assert "IntEnum or IntFlag" in str(ei.value)
    with pytest.raises(bw.SchemaError) as ei:

        class NoWire(bw.Struct):
            v: Color

    assert "needs its wire type" in str(ei.value)


def test_absent_conditional_enum_keeps_its_default():
    class Opt(bw.Struct):
        flag: bw.U8
        color: Color = bw.enum(bw.U8, unknown="raise", when="flag", default=None)

    assert Opt.unpack(b"\x01\x02").color is Color.GREEN
    assert Opt.unpack(b"\x00").color is None  # not passed through the enum
