"""bytewright.dask: `read_records` on a LocalCluster, and the `bytewright` family."""

from __future__ import annotations

from typing import Any

from benchmarks.bench_data import CLASSES
from benchmarks.harness import need

HMAC_KEY = b"bytewright-benchmark-key-32bytes"


def record_class() -> Any:
    """The telemetry Record, importable by worker processes (see benchmarks.dask.schema)."""
    need("bytewright.dask", "read_records")
    from benchmarks.dask.schema import Record

    return Record


def reader(paths: list[str], blocksize: str = "64 MiB") -> Any:
    """The Dask DataFrame of every Record message in the files (built lazily)."""
    read_records = need("bytewright.dask", "read_records").read_records
    return read_records(paths, record_class(), blocksize=blocksize)


def family() -> str:
    need("bytewright.dask", "register").register(classes=CLASSES, hmac_key=HMAC_KEY)
    return "bytewright"


ARMS = {"bytewright family": family}
