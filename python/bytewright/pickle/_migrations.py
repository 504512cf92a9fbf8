"""The registry of schema migrations, filled by `@pickle.migrate`."""

from __future__ import annotations

from bytewright.pickle._errors import UnpicklingError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias, TypeVar

    Fields: TypeAlias = dict[str, Any]
    Migration: TypeAlias = Callable[[Fields], Fields]
    M = TypeVar("M", bound=Migration)

# class -> from_version -> (to_version, function). Filled by user code only, never by input.
_REGISTRY: dict[type, dict[int, tuple[int, Migration]]] = {}


def migrate(cls: type, *, from_version: int, to_version: int) -> Callable[[M], M]:
    """Register a function turning the field dict of `cls` at `from_version` into `to_version`.

    Chains of migrations run on load, before the instance is built.

    >>> import dataclasses
    >>> from bytewright import pickle as bwp
    >>> @dataclasses.dataclass
    ... class User:
    ...     name: str
    >>> old = bwp.dumps(User("ada"))
    >>> @dataclasses.dataclass
    ... class User:  # the next release of the class
    ...     __bytewright_version__ = 2
    ...     name: str
    ...     email: str
    >>> @bwp.migrate(User, from_version=1, to_version=2)
    ... def add_email(fields):
    ...     return {**fields, "email": fields["name"] + "@example.org"}
    >>> bwp.loads(old, classes=[User])
    User(name='ada', email='ada@example.org')
    """
    if type(from_version) is not int or type(to_version) is not int:
        raise TypeError("from_version and to_version must be ints")
    if to_version <= from_version:
        raise ValueError("to_version must be greater than from_version")

    def register(fn: M) -> M:
        _REGISTRY.setdefault(cls, {})[from_version] = (to_version, fn)
        return fn

    return register


def upgrade(cls: type, name: str, fields: Fields, version: int, target: int) -> Fields:
    """Run the registered chain from `version` to `target` on `fields`."""
    if version > target:
        raise UnpicklingError(
            f"record of class {name!r} has version {version}, newer than the class's "
            f"__bytewright_version__ = {target}"
        )
    steps = _REGISTRY.get(cls, {})
    while version < target:
        step = steps.get(version)
        if step is None:
            raise UnpicklingError(
                f"record of class {name!r} has version {version} but the class is at version "
                f"{target}; register @pickle.migrate({cls.__qualname__}, from_version={version}, "
                f"to_version=...) to upgrade it"
            )
        new_version, fn = step
        fields = fn(dict(fields))
        if not isinstance(fields, dict):
            raise UnpicklingError(
                f"migration of {name!r} from version {version} returned "
                f"{type(fields).__name__}, not a dict"
            )
        version = new_version
    if version != target:
        raise UnpicklingError(
            f"migrations of {name!r} end at version {version}, not the class's version {target}"
        )
    return fields
