"""Shared fixtures of the wire tests: the README telemetry message."""

from __future__ import annotations

import bytewright as bw
import pytest


class Record(bw.Struct):
    record_id: bw.U32
    kind: bw.U8
    status: bw.U8
    code: bw.U16
    x: bw.I32
    y: bw.I32
    reading: bw.U64
    payload_len: bw.U16
    payload: bytes = bw.field(len="payload_len")


class Frame(bw.Struct):
    version: bw.U8
    flags: bw.U8
    message_type: bw.U16
    sequence: bw.U32
    timestamp: bw.U64
    session: bytes = bw.field(len=16)
    source_id: bw.U32
    source_len: bw.U8
    source: str = bw.field(len="source_len", encoding="utf-8")
    record_count: bw.U16
    records: list[Record] = bw.field(count="record_count")


class Envelope(bw.Struct, byteorder="big"):
    frame_size: bw.U32
    frame: Frame = bw.field(size="frame_size")


def make_envelope(n: int = 64) -> Envelope:
    return Envelope(
        frame=Frame(
            version=3,
            flags=0xA5,
            message_type=0x1201,
            sequence=0x10203040,
            timestamp=1_750_000_000_123_456,
            session=bytes(range(16)),
            source_id=0xA0B0C0D0,
            source="edge-gateway-eu",
            records=[
                Record(
                    record_id=10_000 + i,
                    kind=i,
                    status=2,
                    code=11,
                    x=-5,
                    y=7,
                    reading=2**64 - 1,
                    payload=bytes(12 + i % 20),
                )
                for i in range(n)
            ],
        )
    )


@pytest.fixture(scope="session")
def telemetry() -> bytes:
    return make_envelope().pack()
