"""The thread case: telemetry(16) jobs through ThreadPool.imap_unordered, chunksize 8."""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing.pool import ThreadPool
from typing import Any

from benchmarks.progress import Reporter
from benchmarks.tables import Table, fmt_ratio
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case

RECORDS_PER_JOB = 16
CHUNKSIZE = 8


def _run(pool: ThreadPool, fn: Callable[[Any], Any], jobs: list[Any]) -> int:
    start = time.perf_counter_ns()
    for _ in pool.imap_unordered(fn, jobs, chunksize=CHUNKSIZE):
        pass
    return time.perf_counter_ns() - start


def run_threads_case(
    cases: dict[str, Case],
    jobs: int,
    workers: tuple[int, ...],
    rounds: int,
    reporter: Reporter,
) -> Table:
    """`cases` holds the telemetry(16) case of every arm that passed its gate."""
    table = Table(
        f"Thread case: {jobs} jobs of telemetry({RECORDS_PER_JOB}), chunksize {CHUNKSIZE}",
        [
            "Operation",
            "Implementation",
            *[f"{n} worker{'s' * (n > 1)}" for n in workers],
            "Best speedup",
        ],
        note=f"µs per job, best of {rounds} runs after one warm-up run.",
    )
    reference = w.reference_bytes("telemetry", RECORDS_PER_JOB)
    for op in ("pack", "unpack"):
        for name, case in cases.items():
            fn = case.pack if op == "pack" else case.unpack_sum
            job_list = [case.held if op == "pack" else reference] * jobs
            per_job: list[float] = []
            for n in workers:
                reporter.step(f"threads {op} {name} x{n}")
                with ThreadPool(n) as pool:
                    _run(pool, fn, job_list)
                    best = min(_run(pool, fn, job_list) for _ in range(rounds))
                per_job.append(best / jobs / 1000)
                reporter.advance()
            speedup = per_job[0] / min(per_job)
            table.add(op, name, *[f"{us:,.2f}" for us in per_job], fmt_ratio(speedup))
    return table
