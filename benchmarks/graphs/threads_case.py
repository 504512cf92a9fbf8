"""Thread case: loads of a ~1 MB payload across 1, 2 and 4 threads."""

from __future__ import annotations

import time
from multiprocessing.pool import ThreadPool
from typing import Any

from benchmarks.arms import describe
from benchmarks.graphs.serializers import Serializer
from benchmarks.progress import Reporter
from benchmarks.tables import Table, fmt_ratio

ROUNDS = 3


def thread_payloads() -> dict[str, Any]:
    """Opaque bytes (the decoder can release the GIL) and ~1 MB of pickled records."""
    records = [
        {"id": i, "name": f"user{i}", "score": i * 1.5, "active": i % 2 == 0, "tags": ["a", "b"]}
        for i in range(23_500)
    ]
    return {"Bytes (1 MB)": bytes(range(256)) * 4096, "List of Records (~1 MB)": records}


def _run(pool: ThreadPool, loads: Any, jobs: list[bytes]) -> int:
    start = time.perf_counter_ns()
    for _ in pool.imap_unordered(loads, jobs):
        pass
    return time.perf_counter_ns() - start


def run_threads_case(
    arms: dict[str, Serializer], threads: tuple[int, ...], loads_count: int, reporter: Reporter
) -> Table:
    table = Table(
        f"Thread case: {loads_count} loads of a ~1 MB payload split across threads",
        [
            "Payload",
            "Library",
            *[f"{n} thread{'s' * (n > 1)} ms/load" for n in threads],
            "Best speedup",
        ],
        note=f"Wall time per load, best of {ROUNDS} runs after a warm-up run.",
    )
    for label, value in thread_payloads().items():
        for name, arm in arms.items():
            if arm.dumps is None:
                continue
            try:
                data = arm.dumps(value)
                arm.loads(data)
            except Exception as exc:
                table.add(label, name, *["—" for _ in threads], f"unavailable: {describe(exc)}")
                reporter.advance(len(threads))
                continue
            jobs = [data] * loads_count
            per_load = []
            for n in threads:
                reporter.step(f"threads {label} {name} x{n}")
                with ThreadPool(n) as pool:
                    _run(pool, arm.loads, jobs)
                    best = min(_run(pool, arm.loads, jobs) for _ in range(ROUNDS))
                per_load.append(best / loads_count / 1e6)
                reporter.advance()
            speedup = per_load[0] / min(per_load)
            table.add(label, name, *[f"{ms:.3f}" for ms in per_load], fmt_ratio(speedup))
    return table
