"""The generated ``__init__`` and ``__eq__`` of Struct classes.

``__init__`` is the function a dataclass would write and ``exec`` for each class. Here one
template per field count is compiled once, and each class gets a copy of its code with the field
names put in (``code.replace``): the same bytecode, at a fraction of the cost of compiling
source. ``__eq__`` is a closure over an ``attrgetter`` of the compared fields.
"""

from __future__ import annotations

from _operator import attrgetter  # operator's C half: importing operator.py costs more

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import CodeType, FunctionType
    from typing import Any
else:
    FunctionType = type(lambda: None)  # types.FunctionType, without importing types

__all__ = ["make_eq", "make_init"]

# Field count -> (template code, the names in its co_names before the field placeholders).
_inits: dict[int, tuple[CodeType, tuple[str, ...]]] = {}
_GLOBALS = globals()


def _compiled(source: str, n: int) -> tuple[CodeType, tuple[str, ...]]:
    ns: dict[str, Any] = {}
    exec(source, {}, ns)
    code: CodeType = next(iter(ns.values())).__code__
    # The field placeholders come last in co_names, in order (a copy renames them there).
    fixed = code.co_names[: len(code.co_names) - n]
    assert code.co_names[len(fixed) :] == tuple(f"_bw_{i}" for i in range(n))
    return code, fixed


def _init_template(n: int) -> tuple[CodeType, tuple[str, ...]]:
    t = _inits.get(n)
    if t is None:
        ph = [f"_bw_{i}" for i in range(n)]
        if n:
            source = f"def __init__(self, *, {', '.join(ph)}):\n" + "".join(
                f"    self.{p} = {p}\n" for p in ph
            )
        else:
            source = "def __init__(self):\n    pass\n"
        t = _inits[n] = _compiled(source, n)
    return t


def make_init(
    qualname: str, module: str, names: Sequence[str], defaults: Mapping[str, Any]
) -> Callable[..., None]:
    """``def __init__(self, *, a, b=default, ...): self.a = a; self.b = b; ...``"""
    code, fixed = _init_template(len(names))
    # A field may be called "self"; the instance then takes a name no field can have.
    me = "self" if "self" not in names else "__bw_self__"
    code = code.replace(
        co_names=(*fixed, *names), co_varnames=(me, *names), co_qualname=f"{qualname}.__init__"
    )
    fn: Callable[..., None] = FunctionType(code, _GLOBALS, "__init__")
    if defaults:
        fn.__kwdefaults__ = dict(defaults)
    fn.__module__ = module
    return fn


def make_eq(qualname: str, module: str, names: Sequence[str]) -> Callable[[Any, object], Any]:
    """Equality of the same class on ``names``, in order (else NotImplemented)."""
    if not names:

        def __eq__(self: Any, other: object) -> Any:
            return type(other) is type(self) or NotImplemented

    else:
        # One C call reads the fields; a 1-tuple keeps tuple equality (identity first, as
        # for NaN) when there is one field.
        fields = attrgetter(*names) if len(names) > 1 else attrgetter(names[0], names[0])

        def __eq__(self: Any, other: object) -> Any:
            if type(other) is not type(self):
                return NotImplemented
            return fields(self) == fields(other)

    __eq__.__qualname__ = f"{qualname}.__eq__"
    __eq__.__module__ = module
    return __eq__
