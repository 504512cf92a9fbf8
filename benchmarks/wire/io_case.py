"""The IO case: a BytesIO of back-to-back 3066-byte frames, read then unpacked."""

from __future__ import annotations

import io

from benchmarks.progress import Reporter
from benchmarks.sampling import Sampling, measure_ns
from benchmarks.tables import Table, fmt_ns
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case

FRAME_RECORDS = 64  # 3066 bytes


def mib_per_s(nbytes: int, ns: float) -> float:
    return nbytes / (ns * 1e-9) / (1 << 20)


def run_io_case(
    cases: dict[str, Case], total_bytes: int, sampling: Sampling, reporter: Reporter
) -> tuple[Table, dict[str, float]]:
    """`cases` holds the telemetry(64) case of every arm that passed its gate."""
    frame = w.reference_bytes("telemetry", FRAME_RECORDS)
    size = len(frame)
    count = max(1, total_bytes // size)
    stream = io.BytesIO(frame * count)
    read, seek = stream.read, stream.seek

    def read_only() -> None:
        seek(0)
        for _ in range(count):
            read(size)

    table = Table(
        f"IO case: BytesIO of {count} x {size}-byte frames ({count * size / (1 << 20):.2f} MiB)",
        ["Pipeline", "ns per frame", "MiB/s"],
        note="read+unpack includes reading every field into the checksum, as in the sweep.",
    )
    reporter.step("io read")
    per_frame: dict[str, float] = {"read": measure_ns(read_only, sampling) / count}
    reporter.advance()
    table.add(
        f"BytesIO.read({size}) alone",
        fmt_ns(per_frame["read"]),
        f"{mib_per_s(size, per_frame['read']):,.1f}",
    )
    for name, case in cases.items():
        reporter.step(f"io {name}")
        unpack_sum = case.unpack_sum

        def pipeline(unpack_sum=unpack_sum) -> None:  # type: ignore[no-untyped-def]
            seek(0)
            for _ in range(count):
                unpack_sum(read(size))

        per_frame[name] = measure_ns(pipeline, sampling) / count
        table.add(
            f"read + unpack: {name}",
            fmt_ns(per_frame[name]),
            f"{mib_per_s(size, per_frame[name]):,.1f}",
        )
        reporter.advance()
    return table, per_frame
