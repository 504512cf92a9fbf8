"""bytewright.dask: `read_records` on a LocalCluster, and the `bytewright` family."""

from __future__ import annotations

from typing import Any

from benchmarks.bench_data import CLASSES
from benchmarks.harness import DirectCall, need

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


def gather_frame(client: Any, paths: list[str]) -> Any:
    """The whole DataFrame in this process, as docs/dask.md advises for large results: one
    future per partition, fetched from the workers and concatenated here."""
    pd = need("pandas")
    parts = client.compute(reader(paths).to_delayed())
    return pd.concat(client.gather(parts), ignore_index=True)


def compute_frame(client: Any, paths: list[str]) -> Any:
    """`read_records(...).compute()` on the client's cluster (Dask's default finalize:
    every partition concatenated in one task on one worker, then sent here)."""
    return client.compute(reader(paths), sync=True)


def scan(data: bytes) -> Any:
    """What `read_records(scan=True)` does to plan a file: walk its message sizes."""
    need("bytewright", "Codec.scan_messages")
    return DirectCall(record_class().__bw__.codec.scan_messages, data)


def decode(data: bytes) -> Any:
    """What a partition does with the same bytes: decode them into columns, one thread."""
    return DirectCall(record_class().__bw__.codec.unpack_table, data, threads=1)


def family() -> str:
    need("bytewright.dask", "register").register(classes=CLASSES, hmac_key=HMAC_KEY)
    return "bytewright"


def unsigned_family() -> str:
    """The family without `hmac_key`: as unauthenticated as the pickle family, so the
    like-for-like comparison (registered under its own name beside the signed one)."""
    need("bytewright.dask", "register")
    from bytewright.dask._family import Family
    from distributed.protocol.serialize import register_serialization_family

    unsigned = Family(classes=CLASSES)
    register_serialization_family(UNSIGNED, unsigned.dumps, unsigned.loads)
    return UNSIGNED


UNSIGNED = "bytewright-unsigned"
ARMS = {"bytewright family": family, "bytewright family, no key": unsigned_family}
