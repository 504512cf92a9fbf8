"""`construct`: the declarative Python interpreter, with its idiomatic derived lengths."""

from __future__ import annotations

from typing import Any

from benchmarks.arms import unavailable_from
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case


def _construct() -> Any:
    try:
        import construct
    except ImportError as exc:
        raise unavailable_from(exc) from exc
    return construct


def scalars_schema(n: int) -> Any:
    c = _construct()
    return c.Struct(*[name / c.Int16ub for name in w.scalar_names(n)])


def vector_schema() -> Any:
    c = _construct()
    item = c.Struct("a" / c.Int16ub, "b" / c.Int16ub)
    return c.Struct("items" / c.PrefixedArray(c.Int16ub, item))


def telemetry_schema() -> Any:
    c = _construct()
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


class ConstructImpl:
    name = "construct"

    def __init__(self) -> None:
        self._schemas: dict[str, Any] = {}

    def _schema(self, workload: str, size: int) -> Any:
        key = f"{workload}{size}" if workload == "scalars" else workload
        if key not in self._schemas:
            if workload == "scalars":
                self._schemas[key] = scalars_schema(size)
            elif workload == "vector":
                self._schemas[key] = vector_schema()
            else:
                self._schemas[key] = telemetry_schema()
        return self._schemas[key]

    def case(self, workload: str, size: int) -> Case:
        schema = self._schema(workload, size)
        held = w.value(workload, size)
        return Case(held, schema.build, schema.parse, w.reader(workload, size, attributes=False))

    def build_telemetry(self) -> bytes:
        return telemetry_schema().build(w.telemetry_value(1))
