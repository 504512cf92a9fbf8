"""Build cost: constructing the telemetry schema from nothing, plus the first pack."""

from __future__ import annotations

from benchmarks.arms import NotApplicable, describe
from benchmarks.progress import Reporter
from benchmarks.sampling import Sampling, measure_ns
from benchmarks.tables import Table, fmt_us
from benchmarks.wire import workloads as w
from benchmarks.wire.base import Implementation


def run_build_cost(
    impls: list[Implementation], sampling: Sampling, reporter: Reporter
) -> tuple[Table, dict[str, float]]:
    table = Table(
        "Build cost: telemetry schema from nothing, then its first pack",
        ["Implementation", "µs", "Status"],
        note="Includes the first pack of telemetry(1), so lazily compiled schemas pay for it.",
    )
    measured: dict[str, float] = {}
    reference = w.reference_bytes("telemetry", 1)
    for impl in impls:
        reporter.step(f"build {impl.name}")
        try:
            if impl.build_telemetry() != reference:
                table.add(impl.name, "—", "incorrect: bytes differ")
            else:
                measured[impl.name] = measure_ns(impl.build_telemetry, sampling)
                table.add(impl.name, fmt_us(measured[impl.name]), "ok")
        except NotApplicable as exc:
            table.add(impl.name, "—", f"n/a: {describe(exc)}")
        except Exception as exc:
            table.add(impl.name, "—", f"unavailable: {describe(exc)}")
        reporter.advance()
    return table, measured
