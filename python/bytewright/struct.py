"""Typed frontend: ``bw.Struct`` classes, ``bw.make_struct`` and ``bw.compile``.

A Struct class stores its fields in ``__slots__``; the native codec builds instances and reads
fields straight from those slots, so typed results cost no more than dicts.
"""

from __future__ import annotations

import keyword
import re
import sys
import typing
from collections.abc import Iterator
from typing import Any, ClassVar, TypeVar
from weakref import WeakSet

from bytewright._native import Codec, Table, TableSchema
from bytewright.errors import SchemaError
from bytewright.fields import MISSING, FieldSpec, Limits, bits, enum, field, flag, suggest
from bytewright.schema import StructField, describe, normalize_byteorder
from bytewright.stream import Reader

__all__ = ["Codec", "Struct", "StructMeta", "compile", "make_struct"]

_CLASS_KEYWORDS = ("byteorder", "bitorder", "align", "limits", "registry", "tag", "default")
_BITORDERS = ("msb", "lsb")
_RESERVED = frozenset(
    {"pack", "pack_into", "unpack", "unpack_from", "parse", "iter_unpack", "pack_many", "reader"}
    | {"unpack_table", "iter_tables", "pack_table", "pack_table_into", "table_schema"}
    | {n for n in dir(object)}
)

S = TypeVar("S", bound="Struct")


class _LazyCodec:
    """Stands in for a class's codec until forward references resolve (first use compiles)."""

    def __init__(self, cls: type[Struct]) -> None:
        self._cls = cls

    def _real(self) -> Codec:
        # A holder of this stand-in (a Reader) keeps it after the class is compiled: reuse
        # the class's codec rather than compiling again on every call.
        codec = self._cls.__dict__.get("__bw_codec__")
        if isinstance(codec, Codec):
            return codec
        return _install(self._cls)

    def pack(self, value: Any) -> bytes:
        return self._real().pack(value)

    def pack_into(self, buffer: Any, value: Any, offset: int = 0) -> int:
        return self._real().pack_into(buffer, value, offset)

    def unpack(self, data: Any) -> Any:
        return self._real().unpack(data)

    def unpack_from(self, data: Any, offset: int = 0) -> Any:
        return self._real().unpack_from(data, offset)

    def parse(self, data: Any, offset: int = 0) -> Any:
        return self._real().parse(data, offset)

    def iter_unpack(self, data: Any) -> Any:
        return self._real().iter_unpack(data)

    def pack_many(self, items: Any) -> bytes:
        return self._real().pack_many(items)

    def unpack_table(self, data: Any, **options: Any) -> Any:
        return self._real().unpack_table(data, **options)

    def iter_tables(self, source: Any, **options: Any) -> Any:
        return self._real().iter_tables(source, **options)

    def pack_table(self, table: Any) -> bytes:
        return self._real().pack_table(table)

    def pack_table_into(self, buffer: Any, offset: int, table: Any) -> int:
        return self._real().pack_table_into(buffer, offset, table)

    @property
    def table_schema(self) -> Any:
        return self._real().table_schema


def _resolve_fields(cls: type) -> tuple[StructField, ...]:
    own = cls.__dict__["__bw_declared__"]
    module = sys.modules.get(cls.__module__)
    globalns = dict(vars(module)) if module else {}
    # The namespace the class was defined in (a function's locals), then the class itself.
    localns = {**cls.__dict__.get("__bw_localns__", {}), cls.__name__: cls}

    def resolve(ann: Any) -> Any:
        # String annotations (from __future__ import annotations) of this class only.
        return eval(ann, globalns, localns) if isinstance(ann, str) else ann

    fields: list[StructField] = []
    for base in reversed(cls.__mro__[1:]):
        if isinstance(base, StructMeta) and "__bw_declared__" in base.__dict__:
            for f in base.__bw_fields__():
                if all(x.name != f.name for x in fields):
                    fields.append(f)
    for name, ann, spec in own:
        if name in {f.name for f in fields}:
            raise SchemaError(f"{cls.__name__}.{name}: redeclares a field of a base class")
        fields.append(StructField(name, resolve(ann), spec))
    return tuple(fields)


def _install(cls: type[Struct]) -> Codec:
    """Compiles the typed codec of ``cls`` and generates its ``__init__``."""
    used: list[type] = []
    schema, infos = describe(cls, typed=True, limits=cls.__bw_limits__, registries=used)
    codec = Codec(schema, infos, True)
    for base in used:
        base.__dict__["__bw_registry__"]["dependents"].add(cls)
    derived = set(codec.derived_fields(0))
    type.__setattr__(cls, "__bw_codec__", codec)
    type.__setattr__(cls, "__bw_derived__", frozenset(derived))
    _make_methods(cls, derived)
    return codec


def _make_methods(cls: type[Struct], derived: set[str]) -> None:
    fields = [f for f in cls.__bw_fields__() if not f.spec.is_pad]
    params, body, defaults = [], [], {}
    tag_field = getattr(cls, "__bw_registry_field__", None)
    tag = getattr(cls, "__bw_tag__", MISSING)
    for f in fields:
        spec = f.spec
        if f.name == tag_field and tag is not MISSING:
            defaults[f"_d_{f.name}"] = tag
            params.append(f"{f.name}=_d_{f.name}")
        elif spec.default is not MISSING:
            defaults[f"_d_{f.name}"] = spec.default
            params.append(f"{f.name}=_d_{f.name}")
        elif spec.const is not MISSING:
            defaults[f"_d_{f.name}"] = spec.const
            params.append(f"{f.name}=_d_{f.name}")
        elif f.name in derived or spec.when is not None:
            params.append(f"{f.name}=None")
        else:
            params.append(f.name)
        body.append(f"    self.{f.name} = {f.name}")
    src = f"def __init__(self, *, {', '.join(params)}):\n" if params else "def __init__(self):\n"
    src += "\n".join(body) if body else "    pass"
    ns: dict[str, Any] = {}
    exec(src, defaults, ns)  # generated once per class, like dataclasses
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    type.__setattr__(cls, "__init__", init)

    compared = [f.name for f in fields if f.name not in derived]
    if compared:
        lhs = ", ".join(f"self.{n}" for n in compared)
        rhs = ", ".join(f"other.{n}" for n in compared)
        eq_src = (
            "def __eq__(self, other):\n"
            "    if type(other) is not type(self):\n"
            "        return NotImplemented\n"
            f"    return ({lhs},) == ({rhs},)\n"
        )
    else:
        eq_src = (
            "def __eq__(self, other):\n    return type(other) is type(self) or NotImplemented\n"
        )
    ns = {}
    exec(eq_src, {}, ns)
    type.__setattr__(cls, "__eq__", ns["__eq__"])
    type.__setattr__(cls, "__match_args__", tuple(f.name for f in fields))


def _unknown_keywords(name: str, kw: dict[str, Any]) -> None:
    for k in kw:
        raise SchemaError(f"{name}: unknown class keyword {k!r}{suggest(k, _CLASS_KEYWORDS)}")


@typing.dataclass_transform(kw_only_default=True, field_specifiers=(field, bits, flag, enum))
class StructMeta(type):
    """Metaclass of ``bw.Struct``: turns annotations into slots and compiles the codec."""

    def __new__(
        mcls,
        name: str,
        bases: tuple[type, ...],
        ns: dict[str, Any],
        *,
        byteorder: str | None = None,
        bitorder: str | None = None,
        align: int | None = None,
        limits: Limits | None = None,
        registry: str | None = None,
        tag: Any = MISSING,
        default: bool = False,
        **kw: Any,
    ) -> StructMeta:
        _unknown_keywords(name, kw)
        order = normalize_byteorder(byteorder, name)
        if bitorder is not None and bitorder not in _BITORDERS:
            raise SchemaError(
                f"{name}: bitorder must be 'msb' or 'lsb', got {bitorder!r}{suggest(bitorder, _BITORDERS)}"
            )
        if align is not None and (
            not isinstance(align, int) or isinstance(align, bool) or align < 1
        ):
            raise SchemaError(f"{name}: align= must be a positive int")
        if limits is not None and not isinstance(limits, Limits):
            raise SchemaError(f"{name}: limits= must be a bw.Limits")
        declared: list[tuple[str, Any, FieldSpec]] = []
        for fname, ann in ns.get("__annotations__", {}).items():
            if typing.get_origin(ann) is ClassVar or (
                isinstance(ann, str) and ann.startswith("ClassVar")
            ):
                continue
            value = ns.pop(fname, MISSING)
            spec = value if isinstance(value, FieldSpec) else FieldSpec(default=value)
            if not spec.is_pad:
                if (
                    not fname.isidentifier()
                    or keyword.iskeyword(fname)
                    or fname in _RESERVED
                    or fname.startswith("__")
                ):
                    raise SchemaError(
                        f"{name}.{fname}: this name is reserved and cannot be a field"
                    )
            declared.append((fname, ann, spec))
        ns["__slots__"] = tuple(f for f, _, spec in declared if not spec.is_pad)
        if any(isinstance(ann, str) for _, ann, _ in declared):
            # String annotations of a class defined in a function may name its local classes.
            caller = sys._getframe(1)
            if caller.f_locals is not caller.f_globals:
                ns["__bw_localns__"] = dict(caller.f_locals)
        ns["__bw_declared__"] = tuple(declared)
        cls = super().__new__(mcls, name, bases, ns)
        inherited = next(
            (b.__bw_byteorder__ for b in cls.__mro__[1:] if isinstance(b, StructMeta)), None
        )
        type.__setattr__(cls, "__bw_byteorder__", order or inherited)
        inherited_limits = next(
            (b.__bw_limits__ for b in cls.__mro__[1:] if isinstance(b, StructMeta)), None
        )
        type.__setattr__(cls, "__bw_limits__", limits or inherited_limits)
        inherited_bits = next(
            (b.__bw_bitorder__ for b in cls.__mro__[1:] if isinstance(b, StructMeta)), None
        )
        type.__setattr__(cls, "__bw_bitorder__", bitorder or inherited_bits)
        type.__setattr__(cls, "__bw_align__", align)
        _register(cls, name, registry, tag, default)
        type.__setattr__(cls, "__bw_resolved__", None)
        if not declared and all(not isinstance(b, StructMeta) for b in bases):
            return cls  # the Struct base itself
        if registry is not None:
            type.__setattr__(cls, "__bw_codec__", _LazyCodec(cls))  # type: ignore[arg-type]
            _make_methods(cls, set())  # type: ignore[arg-type]
            return cls
        try:
            _install(cls)  # type: ignore[arg-type]
        except NameError:
            # A forward reference not defined yet: compile on first use.
            type.__setattr__(cls, "__bw_codec__", _LazyCodec(cls))  # type: ignore[arg-type]
            type.__setattr__(cls, "__init__", _lazy_init)
        except SchemaError as e:
            if not _names_outer_field(cls, e):
                raise
            # Its expressions name fields it does not define: they belong to a struct that
            # will contain it. Nested there it compiles; used alone it raises this error.
            type.__setattr__(cls, "__bw_codec__", _LazyCodec(cls))  # type: ignore[arg-type]
            _make_methods(cls, set())  # type: ignore[arg-type]
        return cls

    def __bw_fields__(cls) -> tuple[StructField, ...]:
        resolved = cls.__dict__.get("__bw_resolved__")
        if resolved is None:
            resolved = _resolve_fields(cls)
            type.__setattr__(cls, "__bw_resolved__", resolved)
        return resolved


def _register(cls: Any, name: str, registry: str | None, tag: Any, default: bool) -> None:
    """Declares a registry base (``registry="field"``) or a variant of one (``tag=``)."""
    type.__setattr__(cls, "__bw_registry__", None)
    if registry is not None:
        if not isinstance(registry, str):
            raise SchemaError(f"{name}: registry= names the tag field")
        type.__setattr__(
            cls, "__bw_registry__", {"cases": {}, "default": None, "dependents": WeakSet()}
        )
        type.__setattr__(cls, "__bw_registry_field__", registry)
    if tag is MISSING and not default:
        return
    base = next(
        (
            b
            for b in cls.__mro__[1:]
            if isinstance(b, StructMeta) and b.__dict__.get("__bw_registry__")
        ),
        None,
    )
    if base is None:
        raise SchemaError(f"{name}: tag= and default= need a base class declared with registry=")
    reg = base.__dict__["__bw_registry__"]
    if default:
        if reg["default"] is not None:
            raise SchemaError(
                f"{name}: {base.__name__} already has the default variant {reg['default'].__name__}"
            )
        reg["default"] = cls
    if tag is not MISSING:
        if not isinstance(tag, int | bytes) or isinstance(tag, bool):
            raise SchemaError(f"{name}: tag= must be an int or bytes, got {tag!r}")
        if tag in reg["cases"]:
            raise SchemaError(f"{name}: the tag {tag!r} is taken by {reg['cases'][tag].__name__}")
        reg["cases"][tag] = cls
        type.__setattr__(cls, "__bw_tag__", tag)
    # The base's codec, and every typed codec that embeds the registry (a variant that
    # contains it, a struct with a list of it), must learn the new variant: compile again
    # on next use.
    type.__setattr__(base, "__bw_codec__", _LazyCodec(base))
    for dep in list(reg["dependents"]):
        type.__setattr__(dep, "__bw_codec__", _LazyCodec(dep))
    reg["dependents"].clear()


def _names_outer_field(cls: Any, e: SchemaError) -> bool:
    """Whether compiling alone failed only because an expression names a field the class does
    not define at all (not a later field, not a likely typo of one it does)."""
    text = str(e)
    m = re.search(r"unknown field '([^']+)'", text)
    if m is None or "did you mean" in text:
        return False
    return all(f.name != m.group(1) for f in cls.__bw_fields__())


def _lazy_init(self: Any, **kwargs: Any) -> None:
    _install(type(self))
    type(self).__init__(self, **kwargs)


class Struct(metaclass=StructMeta):
    """Base class of typed binary structs.

    Annotate fields with wire types (``bw.U16``, ``bytes``, ``str``, nested Structs,
    ``list[...]``) and options (``bw.field(...)``); the class gets a keyword ``__init__``,
    ``==``, ``repr``, ``pack``/``pack_into`` and the classmethods ``unpack``,
    ``unpack_from`` and ``parse``.
    """

    __slots__ = ()
    __bw_codec__: ClassVar[Any]
    __bw_derived__: ClassVar[frozenset[str]]

    def __repr__(self) -> str:
        parts = []
        for f in type(self).__bw_fields__():
            if not f.spec.is_pad:
                parts.append(f"{f.name}={getattr(self, f.name, None)!r}")
        return f"{type(self).__qualname__}({', '.join(parts)})"

    __hash__ = None  # type: ignore[assignment]  # mutable, like dataclasses

    def pack(self) -> bytes:
        """Packs this value into new bytes (derived fields left as None are computed)."""
        return self.__bw_codec__.pack(self)

    def pack_into(self, buffer: Any, offset: int = 0) -> int:
        """Packs straight into a writable buffer at ``offset``; returns the end offset."""
        return self.__bw_codec__.pack_into(buffer, self, offset)

    @classmethod
    def unpack(cls: type[S], data: Any) -> S:
        """Unpacks exactly one value from a bytes-like object; trailing bytes are an error."""
        return cls.__bw_codec__.unpack(data)  # type: ignore[no-any-return]

    @classmethod
    def unpack_from(cls: type[S], data: Any, offset: int = 0) -> tuple[S, int]:
        """Unpacks one value at ``offset``; returns ``(value, end_offset)``."""
        return cls.__bw_codec__.unpack_from(data, offset)  # type: ignore[no-any-return]

    @classmethod
    def parse(cls: type[S], data: Any, offset: int = 0) -> Any:
        """Like ``unpack_from``, but returns a falsy ``bw.Incomplete`` when data runs short."""
        return cls.__bw_codec__.parse(data, offset)

    @classmethod
    def iter_unpack(cls: type[S], data: Any) -> list[S]:
        """Unpacks a buffer of back-to-back messages, in one native call."""
        return cls.__bw_codec__.iter_unpack(data)  # type: ignore[no-any-return]

    @classmethod
    def pack_many(cls, items: typing.Iterable[Any]) -> bytes:
        """Packs many messages (instances, mappings or tuples in field order) into one buffer."""
        return cls.__bw_codec__.pack_many(items)  # type: ignore[no-any-return]

    @classmethod
    def unpack_table(
        cls,
        data: Any,
        *,
        count: int | None = None,
        offset: int = 0,
        threads: int | None = None,
    ) -> Table:
        """Decodes back-to-back messages into a ``bw.Table``, one column per field, with no
        Python object per record (see docs/columns.md)."""
        return cls.__bw_codec__.unpack_table(  # type: ignore[no-any-return]
            data, count=count, offset=offset, threads=threads
        )

    @classmethod
    def iter_tables(
        cls, source: Any, *, rows: int = 65536, threads: int | None = None
    ) -> Iterator[Table]:
        """Yields ``bw.Table`` batches of at most ``rows`` rows from a path, a binary file
        object or an iterable of bytes chunks, in bounded memory."""
        return cls.__bw_codec__.iter_tables(  # type: ignore[no-any-return]
            source, rows=rows, threads=threads
        )

    @classmethod
    def pack_table(cls, table: Any) -> bytes:
        """Packs every row of a table (Arrow, pandas, or a mapping of columns) back to back,
        byte-identical to packing each row with ``cls(**row).pack()``."""
        return cls.__bw_codec__.pack_table(table)  # type: ignore[no-any-return]

    @classmethod
    def pack_table_into(cls, buffer: Any, offset: int, table: Any) -> int:
        """Packs every row of a table into a writable buffer at ``offset``; returns the end."""
        return cls.__bw_codec__.pack_table_into(buffer, offset, table)  # type: ignore[no-any-return]

    @classmethod
    def table_schema(cls) -> TableSchema:
        """The Arrow schema of the tables ``unpack_table`` gives (no data needed)."""
        return cls.__bw_codec__.table_schema  # type: ignore[no-any-return]

    @classmethod
    def reader(cls) -> Reader:
        """An incremental decoder: ``feed(data)``, then iterate for complete messages."""
        return Reader(cls)


def make_struct(
    name: str,
    fields: typing.Iterable[tuple[Any, ...]],
    *,
    byteorder: str | None = None,
    bitorder: str | None = None,
    align: int | None = None,
    limits: Limits | None = None,
    module: str | None = None,
    bases: tuple[type, ...] = (),
    **class_keywords: Any,
) -> type[Struct]:
    """Builds a Struct class from data: ``[(name, type), (name, type, bw.field(...)), ...]``.

    ``bases`` (default ``(bw.Struct,)``) and class keywords (``bitorder``, ``align``,
    ``registry``, ``tag``, ``default``) work as in a class statement.
    """
    annotations: dict[str, Any] = {}
    ns: dict[str, Any] = {"__annotations__": annotations}
    for i, entry in enumerate(fields):
        if not isinstance(entry, tuple) or len(entry) not in (2, 3):
            raise SchemaError(
                f"{name}: field {i} must be (name, type) or (name, type, bw.field(...))"
            )
        fname, ftype = entry[0], entry[1]
        if not isinstance(fname, str):
            raise SchemaError(f"{name}: field {i} has a non-string name {fname!r}")
        if fname in annotations:
            raise SchemaError(f"{name}.{fname}: duplicate field name")
        annotations[fname] = ftype
        if len(entry) == 3:
            ns[fname] = entry[2]
    ns["__module__"] = module or sys._getframe(1).f_globals.get("__name__", __name__)
    ns["__qualname__"] = name
    return StructMeta(  # type: ignore[return-value]
        name,
        bases or (Struct,),
        ns,
        byteorder=byteorder,
        bitorder=bitorder,
        align=align,
        limits=limits,
        **class_keywords,
    )


def compile(cls: type[Struct], *, limits: Limits | None = None) -> Codec:
    """A mapping-level codec for ``cls``: packs dicts (or objects) and unpacks dicts and lists.

    Codecs are immutable, thread-safe and picklable.
    """
    if not (isinstance(cls, StructMeta) and cls is not Struct):
        raise SchemaError(f"compile() needs a bw.Struct subclass, got {cls!r}")
    schema, infos = describe(cls, typed=False, limits=limits or cls.__bw_limits__)
    return Codec(schema, infos, False)
