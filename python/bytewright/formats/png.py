"""PNG files: the 8-byte signature, then chunks of length, type, data and CRC-32.

The CRC covers the chunk type and data (not the length), exactly as ``zlib.crc32``
computes it; pack writes it and unpack verifies it.
"""

from __future__ import annotations

import bytewright as bw

__all__ = ["IHDR", "SIGNATURE", "Chunk", "Png", "read", "write"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Chunk(bw.Struct):
    """One chunk; ``length`` and ``crc`` are computed on pack.

    >>> from bytewright.formats import png
    >>> png.Chunk(type=b"IEND", data=b"").pack()
    b'\\x00\\x00\\x00\\x00IEND\\xaeB`\\x82'
    >>> png.Chunk.unpack(b"\\x00\\x00\\x00\\x00IEND\\x00\\x00\\x00\\x00")
    Traceback (most recent call last):
        ...
    bytewright.errors.DecodeError: crc: checksum mismatch: stored 0x00000000, computed 0xae426082
    """

    length: bw.U32 = bw.derived()
    type: bytes = bw.field(len=4)
    data: bytes = bw.field(len="length")
    crc: bw.U32 = bw.checksum("crc32", over=["type", "data"])


class Png(bw.Struct):
    """A whole PNG file: the signature and every chunk up to the end of the data.

    >>> from bytewright.formats import png
    >>> f = png.Png.unpack(png.write([png.Chunk(type=b"IEND", data=b"")]))
    >>> [c.type for c in f.chunks]
    [b'IEND']
    """

    signature: bytes = bw.const(SIGNATURE)
    chunks: list[Chunk] = bw.field(count=bw.REST)


class IHDR(bw.Struct):
    """The data of the IHDR chunk.

    >>> from bytewright.formats import png
    >>> head = png.IHDR(width=640, height=480, bit_depth=8, color_type=2)
    >>> data = head.pack()
    >>> len(data), png.IHDR.unpack(data).width
    (13, 640)
    """

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
    the number of chunks); the default is the library's (64 MiB, 16 Mi).

    >>> import bytewright as bw
    >>> from bytewright.formats import png
    >>> data = png.write([png.Chunk(type=b"tEXt", data=b"a\\x00b"), png.Chunk(type=b"IEND", data=b"")])
    >>> [c.type for c in png.read(data).chunks]
    [b'tEXt', b'IEND']
    >>> png.read(data, limits=bw.Limits(max_count=1))
    Traceback (most recent call last):
        ...
    bytewright.errors.DecodeError: chunks: more than 1 items (the count limit)
    """
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
    """Encodes a PNG file from its chunks (lengths and CRCs computed).

    >>> from bytewright.formats import png
    >>> data = png.write([png.Chunk(type=b"IEND", data=b"")])
    >>> data[:8] == png.SIGNATURE, len(data)
    (True, 20)
    """
    return Png(chunks=chunks).pack()
