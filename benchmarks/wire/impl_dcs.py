"""`dataclasses-struct`: a dataclass over one struct format; scalars only (fixed length)."""

from __future__ import annotations

from typing import Any

from benchmarks.arms import NotApplicable, unavailable_from
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case


def scalars_type(n: int) -> Any:
    try:
        import dataclasses_struct as dcs
    except ImportError as exc:
        raise unavailable_from(exc) from exc
    body = {"__annotations__": {name: dcs.U16 for name in w.scalar_names(n)}}
    return dcs.dataclass_struct(size="std", byteorder="big")(type(f"Scalars{n}", (), body))


class DataclassesStructImpl:
    name = "dataclasses-struct"

    def case(self, workload: str, size: int) -> Case:
        if workload != "scalars":
            raise NotApplicable("fixed-length layouts only")
        cls = scalars_type(size)
        held = cls(**w.scalars_value(size))
        return Case(held, cls.pack, cls.from_packed, w.reader(workload, size, attributes=True))

    def build_telemetry(self) -> bytes:
        raise NotApplicable("dataclasses-struct cannot express the telemetry frame")
