"""Small immutable value objects (field options, limits, type objects), without dataclasses.

``dataclasses`` imports ``inspect`` and generates each class's methods with ``exec``: more
than the whole rest of ``import bytewright``. These classes need only what ``Value`` gives:
immutable slots, equality and hashing by value, a dataclass-style ``repr`` and pickling.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MISSING", "Value", "json_value"]


class _Missing:
    """The "no value given" marker of field options (None is a value a user may give)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Value:
    """Base of immutable slotted value classes: each subclass lists its fields in
    ``__slots__``, in their order (not sorted), and takes them positionally in that order."""

    __slots__: tuple[str, ...] = ()

    def _init(self, *values: object) -> None:
        for name, value in zip(type(self).__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in type(self).__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Value) or type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        values = zip(type(self).__slots__, self._values(), strict=True)
        shown = ", ".join(f"{n}={v!r}" for n, v in values)
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values())


def json_value(v: object) -> str:
    """``v`` as JSON text (the core rejects what its schema does not expect)."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if type(v) is int:
        return str(v)
    return json_dumps(v)


def json_dumps(v: object) -> str:
    """``json.dumps``, compact (json loads on first use: most schemas never need it)."""
    import json

    return json.dumps(v, separators=(",", ":"))
