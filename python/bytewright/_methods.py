"""The generated ``__init__`` of Struct classes (their ``__eq__`` is ``bw.Struct``'s, which
compares the fields its ``StructInfo`` lists).

``__init__`` is the function a dataclass would write and ``exec`` for each class. Here one
template per field count is compiled once, and each class gets a copy of its code with the field
names put in (``code.replace``): the same bytecode, at a fraction of the cost of compiling
source.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import CodeType, FunctionType
    from typing import Any
else:
    FunctionType = type(lambda: None)  # types.FunctionType, without importing types

__all__ = ["GLOBALS", "make_init"]

# Field count -> (template code, the names in its co_names before the field placeholders).
_inits: dict[int, tuple[CodeType, tuple[str, ...]]] = {}
GLOBALS = globals()  # of every generated __init__ (how one is told from others)


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
    fn: Callable[..., None] = FunctionType(code, GLOBALS, "__init__")
    if defaults:
        fn.__kwdefaults__ = dict(defaults)
    fn.__module__ = module
    return fn
