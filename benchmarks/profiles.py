"""The three profiles: `smoke` (the test suite), `default` (`make bench`), `full`."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.sampling import Sampling


@dataclass(frozen=True)
class Profile:
    """Every size and count a run uses."""

    name: str
    sampling: Sampling  # wire sweeps, IO case and bulk records
    graph_sampling: Sampling  # object graphs: best of 5, as the pysafe-pickle page
    scalars: tuple[int, ...]
    vector: tuple[int, ...]
    telemetry: tuple[int, ...]
    io_bytes: int  # BytesIO size for the IO case
    thread_jobs: int
    thread_workers: tuple[int, ...]
    thread_rounds: int
    lab_records: int
    hmac_mb: tuple[float, ...]
    graph_threads: tuple[int, ...]
    graph_thread_loads: int  # loads per thread-case run, split across the threads


MS = 1_000_000

PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        sampling=Sampling(budget_ns=MS // 5, rounds=1),
        graph_sampling=Sampling(budget_ns=MS // 5, rounds=1),
        scalars=(1, 2, 4),
        vector=(1, 4, 16),
        telemetry=(1, 4, 16),
        io_bytes=64 * 1024,
        thread_jobs=64,
        thread_workers=(1, 2),
        thread_rounds=1,
        lab_records=2_000,
        hmac_mb=(0.25,),
        graph_threads=(1, 2),
        graph_thread_loads=8,
    ),
    "default": Profile(
        name="default",
        sampling=Sampling(budget_ns=20 * MS, rounds=3),
        graph_sampling=Sampling(budget_ns=20 * MS, rounds=5),
        scalars=(1, 2, 4, 8, 16, 32, 64),
        vector=(1, 4, 16, 64, 256, 1024),
        telemetry=(1, 4, 16, 64, 256),
        io_bytes=1024 * 1024,
        thread_jobs=1000,
        thread_workers=(1, 2, 4, 8),
        thread_rounds=3,
        lab_records=200_000,
        hmac_mb=(1, 8, 64),
        graph_threads=(1, 2, 4),
        graph_thread_loads=64,
    ),
    "full": Profile(
        name="full",
        sampling=Sampling(budget_ns=100 * MS, rounds=5),
        graph_sampling=Sampling(budget_ns=100 * MS, rounds=5),
        scalars=(1, 2, 4, 8, 16, 32, 64),
        vector=(1, 4, 16, 64, 256, 1024),
        telemetry=(1, 4, 16, 64, 256),
        io_bytes=1024 * 1024,
        thread_jobs=1000,
        thread_workers=(1, 2, 4, 8),
        thread_rounds=5,
        lab_records=200_000,
        hmac_mb=(1, 8, 64),
        graph_threads=(1, 2, 4),
        graph_thread_loads=256,
    ),
}
