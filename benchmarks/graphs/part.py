"""Part C: the 16 shapes, HMAC overhead and the thread case, laid out as tables."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bench_data import shapes
from benchmarks.graphs.hmac_case import run_hmac_case
from benchmarks.graphs.serializers import (
    BYTEWRIGHT,
    LOADS_PICKLE,
    PICKLE,
    PYSAFE,
    serializers,
)
from benchmarks.graphs.shapes_case import ShapeResult, run_shape
from benchmarks.graphs.threads_case import run_threads_case, thread_payloads
from benchmarks.plots import plot_speedups
from benchmarks.profiles import Profile
from benchmarks.progress import Reporter
from benchmarks.results import PartResult, Section
from benchmarks.tables import Table, fmt_ratio, fmt_us, ratio


def _time_table(op: str, results: dict[str, ShapeResult], names: list[str]) -> Table:
    table = Table(
        f"{op}: µs per call (best of 5)",
        [
            "Data shape",
            *names,
            "one copy of pickle's payload",
            "pickle ÷ bytewright",
            "pysafe ÷ bytewright",
            "pickle ÷ pysafe",
        ],
        note="Ratios are time ÷ time: above 1 means the right-hand library is faster. "
        "`one copy of pickle's payload` is `bytes(memoryview(payload))`, a floor for any "
        "serializer whose result holds the payload's data.",
    )
    for shape, r in results.items():
        ns = r.dumps_ns if op == "dumps" else r.loads_ns
        cells = []
        for name in names:
            if name in ns:
                cells.append(fmt_us(ns[name]))
            elif op == "dumps" and name == LOADS_PICKLE:
                cells.append("—")
            else:
                cells.append(r.problems.get(name, "—"))
        ours = ns.get(BYTEWRIGHT)
        floor = fmt_us(r.copy_floor_ns) if r.copy_floor_ns is not None else "—"
        table.add(
            shape,
            *cells,
            floor,
            fmt_ratio(ratio(ns.get(PICKLE), ours)),
            fmt_ratio(ratio(ns.get(PYSAFE), ours)),
            fmt_ratio(ratio(ns.get(PICKLE), ns.get(PYSAFE))),
        )
    if op == "loads":
        table.note += f" `{LOADS_PICKLE}` reads pickle's own bytes."
    return table


def _size_table(results: dict[str, ShapeResult]) -> Table:
    table = Table(
        "Payload size in bytes",
        ["Data shape", PICKLE, PYSAFE, BYTEWRIGHT, "pysafe ÷ pickle", "bytewright ÷ pickle"],
    )
    for shape, r in results.items():
        s = r.size
        table.add(
            shape,
            *[f"{s[n]:,}" if n in s else "—" for n in (PICKLE, PYSAFE, BYTEWRIGHT)],
            fmt_ratio(ratio(s.get(PYSAFE), s.get(PICKLE))),
            fmt_ratio(ratio(s.get(BYTEWRIGHT), s.get(PICKLE))),
        )
    return table


def run_graphs(profile: Profile, results_dir: Path, reporter: Reporter) -> PartResult:
    result = PartResult("pickle")
    arms, missing = serializers()
    names = [*arms, *missing]
    for name, reason in missing.items():
        result.unavailable.append(f"pickle/{name}: {reason}")
    data = shapes()
    with_dumps = [a for a in arms.values() if a.dumps is not None]
    total = len(data) * len(arms) + len(profile.hmac_mb) * len(with_dumps)
    total += len(thread_payloads()) * len(with_dumps) * len(profile.graph_threads)
    reporter.start("Part C: object graphs", total)

    results: dict[str, ShapeResult] = {}
    for shape, value in data.items():
        results[shape] = run_shape(value, arms, profile.graph_sampling, reporter, shape)
        for name in names:
            problem = results[shape].problems.get(name) or missing.get(name)
            for op, ns in (("dumps", results[shape].dumps_ns), ("loads", results[shape].loads_ns)):
                if name in ns:
                    result.metrics[(op, shape, name)] = ns[name]
                elif problem:
                    result.missing[(op, shape, name)] = problem
            if name in results[shape].size:
                result.metrics[("size", shape, name)] = results[shape].size[name]
            elif problem:
                result.missing[("size", shape, name)] = problem
            if results[shape].copy_floor_ns is not None:
                result.metrics[("copy_floor", shape)] = results[shape].copy_floor_ns
            if name in results[shape].problems and name in arms:
                result.incorrect.append(f"pickle/{shape}/{name}: {results[shape].problems[name]}")

    hmac_table, worst = run_hmac_case(arms, profile.hmac_mb, profile.graph_sampling, reporter)
    for name, ms in worst.items():
        result.metrics[("hmac", name)] = ms
    for name in names:
        if name not in worst:
            result.missing[("hmac", name)] = missing.get(name, "no signed round trip")
    threads_table = run_threads_case(
        arms, profile.graph_threads, profile.graph_thread_loads, reporter
    )
    reporter.finish()

    section = Section(
        "Part C: object graphs",
        intro=(
            "The 16 shapes of the pysafe-pickle performance page; pickle uses protocol 5. "
            "Every arm's round trip was checked (same types and values; pysafe-pickle's "
            "look-alike dataclasses are accepted for it) before timing."
        ),
        tables=[
            _time_table("dumps", results, names),
            _time_table("loads", results, names),
            _size_table(results),
            hmac_table,
            threads_table,
        ],
    )
    speedups = {
        f"{name} {op}": {
            shape: r_pickle / r_arm
            for shape, r in results.items()
            for times in [r.dumps_ns if op == "dumps" else r.loads_ns]
            if (r_pickle := times.get(PICKLE)) and (r_arm := times.get(name))
        }
        for op in ("dumps", "loads")
        for name in (PYSAFE, BYTEWRIGHT, LOADS_PICKLE)
        if name in arms and not (op == "dumps" and name == LOADS_PICKLE)
    }
    speedups = {label: values for label, values in speedups.items() if values}
    if speedups:
        image = Path("graphs-speedup.png")
        plot_speedups(results_dir / image, "Object graphs: speedup over pickle", speedups)
        section.images.append(image)
    result.sections.append(section)
    return result
