"""What a Part C arm provides, and the round-trip check that gates it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Serializer:
    dumps: Callable[[Any], bytes] | None  # None: `loads` reads the payload of arm `reads`
    loads: Callable[[bytes], Any]
    lookalike: bool = False  # returns look-alike classes instead of the user's
    reads: str = ""
    signed_dumps: Callable[[Any, bytes], bytes] | None = None
    signed_loads: Callable[[bytes, bytes], Any] | None = None
    # The loads for one shape (a typed decoder); raises NotApplicable for shapes it lacks.
    loads_for: Callable[[Any], Callable[[bytes], Any]] | None = None


def same(a: Any, b: Any, *, lookalike: bool = False) -> bool:
    """Deep equality with exact types (True is not 1).

    `lookalike=True` accepts a dataclass of another class with the same name and fields,
    which is what pysafe-pickle returns instead of the user's class.
    """
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b) and not (
            lookalike and dataclasses.is_dataclass(b) and type(a).__name__ == type(b).__name__
        ):
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
