"""Part A: run the sweep, build cost, IO and thread cases, and lay out their tables."""

from __future__ import annotations

from pathlib import Path

from benchmarks.arms import describe
from benchmarks.plots import plot_fits
from benchmarks.profiles import Profile
from benchmarks.progress import Reporter
from benchmarks.results import PartResult, Section
from benchmarks.tables import Table, fmt_ns, fmt_ratio, ratio
from benchmarks.wire import workloads as w
from benchmarks.wire.build_cost import run_build_cost
from benchmarks.wire.io_case import FRAME_RECORDS, run_io_case
from benchmarks.wire.registry import implementations
from benchmarks.wire.sweep import OPS, Arm, gate, run_workload
from benchmarks.wire.threads_case import RECORDS_PER_JOB, run_threads_case
from benchmarks.wire.workloads import Case

BASELINE = "struct"
OURS = "bytewright-codec"


def _status(arm: Arm) -> str:
    return "ok" if arm.status == "ok" else f"{arm.status}: {arm.reason}"


def _fitted_table(workload: str, op: str, arms: dict[str, Arm]) -> Table:
    unit = w.UNIT[workload]
    table = Table(
        f"{workload} {op}: fitted ns = call cost + slope x {unit}s",
        ["Implementation", f"ns/{unit}", "call cost ns", "÷ struct", f"÷ {OURS}", "Status"],
    )
    base = arms.get(BASELINE)
    ours = arms.get(OURS)
    base_slope = base.line.slope if base and base.line else None
    our_slope = ours.line.slope if ours and ours.line else None
    for name, arm in arms.items():
        if arm.status == "n/a":
            continue
        slope = arm.line.slope if arm.line else None
        table.add(
            name,
            fmt_ns(slope),
            fmt_ns(arm.line.intercept if arm.line else None),
            fmt_ratio(ratio(slope, base_slope)),
            fmt_ratio(ratio(slope, our_slope)),
            _status(arm),
        )
    return table


def _points_table(workload: str, op: str, sizes: tuple[int, ...], arms: dict[str, Arm]) -> Table:
    table = Table(
        f"{workload} {op}: measured ns per call",
        ["Implementation", *[f"{w.UNIT[workload][0]}={s}" for s in sizes]],
    )
    for name, arm in arms.items():
        if arm.status == "ok":
            table.add(name, *[fmt_ns(arm.points.get(s)) for s in sizes])
    return table


def _snapshot(all_arms: dict[str, dict[str, dict[str, Arm]]], names: list[str]) -> Table:
    table = Table(
        "Snapshot: fitted incremental cost (lower is better)",
        ["Workload and fitted cost", *names],
        note="— : not applicable or not measured (see each workload's table for the reason).",
    )
    for workload, by_op in all_arms.items():
        for op in OPS:
            cells = []
            for name in names:
                arm = by_op[op].get(name)
                cells.append(fmt_ns(arm.line.slope) if arm and arm.line else "—")
            table.add(f"{workload} {op}, ns/{w.UNIT[workload]}", *cells)
    return table


def _peer_ratios(
    all_arms: dict[str, dict[str, dict[str, Arm]]], ours: str, names: list[str]
) -> Table:
    peers = [n for n in names if n != ours]
    table = Table(
        f"Ratios against each peer: {ours} slope ÷ peer slope",
        ["Workload and direction", *peers],
        note="Below 1.00x: bytewright is cheaper per field, item or record than that peer.",
    )
    for workload, by_op in all_arms.items():
        for op in OPS:
            mine = by_op[op].get(ours)
            cells = []
            for peer in peers:
                other = by_op[op].get(peer)
                if (
                    mine
                    and mine.line
                    and other
                    and other.line
                    and min(mine.line.slope, other.line.slope) > 0
                ):
                    cells.append(fmt_ratio(ratio(mine.line.slope, other.line.slope)))
                else:
                    cells.append("—")
            table.add(f"{workload} {op}", *cells)
    return table


def _gated_case(impl_cases: dict[str, Case], impls: list, size: int) -> dict[str, Case]:
    """Telemetry(size) cases of the arms that pass both gates at that size."""
    for impl in impls:
        try:
            case = impl.case("telemetry", size)
        except Exception:
            continue
        if gate(case, "telemetry", size) == ("", ""):
            impl_cases[impl.name] = case
    return impl_cases


def run_wire(profile: Profile, results_dir: Path, reporter: Reporter) -> PartResult:
    impls = implementations()
    names = [impl.name for impl in impls]
    result = PartResult("wire")
    sweeps = {"scalars": profile.scalars, "vector": profile.vector, "telemetry": profile.telemetry}
    total = sum(len(sizes) * 2 * len(impls) for sizes in sweeps.values())
    reporter.start("Part A: wire sweep", total)
    all_arms: dict[str, dict[str, dict[str, Arm]]] = {}
    for workload, sizes in sweeps.items():
        all_arms[workload] = run_workload(impls, workload, sizes, profile.sampling, reporter)
    reporter.finish()

    overview = Section(
        "Part A: wire codecs",
        intro=(
            "Pack starts from the named mapping or typed object a user holds; unpack "
            "materializes each library's named result and reads every field into a checksum. "
            "Every arm was gated first: identical bytes and the same checksum, or it is "
            "reported incorrect and not timed. Slopes come from a least-squares fit over "
            "the sizes; the intercept is the call cost."
        ),
    )
    overview.tables.append(_snapshot(all_arms, names))
    for ours in (OURS, "bytewright"):
        overview.tables.append(_peer_ratios(all_arms, ours, names))
    result.sections.append(overview)

    for workload, by_op in all_arms.items():
        section = Section(f"Part A: {workload}")
        panels = {}
        for op in OPS:
            arms = by_op[op]
            section.tables.append(_fitted_table(workload, op, arms))
            section.tables.append(_points_table(workload, op, sweeps[workload], arms))
            panels[op] = {n: (a.points, a.line) for n, a in arms.items() if a.line is not None}
            for name, arm in arms.items():
                key = ("slope", workload, op, name)
                if arm.line is not None:
                    result.metrics[key] = arm.line.slope
                    result.metrics[("intercept", workload, op, name)] = arm.line.intercept
                else:
                    result.missing[key] = f"{arm.status}: {arm.reason}"
                if arm.status == "incorrect":
                    result.incorrect.append(f"wire/{workload}/{op}/{name}: {arm.reason}")
                elif arm.status == "unavailable":
                    result.unavailable.append(f"wire/{workload}/{name}: {arm.reason}")
        if any(panels.values()):
            image = Path(f"wire-{workload}.png")
            plot_fits(results_dir / image, workload, w.UNIT[workload], panels)
            section.images.append(image)
        result.sections.append(section)

    extra = Section("Part A: build cost, IO and threads")
    io_cases = _gated_case({}, impls, FRAME_RECORDS)
    thread_cases = _gated_case({}, impls, RECORDS_PER_JOB)
    total = len(impls) + 1 + len(io_cases)
    total += 2 * len(thread_cases) * len(profile.thread_workers)
    reporter.start("Part A: build, IO, threads", total)
    try:
        build_table, build_ns = run_build_cost(impls, profile.sampling, reporter)
        extra.tables.append(build_table)
        for name, ns in build_ns.items():
            result.metrics[("build", name)] = ns
        io_table, io_ns = run_io_case(io_cases, profile.io_bytes, profile.sampling, reporter)
        extra.tables.append(io_table)
        for name, ns in io_ns.items():
            result.metrics[("io", name)] = ns
        extra.tables.append(
            run_threads_case(
                thread_cases,
                profile.thread_jobs,
                profile.thread_workers,
                profile.thread_rounds,
                reporter,
            )
        )
    except Exception as exc:  # a broken case must not sink the whole part
        extra.intro = f"Stopped early: {describe(exc)}"
    reporter.finish()
    result.sections.append(extra)
    return result
