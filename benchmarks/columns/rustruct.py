"""rustruct-core per message (`Codec.unpack_from` in a loop) plus `pyarrow.Table.from_pylist`."""

from __future__ import annotations

from typing import Any

from benchmarks.columns import data
from benchmarks.columns.arm import ColumnArm, same_rows
from benchmarks.harness import DirectCall, need
from benchmarks.wire.rustruct import TELEMETRY


def telemetry(tel: data.Envelopes, conf: dict[str, Any]) -> ColumnArm:
    unpack_from = need("rustruct").compile(TELEMETRY, byteorder="big").unpack_from
    from_pylist = need("pyarrow").Table.from_pylist

    def rows(buf: bytes) -> Any:
        out, offset, end = [], 0, len(buf)
        while offset < end:
            value, offset = unpack_from(buf, offset)
            out.append(value)
        return from_pylist(out)

    return ColumnArm(DirectCall(rows, tel.data), lambda t: same_rows(t, tel.rows), len(tel.rows))


ARMS = {"telemetry": {"rustruct unpack_from loop + from_pylist": telemetry}}
