"""Dask integration: the "bytewright" serialization family for distributed."""

try:
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "bytewright.dask needs Dask: install it with pip install 'bytewright[dask]'"
    ) from exc

from bytewright.dask._family import FAMILY, FamilyPlugin, register

__all__ = ["FAMILY", "FamilyPlugin", "register"]
