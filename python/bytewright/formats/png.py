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


def read(data: bytes | bytearray | memoryview) -> Png:
    """Decodes a PNG file, verifying the signature and every chunk's CRC."""
    return Png.unpack(data)


def write(chunks: list[Chunk]) -> bytes:
    """Encodes a PNG file from its chunks (lengths and CRCs computed)."""
    return Png(chunks=chunks).pack()
