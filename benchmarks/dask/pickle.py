"""Dask's default data serialization: distributed's `pickle` family."""

from __future__ import annotations

ARMS = {"distributed pickle family": lambda: "pickle"}
