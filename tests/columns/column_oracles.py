"""Helpers for the columnar tests: per-record oracles in Arrow's terms."""

from __future__ import annotations

from typing import Any

import bytewright as bw
import pytest

pa = pytest.importorskip("pyarrow")


class Lab(bw.Struct, byteorder="little"):
    """The lab's fixed `<IHHQ` record (16 bytes), as `make bench` Part D decodes it."""

    a: bw.U32
    b: bw.U16
    c: bw.U16
    d: bw.U64


def per_record(cls: Any, data: bytes) -> list[dict[str, Any]]:
    """What per-record decoding gives: the dict codec over back-to-back messages."""
    return bw.compile(cls).iter_unpack(data)  # type: ignore[no-any-return]


def table_rows(table: bw.Table) -> list[dict[str, Any]]:
    """The table's rows as pyarrow gives them (an independent reader of the Arrow data)."""
    return pa.table(table).to_pylist()  # type: ignore[no-any-return]


def decode_error(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, str, int | None] | None:
    """(message, path, offset) of the DecodeError ``fn`` raises, or None."""
    try:
        fn(*args, **kwargs)
    except bw.DecodeError as e:
        return (str(e), e.path, e.offset)
    return None
