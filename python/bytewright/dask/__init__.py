"""Dask integration: binary files read into and written from Dask DataFrames
(`read_records`, `to_records`), and the "bytewright" serialization family for distributed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "bytewright.dask needs Dask: install it with pip install 'bytewright[dask]'"
    ) from exc

from bytewright.dask._codec import FileDecodeError
from bytewright.dask._family import FAMILY, FamilyPlugin, register

if TYPE_CHECKING:
    from bytewright.dask._read import read_records
    from bytewright.dask._write import to_records

__all__ = ["FAMILY", "FamilyPlugin", "FileDecodeError", "read_records", "register", "to_records"]


def __getattr__(name: str) -> Any:
    # Reading and writing need dask.dataframe, pandas and pyarrow: workers that only run the
    # serialization family (FamilyPlugin imports this module) do not load them.
    if name == "read_records":
        from bytewright.dask._read import read_records

        return read_records
    if name == "to_records":
        from bytewright.dask._write import to_records

        return to_records
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
