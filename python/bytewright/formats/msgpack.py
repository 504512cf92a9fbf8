"""MessagePack values, declared with the wire vocabulary.

``Value`` is a tagged union on the first byte: fixints, nil and booleans carry their value
in that byte; fixstr, fixarray and fixmap their length; every other format a body of
its own. ``unpackb`` and ``packb`` convert between that tree and Python values, choosing
the same (smallest) formats as the ``msgpack`` package's defaults, so the bytes are
identical: ``None``, ``bool``, ``int`` (-2**63 .. 2**64-1), ``float`` (always float 64),
``str``, ``bytes``, ``list``/``tuple`` (arrays), ``dict`` (maps) and ``ExtType``.

Nesting is bounded. ``unpackb`` accepts at least ``MAX_DEPTH`` levels of arrays and maps
(the core counts nested structs: one per fixarray level, two per map or array16/32 level,
up to ``2 * MAX_DEPTH + 3``) and raises ``bw.DecodeError`` beyond, never a crash or a
``RecursionError``; ``packb`` refuses values nested deeper than ``MAX_DEPTH`` with
``bw.PackError``. Ext type -1 (timestamps) decodes to a plain ``ExtType``.
"""

from __future__ import annotations

from typing import Any

import bytewright as bw

__all__ = [
    "MAX_DEPTH",
    "ExtType",
    "PackTypeError",
    "Pair",
    "Value",
    "packb",
    "packb_declared",
    "unpackb",
    "unpackb_declared",
]

MAX_DEPTH = 100
"""Levels of arrays and maps that ``unpackb`` always accepts and ``packb`` never exceeds."""


class PackTypeError(bw.PackError, TypeError):
    """A value of a type MessagePack cannot hold. It is a ``TypeError`` too, as the ``msgpack``
    package raises for the same values, so ``except TypeError:`` keeps working.

    >>> from bytewright.formats import msgpack
    >>> msgpack.packb({"when": object()})
    Traceback (most recent call last):
        ...
    bytewright.formats.msgpack.PackTypeError: cannot serialize 'object' object
    """


ExtType = bw.types.ExtType
"""An extension value: a type code (-128..127) and its bytes (equal to ``msgpack.ExtType``)."""


# The union's tag: the first byte itself, except for the ranges that hold a value.
_KIND = (
    "head if 0xc0 <= head < 0xe0 else (0 if head < 0x80 else (0x80 if head < 0x90 else "
    "(0x90 if head < 0xa0 else (0xa0 if head < 0xc0 else 0xe0))))"
)


def _sized(name: str, n: Any, field: str, typ: Any, options: Any) -> type[bw.Struct]:
    return bw.make_struct(name, [("n", n), (field, typ, options)], module=__name__)


Bin8 = _sized("Bin8", bw.U8, "data", bytes, bw.field(len="n"))
Bin16 = _sized("Bin16", bw.U16, "data", bytes, bw.field(len="n"))
Bin32 = _sized("Bin32", bw.U32, "data", bytes, bw.field(len="n"))
Str8 = _sized("Str8", bw.U8, "text", str, bw.field(len="n"))
Str16 = _sized("Str16", bw.U16, "text", str, bw.field(len="n"))
Str32 = _sized("Str32", bw.U32, "text", str, bw.field(len="n"))
Array16 = _sized("Array16", bw.U16, "items", list[Any], bw.field(count="n", item="Value"))
Array32 = _sized("Array32", bw.U32, "items", list[Any], bw.field(count="n", item="Value"))
Map16 = _sized("Map16", bw.U16, "items", list[Any], bw.field(count="n", item="Pair"))
Map32 = _sized("Map32", bw.U32, "items", list[Any], bw.field(count="n", item="Pair"))


def _ext(name: str, n: Any) -> type[bw.Struct]:
    return bw.make_struct(
        name, [("n", n), ("code", bw.I8), ("data", bytes, bw.field(len="n"))], module=__name__
    )


Ext8 = _ext("Ext8", bw.U8)
Ext16 = _ext("Ext16", bw.U16)
Ext32 = _ext("Ext32", bw.U32)


def _fixext(name: str, size: int) -> type[bw.Struct]:
    return bw.make_struct(
        name, [("code", bw.I8), ("data", bytes, bw.field(len=size))], module=__name__
    )


_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
FixExt = {h: _fixext(f"FixExt{n}", n) for h, n in _FIXEXT.items()}

_NOTHING = bw.Bytes(len=0)

_CASES: dict[int, Any] = {
    0x00: _NOTHING,  # positive fixint: the value is the head
    0xE0: _NOTHING,  # negative fixint
    0xC0: _NOTHING,  # nil
    0xC2: _NOTHING,  # false
    0xC3: _NOTHING,  # true
    0x80: bw.Array(item="Pair", count="head & 0x0f"),
    0x90: bw.Array(item="Value", count="head & 0x0f"),
    0xA0: bw.Str(len="head & 0x1f"),
    0xC4: Bin8,
    0xC5: Bin16,
    0xC6: Bin32,
    0xC7: Ext8,
    0xC8: Ext16,
    0xC9: Ext32,
    0xCA: bw.F32,
    0xCB: bw.F64,
    0xCC: bw.U8,
    0xCD: bw.U16,
    0xCE: bw.U32,
    0xCF: bw.U64,
    0xD0: bw.I8,
    0xD1: bw.I16,
    0xD2: bw.I32,
    0xD3: bw.I64,
    **FixExt,
    0xD9: Str8,
    0xDA: Str16,
    0xDB: Str32,
    0xDC: Array16,
    0xDD: Array32,
    0xDE: Map16,
    0xDF: Map32,
}


class Value(bw.Struct):
    """One MessagePack value: the first byte, then the body that byte selects.

    >>> from bytewright.formats import msgpack
    >>> msgpack.Value.unpack(b"\\x92\\x01\\xa2hi")  # a fixarray: 1 (a fixint) and "hi"
    Value(head=146, body=[Value(head=1, body=b''), Value(head=162, body='hi')])
    """

    head: bw.U8
    body: Any = bw.field(tag=_KIND, cases=_CASES)


class Pair(bw.Struct):
    """One key/value entry of a map.

    >>> from bytewright.formats import msgpack
    >>> msgpack.Value.unpack(b"\\x81\\xa1k\\x01").body  # a fixmap of one pair
    [Pair(key=Value(head=161, body='k'), value=Value(head=1, body=b''))]
    """

    key: Value
    value: Value


# Each array or map level nests two structs (a Value and its Array16/Pair...); leave room.
_LIMITS = bw.Limits(max_depth=2 * MAX_DEPTH + 3)
_codec: Any = None


def _get_codec() -> Any:
    global _codec
    if _codec is None:
        _codec = bw.compile(Value, limits=_LIMITS)
    return _codec


def _py(node: dict[str, Any]) -> Any:
    b = node["body"]
    t = type(b)
    if t is int or t is float or t is str:
        return b
    h = node["head"]
    if t is bytes:  # a value held in the head
        if h < 0x80:
            return h
        if h >= 0xE0:
            return h - 0x100
        if h == 0xC0:
            return None
        return h == 0xC3
    if t is list:
        if h < 0x90:
            return {_py(p["key"]): _py(p["value"]) for p in b}
        return [_py(x) for x in b]
    if h <= 0xC6:
        return b["data"]
    if h <= 0xC9 or 0xD4 <= h <= 0xD8:
        return ExtType(b["code"], b["data"])
    if h <= 0xDB:
        return b["text"]
    if h <= 0xDD:
        return [_py(x) for x in b["items"]]
    return {_py(p["key"]): _py(p["value"]) for p in b["items"]}


class _Document(bw.Struct):
    """One value, decoded and encoded natively by the core's self-describing node."""

    value: Any = bw.field(type=bw.types.Msgpack())


# The document struct is one level; each array or map is one more.
_NATIVE = bw.compile(_Document, limits=bw.Limits(max_depth=MAX_DEPTH + 1))


def unpackb(data: bytes | bytearray | memoryview) -> Any:
    """Decodes exactly one MessagePack value (trailing bytes are an error).

    Map keys may be any value but an array or a map (which Python cannot hash).

    >>> from bytewright.formats import msgpack
    >>> msgpack.unpackb(b"\\x81\\xa1a\\x92\\x01\\xc0")
    {'a': [1, None]}
    >>> msgpack.unpackb(b"\\x92\\x01")
    Traceback (most recent call last):
        ...
    bytewright.errors.DecodeError: value[1]: needs 1 bytes at offset 2, 0 left
    """
    return _NATIVE.unpack(data)["value"]


def unpackb_declared(data: bytes | bytearray | memoryview) -> Any:
    """``unpackb`` through the declared ``Value`` schema (slower; shows the vocabulary).

    >>> from bytewright.formats import msgpack
    >>> msgpack.unpackb_declared(b"\\x81\\xa1a\\x92\\x01\\xc0")
    {'a': [1, None]}
    """
    tree = _get_codec().unpack(data)
    try:
        return _py(tree)
    except TypeError as e:  # an unhashable map key (an array or a map)
        raise bw.DecodeError(f"unhashable map key: {e}", "", None) from None


def _tree(v: Any, depth: int) -> dict[str, Any]:
    t = type(v)
    if t is str:
        n = len(v.encode("utf-8", "surrogatepass")) if not v.isascii() else len(v)
        if n < 32:
            return {"head": 0xA0 | n, "body": v}
        return {"head": 0xD9 if n < 0x100 else 0xDA if n < 0x10000 else 0xDB, "body": {"text": v}}
    if v is None:
        return {"head": 0xC0, "body": b""}
    if t is bool:
        return {"head": 0xC3 if v else 0xC2, "body": b""}
    if t is int:
        if 0 <= v < 0x80:
            return {"head": v, "body": b""}
        if v >= 0:
            if v < 0x100:
                return {"head": 0xCC, "body": v}
            if v < 0x10000:
                return {"head": 0xCD, "body": v}
            if v < 0x100000000:
                return {"head": 0xCE, "body": v}
            return {"head": 0xCF, "body": v}
        if v >= -32:
            return {"head": v + 0x100, "body": b""}
        if v >= -0x80:
            return {"head": 0xD0, "body": v}
        if v >= -0x8000:
            return {"head": 0xD1, "body": v}
        if v >= -0x80000000:
            return {"head": 0xD2, "body": v}
        return {"head": 0xD3, "body": v}
    if t is float:
        return {"head": 0xCB, "body": v}
    if depth >= MAX_DEPTH:
        raise bw.PackError(f"nested deeper than {MAX_DEPTH} arrays and maps", "")
    if t is list or t is tuple:
        n = len(v)
        items = [_tree(x, depth + 1) for x in v]
        if n < 16:
            return {"head": 0x90 | n, "body": items}
        return {"head": 0xDC if n < 0x10000 else 0xDD, "body": {"items": items}}
    if t is dict:
        n = len(v)
        pairs = [{"key": _tree(k, depth + 1), "value": _tree(x, depth + 1)} for k, x in v.items()]
        if n < 16:
            return {"head": 0x80 | n, "body": pairs}
        return {"head": 0xDE if n < 0x10000 else 0xDF, "body": {"items": pairs}}
    if t is bytes or t is bytearray or t is memoryview:
        if t is memoryview:
            v = v.tobytes()
        n = len(v)
        return {"head": 0xC4 if n < 0x100 else 0xC5 if n < 0x10000 else 0xC6, "body": {"data": v}}
    if isinstance(v, tuple) and len(v) == 2 and type(v).__name__ == "ExtType":
        code, data = v
        n = len(data)
        fix = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}.get(n)
        if fix is not None:
            return {"head": fix, "body": {"code": code, "data": data}}
        head = 0xC7 if n < 0x100 else 0xC8 if n < 0x10000 else 0xC9
        return {"head": head, "body": {"code": code, "data": data}}
    # Subclasses of the basic types, as msgpack accepts them.
    for base in _BASES:
        if isinstance(v, base):
            return _tree(base(v), depth)
    raise PackTypeError(f"cannot serialize {t.__name__!r} object", "")


_BASES: tuple[Any, ...] = (bool, int, float, str, bytes, list, tuple, dict)


def packb(value: Any) -> bytes:
    """Encodes a value as MessagePack, byte-identical with ``msgpack.packb(value)``.

    >>> from bytewright.formats import msgpack
    >>> msgpack.packb({"a": [1, 2.5, None, b"\\x00"]})
    b'\\x81\\xa1a\\x94\\x01\\xcb@\\x04\\x00\\x00\\x00\\x00\\x00\\x00\\xc0\\xc4\\x01\\x00'
    """
    try:
        return _NATIVE.pack({"value": value})
    except bw.PackError:
        # Types the native node does not take (memoryview...) go through the declared schema,
        # which also reports what cannot be packed at all.
        return packb_declared(value)


def packb_declared(value: Any) -> bytes:
    """``packb`` through the declared ``Value`` schema (slower; shows the vocabulary).

    >>> from bytewright.formats import msgpack
    >>> msgpack.packb_declared({"a": [1, 2.5]}) == msgpack.packb({"a": [1, 2.5]})
    True
    """
    return _get_codec().pack(_tree(value, 0))  # type: ignore[no-any-return]
