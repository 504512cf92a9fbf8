"""NumPy: a structured array built from the list of tuples."""

from __future__ import annotations

from typing import Any

from benchmarks.harness import need


def packer() -> Any:
    np = need("numpy")
    dtype = np.dtype([("a", "<u4"), ("b", "<u2"), ("c", "<u2"), ("d", "<u8")])
    return lambda items: np.array(items, dtype=dtype).tobytes()


ARMS = {"numpy structured array from list": packer}
