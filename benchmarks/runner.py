"""`python -m benchmarks`: run the parts of a profile, evaluate the targets, write the report."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import targets
from benchmarks.harness import Sampling, describe
from benchmarks.report import Part, Ui, environment, load_average, render

HERE = Path(__file__).resolve().parent
PARTS = ("wire", "bulk", "graphs", "columns", "dask", "formats", "startup")  # report order
DEFAULT_RESULTS = HERE / "results" / "latest"


@dataclass
class Run:
    parts: list[Part]
    outcomes: list[targets.Outcome]
    report: Path
    seconds: float


def profile(name: str) -> dict[str, Any]:
    """A profile of profiles.toml, with its `base` profile filled in under it."""
    profiles = tomllib.loads((HERE / "profiles.toml").read_text(encoding="utf-8"))
    chosen = profiles[name]
    base = profile(chosen["base"]) if "base" in chosen else {}
    merged = {**base, **{k: v for k, v in chosen.items() if not isinstance(v, dict)}}
    for key in {k for k, v in [*base.items(), *chosen.items()] if isinstance(v, dict)}:
        merged[key] = {**base.get(key, {}), **chosen.get(key, {})}
    return merged


def run(
    profile_name: str = "default",
    only: Sequence[str] = (),
    results: Path = DEFAULT_RESULTS,
    *,
    quiet: bool = False,
    command: str = "python -m benchmarks",
) -> Run:
    conf = profile(profile_name)
    ui = Ui(quiet=quiet)
    results.mkdir(parents=True, exist_ok=True)
    for stale in [*results.glob("*.png"), results / "report.md"]:
        stale.unlink(missing_ok=True)
    env = environment(profile_name, datetime.now(UTC).strftime("%Y-%m-%d %H:%M"))
    ui.table(env)
    t0 = time.perf_counter()
    parts, spent = [], {}
    for name in PARTS:
        if only and name not in only:
            continue
        part_conf = conf[name]
        budget_ms = part_conf.get("budget_ms", conf["budget_ms"])
        sampling = Sampling(int(budget_ms * 1e6), part_conf.get("rounds", conf["rounds"]))
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            part = module.run(part_conf, sampling, results, ui)
        except Exception as exc:  # a broken part is reported; the other parts still run
            ui.finish()
            ui.console.print_exception()
            part = Part(name, incorrect=[f"{name}: the part raised {describe(exc)}"])
        for table in (t for s in part.sections for t in s.tables):
            ui.table(table)
        parts.append(part)
        spent[name] = time.perf_counter() - started
    outcomes = targets.evaluate(parts)
    ui.table(targets.table(outcomes))
    seconds = time.perf_counter() - t0
    verdicts = [o.verdict for o in outcomes]
    summary = ", ".join(
        f"{verdicts.count(v)} {v}"
        for v in (targets.MET, targets.MISSED, targets.NOT_MEASURED)
        if v in verdicts
    )
    header = "\n".join(
        [
            "# bytewright benchmark report",
            "",
            f"Profile `{profile_name}`, produced by `{command}` in {seconds:,.0f} s. Targets: {summary}.",
            "Seconds per part: " + ", ".join(f"{n} {s:,.0f}" for n, s in spent.items()) + ".",
            f"Load average at the end (1/5/15 min): {load_average()} on {os.cpu_count()} cores; "
            "a load above the core count means other work competed with the run (noisy numbers).",
            "Lower times are better. Every arm passed its correctness gate before it was timed;",
            "arms that did not are listed with the reason instead of a number.",
        ]
    )
    report = results / "report.md"
    report.write_text(render(header, env, targets.table(outcomes), parts), encoding="utf-8")
    ui.console.print(f"Report: {report} ({seconds:,.0f} s)")
    return Run(parts, outcomes, report, seconds)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--only", action="append", choices=PARTS, help="run one part (repeatable)")
    parser.add_argument(
        "--profile", default="default", help="smoke, default or full (profiles.toml)"
    )
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="output folder")
    args = parser.parse_args(argv)
    command = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    run(args.profile, args.only or (), args.results, command=command.strip())
    return 0
