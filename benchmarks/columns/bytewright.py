"""bytewright: `unpack_table`/`pack_table` on Struct classes, `formats.pcap.read_table`, and
per-message `iter_unpack` plus `pyarrow.Table.from_pylist` as the object-per-record path."""

from __future__ import annotations

from typing import Any

from benchmarks.bulk.bytewright import record_class
from benchmarks.columns.arm import ColumnArm, capture_columns, same_columns, same_rows
from benchmarks.harness import DirectCall, Incorrect, need
from benchmarks.wire.bytewright import CLASSES


def _with(cls: Any, method: str) -> Any:
    need("bytewright", f"Struct.{method}", "Table")
    return cls


def lab_unpack(lab: Any, conf: dict[str, Any]) -> ColumnArm:
    cls = _with(record_class(), "unpack_table")
    check = lambda t: same_columns(t.to_numpy(), lab.columns)  # noqa: E731
    return ColumnArm(DirectCall(cls.unpack_table, lab.data), check, lab.count)


def lab_pack(lab: Any, conf: dict[str, Any]) -> ColumnArm:
    cls = _with(record_class(), "pack_table")

    def check(out: Any) -> None:
        if bytes(out) != lab.data:
            raise Incorrect("pack_table bytes differ from struct's")

    return ColumnArm(DirectCall(cls.pack_table, lab.columns), check, lab.count)


def telemetry_table(tel: Any, conf: dict[str, Any]) -> ColumnArm:
    cls = _with(CLASSES()["Envelope"], "unpack_table")

    def to_arrow(buf: bytes) -> Any:
        return cls.unpack_table(buf).to_arrow()

    return ColumnArm(
        DirectCall(to_arrow, tel.data), lambda t: same_rows(t, tel.rows), len(tel.rows)
    )


def telemetry_per_message(tel: Any, conf: dict[str, Any]) -> ColumnArm:
    from_pylist = need("pyarrow").Table.from_pylist
    iter_unpack = need("bytewright", "compile").compile(CLASSES()["Envelope"]).iter_unpack

    def rows(buf: bytes) -> Any:
        return from_pylist(iter_unpack(buf))

    return ColumnArm(DirectCall(rows, tel.data), lambda t: same_rows(t, tel.rows), len(tel.rows))


def pcap(cap: Any, conf: dict[str, Any]) -> ColumnArm:
    read_table = need("bytewright.formats.pcap", "read_table").read_table
    check = lambda t: capture_columns(t.to_arrow(), cap.lengths, cap.sports)  # noqa: E731
    return ColumnArm(DirectCall(read_table, cap.data), check, len(cap.lengths))


def threads(n: int, variable: bool) -> Any:
    def prepare(inp: Any, conf: dict[str, Any]) -> ColumnArm:
        if variable:
            cls = _with(CLASSES()["Record"], "unpack_table")

            def check(t: Any) -> None:
                got, total = t.to_arrow(), need("pyarrow.compute").sum
                if len(t) != inp.count or any(
                    total(got[k]).as_py() != s for k, s in inp.sums.items()
                ):
                    raise Incorrect("the columns' sums differ from the generated records'")

        else:
            cls = _with(record_class(), "unpack_table")
            check = lambda t: same_columns(t.to_numpy(), inp.columns)  # noqa: E731
        return ColumnArm(DirectCall(cls.unpack_table, inp.data, threads=n), check, inp.count)

    return prepare


ARMS = {
    "lab unpack": {"bytewright unpack_table": lab_unpack},
    "lab pack": {"bytewright pack_table": lab_pack},
    "telemetry": {
        "bytewright unpack_table + to_arrow": telemetry_table,
        "bytewright iter_unpack + from_pylist": telemetry_per_message,
    },
    "pcap": {"bytewright formats.pcap.read_table": pcap},
    "threads fixed": {
        "bytewright threads=1": threads(1, False),
        "bytewright threads=2": threads(2, False),
    },
    "threads variable": {
        "bytewright threads=1": threads(1, True),
        "bytewright threads=2": threads(2, True),
    },
}
