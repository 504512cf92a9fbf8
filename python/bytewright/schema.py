"""Typed declarations -> the core's schema description (JSON) and per-struct adapter info."""

from __future__ import annotations

import enum as _enum
import json
import sys
import types as _pytypes
import typing
from dataclasses import dataclass
from typing import Any

from bytewright import types as t
from bytewright.errors import SchemaError
from bytewright.expr import parse_expr
from bytewright.fields import MISSING, FieldSpec, Limits, _EnumConverter, digest_size, suggest

__all__ = ["StructField", "describe", "normalize_byteorder"]

_ENCODINGS = {
    "utf-8": "utf-8",
    "utf8": "utf-8",
    "ascii": "ascii",
    "us-ascii": "ascii",
    "latin-1": "latin-1",
    "latin1": "latin-1",
    "iso-8859-1": "latin-1",
}
_ORDERS = ("big", "little")


@dataclass(frozen=True)
class StructField:
    """One declared field: its name, its (resolved) annotation and its options."""

    name: str
    annotation: Any
    spec: FieldSpec


def normalize_byteorder(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if value not in _ORDERS:
        raise SchemaError(
            f"{where}: byteorder must be 'big' or 'little', got {value!r}{suggest(value, _ORDERS)}"
        )
    return str(value)


def _encoding(value: Any, where: str) -> str:
    name = str(value or "utf-8").lower().replace("_", "-")
    if name not in _ENCODINGS:
        raise SchemaError(f"{where}: unsupported encoding {value!r}{suggest(name, _ENCODINGS)}")
    return _ENCODINGS[name]


def _length(value: Any, where: str, what: str) -> Any:
    if value is None:
        raise SchemaError(
            f"{where}: needs {what}= (a constant, an expression over earlier fields, or bw.REST)"
        )
    if value is t.REST:
        return "rest"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise SchemaError(
            f"{where}: {what}= must be an int, an expression string or bw.REST, got {value!r}"
        )
    if isinstance(value, int):
        if value < 0:
            raise SchemaError(f"{where}: {what}= must not be negative")
        return {"fixed": value}
    return {"expr": parse_expr(value, where)}


def _const(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, bool | int):
        v = int(value)
        return {"int": v if -(2**63) <= v < 2**64 else str(v)}
    if isinstance(value, bytes | bytearray):
        return {"bytes": list(value)}
    raise SchemaError(f"{where}: a constant must be an int or bytes, got {value!r}")


def _is_struct_class(obj: Any) -> bool:
    from bytewright.struct import Struct

    return isinstance(obj, type) and issubclass(obj, Struct) and obj is not Struct


def _is_int_enum(ann: Any) -> bool:
    return isinstance(ann, type) and issubclass(ann, _enum.IntEnum | _enum.IntFlag)


def _converter(ann: Any, spec: FieldSpec, where: str) -> tuple[Any, Any] | None:
    """The (decode, encode) callables of a field, or None."""
    conv = spec.convert
    is_enum_marker = isinstance(conv, tuple) and len(conv) == 2 and conv[0] == "enum"
    if is_enum_marker or (conv is None and _is_int_enum(ann)):
        if not _is_int_enum(ann):
            raise SchemaError(f"{where}: bw.enum() needs an IntEnum or IntFlag annotation")
        c = _EnumConverter(ann, bool(conv[1]) if is_enum_marker else False)
        return (c.decode, c.encode)
    if conv is None:
        return None
    if not (isinstance(conv, tuple) and len(conv) == 2 and all(callable(x) for x in conv)):
        raise SchemaError(f"{where}: convert= must be a (decode, encode) pair of callables")
    return conv


class _Builder:
    def __init__(self, typed: bool) -> None:
        self.typed = typed
        self.infos: list[Any] = []
        self.active: list[tuple[type, int]] = []
        self.owner: type | None = None
        # Registry bases this schema embeds (their later variants make it stale).
        self.registries: list[type] = []

    def struct(
        self, cls: type, where: str, order: str | None = None, tag: Any = MISSING
    ) -> dict[str, Any]:
        for active, sid in self.active:
            if active is cls:
                # Recursion; a registry variant included (its tag is its class's).
                return {"t": "ref", "id": sid}
        if tag is MISSING:
            if cls.__dict__.get("__bw_registry__") is not None:
                return self.registry(cls, where, order)
            tag = getattr(cls, "__bw_tag__", MISSING)
        sid = len(self.infos)
        self.active.append((cls, sid))
        self.infos.append(None)
        tag_field = getattr(cls, "__bw_registry_field__", None)
        fields_desc: list[dict[str, Any]] = []
        names: list[str] = []
        defaults: list[Any] = []
        decoders: list[Any] = []
        encoders: list[Any] = []
        owner = self.owner
        for f in cls.__bw_fields__():  # type: ignore[attr-defined]
            fw = f"{cls.__name__}.{f.name}"
            if f.spec.is_pad:
                fields_desc.append({"name": None, "type": {"t": "pad", "n": f.spec.pad_size}})
                continue
            self.owner = cls
            d = self.field(f, fw)
            is_tag = f.name == tag_field and tag is not MISSING and tag is not None
            if is_tag:
                d["const"] = _const(tag, fw)
            fields_desc.append(d)
            names.append(f.name)
            if is_tag:
                defaults.append(tag)
            elif f.spec.default is not MISSING:
                defaults.append(f.spec.default)
            elif f.spec.const is not MISSING:
                defaults.append(f.spec.const)
            else:
                defaults.append(None)
            conv = _converter(f.annotation, f.spec, fw)
            decoders.append(conv[0] if conv else None)
            encoders.append(conv[1] if conv else None)
        self.owner = owner
        if self.typed and any(x is not None for x in decoders):
            self.infos[sid] = (cls, names, defaults, decoders, encoders)
        else:
            self.infos[sid] = (cls if self.typed else None, names, defaults, None, None)
        self.active.pop()
        desc: dict[str, Any] = {
            "t": "struct",
            "id": sid,
            "name": cls.__name__,
            "order": cls.__bw_byteorder__ or order,  # type: ignore[attr-defined]
            "bitorder": cls.__bw_bitorder__ or "msb",  # type: ignore[attr-defined]
            "fields": fields_desc,
        }
        if cls.__bw_align__:  # type: ignore[attr-defined]
            desc["align"] = cls.__bw_align__  # type: ignore[attr-defined]
        return desc

    def registry(self, cls: type, where: str, order: str | None) -> dict[str, Any]:
        reg = cls.__bw_registry__  # type: ignore[attr-defined]
        self.registries.append(cls)
        if not reg["cases"] and reg["default"] is None:
            raise SchemaError(
                f"{where}: registry {cls.__name__} has no variants yet "
                "(declare subclasses with a tag= class keyword)"
            )
        cases = [
            {"tag": _const(tag, where), "type": self.struct(sub, f"{where}[{tag!r}]", order, tag)}
            for tag, sub in reg["cases"].items()
        ]
        d: dict[str, Any] = {
            "t": "registry",
            "field": cls.__bw_registry_field__,  # type: ignore[attr-defined]
            "cases": cases,
        }
        if reg["default"] is not None:
            d["default"] = self.struct(reg["default"], f"{where}[default]", order, None)
        return d

    def field(self, f: StructField, where: str) -> dict[str, Any]:
        spec = f.spec
        d: dict[str, Any] = {"name": f.name, "type": self.type(f.annotation, spec, where)}
        if spec.align is not None:
            if not isinstance(spec.align, int) or isinstance(spec.align, bool) or spec.align < 1:
                raise SchemaError(f"{where}: align= must be a positive int")
            d["align"] = spec.align
        if spec.const is not MISSING:
            d["const"] = _const(spec.const, where)
        if spec.checksum is not None:
            algo, over, verify = spec.checksum
            if not isinstance(algo, str):
                algo = {
                    "width": algo.width,
                    "poly": algo.poly,
                    "init": algo.init,
                    "refin": algo.refin,
                    "refout": algo.refout,
                    "xorout": algo.xorout,
                }
            d["checksum"] = {"algo": algo, "over": list(over) if over else None, "verify": verify}
        if spec.when is not None:
            if not isinstance(spec.when, str):
                raise SchemaError(f"{where}: when= must be an expression string")
            d["when"] = parse_expr(spec.when, where)
        if spec.size is not None:
            if isinstance(spec.size, bool) or not isinstance(spec.size, int | str):
                raise SchemaError(f"{where}: size= must be an int or an expression string")
            d["size"] = (
                ["int", spec.size] if isinstance(spec.size, int) else parse_expr(spec.size, where)
            )
        return d

    def resolve(self, ann: Any, where: str) -> Any:
        """Evaluates a forward reference (a string, or ``list["Node"]``'s item)."""
        name = ann.__forward_arg__ if isinstance(ann, typing.ForwardRef) else ann
        module = sys.modules.get(self.owner.__module__) if self.owner is not None else None
        ns = dict(vars(module)) if module else {}
        for cls, _ in self.active:
            ns.setdefault(cls.__name__, cls)
        try:
            return eval(name, ns)
        except NameError as e:
            raise NameError(f"{where}: {e}") from None

    def type(self, ann: Any, spec: FieldSpec, where: str) -> dict[str, Any]:
        if spec.type is not None:
            ann = spec.type
        if isinstance(ann, str | typing.ForwardRef):
            ann = self.resolve(ann, where)
        if spec.cases is not None or spec.tag is not None:
            return self.union(spec, where)
        order = normalize_byteorder(spec.byteorder, where)
        origin = typing.get_origin(ann)
        if origin is typing.Annotated:
            for meta in ann.__metadata__:
                if isinstance(meta, t.Scalar):
                    return meta.describe(order)
                if isinstance(meta, t.Varint | t.Bits | t.DnsName | t.Msgpack):
                    return meta.describe()
            return self.type(typing.get_args(ann)[0], spec, where)
        if isinstance(ann, t.Scalar):
            return ann.describe(order)
        if isinstance(ann, t.Varint | t.Bits | t.DnsName | t.Msgpack):
            return ann.describe()
        if ann is bytes or isinstance(ann, t.Bytes):
            length = ann.len if isinstance(ann, t.Bytes) else spec.len
            if (
                length is None
                and spec.const is not MISSING
                and isinstance(spec.const, bytes | bytearray)
            ):
                length = len(spec.const)
            if length is None and spec.checksum is not None:
                length = digest_size(spec.checksum[0])
            d = {"t": "bytes", "len": _length(length, where, "len")}
            if spec.max_len is not None:
                d["max"] = spec.max_len
            return d
        if ann is str or isinstance(ann, t.Str | t.CStr):
            if isinstance(ann, t.CStr) or spec.nul_terminated:
                max_len = ann.max_len if isinstance(ann, t.CStr) else spec.max_len
                enc = ann.encoding if isinstance(ann, t.CStr) else spec.encoding
                if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 0:
                    raise SchemaError(f"{where}: NUL-terminated text needs max_len= (an int)")
                return {"t": "cstr", "max": max_len, "encoding": _encoding(enc, where)}
            length = ann.len if isinstance(ann, t.Str) else spec.len
            enc = ann.encoding if isinstance(ann, t.Str) else spec.encoding
            d = {
                "t": "str",
                "len": _length(length, where, "len"),
                "encoding": _encoding(enc, where),
            }
            if spec.max_len is not None:
                d["max"] = spec.max_len
            return d
        if ann is bool:
            return {"t": "bool"}
        if _is_struct_class(ann):
            return self.struct(ann, where, order)
        if isinstance(ann, t.Array) or origin is list:
            if isinstance(ann, t.Array):
                item, count = ann.item, ann.count
            else:
                args = typing.get_args(ann)
                item = spec.item if spec.item is not None else (args[0] if args else None)
                count = spec.count
                if count is None and spec.size is not None:
                    count = t.REST
            if item is None:
                raise SchemaError(f"{where}: a list needs an item type, e.g. list[bw.U16]")
            item_spec = FieldSpec(byteorder=spec.byteorder) if spec.byteorder else FieldSpec()
            d = {
                "t": "array",
                "item": self.type(item, item_spec, f"{where}[]"),
                "count": _length(count, where, "count"),
            }
            if spec.max_count is not None:
                d["max"] = spec.max_count
            return d
        if _is_int_enum(ann):
            raise SchemaError(
                f"{where}: an enum field needs its wire type, e.g. bw.enum(bw.U8) or "
                "bw.field(type=bw.U8)"
            )
        if ann is int:
            raise SchemaError(
                f"{where}: a plain int has no wire width; use bw.U8 .. bw.U64, bw.I8 .. bw.I64, "
                "bw.bits(n) or bw.VarUInt"
            )
        if ann is float:
            raise SchemaError(f"{where}: a plain float has no wire width; use bw.F16, F32 or F64")
        if origin in (typing.Union, _pytypes.UnionType):
            raise SchemaError(f"{where}: a union needs tag= and cases= to choose its variant")
        raise SchemaError(f"{where}: unsupported field type {ann!r}")

    def union(self, spec: FieldSpec, where: str) -> dict[str, Any]:
        if not isinstance(spec.tag, str):
            raise SchemaError(
                f"{where}: a tagged union needs tag= (an expression string, usually a field name)"
            )
        if not isinstance(spec.cases, dict) or not spec.cases:
            raise SchemaError(
                f"{where}: a tagged union needs cases= (a dict from tag value to type)"
            )
        cases = []
        for k, v in spec.cases.items():
            cases.append(
                {"tag": _const(k, where), "type": self.type(v, FieldSpec(), f"{where}[{k!r}]")}
            )
        d: dict[str, Any] = {"t": "union", "tag": parse_expr(spec.tag, where), "cases": cases}
        if spec.default_case is not None:
            d["default"] = self.type(spec.default_case, FieldSpec(), f"{where}[default]")
        return d


def describe(
    cls: type, *, typed: bool, limits: Limits | None, registries: list[type] | None = None
) -> tuple[str, list[Any]]:
    """The schema JSON of ``cls`` and the adapter info of each struct, by struct id.

    ``registries``, when given, receives the registry bases the schema embeds.
    """
    b = _Builder(typed)
    b.owner = cls
    root = b.struct(cls, cls.__name__)
    schema: dict[str, Any] = {"root": root}
    if limits is not None:
        schema["limits"] = {
            "max_count": limits.max_count,
            "max_len": limits.max_len,
            "max_depth": limits.max_depth,
        }
    if registries is not None:
        registries.extend(b.registries)
    return json.dumps(schema), b.infos
