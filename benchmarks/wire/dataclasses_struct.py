"""`dataclasses-struct`: a dataclass over one struct format; scalars only (fixed length)."""

from __future__ import annotations

from benchmarks.harness import NotApplicable, need
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case, WireArm


def case(workload: str, size: int) -> Case:
    dcs = need("dataclasses_struct")
    if workload != "scalars":
        raise NotApplicable("fixed-length layouts only")
    body = {"__annotations__": {name: dcs.U16 for name in w.scalar_names(size)}}
    cls = dcs.dataclass_struct(size="std", byteorder="big")(type(f"Scalars{size}", (), body))
    held = cls(**w.scalars_value(size))
    return Case(held, cls.pack, cls.from_packed, w.reader(workload, size, attributes=True))


def build() -> bytes:
    raise NotApplicable("dataclasses-struct cannot express the telemetry frame")


ARMS = {"dataclasses-struct": WireArm(case, build)}
