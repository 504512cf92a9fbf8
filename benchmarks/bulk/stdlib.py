"""The standard-library ways to pack `<IHHQ` records, as in the `struct` lab."""

from __future__ import annotations

import struct
from typing import Any

FORMAT = "<IHHQ"
RECORD_SIZE = struct.calcsize(FORMAT)  # 16
Records = list[tuple[int, int, int, int]]


def struct_pack_join(items: Records) -> bytes:
    pack = struct.pack
    return b"".join([pack(FORMAT, *t) for t in items])


def struct_obj_pack_join(items: Records) -> bytes:
    pack = struct.Struct(FORMAT).pack
    return b"".join([pack(*t) for t in items])


def struct_pack_into(items: Records) -> bytearray:
    s = struct.Struct(FORMAT)
    pack_into, size = s.pack_into, s.size
    buf = bytearray(size * len(items))
    off = 0
    for t in items:
        pack_into(buf, off, *t)
        off += size
    return buf


def to_bytes_join(items: Records) -> bytes:
    parts: list[bytes] = []
    append = parts.append
    for a, b, c, d in items:
        append(a.to_bytes(4, "little"))
        append(b.to_bytes(2, "little"))
        append(c.to_bytes(2, "little"))
        append(d.to_bytes(8, "little"))
    return b"".join(parts)


def to_bytes_memoryview(items: Records) -> bytearray:
    buf = bytearray(RECORD_SIZE * len(items))
    mv = memoryview(buf)
    off = 0
    for a, b, c, d in items:
        mv[off : off + 4] = a.to_bytes(4, "little")
        mv[off + 4 : off + 6] = b.to_bytes(2, "little")
        mv[off + 6 : off + 8] = c.to_bytes(2, "little")
        mv[off + 8 : off + 16] = d.to_bytes(8, "little")
        off += 16
    mv.release()
    return buf


def manual_shifts(items: Records) -> bytearray:
    buf = bytearray(RECORD_SIZE * len(items))
    o = 0
    for a, b, c, d in items:
        buf[o] = a & 0xFF
        buf[o + 1] = (a >> 8) & 0xFF
        buf[o + 2] = (a >> 16) & 0xFF
        buf[o + 3] = (a >> 24) & 0xFF
        buf[o + 4] = b & 0xFF
        buf[o + 5] = (b >> 8) & 0xFF
        buf[o + 6] = c & 0xFF
        buf[o + 7] = (c >> 8) & 0xFF
        for k in range(8):
            buf[o + 8 + k] = (d >> (8 * k)) & 0xFF
        o += 16
    return buf


ARMS: dict[str, Any] = {
    "struct.pack + join": lambda: struct_pack_join,
    "Struct.pack + join": lambda: struct_obj_pack_join,
    "Struct.pack_into presized bytearray": lambda: struct_pack_into,
    "int.to_bytes x4 + join": lambda: to_bytes_join,
    "int.to_bytes via memoryview": lambda: to_bytes_memoryview,
    "manual shifts into bytearray": lambda: manual_shifts,
}
