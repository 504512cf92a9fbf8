"""PNG files: the 8-byte signature, then chunks of length, type, data and CRC-32.

The CRC covers the chunk type and data (not the length), exactly as ``zlib.crc32``
computes it; pack writes it and unpack verifies it.
"""

from __future__ import annotations

import bytewright as bw

__all__ = ["IHDR", "SIGNATURE", "Chunk", "Png", "read", "write"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Chunk(bw.Struct):
    """One chunk; ``length`` and ``crc`` are computed on pack."""

    length: bw.U32 = bw.derived()
    type: bytes = bw.field(len=4)
    data: bytes = bw.field(len="length")
    crc: bw.U32 = bw.checksum("crc32", over=["type", "data"])


class Png(bw.Struct):
    """A whole PNG file: the signature and every chunk up to the end of the data."""

    signature: bytes = bw.const(SIGNATURE)
    chunks: list[Chunk] = bw.field(count=bw.REST)


class IHDR(bw.Struct):
    """The data of the IHDR chunk."""

    width: bw.U32
    height: bw.U32
    bit_depth: bw.U8
    color_type: bw.U8
    compression: bw.U8 = 0
    filter: bw.U8 = 0
    interlace: bw.U8 = 0


_LIMITED: dict[bw.Limits, type[Png]] = {}


def read(data: bytes | bytearray | memoryview, *, limits: bw.Limits | None = None) -> Png:
    """Decodes a PNG file, verifying the signature and every chunk's CRC.

    ``limits`` bounds untrusted input (``max_len`` for a chunk's data, ``max_count`` for
    the number of chunks); the default is the library's (64 MiB, 16 Mi)."""
    if limits is None:
        return Png.unpack(data)
    if not isinstance(limits, bw.Limits):
        raise TypeError(f"limits= must be a bw.Limits, got {limits!r}")
    cls = _LIMITED.get(limits)
    if cls is None:
        # A subclass compiled with these limits: its values are still Png instances.
        cls = _LIMITED[limits] = type("Png", (Png,), {}, limits=limits)
    f = cls.unpack(data)
    f.__class__ = Png  # the same slots: a plain Png, equal to one read without limits
    return f


def write(chunks: list[Chunk]) -> bytes:
    """Encodes a PNG file from its chunks (lengths and CRCs computed)."""
    return Png(chunks=chunks).pack()
