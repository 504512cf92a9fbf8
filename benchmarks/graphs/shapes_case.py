"""Per shape: round-trip gate, dumps and loads (best of 5), payload sizes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks.arms import describe
from benchmarks.graphs.equality import same
from benchmarks.graphs.serializers import PICKLE, Serializer
from benchmarks.progress import Reporter
from benchmarks.sampling import DirectCall, Sampling, measure_many


@dataclass
class ShapeResult:
    dumps_ns: dict[str, float] = field(default_factory=dict)
    loads_ns: dict[str, float] = field(default_factory=dict)
    size: dict[str, int] = field(default_factory=dict)
    # One copy of pickle's payload (`bytes(memoryview(payload))`): no serializer that
    # returns a new bytes object, or a value holding the payload's data, can beat it.
    copy_floor_ns: float | None = None
    problems: dict[str, str] = field(default_factory=dict)  # arm -> why it was not timed


def run_shape(
    value: Any, arms: dict[str, Serializer], sampling: Sampling, reporter: Reporter, label: str
) -> ShapeResult:
    result = ShapeResult()
    payloads: dict[str, bytes] = {}
    for name, arm in arms.items():
        if arm.dumps is None:
            continue
        try:
            payloads[name] = arm.dumps(value)
        except Exception as exc:
            result.problems[name] = f"dumps raised {describe(exc)}"
    fns: dict[tuple[str, str], DirectCall] = {}
    reporter.step(label)
    for name, arm in arms.items():
        source = arm.reads or name
        if name in result.problems or source not in payloads:
            result.problems.setdefault(name, f"no {source} payload to read")
            continue
        data = payloads[source]
        try:
            back = arm.loads(data)
            if not same(value, back, lookalike=arm.lookalike):
                result.problems[name] = "round trip differs from the original"
        except Exception as exc:
            result.problems[name] = f"loads raised {describe(exc)}"
        if name not in result.problems:
            if arm.dumps is not None:
                result.size[name] = len(data)
                fns[("dumps", name)] = DirectCall(arm.dumps, value)
            fns[("loads", name)] = DirectCall(arm.loads, data)
    if PICKLE in payloads:
        fns[("floor", "copy")] = DirectCall(bytes, memoryview(payloads[PICKLE]))
    # Every correct arm is timed together, rounds interleaved across arms.
    for (op, name), ns in measure_many(fns, sampling).items():
        if op == "floor":
            result.copy_floor_ns = ns
        else:
            (result.dumps_ns if op == "dumps" else result.loads_ns)[name] = ns
    reporter.advance(len(arms))
    return result
