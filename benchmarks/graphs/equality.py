"""Round-trip equality, stricter than `==`: types must match too (True is not 1)."""

from __future__ import annotations

import dataclasses
from typing import Any


def same(a: Any, b: Any, *, lookalike: bool = False) -> bool:
    """Deep equality with exact types.

    `lookalike=True` accepts a dataclass of another class with the same name and fields,
    which is what pysafe-pickle returns instead of the user's class.
    """
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            if not (lookalike and dataclasses.is_dataclass(b)):
                return False
            if type(a).__name__ != type(b).__name__:
                return False
        names = [f.name for f in dataclasses.fields(a)]
        if [f.name for f in dataclasses.fields(b)] != names:
            return False
        return all(same(getattr(a, n), getattr(b, n), lookalike=lookalike) for n in names)
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(
            same(x, y, lookalike=lookalike) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k], lookalike=lookalike) for k in a)
    return bool(a == b)
