"""What a ``bw.Struct`` class declares: one ``StructInfo`` per class, in ``cls.__bw__``.

The declaration (fields, byte and bit order, alignment, limits, registry and tag) is fixed
when the class is created. The rest is filled in on first need: the resolved fields (forward
references may name classes defined later), the compiled codec and the derived fields.
"""

from __future__ import annotations

import sys

from bytewright._value import MISSING, Value
from bytewright.errors import SchemaError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, MutableSet
    from typing import Any

    from bytewright._native import Codec
    from bytewright.fields import FieldSpec, Limits

__all__ = ["Declared", "Pending", "Registry", "StructField", "StructInfo", "info_of"]


class Declared(Value):
    """A field as its class declares it: name, annotation (maybe a string) and options."""

    __slots__ = ("name", "annotation", "spec")  # noqa: RUF023 (field order)
    name: str
    annotation: Any
    spec: FieldSpec

    def __init__(self, name: str, annotation: Any, spec: FieldSpec) -> None:
        self._init(name, annotation, spec)


class StructField(Value):
    """One field of a struct: its name, its resolved annotation and its options."""

    __slots__ = ("name", "annotation", "spec")  # noqa: RUF023 (field order)
    name: str
    annotation: Any
    spec: FieldSpec

    def __init__(self, name: str, annotation: Any, spec: FieldSpec) -> None:
        self._init(name, annotation, spec)


class Registry:
    """The variants of a registry base (``registry="field"``): tag -> class, the default
    variant, and the classes whose typed codecs embed the registry (compiled again, on next
    use, when a variant is added)."""

    __slots__ = ("cases", "default", "dependents", "field")

    def __init__(self, field: str) -> None:
        from weakref import WeakSet

        self.field = field
        self.cases: dict[Any, type] = {}
        self.default: type | None = None
        self.dependents: MutableSet[type] = WeakSet()


class StructInfo:
    """The declaration of one Struct class and its compiled state.

    Declared: ``name``, ``declared`` (this class's own fields), ``byteorder``, ``bitorder``
    and ``limits`` (inherited when not given), ``align``, ``registry`` (a registry base's
    variants), ``tag_field`` (the registry's tag field, for its variants) and ``tag`` (a
    variant's tag, or MISSING). Filled in on first need: ``fields`` (with the base classes'
    first), ``codec`` (the typed codec; a stand-in that compiles on first use until then)
    and ``derived`` (the fields pack computes).
    """

    __slots__ = (
        "_cache",
        "_fields",
        "align",
        "bitorder",
        "byteorder",
        "cls",
        "codec",
        "declared",
        "derived",
        "limits",
        "localns",
        "name",
        "registry",
        "tag",
        "tag_field",
    )
    cls: type
    name: str
    declared: tuple[Declared, ...]
    byteorder: str | None
    bitorder: str | None
    align: int | None
    limits: Limits | None
    registry: Registry | None
    tag_field: str | None
    tag: Any
    localns: dict[str, Any] | None
    codec: Codec[Any] | Pending
    derived: frozenset[str]
    _fields: tuple[StructField, ...] | None
    _cache: dict[Any, Any]

    def __init__(
        self,
        cls: type,
        declared: tuple[Declared, ...],
        *,
        byteorder: str | None,
        bitorder: str | None,
        align: int | None,
        limits: Limits | None,
        registry: str | None,
        tag: Any,
        localns: dict[str, Any] | None,
        codec: Pending,
    ) -> None:
        base = next((info_of(b) for b in cls.__mro__[1:] if info_of(b) is not None), None)
        values = {
            "cls": cls,
            "name": cls.__name__,
            "declared": declared,
            "byteorder": byteorder or (base.byteorder if base else None),
            "bitorder": bitorder or (base.bitorder if base else None),
            "align": align,
            "limits": limits or (base.limits if base else None),
            "registry": Registry(registry) if registry is not None else None,
            "tag_field": registry if registry is not None else (base.tag_field if base else None),
            "tag": tag,
            "localns": localns,
            "codec": codec,
            "derived": frozenset(),
            "_fields": None,
            "_cache": {},
        }
        for k, v in values.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"StructInfo is read-only ({name!r})")

    def compiled(self, codec: Codec[Any], derived: frozenset[str]) -> None:
        """Records the typed codec and the derived fields (the one state that changes)."""
        object.__setattr__(self, "codec", codec)
        object.__setattr__(self, "derived", derived)

    def reset(self, pending: Pending) -> None:
        """Back to a stand-in that compiles on next use (a registry this class embeds gained
        a variant)."""
        object.__setattr__(self, "codec", pending)
        self._cache.clear()

    @property
    def is_variant(self) -> bool:
        return self.tag is not MISSING

    def fields(self) -> tuple[StructField, ...]:
        """Every field: the base classes' first, then this class's, annotations resolved."""
        if self._fields is None:
            object.__setattr__(self, "_fields", self._resolve())
        assert self._fields is not None
        return self._fields

    def _resolve(self) -> tuple[StructField, ...]:
        cls = self.cls
        module = sys.modules.get(cls.__module__)
        globalns = dict(vars(module)) if module else {}
        # The namespace the class was defined in (a function's locals), then the class itself.
        localns = {**(self.localns or {}), cls.__name__: cls}
        fields: list[StructField] = []
        for base in reversed(cls.__mro__[1:]):
            info = info_of(base)
            if info is not None:
                for f in info.fields():
                    if all(x.name != f.name for x in fields):
                        fields.append(f)
        for d in self.declared:
            if any(f.name == d.name for f in fields):
                raise SchemaError(
                    f"{cls.__name__}.{d.name}: redeclares a field of a base class",
                    f"{cls.__name__}.{d.name}",
                )
            ann = d.annotation
            if isinstance(ann, str):
                # A string annotation (from __future__ import annotations) of this class.
                ann = eval(ann, globalns, localns)
            fields.append(StructField(d.name, ann, d.spec))
        return tuple(fields)


def info_of(cls: object) -> StructInfo | None:
    """The StructInfo of a Struct class (not inherited: each class has its own), or None."""
    d = getattr(cls, "__dict__", None)
    info = d.get("__bw__") if d is not None else None
    return info if isinstance(info, StructInfo) else None


class Pending:
    """The codec of a class not compiled yet (a registry base, a class naming a later one,
    a class whose expressions name an enclosing struct's fields): ``compile(cls)`` on first
    use, then every call goes to the class's codec."""

    __slots__ = ("_cls", "_compile")

    def __init__(self, cls: type, compile: Callable[[type], Codec[Any]]) -> None:
        self._cls = cls
        self._compile = compile

    def __getattr__(self, name: str) -> Any:
        # A holder of this stand-in (a Reader) keeps it after the class is compiled: ``compile``
        # returns the class's codec from then on rather than compiling again.
        return getattr(self._compile(self._cls), name)

    def __repr__(self) -> str:
        return f"<bytewright codec of {self._cls.__qualname__}, compiled on first use>"
