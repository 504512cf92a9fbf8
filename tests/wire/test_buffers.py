"""Inputs of every buffer type; pack_into; unpack, unpack_from and parse."""

import mmap

import bytewright as bw
import pytest
from conftest import Envelope, make_envelope


class S(bw.Struct, byteorder="little"):
    a: bw.U16
    n: bw.U8
    data: bytes = bw.field(len="n")


VALUE = S(a=0x0102, data=b"xyz")
WIRE = b"\x02\x01\x03xyz"


def inputs(data: bytes):
    yield data
    yield bytearray(data)
    yield memoryview(data)
    yield memoryview(b"??" + data + b"!!")[2:-2]
    m = mmap.mmap(-1, len(data))
    m.write(data)
    yield m
    try:
        import numpy as np
    except ImportError:
        return
    yield np.frombuffer(data, dtype=np.uint8)


def test_pack_bytes():
    out = VALUE.pack()
    assert out == WIRE and type(out) is bytes


@pytest.mark.parametrize("kind", range(6))
def test_unpack_any_buffer(kind):
    bufs = list(inputs(WIRE))
    if kind >= len(bufs):
        pytest.skip("numpy is not installed")
    buf = bufs[kind]
    assert S.unpack(buf) == VALUE
    assert bw.compile(S).unpack(buf) == {"a": 0x0102, "n": 3, "data": b"xyz"}
    assert S.unpack_from(buf) == (VALUE, len(WIRE))
    assert S.parse(buf) == (VALUE, len(WIRE))
    assert type(S.unpack(buf).data) is bytes


def test_numpy_uint8():
    np = pytest.importorskip("numpy")
    arr = np.frombuffer(WIRE, dtype=np.uint8)
    assert S.unpack(arr) == VALUE
    out = np.zeros(10, dtype=np.uint8)
    assert VALUE.pack_into(out, 2) == 2 + len(WIRE)
    assert out.tobytes() == b"\x00\x00" + WIRE + b"\x00\x00"


def test_non_contiguous_or_bad_input():
    with pytest.raises((TypeError, ValueError, BufferError)):
        S.unpack(memoryview(WIRE * 2)[::2])
    with pytest.raises(TypeError):
        S.unpack("text")


def test_decoded_bytes_do_not_alias_input():
    buf = bytearray(WIRE)
    v = S.unpack(buf)
    buf[3:6] = b"abc"
    assert v.data == b"xyz"


def test_pack_into_offsets():
    buf = bytearray(b"\xee" * 12)
    end = VALUE.pack_into(buf, 3)
    assert end == 3 + len(WIRE)
    assert bytes(buf) == b"\xee" * 3 + WIRE + b"\xee" * 3
    mv = memoryview(bytearray(len(WIRE)))
    assert VALUE.pack_into(mv) == len(WIRE)
    assert bytes(mv) == WIRE
    codec = bw.compile(S)
    buf2 = bytearray(8)
    assert codec.pack_into(buf2, {"a": 0x0102, "data": b"xyz"}, 2) == 8
    assert bytes(buf2) == b"\x00\x00" + WIRE


def test_pack_into_mmap():
    m = mmap.mmap(-1, 16)
    assert VALUE.pack_into(m, 1) == 1 + len(WIRE)
    assert m[1 : 1 + len(WIRE)] == WIRE


def test_pack_into_too_small():
    for size, off in ((len(WIRE) - 1, 0), (len(WIRE), 1), (3, 0), (0, 0)):
        buf = bytearray(size)
        with pytest.raises(bw.PackError):
            VALUE.pack_into(buf, off)
    with pytest.raises((bw.PackError, ValueError)):
        VALUE.pack_into(bytearray(20), 21)


def test_pack_into_readonly():
    with pytest.raises((TypeError, BufferError, bw.PackError)):
        VALUE.pack_into(b"\x00" * 20)


def test_pack_into_window_derived():
    env = make_envelope(3)
    wire = env.pack()
    buf = bytearray(len(wire) + 5)
    assert env.pack_into(buf, 5) == len(buf)
    assert bytes(buf[5:]) == wire


def test_unpack_trailing_bytes():
    with pytest.raises(bw.DecodeError) as ei:
        S.unpack(WIRE + b"\x00")
    assert ei.value.offset == len(WIRE)


def test_unpack_from_offsets():
    data = b"junk" + WIRE + b"tail"
    assert S.unpack_from(data, 4) == (VALUE, 4 + len(WIRE))
    assert bw.compile(S).unpack_from(data, 4)[1] == 4 + len(WIRE)
    with pytest.raises(bw.DecodeError):
        S.unpack_from(data, 100)
    with pytest.raises(bw.DecodeError):
        S.unpack_from(data, len(data) - 2)


def test_parse_returns_incomplete_for_every_truncation(telemetry):
    for cut in range(len(telemetry)):
        part = Envelope.parse(telemetry[:cut])
        assert isinstance(part, bw.Incomplete), cut
        assert not part
        assert part.needed >= 1
    obj, end = Envelope.parse(telemetry)
    assert end == len(telemetry) and obj.pack() == telemetry


def test_parse_feeding_needed_converges(telemetry):
    have = 0
    steps = 0
    while True:
        r = Envelope.parse(telemetry[:have])
        if r:
            obj, end = r
            assert end == len(telemetry)
            assert obj.pack() == telemetry
            break
        assert r.needed >= 1 and have + r.needed <= len(telemetry)
        have += r.needed
        steps += 1
        assert steps < 1000
    assert steps >= 2  # the frame size, then (at least) the whole window


def test_parse_at_offset_and_codec_parse(telemetry):
    data = b"xx" + telemetry
    r = Envelope.parse(data, 2)
    assert r and r[1] == len(data)
    codec = bw.compile(Envelope)
    part = codec.parse(telemetry[:10])
    assert isinstance(part, bw.Incomplete) and not part
    value, end = codec.parse(telemetry)
    assert end == len(telemetry) and codec.pack(value) == telemetry


def test_parse_still_raises_on_malformed():
    class M(bw.Struct):
        magic: bytes = bw.const(b"MG")
        a: bw.U32

    with pytest.raises(bw.DecodeError):
        M.parse(b"XX\x00")
    assert isinstance(M.parse(b"MG\x00"), bw.Incomplete)


def test_incomplete_repr_eq():
    a = bw.Incomplete(3)
    assert a == bw.Incomplete(3) and a != bw.Incomplete(4)
    assert repr(a) == "Incomplete(needed=3)" and not a
