"""Typed declarations -> the core's schema description (JSON) and per-struct adapter info.

The description is written as JSON text directly. A struct's part of it depends only on the
struct (and a byte order given by the field holding it), so it is written once per class and
reused, with its struct ids renumbered, by every schema that contains the class.
"""

from __future__ import annotations

import sys
from keyword import iskeyword

from bytewright import types as t
from bytewright._info import StructField, StructInfo, info_of
from bytewright._native import Codec, check_align
from bytewright._value import MISSING, json_dumps, json_value
from bytewright.errors import SchemaError, schema_error, unknown
from bytewright.fields import PLAIN, FieldSpec, Limits, digest_size, normalize_byteorder

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    # What the native adapter needs per struct: (class or None, field names, defaults,
    # decoders or None, encoders or None).
    AdapterInfo: TypeAlias = tuple[
        type | None, list[str], list[Any], list[Any] | None, list[Any] | None
    ]
    # JSON text pieces, and where struct ids are among them (renumbered when a cached part
    # is reused).
    Pieces: TypeAlias = list[str]

__all__ = ["describe"]

_ENCODINGS = {
    "utf-8": "utf-8",
    "utf8": "utf-8",
    "ascii": "ascii",
    "us-ascii": "ascii",
    "latin-1": "latin-1",
    "latin1": "latin-1",
    "iso-8859-1": "latin-1",
}
_LEAF_TYPES = (t.Varint, t.Bits, t.Kind)
# isinstance() tuples (``int | str`` would build a union object on every call).
_INT_OR_STR = (int, str)
_BOOL_OR_INT = (bool, int)
_BYTES = (bytes, bytearray)
_TEXT_TYPES = (t.Str, t.CStr)
_GENERIC_ALIAS = type(list[int])
# Annotations that are classes but never an IntEnum (no converter to look for).
_NEVER_ENUM = frozenset({bytes, str, bool})


def _text(s: str) -> str:
    """``s`` as a JSON string."""
    return f'"{s}"' if s.isidentifier() else json_dumps(s)


def _encoding(value: Any, where: str) -> str:
    name = str(value or "utf-8").lower().replace("_", "-")
    if name not in _ENCODINGS:
        raise unknown(f"unsupported encoding {value!r}", value, _ENCODINGS, where=where, match=name)
    return _ENCODINGS[name]


def _length(value: Any, where: str, what: str) -> str:
    if value is None:
        raise schema_error(
            where, f"needs {what}= (a constant, an expression over earlier fields, or bw.REST)"
        )
    if value is t.REST:
        return '"rest"'
    if isinstance(value, bool) or not isinstance(value, _INT_OR_STR):
        raise schema_error(
            where, f"{what}= must be an int, an expression string or bw.REST, got {value!r}"
        )
    if isinstance(value, int):
        if value < 0:
            raise schema_error(where, f"{what}= must not be negative")
        return f'{{"fixed":{value}}}'
    return f'{{"expr":{_expr(value, where)}}}'


def _expr(source: str, where: str) -> str:
    name = source.strip()
    if name.isidentifier() and not iskeyword(name):
        return f'["name",{_text(name)}]'  # the common case, a field name: no parse
    from bytewright.expr import parse_expr

    return json_dumps(parse_expr(source, where))


def _const(value: Any, where: str) -> str:
    if isinstance(value, _BOOL_OR_INT):
        v = int(value)
        return f'{{"int":{v}}}' if -(2**63) <= v < 2**64 else f'{{"int":"{v}"}}'
    if isinstance(value, _BYTES):
        return f'{{"bytes":{json_dumps(list(value))}}}'
    raise schema_error(where, f"a constant must be an int or bytes, got {value!r}")


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


def _converter(
    ann: Any, spec: FieldSpec, where: str
) -> tuple[Callable[[Any], Any], Callable[[Any], Any]] | None:
    """The (decode, encode) callables of a field, or None."""
    conv = spec.convert
    if conv is None and (ann in _NEVER_ENUM or not isinstance(ann, type)):
        return None  # the common case: a scalar alias, a list, bytes, str...
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


class _Builder:
    def __init__(self, typed: bool, limits: Limits | None) -> None:
        self.typed = typed
        self.limits = limits
        self.out: Pieces = []
        # The indices in ``out`` of the pieces that are struct ids.
        self.ids: list[int] = []
        # Adapter info by struct id, each with its decoders and encoders (dropped at the end
        # for dict codecs).
        self.infos: list[AdapterInfo] = []
        self.active: list[tuple[type, int]] = []
        self.owner: type | None = None
        # Registry bases this schema embeds (their later variants make it stale).
        self.registries: list[type] = []
        # Struct ids referred to by "ref" (recursion), so far.
        self.refs: list[int] = []
        # The byte order the fields of the struct being written inherit.
        self.order = "big"
        # Nested structs whose compiled codec the core copies rather than compiles again:
        # each codec with its struct id, and each one's pieces in ``out`` (start, end), its
        # index in ``parts`` and its struct id.
        self.parts: list[tuple[Codec[Any], int]] = []
        self.spliced: list[tuple[int, int, int, int]] = []

    def emit(self, *pieces: str) -> None:
        self.out.extend(pieces)

    def struct(
        self, cls: type, info: StructInfo, where: str, order: str | None, tag: Any = MISSING
    ) -> None:
        out = self.out
        for active, sid in self.active:
            if active is cls:
                # Recursion; a registry variant included (its tag is its class's).
                self.ids.append(len(out) + 1)
                out += ('{"t":"ref","id":', str(sid), "}")
                self.refs.append(sid)
                return
        if tag is MISSING:
            if info.registry is not None:
                self.registry(cls, info, where, order)
                return
            cached = info._cache.get(order)
            if cached is not None:
                start = len(out)
                sid = len(self.infos)
                self.reuse(*cached)
                # Its codec's program is this part's when compiled in the same context: the
                # same limits, and the same byte order for fields that do not say theirs.
                codec = info.codec
                if (
                    isinstance(codec, Codec)
                    and (info.byteorder or order or self.order) == (info.byteorder or "big")
                    and (info.limits is self.limits or info.limits == self.limits)
                ):
                    self.spliced.append((start, len(out), len(self.parts), sid))
                    self.parts.append((codec, sid))
                return
            tag = info.tag
            cacheable = True
        else:
            cacheable = False
        sid = len(self.infos)
        start = len(out)
        ids = len(self.ids)
        refs = len(self.refs)
        registries = len(self.registries)
        self.active.append((cls, sid))
        self.infos.append((None, [], [], None, None))
        o = info.byteorder or order
        self.ids.append(len(out) + 1)
        out += ('{"t":"struct","id":', str(sid))
        # Text since the last piece, so a run of plain scalars becomes one piece.
        text = (
            f',"name":{_text(cls.__name__)},"order":{_text(o) if o else "null"},'
            f'"bitorder":"{info.bitorder or "msb"}","fields":['
        )
        sep = ""
        names: list[str] = []
        defaults: list[Any] = []
        convs: dict[int, tuple[Any, Any]] = {}  # by field index, the few with converters
        owner = self.owner
        self.owner = cls
        inherited = self.order
        self.order = o or inherited
        tag_field = info.tag_field
        scalar_aliases = t.SCALAR_ALIASES
        for f in info.fields():
            spec = f.spec
            if spec is PLAIN and f.name != tag_field:
                # The common case: a plain scalar (no options, no converter).
                scalar = scalar_aliases.get(id(f.annotation))
                if scalar is None:
                    metadata = getattr(f.annotation, "__metadata__", None)
                    if metadata and isinstance(metadata[0], t.Scalar):
                        scalar = metadata[0].describe(None)
                if scalar is not None:
                    name = f.name
                    text += f'{sep}{{"name":"{name}","type":{scalar}}}'
                    sep = ","
                    names.append(name)
                    defaults.append(None)
                    continue
            if spec.is_pad:
                text += f'{sep}{{"name":null,"type":{{"t":"pad","n":{spec.pad_size}}}}}'
                sep = ","
                continue
            out.append(text + sep)
            text = ""
            sep = ","
            fw = f"{cls.__name__}.{f.name}"
            is_tag = f.name == info.tag_field and tag is not MISSING and tag is not None
            self.field(f, fw, _const(tag, fw) if is_tag else None)
            if is_tag:
                default = tag
            elif spec.default is not MISSING:
                default = spec.default
            elif spec.const is not MISSING:
                default = spec.const
            else:
                default = None
            conv = _converter(f.annotation, spec, fw)
            if conv is not None:
                convs[len(names)] = conv
            names.append(f.name)
            defaults.append(default)
        self.owner = owner
        self.order = inherited
        out.append(text + (f'],"align":{info.align}}}' if info.align else "]}"))
        if convs:
            decoders = [convs[i][0] if i in convs else None for i in range(len(names))]
            encoders = [convs[i][1] if i in convs else None for i in range(len(names))]
            self.infos[sid] = (cls, names, defaults, decoders, encoders)
        else:
            self.infos[sid] = (cls, names, defaults, None, None)
        self.active.pop()
        # Kept for reuse unless it refers to a struct outside it (recursion through an
        # enclosing struct) or embeds a registry (which may gain variants).
        if (
            cacheable
            and len(self.registries) == registries
            and all(r >= sid for r in self.refs[refs:])
        ):
            at = [i - start for i in self.ids[ids:]]
            info._cache[order] = (out[start:], at, sid, self.infos[sid:])

    def reuse(self, pieces: Pieces, at: list[int], sid: int, infos: list[AdapterInfo]) -> None:
        """A struct's part of another schema (``at``: where its ids are among ``pieces``),
        its struct ids moved to follow this one's."""
        shift = len(self.infos) - sid
        if shift:
            pieces = pieces.copy()
            for i in at:
                pieces[i] = str(int(pieces[i]) + shift)
        base = len(self.out)
        self.ids += [base + i for i in at]
        self.out += pieces
        self.infos += infos

    def registry(self, cls: type, info: StructInfo, where: str, order: str | None) -> None:
        reg = info.registry
        assert reg is not None
        self.registries.append(cls)
        if not reg.cases and reg.default is None:
            raise schema_error(
                where,
                f"registry {cls.__name__} has no variants yet "
                "(declare subclasses with a tag= class keyword)",
            )
        self.emit(f'{{"t":"registry","field":{_text(reg.field)},"cases":[')
        for i, (tag, sub) in enumerate(reg.cases.items()):
            sub_info = info_of(sub)
            assert sub_info is not None
            self.emit("," if i else "", f'{{"tag":{_const(tag, where)},"type":')
            self.struct(sub, sub_info, f"{where}[{tag!r}]", order, tag)
            self.emit("}")
        self.emit("]")
        if reg.default is not None:
            default_info = info_of(reg.default)
            assert default_info is not None
            self.emit(',"default":')
            self.struct(reg.default, default_info, f"{where}[default]", order, None)
        self.emit("}")

    def field(self, f: StructField, where: str, tag_const: str | None) -> None:
        spec = f.spec
        self.emit(f'{{"name":{_text(f.name)},"type":')
        self.type(f.annotation, spec, where)
        if spec.align is not None:
            self.emit(f',"align":{check_align(spec.align, where)}')
        if tag_const is not None:
            self.emit(f',"const":{tag_const}')
        elif spec.const is not MISSING:
            self.emit(f',"const":{_const(spec.const, where)}')
        if spec.checksum is not None:
            algo, over, verify = spec.checksum
            if isinstance(algo, str):
                algo_text = json_dumps(algo)
            else:
                algo_text = json_dumps(
                    {
                        "width": algo.width,
                        "poly": algo.poly,
                        "init": algo.init,
                        "refin": algo.refin,
                        "refout": algo.refout,
                        "xorout": algo.xorout,
                    }
                )
            over_text = json_dumps(list(over)) if over else "null"
            self.emit(
                f',"checksum":{{"algo":{algo_text},"over":{over_text},'
                f'"verify":{json_value(verify)}}}'
            )
        if spec.when is not None:
            if not isinstance(spec.when, str):
                raise schema_error(where, "when= must be an expression string")
            self.emit(f',"when":{_expr(spec.when, where)}')
        if spec.size is not None:
            if isinstance(spec.size, bool) or not isinstance(spec.size, _INT_OR_STR):
                raise schema_error(where, "size= must be an int or an expression string")
            size = f'["int",{spec.size}]' if isinstance(spec.size, int) else _expr(spec.size, where)
            self.emit(f',"size":{size}')
        self.emit("}")

    def resolve(self, ann: Any, where: str) -> Any:
        """Evaluates a forward reference (a string, or ``list["Node"]``'s item)."""
        name = getattr(ann, "__forward_arg__", ann)
        module = sys.modules.get(self.owner.__module__) if self.owner is not None else None
        ns = dict(vars(module)) if module else {}
        for cls, _ in self.active:
            ns.setdefault(cls.__name__, cls)
        try:
            return eval(name, ns)
        except NameError as e:
            raise NameError(f"{where}: {e}") from None

    def type(self, ann: Any, spec: FieldSpec, where: str) -> None:
        if spec.type is not None:
            ann = spec.type
        is_class = isinstance(ann, type)  # bytes, str, a Struct class (not a string or list[...])
        if not is_class and (isinstance(ann, str) or _is_forward_ref(ann)):
            ann = self.resolve(ann, where)
            is_class = isinstance(ann, type)
        if spec.cases is not None or spec.tag is not None:
            self.union(spec, where)
            return
        byteorder = spec.byteorder
        order = None if byteorder is None else normalize_byteorder(byteorder, where)
        # Only Annotated[...] has metadata (a failed lookup on a class or list[...] would
        # build an AttributeError).
        metadata = (
            None
            if is_class or ann.__class__ is _GENERIC_ALIAS
            else getattr(ann, "__metadata__", None)
        )
        if isinstance(metadata, tuple):  # Annotated[...]
            for meta in metadata:
                if isinstance(meta, t.Scalar):
                    self.emit(meta.describe(order))
                    return
                if isinstance(meta, _LEAF_TYPES):
                    self.emit(meta.describe())
                    return
            self.type(ann.__origin__, spec, where)
            return
        if isinstance(ann, t.Scalar):
            self.emit(ann.describe(order))
            return
        if isinstance(ann, _LEAF_TYPES):
            self.emit(ann.describe())
            return
        if ann is bytes or isinstance(ann, t.Bytes):
            length = ann.len if isinstance(ann, t.Bytes) else spec.len
            if length is None and spec.const is not MISSING and isinstance(spec.const, _BYTES):
                length = len(spec.const)
            if length is None and spec.checksum is not None:
                length = digest_size(spec.checksum[0])
            self.emit(f'{{"t":"bytes","len":{_length(length, where, "len")}')
            if spec.max_len is not None:
                self.emit(f',"max":{json_value(spec.max_len)}')
            self.emit("}")
            return
        if ann is str or isinstance(ann, _TEXT_TYPES):
            if isinstance(ann, t.CStr) or spec.nul_terminated:
                max_len = ann.max_len if isinstance(ann, t.CStr) else spec.max_len
                enc = ann.encoding if isinstance(ann, t.CStr) else spec.encoding
                if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 0:
                    raise schema_error(where, "NUL-terminated text needs max_len= (an int)")
                self.emit(f'{{"t":"cstr","max":{max_len},"encoding":"{_encoding(enc, where)}"}}')
                return
            length = ann.len if isinstance(ann, t.Str) else spec.len
            enc = ann.encoding if isinstance(ann, t.Str) else spec.encoding
            self.emit(
                f'{{"t":"str","len":{_length(length, where, "len")},'
                f'"encoding":"{_encoding(enc, where)}"'
            )
            if spec.max_len is not None:
                self.emit(f',"max":{json_value(spec.max_len)}')
            self.emit("}")
            return
        if ann is bool:
            self.emit('{"t":"bool"}')
            return
        info = info_of(ann)
        if info is not None:
            self.struct(ann, info, where, order)
            return
        origin = getattr(ann, "__origin__", None)
        if isinstance(ann, t.Array) or origin is list:
            count: t.Length | None
            if isinstance(ann, t.Array):
                item, count = ann.item, ann.count
            else:
                args = getattr(ann, "__args__", ())
                item = spec.item if spec.item is not None else (args[0] if args else None)
                count = spec.count
                if count is None and spec.size is not None:
                    count = t.REST
            if item is None:
                raise schema_error(where, "a list needs an item type, e.g. list[bw.U16]")
            item_spec = FieldSpec(byteorder=spec.byteorder) if spec.byteorder else PLAIN
            self.emit('{"t":"array","item":')
            self.type(item, item_spec, f"{where}[]")
            self.emit(f',"count":{_length(count, where, "count")}')
            if spec.max_count is not None:
                self.emit(f',"max":{json_value(spec.max_count)}')
            self.emit("}")
            return
        if _is_int_enum(ann):
            raise schema_error(
                where,
                "an enum field needs its wire type, e.g. bw.enum(bw.U8) or bw.field(type=bw.U8)",
            )
        if ann is int:
            raise schema_error(
                where,
                "a plain int has no wire width; use bw.U8 .. bw.U64, bw.I8 .. bw.I64, "
                "bw.bits(n) or bw.VarUInt",
            )
        if ann is float:
            raise schema_error(where, "a plain float has no wire width; use bw.F16, F32 or F64")
        if _is_union(ann):
            raise schema_error(where, "a union needs tag= and cases= to choose its variant")
        raise schema_error(where, f"unsupported field type {ann!r}")

    def union(self, spec: FieldSpec, where: str) -> None:
        if not isinstance(spec.tag, str):
            raise schema_error(
                where, "a tagged union needs tag= (an expression string, usually a field name)"
            )
        if not isinstance(spec.cases, dict) or not spec.cases:
            raise schema_error(where, "a tagged union needs cases= (a dict from tag value to type)")
        self.emit(f'{{"t":"union","tag":{_expr(spec.tag, where)},"cases":[')
        for i, (k, v) in enumerate(spec.cases.items()):
            self.emit("," if i else "", f'{{"tag":{_const(k, where)},"type":')
            self.type(v, PLAIN, f"{where}[{k!r}]")
            self.emit("}")
        self.emit("]")
        if spec.default_case is not None:
            self.emit(',"default":')
            self.type(spec.default_case, PLAIN, f"{where}[default]")
        self.emit("}")


def _is_forward_ref(ann: Any) -> bool:
    # A ForwardRef means typing is loaded already.
    typing = sys.modules.get("typing")
    return typing is not None and isinstance(ann, typing.ForwardRef)


def _is_union(ann: Any) -> bool:
    import types
    import typing

    return typing.get_origin(ann) in (typing.Union, types.UnionType)


def describe(
    cls: type, *, typed: bool, limits: Limits | None, registries: list[type] | None = None
) -> tuple[str, list[AdapterInfo], tuple[str, list[tuple[Codec[Any], int]]] | None]:
    """The schema JSON of ``cls``, the adapter info of each struct (by struct id), and the
    ``parts=`` argument of ``Codec`` when nested structs have compiled codecs to reuse.

    ``registries``, when given, receives the registry bases the schema embeds.
    """
    info = info_of(cls)
    if info is None:
        raise SchemaError(f"{cls!r} is not a bw.Struct subclass with fields")
    b = _Builder(typed, limits)
    b.owner = cls
    b.emit('{"root":')
    b.struct(cls, info, cls.__name__, None)
    if limits is not None:
        b.emit(
            f',"limits":{{"max_count":{json_value(limits.max_count)},'
            f'"max_len":{json_value(limits.max_len)},"max_depth":{json_value(limits.max_depth)}}}'
        )
    b.emit("}")
    if registries is not None:
        registries.extend(b.registries)
    schema = "".join(b.out)
    parts = None
    if b.spliced:
        # The same text with each reused struct as a reference to its codec.
        pieces: list[str] = []
        last = 0
        for start, end, part, sid in b.spliced:
            pieces += b.out[last:start]
            pieces.append(f'{{"t":"part","part":{part},"id":{sid}}}')
            last = end
        pieces += b.out[last:]
        parts = ("".join(pieces), b.parts)
    if typed:
        infos = b.infos
    else:
        infos = [(None, names, defaults, None, None) for _, names, defaults, _, _ in b.infos]
    return schema, infos, parts
