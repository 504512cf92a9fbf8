"""Converters: (decode, encode) callables applied by typed classes, not by dict codecs."""

from __future__ import annotations

import ipaddress
import struct
import uuid
from datetime import UTC, datetime

import bytewright as bw
import pytest


def to_dt(s: int) -> datetime:
    return datetime.fromtimestamp(s, UTC)


def from_dt(d: datetime) -> int:
    return int(d.timestamp())


class Lease(bw.Struct):
    addr: ipaddress.IPv4Address = bw.field(type=bw.U32, convert=(ipaddress.IPv4Address, int))
    client: uuid.UUID = bw.field(
        type=bw.Bytes(16), convert=(lambda b: uuid.UUID(bytes=b), lambda u: u.bytes)
    )
    expires: datetime = bw.field(type=bw.U32, convert=(to_dt, from_dt))
    port: bw.U16


ADDR = ipaddress.IPv4Address("192.168.1.20")
CLIENT = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
WHEN = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WIRE = struct.pack(">I16sIH", int(ADDR), CLIENT.bytes, int(WHEN.timestamp()), 8080)


def test_typed_pack_applies_encoders():
    lease = Lease(addr=ADDR, client=CLIENT, expires=WHEN, port=8080)
    assert lease.pack() == WIRE
    assert ADDR.packed == WIRE[:4]


def test_typed_unpack_applies_decoders():
    lease = Lease.unpack(WIRE)
    assert lease.addr == ADDR and type(lease.addr) is ipaddress.IPv4Address
    assert lease.client == CLIENT and type(lease.client) is uuid.UUID
    assert lease.expires == WHEN and lease.expires.tzinfo is not None
    assert lease.port == 8080
    assert Lease.unpack(lease.pack()) == lease


def test_dict_codec_does_not_convert():
    codec = bw.compile(Lease)
    d = codec.unpack(WIRE)
    assert d == {
        "addr": int(ADDR),
        "client": CLIENT.bytes,
        "expires": int(WHEN.timestamp()),
        "port": 8080,
    }
    assert codec.pack(d) == WIRE
    with pytest.raises(bw.PackError) as ei:
        codec.pack({"addr": ADDR, "client": CLIENT, "expires": WHEN, "port": 1})
    assert ei.value.path in ("addr", "client")


def test_converters_in_nested_lists():
    class Hosts(bw.Struct):
        n: bw.U8
        addrs: list[Lease] = bw.field(count="n")

    h = Hosts(addrs=[Lease(addr=ADDR, client=CLIENT, expires=WHEN, port=p) for p in (1, 2)])
    wire = h.pack()
    assert wire == b"\x02" + WIRE[:-2] + b"\x00\x01" + WIRE[:-2] + b"\x00\x02"
    back = Hosts.unpack(wire)
    assert back == h and all(type(x.addr) is ipaddress.IPv4Address for x in back.addrs)


def test_decoder_failure_is_decode_error_with_path():
    def strict_port(v: int) -> int:
        if v == 0:
            raise ValueError("port 0 is reserved")
        return v

    class Svc(bw.Struct):
        host: bw.U32
        port: int = bw.field(type=bw.U16, convert=(strict_port, int))

    assert Svc.unpack(b"\x00\x00\x00\x01\x00\x50").port == 80
    with pytest.raises(bw.DecodeError) as ei:
        Svc.unpack(b"\x00\x00\x00\x01\x00\x00")
    assert ei.value.path == "port" and "port 0 is reserved" in str(ei.value)
    assert isinstance(ei.value.__cause__, ValueError)


def test_uuid_from_wrong_length_bytes_is_decode_error():
    class Short(bw.Struct):
        n: bw.U8
        u: uuid.UUID = bw.field(
            type=bytes, len="n", convert=(lambda b: uuid.UUID(bytes=b), lambda u: u.bytes)
        )

    assert Short.unpack(b"\x10" + CLIENT.bytes).u == CLIENT
    with pytest.raises(bw.DecodeError) as ei:
        Short.unpack(b"\x03abc")
    assert ei.value.path == "u"


def test_encoder_failure_is_pack_error_with_path():
    with pytest.raises(bw.PackError) as ei:
        Lease(addr="not an address", client=CLIENT, expires=WHEN, port=1).pack()
    assert ei.value.path == "addr" and "converter" in str(ei.value)


def test_encoder_returning_wrong_value_is_pack_error():
    class Bad(bw.Struct):
        v: int = bw.field(type=bw.U8, convert=(int, lambda v: v * 1000))

    assert Bad(v=0).pack() == b"\x00"
    with pytest.raises(bw.PackError) as ei:
        Bad(v=1).pack()
    assert ei.value.path == "v" and "does not fit u8" in str(ei.value)


def test_converter_values_drive_expressions_through_the_wire_value():
    class Scaled(bw.Struct):
        # stored in units of 4 bytes, exposed as a byte count
        words: int = bw.field(type=bw.U8, convert=(lambda w: w * 4, lambda b: b // 4))
        data: bytes = bw.field(len="words * 4")

    s = Scaled(words=8, data=b"12345678")
    assert s.pack() == b"\x0212345678"
    assert Scaled.unpack(b"\x0212345678").words == 8


@pytest.mark.parametrize("bad", [int, (int,), (int, 3), "int"])
def test_bad_convert_is_schema_error(bad):
    with pytest.raises(bw.SchemaError) as ei:

        class C(bw.Struct):
            v: int = bw.field(type=bw.U8, convert=bad)

    assert "convert=" in str(ei.value)


def test_absent_conditional_field_keeps_its_default_unconverted():
    class Opt(bw.Struct):
        flag: bw.U8
        addr: ipaddress.IPv4Address = bw.field(
            type=bw.U32, convert=(ipaddress.IPv4Address, int), when="flag", default=None
        )

    assert Opt.unpack(b"\x01\x0a\x00\x00\x01").addr == ipaddress.IPv4Address("10.0.0.1")
    # The decoder used to be called on the default (IPv4Address(None): a DecodeError).
    assert Opt.unpack(b"\x00") == Opt(flag=0, addr=None)
    assert Opt(flag=0).pack() == b"\x00"
