"""`construct`: the declarative Python interpreter, with its idiomatic derived lengths."""

from __future__ import annotations

import functools
from typing import Any

from benchmarks.harness import need
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case, WireArm


def telemetry_schema() -> Any:
    c = need("construct")
    record = c.Struct(
        "record_id" / c.Int32ub,
        "kind" / c.Int8ub,
        "status" / c.Int8ub,
        "code" / c.Int16ub,
        "x" / c.Int32sb,
        "y" / c.Int32sb,
        "reading" / c.Int64ub,
        "payload" / c.Prefixed(c.Int16ub, c.GreedyBytes),
    )
    frame = c.Struct(
        "version" / c.Int8ub,
        "flags" / c.Int8ub,
        "message_type" / c.Int16ub,
        "sequence" / c.Int32ub,
        "timestamp" / c.Int64ub,
        "session" / c.Bytes(16),
        "source_id" / c.Int32ub,
        "source" / c.PascalString(c.Int8ub, "utf8"),
        "records" / c.PrefixedArray(c.Int16ub, record),
    )
    return c.Struct("frame" / c.Prefixed(c.Int32ub, frame))


@functools.cache
def schema(workload: str, size: int) -> Any:
    c = need("construct")
    if workload == "scalars":
        return c.Struct(*[name / c.Int16ub for name in w.scalar_names(size)])
    if workload == "vector":
        item = c.Struct("a" / c.Int16ub, "b" / c.Int16ub)
        return c.Struct("items" / c.PrefixedArray(c.Int16ub, item))
    return telemetry_schema()


def case(workload: str, size: int) -> Case:
    s = schema(workload, 0 if workload != "scalars" else size)
    read = w.reader(workload, size, attributes=False)
    return Case(w.value(workload, size), s.build, s.parse, read)


ARMS = {"construct": WireArm(case, lambda: telemetry_schema().build(w.telemetry_value(1)))}
