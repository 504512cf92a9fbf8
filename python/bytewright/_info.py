"""What a ``bw.Struct`` class declares: one ``StructInfo`` per class, in ``cls.__bw__``.

The declaration (fields, byte and bit order, alignment, limits, registry and tag) is fixed
when the class is created. The rest is filled in on first need: the resolved fields (forward
references may name classes defined later), the compiled codec and the derived fields.
"""

from __future__ import annotations

import sys

from bytewright._native import new_info
from bytewright.errors import SchemaError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, MutableSet
    from typing import Any

    from bytewright._native import Codec
    from bytewright.fields import FieldSpec, Limits

__all__ = ["Pending", "Registry", "SchemaMeta", "StructField", "StructInfo", "info_of"]


class StructField:
    """One field of a struct: its name, its annotation and its options. As a class declares
    it, the annotation may still be a string (``from __future__ import annotations``);
    ``StructInfo.fields()`` gives them resolved."""

    __slots__ = ("annotation", "name", "spec")

    def __init__(self, name: str, annotation: Any, spec: FieldSpec) -> None:
        self.name = name
        self.annotation = annotation
        self.spec = spec

    def __repr__(self) -> str:
        return f"StructField({self.name!r}, {self.annotation!r}, {self.spec!r})"


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

    Declared: ``name``, ``declared`` (this class's own fields, as written), ``byteorder``, ``bitorder``
    and ``limits`` (inherited when not given), ``align``, ``registry`` (a registry base's
    variants), ``tag_field`` (the registry's tag field, for its variants) and ``tag`` (a
    variant's tag, or MISSING). Filled in on first need: ``fields`` (with the base classes'
    first), ``codec`` (the typed codec; a stand-in that compiles on first use until then)
    and ``derived`` (the fields pack computes).
    """

    __slots__ = (
        "_bases",
        "_cache",
        "_fields",
        "align",
        "bitorder",
        "byteorder",
        "cls",
        "codec",
        "compare",
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
    declared: tuple[StructField, ...]
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
    compare: Callable[[Any], Any] | None  # the fields ``==`` compares, as a tuple, or None
    _fields: tuple[StructField, ...] | None
    _cache: dict[Any, Any]
    _bases: tuple[StructInfo, ...]  # of the Struct classes it derives from, nearest first

    def __new__(
        info_type,
        cls: type,
        declared: tuple[StructField, ...],
        byteorder: str | None,
        bitorder: str | None,
        align: int | None,
        limits: Limits | None,
        registry: str | None,
        tag: Any,
        localns: dict[str, Any] | None,
        codec: Pending,
        /,
    ) -> StructInfo:
        # Positional: a keyword call through the metaclass slot would first build a dict.
        # One native call stores every slot past __setattr__ (which refuses writes): the
        # nearest Struct base's byte order, bit order, limits and tag field where not given.
        return new_info(  # type: ignore[no-any-return]
            _NEW_INFO,
            cls,
            declared,
            byteorder,
            bitorder,
            align,
            limits,
            registry,
            tag,
            localns,
            codec,
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"StructInfo is read-only ({name!r})")

    def compiled(self, codec: Codec[Any], derived: frozenset[str]) -> None:
        """Records the typed codec and the derived fields (the one state that changes)."""
        object.__setattr__(self, "codec", codec)
        object.__setattr__(self, "derived", derived)

    def compares(self, getter: Callable[[Any], Any]) -> None:
        """Records what ``==`` compares (set with the class's ``__init__``)."""
        object.__setattr__(self, "compare", getter)

    def reset(self, pending: Pending) -> None:
        """Back to a stand-in that compiles on next use (a registry this class embeds gained
        a variant)."""
        object.__setattr__(self, "codec", pending)
        self._cache.clear()

    def fields(self) -> tuple[StructField, ...]:
        """Every field: the base classes' first, then this class's, annotations resolved."""
        if self._fields is None:
            object.__setattr__(self, "_fields", self._resolve())
        assert self._fields is not None
        return self._fields

    def _resolve(self) -> tuple[StructField, ...]:
        # (A class that inherits nothing and has no string annotation gets its declared
        # fields as its fields when its info is made: new_info.)
        cls = self.cls
        fields: list[StructField] = []
        for info in reversed(self._bases):
            names = {f.name for f in fields}
            fields.extend(f for f in info.fields() if f.name not in names)
        names = {f.name for f in fields}
        namespaces: tuple[dict[str, Any], dict[str, Any]] | None = None
        for d in self.declared:
            if d.name in names:
                raise SchemaError(
                    f"{cls.__name__}.{d.name}: redeclares a field of a base class",
                    f"{cls.__name__}.{d.name}",
                )
            if isinstance(d.annotation, str):
                # A string annotation (from __future__ import annotations) of this class:
                # the class's module, the namespace it was defined in (a function's locals),
                # then the class itself.
                if namespaces is None:
                    module = sys.modules.get(cls.__module__)
                    namespaces = (
                        dict(vars(module)) if module else {},
                        {**(self.localns or {}), cls.__name__: cls},
                    )
                d = StructField(d.name, eval(d.annotation, *namespaces), d.spec)
            fields.append(d)
        return tuple(fields)


class SchemaMeta(type):
    """The base of ``StructMeta``: ``isinstance(x, SchemaMeta)`` tells a Struct class."""

    __bw__: StructInfo | None


_NOTHING: frozenset[str] = frozenset()
_NEW_INFO = (StructInfo, Registry, _NOTHING, SchemaMeta)


def info_of(cls: object) -> StructInfo | None:
    """The StructInfo of a Struct class (each has its own; ``bw.Struct`` has none), or None."""
    if isinstance(cls, SchemaMeta):
        info = cls.__bw__
        if info is not None and info.cls is cls:
            return info
    return None


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
