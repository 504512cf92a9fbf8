"""One process: a `struct` loop over the files into one list per column, then pandas."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from benchmarks.harness import need

NAMES = "record_id kind status code x y reading payload_len payload".split()


def frame(paths: list[str]) -> Any:
    pd = need("pandas")
    head = struct.Struct(">IBBHiiQH")
    unpack_from, size = head.unpack_from, head.size
    cols: dict[str, list[Any]] = {name: [] for name in NAMES}
    record_id, kind, status, code, x, y, reading, payload_len, payload = cols.values()
    for path in paths:
        buf = Path(path).read_bytes()
        off, end = 0, len(buf)
        while off < end:
            r, k, s, c, xx, yy, value, n = unpack_from(buf, off)
            off += size
            record_id.append(r)
            kind.append(k)
            status.append(s)
            code.append(c)
            x.append(xx)
            y.append(yy)
            reading.append(value)
            payload_len.append(n)
            payload.append(buf[off : off + n])
            off += n
    return pd.DataFrame(cols)
