"""Conditional fields (when=) and tagged unions."""

import bytewright as bw
import pytest


class Opt(bw.Struct):
    flags: bw.U8
    extra: bw.U16 = bw.field(when="flags & 1", default=0)
    name_len: bw.U8 = bw.field(when="flags & 2")
    name: str = bw.field(len="name_len", when="flags & 2", default="")


def test_present_and_absent():
    assert Opt(flags=0).pack() == b"\x00"
    back = Opt.unpack(b"\x00")
    assert back.extra == 0 and back.name == ""
    assert Opt(flags=1, extra=0x0203).pack() == b"\x01\x02\x03"
    assert Opt.unpack(b"\x01\x02\x03").extra == 0x0203
    data = Opt(flags=3, extra=1, name_len=2, name="hi").pack()
    assert data == b"\x03\x00\x01\x02hi"
    assert Opt.unpack(data) == Opt(flags=3, extra=1, name_len=2, name="hi")
    assert bw.compile(Opt).unpack(b"\x00") == {
        "flags": 0,
        "extra": 0,
        "name_len": None,
        "name": "",
    }


def test_conditional_length_is_derived():
    # name_len and name share their condition, so name_len is derived when present.
    assert "name_len" in Opt.__bw__.derived
    assert Opt(flags=2, name="hi").pack() == b"\x02\x02hi"
    assert Opt(flags=0, name="ignored").pack() == b"\x00"
    assert Opt.unpack(b"\x02\x02hi").name_len == 2
    with pytest.raises(bw.PackError) as ei:
        Opt(flags=2, name_len=3, name="hi").pack()
    assert ei.value.path == "name_len"


def test_conditional_length_under_other_condition_is_not_derived():
    class C(bw.Struct):
        flags: bw.U8
        n: bw.U8
        data: bytes = bw.field(len="n", when="flags", default=b"")

    assert "n" not in C.__bw__.derived
    assert C(flags=1, n=2, data=b"ab").pack() == b"\x01\x02ab"


def test_absent_field_value_not_written():
    assert Opt(flags=0, extra=55).pack() == b"\x00"


def test_when_comparison_and_not():
    class C(bw.Struct):
        version: bw.U8
        v2: bw.U8 = bw.field(when="version >= 2 and not version == 5", default=None)

    assert C(version=1).pack() == b"\x01"
    assert C(version=2, v2=9).pack() == b"\x02\x09"
    assert C.unpack(b"\x05").v2 is None
    assert C.unpack(b"\x03\x07").v2 == 7


class A(bw.Struct):
    x: bw.U8


class B(bw.Struct):
    y: bw.U16


class Other(bw.Struct):
    raw: bytes = bw.field(len=bw.REST)


class U(bw.Struct):
    kind: bw.U8
    body: A | B = bw.field(tag="kind", cases={1: A, 2: B})


def test_union_int_tag():
    assert U(kind=1, body=A(x=5)).pack() == b"\x01\x05"
    assert U(kind=2, body=B(y=5)).pack() == b"\x02\x00\x05"
    back = U.unpack(b"\x02\x00\x05")
    assert isinstance(back.body, B) and back.body.y == 5
    assert isinstance(U.unpack(b"\x01\x05").body, A)


def test_union_tag_mismatch_on_pack():
    with pytest.raises(bw.PackError) as ei:
        U(kind=1, body=B(y=5)).pack()
    assert ei.value.path == "body"


def test_union_unknown_tag_on_decode():
    with pytest.raises(bw.DecodeError) as ei:
        U.unpack(b"\x03\x00")
    assert ei.value.path == "body" and ei.value.offset == 1
    with pytest.raises(bw.PackError):
        U(kind=3, body=A(x=1)).pack()


def test_union_default_case():
    class D(bw.Struct):
        kind: bw.U8
        body: A | Other = bw.field(tag="kind", cases={1: A}, default_case=Other)

    assert D.unpack(b"\x01\x05").body == A(x=5)
    back = D.unpack(b"\x07abc")
    assert isinstance(back.body, Other) and back.body.raw == b"abc"
    assert D(kind=7, body=Other(raw=b"abc")).pack() == b"\x07abc"


def test_union_bytes_tag():
    class M(bw.Struct):
        magic: bytes = bw.field(len=2)
        body: A | B = bw.field(tag="magic", cases={b"AA": A, b"BB": B})

    assert M(magic=b"BB", body=B(y=1)).pack() == b"BB\x00\x01"
    assert M.unpack(b"AA\x09").body == A(x=9)
    with pytest.raises(bw.DecodeError):
        M.unpack(b"CC\x09")


def test_union_with_dict_codec():
    codec = bw.compile(U)
    assert codec.unpack(b"\x01\x05") == {"kind": 1, "body": {"x": 5}}
    assert codec.pack({"kind": 2, "body": {"y": 5}}) == b"\x02\x00\x05"


def test_union_scalar_cases():
    class S(bw.Struct):
        kind: bw.U8
        v: int = bw.field(tag="kind", cases={1: bw.U8, 2: bw.U32})

    assert S(kind=2, v=7).pack() == b"\x02\x00\x00\x00\x07"
    assert S.unpack(b"\x01\x07").v == 7


def test_union_tag_expression():
    class S(bw.Struct):
        hdr: bw.U8
        body: A | B = bw.field(tag="hdr >> 4", cases={1: A, 2: B})

    assert S.unpack(b"\x1f\x05").body == A(x=5)
    assert S(hdr=0x20, body=B(y=1)).pack() == b"\x20\x00\x01"
