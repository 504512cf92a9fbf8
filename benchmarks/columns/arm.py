"""What a Part D arm provides, and the checks its output must pass before it is timed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import Incorrect, need

LENGTH_NAMES = ("incl_len", "caplen", "captured_len", "cap_len", "captured_length")
PORT_NAMES = ("sport", "src_port", "source_port", "srcport")


@dataclass(frozen=True)
class ColumnArm:
    call: Callable[[], object]
    check: Callable[[Any], None]  # raises Incorrect
    items: int  # the records or packets one call decodes


def same_columns(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Every wanted column is there with equal values (NumPy arrays or sequences)."""
    np = need("numpy")
    for name, values in want.items():
        if name not in got:
            raise Incorrect(f"no column {name!r} (columns: {', '.join(got)})")
        if not np.array_equal(np.asarray(got[name]), values):
            raise Incorrect(f"column {name!r} differs")


def same_rows(got: Any, want: list[dict[str, Any]]) -> None:
    """A pyarrow Table whose rows are exactly `want`."""
    if got.num_rows != len(want):
        raise Incorrect(f"{got.num_rows} rows, expected {len(want)}")
    if got.to_pylist() != want:
        raise Incorrect("rows differ from the per-message decode")


def flat_columns(table: Any) -> dict[str, Any]:
    """A pyarrow Table's leaf columns, nested names joined with dots."""
    while any(need("pyarrow").types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return dict(zip(table.column_names, table.columns, strict=True))


def capture_columns(table: Any, lengths: list[int], sports: list[int]) -> None:
    """A table of packets: a captured-length column and TCP/UDP source ports (coalesced over
    every column named like a source port) equal to the capture's."""
    pc = need("pyarrow.compute")
    columns = flat_columns(table)
    if table.num_rows != len(lengths):
        raise Incorrect(f"{table.num_rows} rows, expected {len(lengths)} packets")
    found = [c for n, c in columns.items() if n.rsplit(".", 1)[-1] in LENGTH_NAMES]
    if not any(c.to_pylist() == lengths for c in found):
        raise Incorrect(
            f"no captured-length column ({'/'.join(LENGTH_NAMES)}) equals the capture's"
        )
    ports = [c for n, c in columns.items() if n.rsplit(".", 1)[-1] in PORT_NAMES]
    if not ports or pc.coalesce(*ports).to_pylist() != sports:
        raise Incorrect(
            f"the source-port columns ({'/'.join(PORT_NAMES)}) differ from the capture's"
        )
