"""NumPy: `np.frombuffer` with a structured dtype plus a contiguous copy of each field, and
the structured assembly of records from columns."""

from __future__ import annotations

from typing import Any

from benchmarks.columns import data
from benchmarks.columns.arm import ColumnArm, same_columns
from benchmarks.harness import DirectCall, Incorrect, need


def _dtype() -> Any:
    return need("numpy").dtype([("a", "<u4"), ("b", "<u2"), ("c", "<u2"), ("d", "<u8")])


def unpack(lab: data.Lab, conf: dict[str, Any]) -> ColumnArm:
    np, dtype = need("numpy"), _dtype()

    def columns(buf: bytes) -> dict[str, Any]:
        records = np.frombuffer(buf, dtype=dtype)
        return {name: records[name].copy() for name in data.LAB_NAMES}

    return ColumnArm(
        DirectCall(columns, lab.data), lambda c: same_columns(c, lab.columns), lab.count
    )


def pack(lab: data.Lab, conf: dict[str, Any]) -> ColumnArm:
    np, dtype = need("numpy"), _dtype()

    def assemble(columns: dict[str, Any]) -> bytes:
        records = np.empty(len(columns["a"]), dtype=dtype)
        for name in data.LAB_NAMES:
            records[name] = columns[name]
        return records.tobytes()

    def check(out: bytes) -> None:
        if out != lab.data:
            raise Incorrect("assembled bytes differ from struct's")

    return ColumnArm(DirectCall(assemble, lab.columns), check, lab.count)


ARMS = {
    "lab unpack": {"numpy frombuffer + column copies": unpack},
    "lab pack": {"numpy structured assembly": pack},
}
