"""`ctypes`: a packed big-endian Structure; scalars only (one static layout per size)."""

from __future__ import annotations

import ctypes

from benchmarks.arms import NotApplicable
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case


def scalars_type(n: int) -> type[ctypes.BigEndianStructure]:
    fields = [(name, ctypes.c_uint16) for name in w.scalar_names(n)]
    return type(f"Scalars{n}", (ctypes.BigEndianStructure,), {"_pack_": 1, "_fields_": fields})


class CtypesImpl:
    name = "ctypes"

    def case(self, workload: str, size: int) -> Case:
        if workload != "scalars":
            raise NotApplicable("one static Structure cannot model a count read from the message")
        cls = scalars_type(size)
        held = cls(**w.scalars_value(size))  # populated outside the timed path
        return Case(held, bytes, cls.from_buffer_copy, w.reader(workload, size, attributes=True))

    def build_telemetry(self) -> bytes:
        raise NotApplicable("ctypes cannot express the telemetry frame")
