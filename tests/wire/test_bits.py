"""Bit fields: widths 1..64, signed, flags, MSB/LSB layouts, groups, derived lengths."""

from __future__ import annotations

from typing import Annotated

import bytewright as bw
import pytest
from bytewright.struct import StructMeta
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ref_pack(widths: list[int], values: list[int], lsb: bool) -> bytes:
    """Independent reference: place each field by shifting into one Python int."""
    total = sum(widths)
    acc = n = 0
    for w, v in zip(widths, values, strict=True):
        shift = acc if lsb else total - acc - w
        n |= (v & ((1 << w) - 1)) << shift
        acc += w
    return n.to_bytes(total // 8, "little" if lsb else "big")


def ref_unpack(widths: list[int], signed: list[bool], data: bytes, lsb: bool) -> list[int]:
    total = sum(widths)
    n = int.from_bytes(data, "little" if lsb else "big")
    out, acc = [], 0
    for w, s in zip(widths, signed, strict=True):
        shift = acc if lsb else total - acc - w
        v = (n >> shift) & ((1 << w) - 1)
        if s and v >> (w - 1):
            v -= 1 << w
        out.append(v)
        acc += w
    return out


def bit_class(widths: list[int], signed: list[bool], bitorder: str) -> type:
    ann = {f"f{i}": int for i in range(len(widths))}
    ns: dict = {"__annotations__": ann, "__module__": __name__, "__qualname__": "G"}
    for i, (w, s) in enumerate(zip(widths, signed, strict=True)):
        ns[f"f{i}"] = bw.bits(w, signed=s)
    return StructMeta("G", (bw.Struct,), ns, bitorder=bitorder)


@st.composite
def groups(draw):
    widths = draw(st.lists(st.integers(1, 64), min_size=1, max_size=5))
    total = sum(widths)
    if total % 8:
        widths.append(8 - total % 8)
    while sum(widths) > 128:
        widths.pop(0)
        if sum(widths) % 8:
            widths.append(8 - sum(widths) % 8)
    signed = draw(st.lists(st.booleans(), min_size=len(widths), max_size=len(widths)))
    values = [
        draw(
            st.integers(-(1 << (w - 1)), (1 << (w - 1)) - 1) if s else st.integers(0, (1 << w) - 1)
        )
        for w, s in zip(widths, signed, strict=True)
    ]
    return widths, signed, values


@SETTINGS
@given(groups(), st.sampled_from(["msb", "lsb"]))
def test_random_groups_match_manual_shifting(g, order):
    widths, signed, values = g
    cls = bit_class(widths, signed, order)
    obj = cls(**{f"f{i}": v for i, v in enumerate(values)})
    wire = obj.pack()
    assert wire == ref_pack(widths, values, order == "lsb")
    back = cls.unpack(wire)
    assert [getattr(back, f"f{i}") for i in range(len(widths))] == values


@SETTINGS
@given(groups(), st.sampled_from(["msb", "lsb"]), st.data())
def test_random_bytes_decode_like_int_from_bytes(g, order, data):
    widths, signed, _ = g
    cls = bit_class(widths, signed, order)
    raw = data.draw(st.binary(min_size=sum(widths) // 8, max_size=sum(widths) // 8))
    back = cls.unpack(raw)
    assert [getattr(back, f"f{i}") for i in range(len(widths))] == ref_unpack(
        widths, signed, raw, order == "lsb"
    )
    assert back.pack() == raw  # every bit is owned by some field


class Ipv4Start(bw.Struct):
    version: int = bw.bits(4)
    ihl: int = bw.bits(4)
    dscp: int = bw.bits(6)
    ecn: int = bw.bits(2)
    total_length: bw.U16


def test_network_order_ipv4_first_bytes():
    h = Ipv4Start(version=4, ihl=5, dscp=46, ecn=1, total_length=20)
    assert h.pack() == bytes([0x45, (46 << 2) | 1, 0x00, 0x14])
    assert Ipv4Start.unpack(b"\x45\xb9\x00\x14") == h
    assert bw.compile(Ipv4Start).static_size == 4


class FrameControl(bw.Struct, bitorder="lsb"):
    """IEEE 802.15.4 frame control, as a C compiler lays out its bit fields."""

    frame_type: int = bw.bits(3)
    security: bool = bw.flag()
    pending: bool = bw.flag()
    ack_request: bool = bw.flag()
    pan_compression: bool = bw.flag()
    _reserved: int = bw.bits(3)
    dst_mode: int = bw.bits(2)
    version: int = bw.bits(2)
    src_mode: int = bw.bits(2)


def test_lsb_order_802154_frame_control():
    # 0x8861 little-endian: data frame, ack request, PAN compression, short addresses.
    fc = FrameControl.unpack(b"\x61\x88")
    assert (fc.frame_type, fc.security, fc.pending, fc.ack_request, fc.pan_compression) == (
        1,
        False,
        False,
        True,
        True,
    )
    assert (fc.dst_mode, fc.version, fc.src_mode) == (2, 0, 2)
    assert fc.ack_request is True and fc.security is False
    assert fc.pack() == (0x8861).to_bytes(2, "little")


def test_flags_are_bools_and_accept_ints():
    fc = FrameControl(
        frame_type=1,
        security=0,
        pending=1,
        ack_request=True,
        pan_compression=False,
        _reserved=0,
        dst_mode=0,
        version=0,
        src_mode=0,
    )
    assert fc.pack() == bytes([0b0011_0001, 0])
    with pytest.raises(bw.PackError) as ei:
        FrameControl(
            frame_type=1,
            security=2,
            pending=0,
            ack_request=0,
            pan_compression=0,
            _reserved=0,
            dst_mode=0,
            version=0,
            src_mode=0,
        ).pack()
    assert ei.value.path == "security"


def test_bitorder_inherited_and_default_msb():
    class Msb(bw.Struct):
        a: int = bw.bits(3)
        b: int = bw.bits(5)

    class Lsb(bw.Struct, bitorder="lsb"):
        a: int = bw.bits(3)
        b: int = bw.bits(5)

    class LsbChild(Lsb):
        c: bw.U8

    assert Msb(a=1, b=2).pack() == bytes([0b001_00010])
    assert Lsb(a=1, b=2).pack() == bytes([0b00010_001])
    assert LsbChild(a=1, b=2, c=9).pack() == bytes([0b00010_001, 9])


def test_signed_bits_range_and_sign_extension():
    class S(bw.Struct):
        a: int = bw.bits(4, signed=True)
        b: int = bw.bits(12, signed=True)

    assert S(a=-1, b=-2048).pack() == b"\xf8\x00"
    assert S.unpack(b"\x87\xff") == S(a=-8, b=2047)
    with pytest.raises(bw.PackError) as ei:
        S(a=8, b=0).pack()
    assert ei.value.path == "a" and "does not fit" in str(ei.value)
    with pytest.raises(bw.PackError) as ei:
        S(a=0, b=-2049).pack()
    assert ei.value.path == "b"


def test_unsigned_bits_reject_negative_and_too_large():
    class U(bw.Struct):
        a: int = bw.bits(1)
        b: int = bw.bits(7)

    with pytest.raises(bw.PackError) as ei:
        U(a=0, b=128).pack()
    assert ei.value.path == "b"
    with pytest.raises(bw.PackError) as ei:
        U(a=-1, b=0).pack()
    assert ei.value.path == "a"


def test_width_64_fields_and_16_byte_group():
    class Wide(bw.Struct):
        hi: int = bw.bits(64)
        lo: int = bw.bits(64, signed=True)

    w = Wide(hi=2**64 - 1, lo=-(2**63))
    assert w.pack() == b"\xff" * 8 + b"\x80" + b"\x00" * 7
    assert Wide.unpack(w.pack()) == w


def test_bits_annotation_metadata():
    class M(bw.Struct):
        a: Annotated[int, bw.Bits(5)]
        b: Annotated[int, bw.Bits(3, True)]

    assert M(a=31, b=-4).pack() == bytes([0b11111_100])
    assert M.unpack(b"\x07") == M(a=0, b=-1)


def test_bits_between_other_fields():
    class Mixed(bw.Struct, byteorder="little"):
        head: bw.U16
        a: int = bw.bits(4)
        b: int = bw.bits(4)
        tail: bw.U16

    m = Mixed(head=0x0102, a=0xA, b=0xB, tail=0x0304)
    assert m.pack() == b"\x02\x01\xab\x04\x03"
    assert Mixed.unpack(m.pack()) == m


@pytest.mark.parametrize(
    "widths",
    [[3], [4, 3], [4, 4, 1], [63], [64, 64, 1, 7]],
    ids=["3", "7", "9", "63", "136"],
)
def test_groups_must_fill_whole_bytes(widths):
    with pytest.raises(bw.SchemaError) as ei:
        bit_class(widths, [False] * len(widths), "msb")
    assert "whole bytes" in str(ei.value) and "f0" in str(ei.value)


@pytest.mark.parametrize("width", [0, 65])
def test_width_out_of_range(width):
    with pytest.raises(bw.SchemaError) as ei:
        bit_class([width, 8 - width % 8], [False, False], "msb")
    assert "between 1 and 64" in str(ei.value)


def test_bad_bitorder_keyword():
    with pytest.raises(bw.SchemaError) as ei:

        class B(bw.Struct, bitorder="lbs"):
            a: int = bw.bits(8)

    assert "did you mean 'lsb'?" in str(ei.value)


def test_conditional_bit_field_is_schema_error():
    with pytest.raises(bw.SchemaError) as ei:

        class C(bw.Struct):
            n: bw.U8
            a: int = bw.bits(8, when="n")

    assert "cannot be conditional" in str(ei.value)


def test_bits_as_derived_length():
    class Tlv(bw.Struct):
        kind: int = bw.bits(4)
        n: int = bw.bits(4)
        data: bytes = bw.field(len="n")

    t = Tlv(kind=3, data=b"abc")
    assert t.pack() == b"\x33abc"
    assert Tlv.unpack(b"\x33abc") == t
    assert Tlv.unpack(b"\x33abc").n == 3
    with pytest.raises(bw.PackError) as ei:
        Tlv(kind=3, data=b"x" * 16).pack()
    assert ei.value.path in ("n", "data") and "16" in str(ei.value)
    # Truncated payload: parse reports how many bytes are missing.
    part = Tlv.parse(b"\x35ab")
    assert not part and part.needed == 3


def test_bits_in_expressions_and_dict_codec():
    class Hdr(bw.Struct):
        has_ext: bool = bw.flag()
        kind: int = bw.bits(7)
        ext: bw.U16 = bw.field(when="has_ext", default=0)

    codec = bw.compile(Hdr)
    assert codec.pack({"has_ext": True, "kind": 5, "ext": 0x0102}) == b"\x85\x01\x02"
    assert codec.unpack(b"\x05") == {"has_ext": False, "kind": 5, "ext": 0}
    assert codec.unpack(b"\x85\x01\x02") == {"has_ext": True, "kind": 5, "ext": 0x0102}


def test_truncated_bit_group_is_incomplete_then_decode_error():
    with pytest.raises(bw.DecodeError) as ei:
        Ipv4Start.unpack(b"\x45")
    # The four fields share one 2-byte group: the first field owns its bytes.
    assert ei.value.path == "version" and ei.value.offset == 0
    assert "needs 2 bytes" in str(ei.value)
    part = Ipv4Start.parse(b"\x45")
    assert not part and part.needed == 1


def test_make_struct_takes_bitorder_and_align():
    Fc = bw.make_struct(
        "Fc",
        [("a", int, bw.bits(3)), ("b", int, bw.bits(5)), ("c", bw.U8)],
        bitorder="lsb",
        align=4,
    )
    assert Fc(a=1, b=2, c=3).pack() == bytes([0b00010_001, 3, 0, 0])
    assert Fc.unpack(bytes([0b00010_001, 3, 0, 0])) == Fc(a=1, b=2, c=3)
