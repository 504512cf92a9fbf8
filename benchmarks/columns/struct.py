"""`struct.iter_unpack` into one list per column."""

from __future__ import annotations

import struct
from typing import Any

from benchmarks.columns import data
from benchmarks.columns.arm import ColumnArm, same_columns
from benchmarks.harness import DirectCall


def unpack(lab: data.Lab, conf: dict[str, Any]) -> ColumnArm:
    def columns(buf: bytes) -> dict[str, list[int]]:
        rows = struct.iter_unpack(data.LAB_FORMAT, buf)
        return dict(zip(data.LAB_NAMES, map(list, zip(*rows, strict=True)), strict=True))

    check = lambda c: same_columns(c, lab.columns)  # noqa: E731
    return ColumnArm(DirectCall(columns, lab.data), check, lab.count)


ARMS = {"lab unpack": {"struct.iter_unpack into column lists": unpack}}
