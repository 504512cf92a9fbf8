"""PNG chunks and files, cross-checked against zlib and hand-built files."""

from __future__ import annotations

import struct
import zlib

import bytewright as bw
import pytest
from bytewright.formats import png


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def make_png(width: int, height: int, color_type: int, text: bytes | None = None) -> bytes:
    """A real PNG built by hand with zlib and struct (8-bit, filter 0 on every row)."""
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    rows = b"".join(
        b"\x00" + bytes((x * 7 + y * 13 + c) % 256 for x in range(width) for c in range(channels))
        for y in range(height)
    )
    out = png.SIGNATURE
    out += _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0))
    if text is not None:
        out += _chunk(b"tEXt", text)
    comp = zlib.compress(rows, 9)
    # Split the image data across several IDAT chunks, as encoders do.
    for i in range(0, len(comp), 97):
        out += _chunk(b"IDAT", comp[i : i + 97])
    out += _chunk(b"IEND", b"")
    return out


FILES = [
    make_png(1, 1, 0),
    make_png(16, 9, 2, text=b"Comment\x00made by hand"),
    make_png(64, 48, 6),
    make_png(33, 7, 4),
]


@pytest.mark.parametrize("data", FILES)
def test_real_files_round_trip_byte_identically(data: bytes) -> None:
    f = png.read(data)
    assert f.signature == png.SIGNATURE
    assert f.chunks[0].type == b"IHDR" and f.chunks[-1].type == b"IEND"
    for c in f.chunks:
        assert c.crc == zlib.crc32(c.type + c.data)
        assert c.length == len(c.data)
    assert f.pack() == data
    assert png.write([png.Chunk(type=c.type, data=c.data) for c in f.chunks]) == data
    # The pixels survive: decompressing the IDATs gives one filter byte per row.
    ihdr = png.IHDR.unpack(f.chunks[0].data)
    raw = zlib.decompress(b"".join(c.data for c in f.chunks if c.type == b"IDAT"))
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[ihdr.color_type]
    assert len(raw) == ihdr.height * (1 + ihdr.width * channels)


def test_chunk_crc_equals_zlib() -> None:
    for data in (b"", b"x", bytes(range(256)) * 40):
        wire = png.Chunk(type=b"abCD", data=data).pack()
        assert wire == _chunk(b"abCD", data)


def test_ihdr_fields() -> None:
    f = png.read(FILES[2])
    assert png.IHDR.unpack(f.chunks[0].data) == png.IHDR(
        width=64, height=48, bit_depth=8, color_type=6
    )


def test_corrupt_crc_is_a_decode_error() -> None:
    data = bytearray(FILES[1])
    data[40] ^= 0x01  # inside the tEXt chunk's data
    with pytest.raises(bw.DecodeError) as e:
        png.read(bytes(data))
    assert e.value.path.startswith("chunks[1]")


def test_bad_signature_and_truncation() -> None:
    with pytest.raises(bw.DecodeError) as e:
        png.read(b"\x89PNG\r\n\x1a\x0b" + FILES[0][8:])
    assert e.value.path == "signature"
    for cut in (5, 8 + 3, len(FILES[0]) - 1):
        with pytest.raises(bw.DecodeError):
            png.read(FILES[0][:cut])


def test_every_byte_flip_is_caught() -> None:
    data = FILES[0]
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x40
        try:
            f = png.read(bytes(bad))
        except bw.DecodeError:
            continue
        raise AssertionError(f"flip at {i} decoded: {f!r}")
