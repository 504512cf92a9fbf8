"""Dask integration: binary files read into and written from Dask DataFrames
(`read_records`, `to_records`), and the "bytewright" serialization family for distributed."""

try:
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "bytewright.dask needs Dask: install it with pip install 'bytewright[dask]'"
    ) from exc

from bytewright.dask._codec import FileDecodeError
from bytewright.dask._family import FAMILY, FamilyPlugin, register
from bytewright.dask._read import read_records
from bytewright.dask._write import to_records

__all__ = ["FAMILY", "FamilyPlugin", "FileDecodeError", "read_records", "register", "to_records"]
