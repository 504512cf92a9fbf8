"""The fitted sweep: gate every arm, time pack and unpack at every size, fit the lines."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from benchmarks.arms import Incorrect, NotApplicable, describe
from benchmarks.fit import Line, fit_line
from benchmarks.progress import Reporter
from benchmarks.sampling import Sampling, measure_many
from benchmarks.wire import workloads as w
from benchmarks.wire.base import Implementation
from benchmarks.wire.workloads import Case

OPS = ("pack", "unpack")


@dataclass
class Arm:
    """One implementation, one workload, one direction."""

    impl: str
    status: str = "ok"  # ok | unavailable | incorrect | n/a
    reason: str = ""
    points: dict[int, float] = field(default_factory=dict)  # size -> ns per call
    line: Line | None = None


def gate(case: Case, workload: str, size: int) -> tuple[str, str]:
    """(pack problem, unpack problem); empty strings when the arm is correct."""
    reference = w.reference_bytes(workload, size)
    expected = w.reference_checksum(workload, size)
    problems = []
    try:
        packed = case.pack_held()
        problems.append(
            ""
            if bytes(packed) == reference
            else f"pack gives {len(packed)} different bytes (expected {len(reference)})"
        )
    except Exception as exc:
        problems.append(f"pack raised {describe(exc)}")
    try:
        got = case.unpack_sum(reference)
        problems.append("" if got == expected else f"checksum {got} != {expected}")
    except Exception as exc:
        problems.append(f"unpack raised {describe(exc)}")
    return problems[0], problems[1]


def run_workload(
    impls: list[Implementation],
    workload: str,
    sizes: tuple[int, ...],
    sampling: Sampling,
    reporter: Reporter,
) -> dict[str, dict[str, Arm]]:
    """{op: {impl: Arm}} for one workload."""
    arms: dict[str, dict[str, Arm]] = {op: {} for op in OPS}
    all_cases: dict[str, dict[int, Case]] = {}
    for impl in impls:
        pack_arm, unpack_arm = Arm(impl.name), Arm(impl.name)
        arms["pack"][impl.name], arms["unpack"][impl.name] = pack_arm, unpack_arm
        cases: dict[int, Case] = {}
        for size in sizes:
            try:
                cases[size] = impl.case(workload, size)
            except Exception as exc:  # Unavailable, NotApplicable, or a broken schema
                status = (
                    "n/a"
                    if isinstance(exc, NotApplicable)
                    else "incorrect"
                    if isinstance(exc, Incorrect)
                    else "unavailable"
                )
                for arm in (pack_arm, unpack_arm):
                    arm.status, arm.reason = status, describe(exc)
                break
            pack_problem, unpack_problem = gate(cases[size], workload, size)
            for arm, problem in ((pack_arm, pack_problem), (unpack_arm, unpack_problem)):
                if problem and arm.status == "ok":
                    arm.status, arm.reason = "incorrect", f"{workload}({size}): {problem}"
        all_cases[impl.name] = cases
    # Time every correct arm at one size together, rounds interleaved across arms.
    for size in sizes:
        reference = w.reference_bytes(workload, size)
        reporter.step(f"{workload}({size}): every arm, pack and unpack")
        fns: dict[tuple[str, str], Callable[[], object]] = {}
        for op in OPS:
            for name, arm in arms[op].items():
                if arm.status == "ok":
                    case = all_cases[name][size]
                    fns[(op, name)] = (
                        partial(case.pack, case.held)
                        if op == "pack"
                        else partial(case.unpack_sum, reference)
                    )
        for (op, name), ns in measure_many(fns, sampling).items():
            arms[op][name].points[size] = ns
        reporter.advance(2 * len(impls))
    for by_impl in arms.values():
        for arm in by_impl.values():
            if arm.status == "ok" and arm.points:
                xs = sorted(arm.points)
                arm.line = fit_line(xs, [arm.points[x] for x in xs])
    return arms
