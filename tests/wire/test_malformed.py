"""Malformed input sweeps over the README telemetry message: only a value or DecodeError."""

import bytewright as bw
from conftest import Envelope

CODEC = bw.compile(Envelope)


def outcome(data: bytes) -> object:
    try:
        return Envelope.unpack(data)
    except bw.DecodeError as e:
        assert isinstance(e.path, str)
        assert e.offset is None or 0 <= e.offset <= len(data)
        return e


def test_every_truncation(telemetry):
    for cut in range(len(telemetry)):
        r = outcome(telemetry[:cut])
        assert isinstance(r, bw.DecodeError), cut
        part = CODEC.parse(telemetry[:cut])
        assert isinstance(part, bw.Incomplete) and part.needed >= 1


def test_every_single_byte_flip(telemetry):
    decoded = 0
    for i in range(len(telemetry)):
        for mask in (0x01, 0x80, 0xFF):
            data = bytearray(telemetry)
            data[i] ^= mask
            r = outcome(bytes(data))
            if isinstance(r, Envelope):
                decoded += 1
                # What decodes re-packs to the same bytes (the format has no slack).
                assert r.pack() == bytes(data), i
            try:
                CODEC.unpack_from(bytes(data))
            except bw.DecodeError:
                pass
    assert decoded > 0


def test_appended_and_inserted_bytes(telemetry):
    for extra in (b"\x00", b"\xff" * 7):
        r = outcome(telemetry + extra)
        assert isinstance(r, bw.DecodeError)
        for pos in range(0, len(telemetry), 97):
            outcome(telemetry[:pos] + extra + telemetry[pos:])
