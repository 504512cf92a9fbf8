"""msgspec's MessagePack: `Encoder().encode`, and `Decoder(type=...)` for dataclass shapes.

MessagePack has no shared references, cycles, sets or tuples, and msgspec rebuilds only the
types it is told about: shapes that need any of these are "n/a" with the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from benchmarks.graphs.serializer import Serializer
from benchmarks.harness import NotApplicable, need

PLAIN = (type(None), bool, int, float, str, bytes, list, dict)


def inexpressible(value: Any, *, typed: bool) -> str | None:
    """Why msgspec cannot round-trip `value` with exact types and identity, or None.

    `typed`: the decoder is told the top-level dataclass type (nested ones follow from it).
    """
    seen: set[int] = set()
    stack = [value]
    while stack:
        x = stack.pop()
        if isinstance(x, list | dict | set | frozenset | tuple) or dataclasses.is_dataclass(x):
            if id(x) in seen:
                return "shared references or cycles"
            seen.add(id(x))
        if isinstance(x, set | frozenset | tuple):
            return f"{type(x).__name__}s"
        if dataclasses.is_dataclass(x):
            if not typed:
                return "dataclasses inside untyped containers"
            stack += [getattr(x, f.name) for f in dataclasses.fields(x)]
        elif type(x) not in PLAIN:
            return f"the exact type {type(x).__name__}"
        elif isinstance(x, int) and not -(2**63) <= x < 2**64:
            return "ints beyond 64 bits"
        elif isinstance(x, dict):
            stack += [*x.keys(), *x.values()]
        elif isinstance(x, list):
            stack += x
    return None


def serializer() -> Serializer:
    msgpack = need("msgspec.msgpack")
    untyped = msgpack.Decoder().decode

    def loads_for(value: Any) -> Callable[[bytes], Any]:
        kinds = {type(x) for x in value} if isinstance(value, list) else set()
        one = kinds.pop() if len(kinds) == 1 else None
        typed = type(value) if dataclasses.is_dataclass(value) else None
        if one is not None and dataclasses.is_dataclass(one):
            typed = list[one]  # type: ignore[valid-type]
        if why := inexpressible(value, typed=typed is not None):
            raise NotApplicable(why)
        return untyped if typed is None else msgpack.Decoder(type=typed).decode

    return Serializer(msgpack.Encoder().encode, untyped, loads_for=loads_for)


ARMS = {"msgspec": serializer}
