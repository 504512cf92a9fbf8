"""Typed frontend: ``bw.Struct`` classes, ``bw.make_struct`` and ``bw.compile``.

A Struct class stores its fields in ``__slots__``; the native codec builds instances and reads
fields straight from those slots, so typed results cost no more than dicts. Everything
bytewright knows about a class is in its one ``__bw__`` attribute (a ``StructInfo``).
"""

from __future__ import annotations

import sys
from _operator import attrgetter  # operator's C half: importing operator.py costs more
from keyword import iskeyword

from bytewright._info import (
    _NEW_INFO,
    Pending,
    Registry,
    SchemaMeta,
    StructField,
    StructInfo,
    info_of,
)
from bytewright._native import (
    Codec,
    StructInit,
    check_align,
    compile_info,
    compile_struct,
    declare,
    new_class,
    new_info,
)
from bytewright._value import MISSING
from bytewright.errors import SchemaError, schema_error, unknown
from bytewright.fields import PLAIN, FieldSpec, Limits, bits, enum, field, flag, normalize_byteorder
from bytewright.stream import Reader
from bytewright.types import SCALAR_ALIASES

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, ClassVar, Self, dataclass_transform

    from typing_extensions import Buffer

    from bytewright._native import Table, TableReader, TableSchema
    from bytewright.errors import Incomplete
else:

    def dataclass_transform(**kwargs):  # typing.dataclass_transform, without importing typing
        def mark(cls):
            cls.__dataclass_transform__ = {
                "eq_default": True,
                "order_default": False,
                "kw_only_default": False,
                "frozen_default": False,
                "field_specifiers": (),
                **kwargs,
                "kwargs": {},
            }
            return cls

        return mark


__all__ = ["Codec", "Struct", "StructMeta", "codec_of", "compile", "make_struct"]

_CLASS_KEYWORDS = ("byteorder", "bitorder", "align", "limits", "registry", "tag", "default")
_BITORDERS = ("msb", "lsb")
_ORDERS = ("big", "little")
_RESERVED = frozenset(
    {"pack", "pack_into", "unpack", "unpack_from", "parse", "iter_unpack", "pack_many", "reader"}
    | {"unpack_table", "iter_tables", "pack_table", "pack_table_into", "table_schema"}
    | {n for n in dir(object)}
)
# Names that passed the check below (programs reuse field names: one set lookup then; bounded).
_FIELD_NAMES: set[str] = set()


@dataclass_transform(kw_only_default=True, field_specifiers=(field, bits, flag, enum))
class StructMeta(SchemaMeta):
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
        if kw or bitorder is not None or limits is not None or registry is not None:
            _check_keywords(name, kw, bitorder, limits, registry)
        order = (
            byteorder
            if byteorder is None or (type(byteorder) is str and byteorder in _ORDERS)
            else normalize_byteorder(byteorder, name)
        )
        if align is not None:
            align = check_align(align, name)
        # One native pass: the fields, __slots__, and (its fields all its own) its __init__.
        typing = sys.modules.get("typing")  # a ClassVar annotation means typing is loaded
        declared, strings = declare(
            name, bases, ns, typing.ClassVar if typing is not None else None, _DECLARE
        )
        localns = _caller_locals(sys._getframe(1)) if strings else None
        cls: StructMeta = new_class(mcls, name, bases, ns)  # type.__new__, made faster
        if not declared and not any(isinstance(b, StructMeta) for b in bases):
            cls.__bw__ = None
            return cls  # the Struct base itself: no schema of its own
        # Its StructInfo, made its __bw__ (with a codec compiled on first use until then).
        info: StructInfo = new_info(
            _CLASS_INFO, cls, declared, order, bitorder, align, limits, registry, tag, localns
        )
        if tag is not MISSING or default:
            _register_variant(info, tag, default)
        if registry is not None:
            _install_methods(info, frozenset())  # its variants come later
            return cls
        # Its typed codec, compiled now (or left to compile on first use).
        try:
            compile_info(compile_struct, _COMPILE, info)
        except (NameError, SchemaError) as e:
            _defer(info, e)
        return cls


def _check_keywords(
    name: str, kw: dict[str, Any], bitorder: Any, limits: Any, registry: Any
) -> None:
    for k in kw:
        raise unknown(
            f"unknown class keyword {k!r}", k, _CLASS_KEYWORDS, kind="unknown_option", where=name
        )
    if bitorder is not None and bitorder not in _BITORDERS:
        raise unknown(
            f"bitorder must be 'msb' or 'lsb', got {bitorder!r}", bitorder, _BITORDERS, where=name
        )
    if limits is not None and not isinstance(limits, Limits):
        raise schema_error(name, "limits= must be a bw.Limits")
    if registry is not None and not isinstance(registry, str):
        raise schema_error(name, "registry= names the tag field")


def _check_name(name: str, fname: str) -> None:
    """A field name not seen before: refused if reserved, else remembered."""
    if fname in _RESERVED or fname[:2] == "__" or not fname.isidentifier() or iskeyword(fname):
        raise schema_error(f"{name}.{fname}", "this name is reserved and cannot be a field")
    if len(_FIELD_NAMES) < 4096:
        _FIELD_NAMES.add(fname)


_DECLARE = (
    SCALAR_ALIASES,
    FieldSpec,
    StructField,
    PLAIN,
    MISSING,
    _FIELD_NAMES,
    _check_name,
    SchemaMeta,
)


def _caller_locals(caller: Any) -> dict[str, Any] | None:
    """String annotations of a class defined in a function may name its local classes."""
    if caller.f_locals is not caller.f_globals:
        return dict(caller.f_locals)
    return None


def _register_variant(info: StructInfo, tag: Any, default: bool) -> None:
    """Adds a variant (``tag=`` or ``default=True``) to its base's registry."""
    name = info.name
    base = next(
        (b for b in info.cls.__mro__[1:] if (bi := info_of(b)) is not None and bi.registry),
        None,
    )
    if base is None:
        raise schema_error(name, "tag= and default= need a base class declared with registry=")
    base_info = info_of(base)
    assert base_info is not None and base_info.registry is not None
    reg: Registry = base_info.registry
    if default:
        if reg.default is not None:
            raise schema_error(
                name, f"{base.__name__} already has the default variant {reg.default.__name__}"
            )
        reg.default = info.cls
    if tag is not MISSING:
        if not isinstance(tag, int | bytes) or isinstance(tag, bool):
            raise schema_error(name, f"tag= must be an int or bytes, got {tag!r}")
        if tag in reg.cases:
            raise schema_error(name, f"the tag {tag!r} is taken by {reg.cases[tag].__name__}")
        reg.cases[tag] = info.cls
    # The base's codec, and every typed codec that embeds the registry (a variant that
    # contains it, a struct with a list of it), must learn the new variant: compile again
    # on next use.
    base_info.reset(Pending(base, codec_of))
    for dep in list(reg.dependents):
        dep_info = info_of(dep)
        if dep_info is not None:
            dep_info.reset(Pending(dep, codec_of))
    reg.dependents.clear()


def _defer(info: StructInfo, e: NameError | SchemaError) -> None:
    """The class's typed codec did not compile when the class was made: it compiles on first
    use, or the error stands."""
    if isinstance(e, NameError):
        # A forward reference to a class not defined yet: compile on first use.
        if not _own_init(info.cls.__dict__.get("__init__")):
            type.__setattr__(info.cls, "__init__", _init_on_first_use)
        return
    if not _names_outer_field(info, e):
        raise e
    # Its expressions name fields it does not define: they belong to a struct that
    # will contain it. Nested there it compiles; used alone it raises this error.
    _install_methods(info, frozenset())


def _names_outer_field(info: StructInfo, e: SchemaError) -> bool:
    """Whether compiling alone failed only because an expression names a field the class does
    not define at all (not a later field, not a likely typo of one it does)."""
    if e.kind != "unknown_name" or e.suggestion is not None or e.name is None:
        return False
    return all(f.name != e.name for f in info.fields())


def _compile(info: StructInfo) -> Codec[Any]:
    """Compiles the typed codec of a class and makes its ``__init__`` and ``==`` ready (one
    native call: ``_native.compile_info``)."""
    return compile_info(compile_struct, _COMPILE, info)  # type: ignore[no-any-return]


def _note_registries(info: StructInfo, used: list[type]) -> None:
    """The class's codec embeds these registry bases: it compiles again when they gain a
    variant."""
    for base in used:
        base_info = info_of(base)
        if base_info is not None and base_info.registry is not None:
            base_info.registry.dependents.add(info.cls)


def codec_of(cls: type) -> Codec[Any]:
    """The typed codec of a Struct class, compiled now if it was left for first use."""
    info = info_of(cls)
    if info is None:
        raise SchemaError(f"{cls!r} is not a bw.Struct subclass with fields")
    codec = info.codec
    return codec if isinstance(codec, Codec) else _compile(info)


def _init_args(
    fields: Iterable[StructField], tag_field: str | None, tag: Any, derived: frozenset[str]
) -> tuple[list[str], dict[str, Any]]:
    """The keywords of a class's ``__init__`` and their defaults: a variant's tag, a default,
    a constant, or None for a field pack computes or a conditional one."""
    names: list[str] = []
    defaults: dict[str, Any] = {}
    for f in fields:
        spec = f.spec
        name = f.name
        if spec is PLAIN and name not in derived and name != tag_field:
            names.append(name)
            continue
        if spec.is_pad:
            continue
        names.append(name)
        if name == tag_field and tag is not MISSING:
            defaults[name] = tag
        elif spec.default is not MISSING:
            defaults[name] = spec.default
        elif spec.const is not MISSING:
            defaults[name] = spec.const
        elif name in derived or spec.when is not None:
            defaults[name] = None
    return names, defaults


def _install_methods(info: StructInfo, derived: frozenset[str]) -> None:
    """The class's keyword ``__init__`` and ``__match_args__``, and the fields ``==`` compares
    (every field pack does not compute)."""
    cls = info.cls
    init = cls.__dict__.get("__init__")
    if not info._bases and type(init) is StructInit:
        # Made with the class: derived fields become optional.
        names: tuple[str, ...] = init.names
        if derived:
            init.derive(derived)
    else:
        args, defaults = _init_args(info.fields(), info.tag_field, info.tag, derived)
        names = tuple(args)
        if not _own_init(init):
            type.__setattr__(cls, "__init__", StructInit(cls.__qualname__, names, defaults))
        type.__setattr__(cls, "__match_args__", names)
    compared = [n for n in names if n not in derived] if derived else names
    if len(compared) > 1:
        info.compares(attrgetter(*compared))
    elif compared:
        # A 1-tuple keeps tuple equality (identity first, as for NaN).
        info.compares(attrgetter(compared[0], compared[0]))
    else:
        info.compares(_no_fields)


def _no_fields(value: Any) -> tuple[()]:
    return ()


_CLASS_INFO = (*_NEW_INFO, Pending, codec_of)
_COMPILE = (None, attrgetter, _no_fields, _note_registries, _install_methods)


def _own_init(init: object) -> bool:
    """Whether a class's ``__init__`` was written in its body (kept, as dataclasses keep
    one), not made by bytewright."""
    return init is not None and type(init) is not StructInit and init is not _init_on_first_use


def _init_on_first_use(self: Any, **kwargs: Any) -> None:
    codec_of(type(self))
    type(self).__init__(self, **kwargs)


class Struct(metaclass=StructMeta):
    """Base class of typed binary structs.

    Annotate fields with wire types (``bw.U16``, ``bytes``, ``str``, nested Structs,
    ``list[...]``) and options (``bw.field(...)``); the class gets a keyword ``__init__``,
    ``==``, ``repr``, ``pack``/``pack_into`` and the classmethods ``unpack``,
    ``unpack_from`` and ``parse``.

    Class keywords: ``byteorder`` (``"big"`` or ``"little"``, the default for every field),
    ``bitorder`` (``"msb"`` or ``"lsb"``), ``align``, ``limits`` (a ``bw.Limits``), and for
    registries ``registry`` (the tag field of a base), ``tag`` and ``default`` (a variant).

    >>> import bytewright as bw
    >>> class Point(bw.Struct, byteorder="little"):
    ...     x: bw.I16
    ...     y: bw.I16
    >>> Point(x=1, y=-2).pack()
    b'\\x01\\x00\\xfe\\xff'
    >>> Point.unpack(b"\\x01\\x00\\xfe\\xff")
    Point(x=1, y=-2)
    """

    __slots__ = ()
    if TYPE_CHECKING:
        __bw__: ClassVar[StructInfo]

    def __repr__(self) -> str:
        parts = []
        for f in type(self).__bw__.fields():
            if not f.spec.is_pad:
                parts.append(f"{f.name}={getattr(self, f.name, None)!r}")
        return f"{type(self).__qualname__}({', '.join(parts)})"

    __hash__ = None  # type: ignore[assignment]  # mutable, like dataclasses

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        compare = type(self).__bw__.compare
        if compare is None:  # made without __init__ before its class compiled
            codec_of(type(self))
            compare = type(self).__bw__.compare
            assert compare is not None
        return compare(self) == compare(other)  # type: ignore[no-any-return]

    def pack(self) -> bytes:
        """Packs this value into new bytes (derived fields left as None are computed).

        >>> import bytewright as bw
        >>> class Text(bw.Struct):
        ...     n: bw.U8 = bw.derived()
        ...     s: str = bw.field(len="n")
        >>> Text(s="hey").pack()
        b'\\x03hey'
        """
        return self.__bw__.codec.pack(self)

    def pack_into(self, buffer: Buffer, offset: int = 0) -> int:
        """Packs straight into a writable buffer at ``offset``; returns the end offset.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> buf = bytearray(4)
        >>> Word(v=0xABCD).pack_into(buf, 1)
        3
        >>> buf
        bytearray(b'\\x00\\xab\\xcd\\x00')
        """
        return self.__bw__.codec.pack_into(buffer, self, offset)

    @classmethod
    def unpack(cls, data: Buffer) -> Self:
        """Unpacks exactly one value from a bytes-like object; trailing bytes are an error.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> Word.unpack(b"\\x01\\x02").v
        258
        >>> Word.unpack(b"\\x01\\x02\\x03")
        Traceback (most recent call last):
        bytewright.errors.DecodeError: 1 trailing bytes after the Word message ends at offset 2 (unpack_from reads a message followed by other data)
        """
        return cls.__bw__.codec.unpack(data)  # type: ignore[no-any-return]

    @classmethod
    def unpack_from(cls, data: Buffer, offset: int = 0) -> tuple[Self, int]:
        """Unpacks one value at ``offset``; returns ``(value, end_offset)``.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> Word.unpack_from(b"\\xff\\x01\\x02\\x03", 1)
        (Word(v=258), 3)
        """
        return cls.__bw__.codec.unpack_from(data, offset)

    @classmethod
    def parse(cls, data: Buffer, offset: int = 0) -> tuple[Self, int] | Incomplete:
        """Like ``unpack_from``, but returns a falsy ``bw.Incomplete`` when data runs short.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U32
        >>> Word.parse(b"\\x00\\x01")
        Incomplete(needed=2)
        >>> Word.parse(b"\\x00\\x00\\x00\\x07")
        (Word(v=7), 4)
        """
        return cls.__bw__.codec.parse(data, offset)

    @classmethod
    def iter_unpack(cls, data: Buffer) -> list[Self]:
        """Unpacks a buffer of back-to-back messages, in one native call.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> [w.v for w in Word.iter_unpack(b"\\x00\\x01\\x00\\x02")]
        [1, 2]
        """
        return cls.__bw__.codec.iter_unpack(data)

    @classmethod
    def pack_many(cls, items: Iterable[Self | Mapping[str, Any] | tuple[Any, ...]]) -> bytes:
        """Packs many messages (instances, mappings or tuples in field order) into one buffer.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> Word.pack_many([Word(v=1), {"v": 2}, (3,)])
        b'\\x00\\x01\\x00\\x02\\x00\\x03'
        """
        return cls.__bw__.codec.pack_many(items)

    @classmethod
    def unpack_table(
        cls,
        data: Buffer,
        *,
        count: int | None = None,
        offset: int = 0,
        threads: int | None = None,
        enum_names: bool = False,
        verify_checksums: bool = True,
    ) -> Table:
        """Decodes back-to-back messages into a ``bw.Table``, one column per field, with no
        Python object per record (see docs/columns.md). ``enum_names=True`` makes enum fields
        dictionary columns of member names; ``verify_checksums=False`` keeps checksum fields
        as stored without checking them (``unpack`` always checks them).

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> table = Word.unpack_table(b"\\x00\\x01\\x00\\x02\\x00\\x03")
        >>> (table.num_rows, table["v"].to_pylist())
        (3, [1, 2, 3])
        """
        return cls.__bw__.codec.unpack_table(
            data,
            count=count,
            offset=offset,
            threads=threads,
            enum_names=enum_names,
            verify_checksums=verify_checksums,
        )

    @classmethod
    def iter_tables(
        cls,
        source: Any,
        *,
        rows: int = 65536,
        threads: int | None = None,
        enum_names: bool = False,
    ) -> TableReader:
        """Yields ``bw.Table`` batches of at most ``rows`` rows from a path, a binary file
        object or an iterable of bytes chunks, in bounded memory (``enum_names`` as for
        ``unpack_table``).

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> [t.num_rows for t in Word.iter_tables([b"\\x00\\x01\\x00", b"\\x02\\x00\\x03"], rows=2)]
        [2, 1]
        """
        return cls.__bw__.codec.iter_tables(
            source, rows=rows, threads=threads, enum_names=enum_names
        )

    @classmethod
    def pack_table(cls, table: Any) -> bytes:
        """Packs every row of a table (Arrow, pandas, or a mapping of columns) back to back,
        byte-identical to packing each row with ``cls(**row).pack()``.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> Word.pack_table({"v": [1, 2]})
        b'\\x00\\x01\\x00\\x02'
        """
        return cls.__bw__.codec.pack_table(table)

    @classmethod
    def pack_table_into(cls, buffer: Buffer, offset: int, table: Any) -> int:
        """Packs every row of a table into a writable buffer at ``offset``; returns the end.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> buf = bytearray(5)
        >>> Word.pack_table_into(buf, 1, {"v": [1, 2]})
        5
        """
        return cls.__bw__.codec.pack_table_into(buffer, offset, table)

    @classmethod
    def table_schema(cls) -> TableSchema:
        """The Arrow schema of the tables ``unpack_table`` gives (no data needed).

        >>> import bytewright as bw
        >>> import pyarrow as pa
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> pa.schema(Word.table_schema()).field("v").type
        DataType(uint16)
        """
        return cls.__bw__.codec.table_schema

    @classmethod
    def reader(cls) -> Reader:
        """An incremental decoder: ``feed(data)``, then iterate for complete messages.

        >>> import bytewright as bw
        >>> class Word(bw.Struct, byteorder="big"):
        ...     v: bw.U16
        >>> reader = Word.reader()
        >>> reader.feed(b"\\x00\\x01\\x00")
        >>> [w.v for w in reader]
        [1]
        """
        return Reader(cls)


def make_struct(
    name: str,
    fields: Iterable[tuple[Any, ...]],
    *,
    byteorder: str | None = None,
    bitorder: str | None = None,
    align: int | None = None,
    limits: Limits | None = None,
    module: str | None = None,
    bases: tuple[type, ...] = (),
    **class_keywords: Any,
) -> type[Any]:
    """Builds a Struct class from data: ``[(name, type), (name, type, bw.field(...)), ...]``.

    Type checkers cannot know the fields of a class made from data: it is typed ``type[Any]``.

    ``bases`` (default ``(bw.Struct,)``) and class keywords (``bitorder``, ``align``,
    ``registry``, ``tag``, ``default``) work as in a class statement.

    >>> import bytewright as bw
    >>> Pair = bw.make_struct("Pair", [("a", bw.U8), ("b", bytes, bw.field(len=2))])
    >>> Pair.unpack(b"\\x01hi")
    Pair(a=1, b=b'hi')
    """
    annotations: dict[str, Any] = {}
    ns: dict[str, Any] = {"__annotations__": annotations}
    for i, entry in enumerate(fields):
        if not isinstance(entry, tuple) or len(entry) not in (2, 3):
            raise schema_error(
                name, f"field {i} must be (name, type) or (name, type, bw.field(...))"
            )
        fname, ftype = entry[0], entry[1]
        if not isinstance(fname, str):
            raise schema_error(name, f"field {i} has a non-string name {fname!r}")
        if fname in annotations:
            raise schema_error(f"{name}.{fname}", "duplicate field name")
        annotations[fname] = ftype
        if len(entry) == 3:
            ns[fname] = entry[2]
    ns["__module__"] = module or sys._getframe(1).f_globals.get("__name__", __name__)
    ns["__qualname__"] = name
    return StructMeta(
        name,
        bases or (Struct,),
        ns,
        byteorder=byteorder,
        bitorder=bitorder,
        align=align,
        limits=limits,
        **class_keywords,
    )


def compile(cls: type[Struct], *, limits: Limits | None = None) -> Codec[dict[str, Any]]:
    """A mapping-level codec for ``cls``: packs dicts (or objects) and unpacks dicts and lists.

    Codecs are immutable, thread-safe and picklable.

    >>> import bytewright as bw
    >>> class Point(bw.Struct):
    ...     x: bw.U8
    ...     y: bw.U8
    >>> codec = bw.compile(Point)
    >>> codec.unpack(b"\\x01\\x02")
    {'x': 1, 'y': 2}
    >>> codec.pack({"x": 3, "y": 4})
    b'\\x03\\x04'
    """
    info = info_of(cls)
    if info is None:
        raise SchemaError(f"compile() needs a bw.Struct subclass, got {cls!r}")
    return compile_struct(cls, False, limits or info.limits)
