"""Part A: wire codecs, as in rustruct's performance page: a fitted sweep, IO and threads."""

from __future__ import annotations

import io
import statistics
import time
from multiprocessing.pool import ThreadPool
from pathlib import Path
from typing import Any

from benchmarks import plots
from benchmarks.harness import DirectCall, Incorrect, Sampling, gate, measure
from benchmarks.report import Part, Section, Table, Ui, fmt, ratio
from benchmarks.wire import bytewright, construct, ctypes, dataclasses_struct, rustruct, struct
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case, WireArm

ARMS: dict[str, WireArm] = {
    **struct.ARMS,
    **ctypes.ARMS,
    **dataclasses_struct.ARMS,
    **construct.ARMS,
    **rustruct.ARMS,
    **bytewright.ARMS,
}
OPS = ("pack", "unpack")
BASELINE, OURS = "struct", "bytewright-codec"
IO_RECORDS, THREAD_RECORDS, CHUNKSIZE = 64, 16, 8  # a 3066-byte frame; telemetry(16) jobs


def fit(points: dict[int, float]) -> tuple[float, float]:
    """(slope, intercept) of `ns = intercept + slope * size`, by least squares."""
    xs = sorted(points)
    if len(xs) == 1:
        return points[xs[0]] / xs[0], 0.0
    return statistics.linear_regression(xs, [points[x] for x in xs])


def gated(workload: str, size: int, arm: WireArm) -> tuple[Case | None, dict[str, str]]:
    """The arm's case and its status per direction: identical bytes, then the checksum."""
    reference = w.reference_bytes(workload, size)
    checksum = w.reference_checksum(workload, size)

    def same_bytes(out: Any) -> None:
        if bytes(out) != reference:
            raise Incorrect(f"pack gives {len(out)} different bytes (expected {len(reference)})")

    def same_sum(total: Any) -> None:
        if total != checksum:
            raise Incorrect(f"checksum {total} != {checksum}")

    statuses, case = {}, None
    for op, check in (("pack", same_bytes), ("unpack", same_sum)):

        def prepare(op: str = op) -> Any:
            nonlocal case
            case = case or arm.case(workload, size)
            return (
                DirectCall(case.pack, case.held)
                if op == "pack"
                else DirectCall(case.unpack_sum, reference)
            )

        call, statuses[op] = gate(prepare, check)
        if call is None and not statuses[op].startswith("incorrect"):
            return None, {o: statuses[op] for o in OPS}  # unavailable or n/a: both directions
    return case, statuses


def sweep(workload: str, sizes: list[int], sampling: Sampling, ui: Ui) -> dict[str, dict[str, Any]]:
    """{op: {arm: {"status", "points", "line"}}}: every size gated first, then timed."""
    arms = {op: {name: {"status": "ok", "points": {}} for name in ARMS} for op in OPS}
    cases: dict[str, dict[int, Case]] = {name: {} for name in ARMS}
    for name, arm in ARMS.items():
        for size in sizes:
            case, statuses = gated(workload, size, arm)
            for op in OPS:
                if statuses[op] != "ok" and arms[op][name]["status"] == "ok":
                    where = f"{workload}({size}): " if statuses[op].startswith("incorrect") else ""
                    kind, _, why = statuses[op].partition(": ")
                    arms[op][name]["status"] = f"{kind}: {where}{why}"
            if case is None:
                break
            cases[name][size] = case
    for size in sizes:
        ui.step(f"{workload}({size}): every arm, pack and unpack", advance=1)
        reference = w.reference_bytes(workload, size)
        calls = {
            (op, name): DirectCall(c.pack, c.held)
            if op == "pack"
            else DirectCall(c.unpack_sum, reference)
            for op in OPS
            for name in ARMS
            if arms[op][name]["status"] == "ok" and (c := cases[name].get(size))
        }
        for (op, name), ns in measure(calls, sampling).items():
            arms[op][name]["points"][size] = ns
    for by_arm in arms.values():
        for arm in by_arm.values():
            arm["line"] = fit(arm["points"]) if arm["status"] == "ok" and arm["points"] else None
    return arms


def run_io(cases: dict[str, Case], total_bytes: int, sampling: Sampling) -> Table:
    frame = w.reference_bytes("telemetry", IO_RECORDS)
    size, count = len(frame), max(1, total_bytes // len(frame))
    stream = io.BytesIO(frame * count)
    read, seek = stream.read, stream.seek

    def read_only() -> None:
        seek(0)
        for _ in range(count):
            read(size)

    def pipeline(unpack_sum: Any) -> None:
        seek(0)
        for _ in range(count):
            unpack_sum(read(size))

    calls = {"read": read_only} | {n: DirectCall(pipeline, c.unpack_sum) for n, c in cases.items()}
    table = Table(
        f"IO case: BytesIO of {count} x {size}-byte frames ({count * size / (1 << 20):.2f} MiB)",
        ["Pipeline", "ns per frame", "MiB/s"],
        note="read+unpack includes reading every field into the checksum, as in the sweep.",
    )
    for name, ns in measure(calls, sampling).items():
        label = f"BytesIO.read({size}) alone" if name == "read" else f"read + unpack: {name}"
        table.add(label, fmt(ns / count), f"{size / (ns / count * 1e-9) / (1 << 20):,.1f}")
    return table


def run_threads(
    cases: dict[str, Case], jobs: int, workers: list[int], rounds: int, ui: Ui
) -> Table:
    table = Table(
        f"Thread case: {jobs} jobs of telemetry({THREAD_RECORDS}), chunksize {CHUNKSIZE}",
        [
            "Operation",
            "Implementation",
            *[f"{n} worker{'s' * (n > 1)}" for n in workers],
            "Best speedup",
        ],
        note=f"µs per job, best of {rounds} runs after one warm-up run.",
    )
    reference = w.reference_bytes("telemetry", THREAD_RECORDS)

    def once(pool: ThreadPool, fn: Any, job_list: list[Any]) -> int:
        start = time.perf_counter_ns()
        for _ in pool.imap_unordered(fn, job_list, chunksize=CHUNKSIZE):
            pass
        return time.perf_counter_ns() - start

    for op in OPS:
        for name, case in cases.items():
            fn, job = (case.pack, case.held) if op == "pack" else (case.unpack_sum, reference)
            per_job = []
            for n in workers:
                ui.step(f"threads {op} {name} x{n}", advance=1)
                with ThreadPool(n) as pool:
                    once(pool, fn, [job] * jobs)
                    per_job.append(
                        min(once(pool, fn, [job] * jobs) for _ in range(rounds)) / jobs / 1000
                    )
            table.add(op, name, *[f"{us:,.2f}" for us in per_job], ratio(per_job[0], min(per_job)))
    return table


def run(conf: dict[str, Any], sampling: Sampling, out: Path, ui: Ui) -> Part:
    part = Part("wire")
    sweeps = {k: conf[k] for k in w.UNIT}
    ui.start("Part A: wire sweep", sum(len(s) for s in sweeps.values()))
    results = {workload: sweep(workload, sizes, sampling, ui) for workload, sizes in sweeps.items()}
    names = list(ARMS)

    def slope(workload: str, op: str, name: str) -> float | None:
        line = results[workload][op][name]["line"]
        return line[0] if line else None

    snapshot = Table(
        "Snapshot: fitted incremental cost (lower is better)",
        ["Workload and fitted cost", *names],
        note="— : not applicable or not measured (see each workload's table for the reason).",
    )
    peers = {
        ours: Table(
            f"Ratios against each peer: {ours} slope ÷ peer slope",
            ["Workload and direction", *[n for n in names if n != ours]],
            note="Below 1.00x: bytewright is cheaper per field, item or record than that peer.",
        )
        for ours in (OURS, "bytewright")
    }
    for workload in sweeps:
        for op in OPS:
            snapshot.add(
                f"{workload} {op}, ns/{w.UNIT[workload]}",
                *[fmt(slope(workload, op, n)) for n in names],
            )
            for ours, table in peers.items():
                mine = slope(workload, op, ours)
                cells = [
                    ratio(mine, theirs) if mine and theirs and min(mine, theirs) > 0 else "—"
                    for n in names
                    if n != ours
                    for theirs in [slope(workload, op, n)]
                ]
                table.add(f"{workload} {op}", *cells)
    part.sections.append(
        Section(
            "Part A: wire codecs",
            intro=(
                "Pack starts from the named mapping or typed object a user holds; unpack "
                "materializes each library's named result and reads every field into a checksum. "
                "Every arm was gated first: identical bytes and the same checksum, or it is "
                "reported incorrect and not timed. Slopes come from a least-squares fit over "
                "the sizes; the intercept is the call cost."
            ),
            tables=[snapshot, *peers.values()],
        )
    )

    for workload, by_op in results.items():
        unit = w.UNIT[workload]
        section = Section(f"Part A: {workload}")
        for op, arms in by_op.items():
            fitted = Table(
                f"{workload} {op}: fitted ns = call cost + slope x {unit}s",
                ["Implementation", f"ns/{unit}", "call cost ns", "÷ struct", f"÷ {OURS}", "Status"],
            )
            points = Table(
                f"{workload} {op}: measured ns per call",
                ["Implementation", *[f"{unit[0]}={s}" for s in sweeps[workload]]],
            )
            for name, arm in arms.items():
                line = arm["line"]
                part.record(f"wire/slope/{workload}/{op}/{name}", line and line[0], arm["status"])
                part.record(
                    f"wire/intercept/{workload}/{op}/{name}", line and line[1], arm["status"]
                )
                where = f"{op}/{name}" if arm["status"].startswith("incorrect") else name
                part.arm_status(f"wire/{workload}/{where}", arm["status"])
                if arm["status"].startswith("n/a"):
                    continue
                mine = line[0] if line else None
                fitted.add(
                    name,
                    fmt(mine),
                    fmt(line[1] if line else None),
                    ratio(mine, slope(workload, op, BASELINE)),
                    ratio(mine, slope(workload, op, OURS)),
                    arm["status"],
                )
                if line:
                    points.add(name, *[fmt(arm["points"].get(s)) for s in sweeps[workload]])
            section.tables += [fitted, points]
        lines = {
            op: {n: (a["points"], a["line"]) for n, a in arms.items() if a["line"]}
            for op, arms in by_op.items()
        }
        if any(lines.values()):
            image = Path(f"wire-{workload}.png")
            plots.fits(out / image, workload, unit, lines)
            section.images.append(image)
        part.sections.append(section)

    def passing(records: int) -> dict[str, Case]:
        return {
            name: case
            for name, arm in ARMS.items()
            for case, statuses in [gated("telemetry", records, arm)]
            if case is not None and set(statuses.values()) == {"ok"}
        }

    workers = conf["thread_workers"]
    io_cases, thread_cases = passing(IO_RECORDS), passing(THREAD_RECORDS)
    ui.start("Part A: IO and threads", 2 * len(thread_cases) * len(workers))
    io_table = run_io(io_cases, conf["io_bytes"], sampling)
    threads = run_threads(thread_cases, conf["thread_jobs"], workers, conf["thread_rounds"], ui)
    ui.finish()
    part.sections.append(Section("Part A: IO and threads", tables=[io_table, threads]))
    return part
