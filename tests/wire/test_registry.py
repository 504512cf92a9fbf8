"""Registries: tagged-union variants declared as subclasses of a registry base."""

from __future__ import annotations

import bytewright as bw
import pytest


class Message(bw.Struct, registry="kind"):
    kind: bw.U8
    seq: bw.U16


class Ping(Message, tag=1):
    nonce: bw.U32


class Text(Message, tag=2):
    n: bw.U8
    text: str = bw.field(len="n")


class Raw(Message, default=True):
    data: bytes = bw.field(len=bw.REST)


def test_variant_pack_writes_its_tag():
    assert Ping(seq=7, nonce=0x01020304).pack() == b"\x01\x00\x07\x01\x02\x03\x04"
    assert Text(seq=1, text="hi").pack() == b"\x02\x00\x01\x02hi"
    assert Ping(seq=7, nonce=1).kind == 1


def test_base_unpack_dispatches_to_the_subclass():
    m = Message.unpack(b"\x01\x00\x07\x01\x02\x03\x04")
    assert type(m) is Ping and m == Ping(seq=7, nonce=0x01020304)
    t = Message.unpack(b"\x02\x00\x01\x02hi")
    assert type(t) is Text and t.text == "hi" and t.kind == 2
    assert isinstance(t, Message)


def test_variant_class_unpacks_its_own_wire():
    assert Ping.unpack(b"\x01\x00\x07\x00\x00\x00\x01") == Ping(seq=7, nonce=1)
    with pytest.raises(bw.DecodeError) as ei:
        Ping.unpack(b"\x02\x00\x07\x00\x00\x00\x01")
    assert ei.value.path == "kind" and ei.value.offset == 0


def test_unknown_tag_goes_to_the_default():
    r = Message.unpack(b"\x09\x00\x03xyz")
    assert type(r) is Raw and r.kind == 9 and r.seq == 3 and r.data == b"xyz"
    assert r.pack() == b"\x09\x00\x03xyz"


def test_unknown_tag_without_default_is_decode_error():
    class Cmd(bw.Struct, registry="op"):
        length: bw.U16
        op: bw.U8

    class Start(Cmd, tag=0x10):
        pass

    class Stop(Cmd, tag=0x11):
        code: bw.I8

    assert type(Cmd.unpack(b"\x00\x00\x10")) is Start
    assert Cmd.unpack(b"\x00\x02\x11\xff") == Stop(length=2, code=-1)
    with pytest.raises(bw.DecodeError) as ei:
        Cmd.unpack(b"\x00\x00\x12")
    assert "unknown tag 18" in str(ei.value) and ei.value.offset == 2
    with pytest.raises(bw.DecodeError):
        bw.compile(Cmd).unpack(b"\x00\x00\x12")


def test_wrong_tag_on_a_variant_is_pack_error():
    with pytest.raises(bw.PackError) as ei:
        Ping(kind=2, seq=0, nonce=0).pack()
    assert ei.value.path == "kind"


def test_truncated_input_before_the_tag_is_incomplete():
    class Late(bw.Struct, registry="kind"):
        length: bw.U32
        kind: bw.U8

    class A(Late, tag=1):
        pass

    part = Late.parse(b"\x00\x00")
    assert not part and part.needed == 3
    assert Late.parse(b"\x00\x00\x00\x00\x01") == (A(length=0), 5)


def test_dict_codec_dispatches_on_the_tag_value():
    codec = bw.compile(Message)
    assert codec.unpack(b"\x01\x00\x07\x00\x00\x00\x05") == {"kind": 1, "seq": 7, "nonce": 5}
    assert codec.unpack(b"\x02\x00\x01\x02hi") == {"kind": 2, "seq": 1, "n": 2, "text": "hi"}
    assert codec.unpack(b"\x07\x00\x01!") == {"kind": 7, "seq": 1, "data": b"!"}
    assert codec.pack({"kind": 2, "seq": 1, "text": "hi"}) == b"\x02\x00\x01\x02hi"
    assert codec.pack({"kind": 1, "seq": 7, "nonce": 5}) == b"\x01\x00\x07\x00\x00\x00\x05"
    assert codec.pack({"kind": 7, "seq": 1, "data": b"!"}) == b"\x07\x00\x01!"


def test_registry_as_a_field_type():
    class Batch(bw.Struct):
        count: bw.U8
        messages: list[Message] = bw.field(count="count")

    b = Batch(messages=[Ping(seq=1, nonce=2), Text(seq=2, text="x")])
    wire = b.pack()
    assert wire == b"\x02" + b"\x01\x00\x01\x00\x00\x00\x02" + b"\x02\x00\x02\x01x"
    back = Batch.unpack(wire)
    assert [type(m) for m in back.messages] == [Ping, Text] and back == b


def test_variants_declared_after_first_use_are_seen():
    class Evt(bw.Struct, registry="t"):
        t: bw.U8

    class E1(Evt, tag=1):
        a: bw.U8

    assert type(Evt.unpack(b"\x01\x05")) is E1
    with pytest.raises(bw.DecodeError):
        Evt.unpack(b"\x02\x05\x06")

    class E2(Evt, tag=2):
        a: bw.U8
        b: bw.U8

    assert Evt.unpack(b"\x02\x05\x06") == E2(a=5, b=6)


def test_bytes_tags():
    class Chunk(bw.Struct, registry="kind"):
        kind: bytes = bw.field(len=4)

    class Hdr(Chunk, tag=b"IHDR"):
        width: bw.U32

    class End(Chunk, tag=b"IEND"):
        pass

    assert Hdr(width=5).pack() == b"IHDR\x00\x00\x00\x05"
    assert Chunk.unpack(b"IEND") == End()
    with pytest.raises(bw.DecodeError) as ei:
        Chunk.unpack(b"XXXX")
    assert "unknown tag" in str(ei.value)


def test_registry_schema_errors():
    with pytest.raises(bw.SchemaError) as ei:

        class Orphan(bw.Struct, tag=1):
            a: bw.U8

    assert "registry=" in str(ei.value)

    class Base(bw.Struct, registry="k"):
        k: bw.U8

    class One(Base, tag=1):
        pass

    with pytest.raises(bw.SchemaError) as ei:

        class Dup(Base, tag=1):
            pass

    assert "taken by One" in str(ei.value)

    class D1(Base, default=True):
        pass

    with pytest.raises(bw.SchemaError) as ei:

        class D2(Base, default=True):
            pass

    assert "already has the default variant D1" in str(ei.value)
    with pytest.raises(bw.SchemaError) as ei:

        class BadTag(Base, tag="x"):
            pass

    assert "tag= must be an int or bytes" in str(ei.value)


def test_registry_without_variants_is_schema_error():
    class Empty(bw.Struct, registry="k"):
        k: bw.U8

    with pytest.raises(bw.SchemaError) as ei:
        bw.compile(Empty)
    assert "no variants" in str(ei.value)


def test_tag_after_a_variable_field_is_schema_error():
    class Var(bw.Struct, registry="k"):
        n: bw.U8
        name: bytes = bw.field(len="n")
        k: bw.U8

    class V1(Var, tag=1):
        pass

    with pytest.raises(bw.SchemaError) as ei:
        bw.compile(Var)
    assert "fixed offset" in str(ei.value)


def test_structs_embedding_a_registry_see_later_variants():
    class Ev(bw.Struct, registry="t"):
        t: bw.U8

    class Ev1(Ev, tag=1):
        a: bw.U8

    class Log(bw.Struct):
        n: bw.U8
        events: list[Ev] = bw.field(count="n")

    assert Log.unpack(b"\x01\x01\x05").events == [Ev1(a=5)]

    class Ev2(Ev, tag=2):
        b: bw.U16

    # Log was compiled before Ev2 existed; it used to reject tag 2 as unknown.
    log = Log.unpack(b"\x02\x01\x05\x02\x00\x09")
    assert log.events == [Ev1(a=5), Ev2(b=9)]
    assert log.pack() == b"\x02\x01\x05\x02\x00\x09"


def test_enum_tag_field():
    import enum

    class Kind(enum.IntEnum):
        A = 1
        B = 2

    class M(bw.Struct, registry="kind"):
        kind: Kind = bw.enum(bw.U8)

    class MA(M, tag=Kind.A):
        x: bw.U8

    class MB(M, tag=Kind.B):
        pass

    assert MA(x=3).pack() == b"\x01\x03"
    back = M.unpack(b"\x01\x03")
    assert type(back) is MA and back.kind is Kind.A
    assert M.unpack(b"\x02") == MB()
    assert bw.compile(M).unpack(b"\x01\x05") == {"kind": 1, "x": 5}


def test_bit_field_tag():
    class Hdr(bw.Struct, registry="kind"):
        version: int = bw.bits(4)
        kind: int = bw.bits(4)

    class HA(Hdr, tag=1):
        x: bw.U8

    class HB(Hdr, tag=2):
        pass

    assert HA(version=3, x=9).pack() == b"\x31\x09"
    assert Hdr.unpack(b"\x31\x09") == HA(version=3, x=9)
    assert Hdr.unpack(b"\x32") == HB(version=3)
    with pytest.raises(bw.DecodeError) as ei:
        Hdr.unpack(b"\x35")
    assert "unknown tag 5" in str(ei.value)
    assert bw.compile(Hdr).pack({"version": 1, "kind": 2}) == b"\x12"
