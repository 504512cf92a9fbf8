"""`python -m benchmarks`: run the parts, print tables, write the report."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.env import environment_table
from benchmarks.formats_part import run_formats
from benchmarks.graphs.part import run_graphs
from benchmarks.lab import run_lab
from benchmarks.profiles import PROFILES
from benchmarks.progress import Reporter
from benchmarks.report import render, write
from benchmarks.results import PartResult
from benchmarks.targets import Outcome, evaluate, targets_table
from benchmarks.wire.part import run_wire

PARTS = {"wire": run_wire, "lab": run_lab, "pickle": run_graphs, "formats": run_formats}
DEFAULT_RESULTS = Path(__file__).resolve().parent / "results" / "latest"


@dataclass
class Run:
    parts: list[PartResult]
    outcomes: list[Outcome]
    report: Path
    seconds: float


def run(
    profile: str = "default",
    only: Sequence[str] = (),
    results_dir: Path = DEFAULT_RESULTS,
    *,
    quiet: bool = False,
    command: str = "python -m benchmarks",
) -> Run:
    chosen = PROFILES[profile]
    reporter = Reporter(quiet=quiet)
    results_dir.mkdir(parents=True, exist_ok=True)
    for stale in [*results_dir.glob("*.png"), results_dir / "report.md"]:
        stale.unlink(missing_ok=True)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    environment = environment_table(profile, started)
    reporter.table(environment)
    t0 = time.perf_counter()
    parts: list[PartResult] = []
    for name, part in PARTS.items():
        if only and name not in only:
            continue
        result = part(chosen, results_dir, reporter)
        for section in result.sections:
            for table in section.tables:
                reporter.table(table)
        parts.append(result)
    outcomes = evaluate(parts)
    reporter.table(targets_table(outcomes))
    seconds = time.perf_counter() - t0
    text = render(
        profile=profile,
        command=command,
        seconds=seconds,
        environment=environment,
        parts=parts,
        outcomes=outcomes,
    )
    report = write(results_dir / "report.md", text)
    reporter.line(f"Report: {report} ({seconds:,.0f} s)")
    return Run(parts, outcomes, report, seconds)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--only", action="append", choices=sorted(PARTS), help="run one part (repeatable)"
    )
    parser.add_argument("--profile", choices=sorted(PROFILES), default="default")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="output folder")
    args = parser.parse_args(argv)
    command = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    run(args.profile, args.only or (), args.results, command=command.strip())
    return 0
