"""`ctypes`: a packed big-endian Structure; scalars only (one static layout per size)."""

from __future__ import annotations

import ctypes

from benchmarks.harness import NotApplicable
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case, WireArm


def case(workload: str, size: int) -> Case:
    if workload != "scalars":
        raise NotApplicable("one static Structure cannot model a count read from the message")
    fields = [(name, ctypes.c_uint16) for name in w.scalar_names(size)]
    cls = type(f"Scalars{size}", (ctypes.BigEndianStructure,), {"_pack_": 1, "_fields_": fields})
    held = cls(**w.scalars_value(size))  # populated outside the timed path
    return Case(held, bytes, cls.from_buffer_copy, w.reader(workload, size, attributes=True))


def build() -> bytes:
    raise NotApplicable("ctypes cannot express the telemetry frame")


ARMS = {"ctypes": WireArm(case, build)}
