"""The IO case: a BytesIO of back-to-back 3066-byte frames, read then unpacked."""

from __future__ import annotations

import io
from collections.abc import Callable

from benchmarks.progress import Reporter
from benchmarks.sampling import Sampling, measure_many
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
    fns: dict[str, Callable[[], object]] = {"read": read_only}
    for name, case in cases.items():
        unpack_sum = case.unpack_sum

        def pipeline(unpack_sum: Callable[[bytes], int] = unpack_sum) -> None:
            seek(0)
            for _ in range(count):
                unpack_sum(read(size))

        fns[name] = pipeline
    # Every pipeline is timed together, rounds interleaved across them.
    reporter.step("io: read alone and read + unpack")
    per_frame = {name: ns / count for name, ns in measure_many(fns, sampling).items()}
    reporter.advance(len(fns))
    for name, ns in per_frame.items():
        label = f"BytesIO.read({size}) alone" if name == "read" else f"read + unpack: {name}"
        table.add(label, fmt_ns(ns), f"{mib_per_s(size, ns):,.1f}")
    return table, per_frame
