"""The generated ``__init__`` and ``__eq__`` of Struct classes.

They are the functions a dataclass would write and ``exec`` for each class. Here one template
per field count is compiled once, and each class gets a copy of its code with the field names
put in (``code.replace``): the same bytecode, at a fraction of the cost of compiling source.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import CodeType, FunctionType
    from typing import Any
else:
    FunctionType = type(lambda: None)  # types.FunctionType, without importing types

__all__ = ["make_eq", "make_init"]

_inits: dict[int, CodeType] = {}
_eqs: dict[int, CodeType] = {}


def _placeholders(n: int) -> list[str]:
    return [f"_bw_{i}" for i in range(n)]


def _template(cache: dict[int, CodeType], n: int, source: str) -> CodeType:
    code = cache.get(n)
    if code is None:
        ns: dict[str, Any] = {}
        exec(source, {}, ns)
        code = cache[n] = next(iter(ns.values())).__code__
    return code


def _renamed(code: CodeType, names: Sequence[str], qualname: str, **replace: Any) -> CodeType:
    to = dict(zip(_placeholders(len(names)), names, strict=True))
    return code.replace(
        co_names=tuple(to.get(n, n) for n in code.co_names),
        co_qualname=qualname,
        **replace,
    )


def make_init(
    qualname: str, module: str, names: Sequence[str], defaults: Mapping[str, Any]
) -> Callable[..., None]:
    """``def __init__(self, *, a, b=default, ...): self.a = a; self.b = b; ...``"""
    ph = _placeholders(len(names))
    if names:
        source = f"def __init__(self, *, {', '.join(ph)}):\n" + "".join(
            f"    self.{p} = {p}\n" for p in ph
        )
    else:
        source = "def __init__(self):\n    pass\n"
    code = _template(_inits, len(names), source)
    # A field may be called "self"; the instance then takes a name no field can have.
    me = "self" if "self" not in names else "__bw_self__"
    code = _renamed(code, names, f"{qualname}.__init__", co_varnames=(me, *names))
    fn: Callable[..., None] = FunctionType(code, globals(), "__init__")
    fn.__kwdefaults__ = dict(defaults) or None
    fn.__module__ = module
    return fn


def make_eq(qualname: str, module: str, names: Sequence[str]) -> Callable[[Any, object], Any]:
    """Equality of the same class on ``names``, in order (else NotImplemented)."""
    ph = _placeholders(len(names))
    if names:
        source = (
            "def __eq__(self, other):\n"
            "    if type(other) is not type(self):\n"
            "        return NotImplemented\n"
            f"    return ({''.join(f'self.{p}, ' for p in ph)}) == "
            f"({''.join(f'other.{p}, ' for p in ph)})\n"
        )
    else:
        source = (
            "def __eq__(self, other):\n    return type(other) is type(self) or NotImplemented\n"
        )
    code = _renamed(_template(_eqs, len(names), source), names, f"{qualname}.__eq__")
    fn: Callable[[Any, object], Any] = FunctionType(code, globals(), "__eq__")
    fn.__module__ = module
    return fn
