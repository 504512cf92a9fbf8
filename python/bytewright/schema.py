"""The Python half of describing a class (``_native.compile_struct`` does the rest, in
``crates/python/src/wire/describe.rs``): what only Python can do, on the rare paths that need
it. Evaluating a forward reference, a field's converters (``IntEnum``/``IntFlag`` fields and
``convert=``), and the error for an annotation that has no wire form.
"""

from __future__ import annotations

import sys

from bytewright.errors import SchemaError, schema_error

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from bytewright.fields import FieldSpec

__all__ = ["converter", "enum_members", "resolve", "unsupported"]


def _is_int_enum(ann: Any) -> bool:
    if not isinstance(ann, type):
        return False
    # An IntEnum annotation means enum is loaded already.
    enum = sys.modules.get("enum")
    return enum is not None and issubclass(ann, (enum.IntEnum, enum.IntFlag))


class _EnumConverter:
    """Maps wire integers to members of an ``IntEnum``/``IntFlag`` and back."""

    __slots__ = ("cls", "strict", "valid")

    def __init__(self, cls: Any, strict: bool) -> None:
        import enum

        self.cls = cls
        self.strict = strict
        self.valid: int | None = None
        if issubclass(cls, enum.Flag):
            mask = 0
            for m in cls:
                mask |= int(m)
            self.valid = mask

    def decode(self, v: int) -> Any:
        if self.valid is not None:
            if self.strict and v & ~self.valid:
                raise ValueError(f"{v:#x} has bits that {self.cls.__name__} does not define")
            return self.cls(v)
        try:
            return self.cls(v)
        except ValueError:
            if self.strict:
                raise ValueError(f"{v} is not a valid {self.cls.__name__}") from None
            return v

    @staticmethod
    def encode(v: Any) -> int:
        return int(v)


def enum_members(decoder: Any) -> tuple[bool, list[tuple[int, str]]] | None:
    """``(is_flag, [(value, name), ...])`` when ``decoder`` decodes an enum field (the columns'
    ``enum_names=True``), else None."""
    conv = getattr(decoder, "__self__", None)
    if not isinstance(conv, _EnumConverter):
        return None
    import enum

    members = [(int(m), str(m.name)) for m in conv.cls]
    return issubclass(conv.cls, enum.Flag), members


def converter(
    ann: Any, spec: FieldSpec, where: str
) -> tuple[Callable[[Any], Any], Callable[[Any], Any]] | None:
    """The (decode, encode) callables of a field, or None."""
    conv = spec.convert
    is_enum_marker = isinstance(conv, tuple) and len(conv) == 2 and conv[0] == "enum"
    if is_enum_marker or (conv is None and _is_int_enum(ann)):
        if not _is_int_enum(ann):
            raise schema_error(where, "bw.enum() needs an IntEnum or IntFlag annotation")
        c = _EnumConverter(ann, bool(conv[1]) if is_enum_marker else False)
        return (c.decode, c.encode)
    if conv is None:
        return None
    if not (isinstance(conv, tuple) and len(conv) == 2 and all(callable(x) for x in conv)):
        raise schema_error(where, "convert= must be a (decode, encode) pair of callables")
    return (conv[0], conv[1])


def resolve(ann: Any, owner: type | None, active: list[type], where: str) -> Any:
    """Evaluates a forward reference (a string, or ``list["Node"]``'s item) in the module of
    ``owner``, the struct being described, where the classes being described are known too."""
    name = getattr(ann, "__forward_arg__", ann)
    module = sys.modules.get(owner.__module__) if owner is not None else None
    ns = dict(vars(module)) if module else {}
    for cls in active:
        ns.setdefault(cls.__name__, cls)
    try:
        return eval(name, ns)
    except NameError as e:
        raise NameError(f"{where}: {e}") from None


def unsupported(ann: Any, where: str) -> SchemaError:
    """The error for an annotation with no wire form."""
    if _is_int_enum(ann):
        return schema_error(
            where,
            "an enum field needs its wire type, e.g. bw.enum(bw.U8) or bw.field(type=bw.U8)",
        )
    if ann is int:
        return schema_error(
            where,
            "a plain int has no wire width; use bw.U8 .. bw.U64, bw.I8 .. bw.I64, "
            "bw.bits(n) or bw.VarUInt",
        )
    if ann is float:
        return schema_error(where, "a plain float has no wire width; use bw.F16, F32 or F64")
    if _is_union(ann):
        return schema_error(where, "a union needs tag= and cases= to choose its variant")
    return schema_error(where, f"unsupported field type {ann!r}")


def _is_union(ann: Any) -> bool:
    import types
    import typing

    return typing.get_origin(ann) in (typing.Union, types.UnionType)
