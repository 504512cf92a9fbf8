"""Hand-made bytewright.pickle records for the tests: a body framed as `dumps` frames it."""

from __future__ import annotations


def record(body: bytes, flags: int = 0) -> bytes:
    """The record around `body`: magic, version, `flags`, the body's length as a varint."""
    n = len(body)
    length = bytearray()
    while n >= 0x80:
        length.append((n & 0x7F) | 0x80)
        n >>= 7
    length.append(n)
    return b"BW\x01" + bytes([flags]) + bytes(length) + body
