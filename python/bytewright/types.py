"""The type vocabulary: scalar annotations and the runtime type objects.

Scalars are ``Annotated`` aliases, so type checkers read ``bw.U16`` as ``int``. They are
built on first use: ``typing`` (and ``collections``, for ``ExtType``) load when a schema
needs them, not when bytewright is imported.
"""

from __future__ import annotations

from bytewright._value import Value, json_value

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Annotated, Any, Final, NamedTuple, TypeAlias

__all__ = [
    "F16",
    "F32",
    "F64",
    "I8",
    "I16",
    "I24",
    "I32",
    "I64",
    "REST",
    "U8",
    "U16",
    "U24",
    "U32",
    "U64",
    "Array",
    "Bits",
    "Bool",
    "Bytes",
    "CStr",
    "DnsName",
    "ExtType",
    "Kind",
    "Msgpack",
    "Str",
    "VarInt",
    "VarUInt",
    "Varint",
]


class Scalar(Value):
    """Wire facts of a scalar annotation: kind (int, float, bool), width in bytes, signedness."""

    __slots__ = ("kind", "width", "signed")  # noqa: RUF023 (field order)
    kind: str
    width: int
    signed: bool

    def __init__(self, kind: str, width: int, signed: bool = False) -> None:
        self._init(kind, width, signed)


# The scalar aliases (bw.U16, ...) by id, with their Scalar: a class's plain annotations are
# recognised by a lookup here. The aliases live as long as the module, so their ids are
# never reused.
SCALAR_ALIASES: dict[int, Scalar] = {}


class _Rest:
    """Marker: the length or count runs to the end of the enclosing region."""

    _instance: _Rest | None = None

    def __new__(cls) -> _Rest:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "bytewright.REST"

    def __reduce__(self) -> str:
        return "REST"


REST: Final = _Rest()

Length = int | str | _Rest


class Bits(Value):
    """A bit field of ``width`` bits (1..64). Adjacent bit fields share whole bytes; the
    struct's ``bitorder`` ("msb", network order, or "lsb", C-compiler order) places them.

    ``bw.bits(width)`` declares a field of this type; ``Bits`` itself is the type as a
    value, for ``bw.field(type=...)``.

    >>> import bytewright as bw
    >>> class Nibbles(bw.Struct):
    ...     high: int = bw.field(type=bw.Bits(4))
    ...     low: int = bw.field(type=bw.Bits(4, signed=True))
    >>> value = Nibbles.unpack(b"\\xaf")
    >>> (value.high, value.low)
    (10, -1)
    """

    __slots__ = ("width", "signed", "boolean")  # noqa: RUF023 (field order)
    width: int
    signed: bool
    boolean: bool

    def __init__(self, width: int, signed: bool = False, boolean: bool = False) -> None:
        self._init(width, signed, boolean)


class Varint(Value):
    """LEB128 variable-length integer; ``zigzag`` for signed values (protobuf's sint)."""

    __slots__ = ("zigzag",)
    zigzag: bool

    def __init__(self, zigzag: bool = False) -> None:
        self._init(zigzag)


class Kind(Value):
    """Base of the declarations of field kinds: types with a wire format of their own, each
    implemented in ``crates/wire/src/kinds/`` (see docs/architecture.md). ``describe`` gives
    the kind's schema description, ``{"t": "<name>", ...}``."""

    __slots__ = ()

    def describe(self) -> str:
        raise NotImplementedError


class DnsName(Kind):
    """A DNS domain name (RFC 1035): text like ``"www.example.com."``; compression pointers
    (counted from the start of the outermost value) are followed on unpack and, when
    ``compress`` is set, written on pack. See ``bytewright.formats.dns``.

    >>> import bytewright as bw
    >>> class Query(bw.Struct):
    ...     first: str = bw.field(type=bw.DnsName())
    ...     second: str = bw.field(type=bw.DnsName())
    >>> wire = Query(first="www.example.com.", second="mail.example.com.").pack()
    >>> wire[17:]
    b'\\x04mail\\xc0\\x04'
    >>> Query.unpack(wire).second
    'mail.example.com.'
    """

    __slots__ = ("compress",)
    compress: bool

    def __init__(self, compress: bool = True) -> None:
        self._init(compress)

    def describe(self) -> str:
        return f'{{"t":"dnsname","compress":{json_value(self.compress)}}}'


class Bytes(Value):
    """Raw bytes whose length is a constant, an expression over earlier fields, or REST.

    A ``bytes`` annotation with ``bw.field(len=...)`` declares the same; ``Bytes`` is the
    type as a value (an array's item, a union case, or ``bw.field(type=...)``).

    >>> import bytewright as bw
    >>> class Macs(bw.Struct):
    ...     addresses: list[bytes] = bw.field(count=2, item=bw.Bytes(6))
    >>> Macs.unpack(bytes(range(12))).addresses[1]
    b'\\x06\\x07\\x08\\t\\n\\x0b'
    """

    __slots__ = ("len",)
    len: Length

    def __init__(self, len: Length) -> None:
        self._init(len)


class Str(Value):
    """Text of a byte length given like ``Bytes``; encoding utf-8, ascii or latin-1.

    >>> import bytewright as bw
    >>> class Tags(bw.Struct):
    ...     tags: list[str] = bw.field(count=2, item=bw.Str(3, encoding="ascii"))
    >>> Tags(tags=["abc", "xyz"]).pack()
    b'abcxyz'
    """

    __slots__ = ("len", "encoding")  # noqa: RUF023 (field order)
    len: Length
    encoding: str

    def __init__(self, len: Length, encoding: str = "utf-8") -> None:
        self._init(len, encoding)


class CStr(Value):
    """NUL-terminated text of at most ``max_len`` bytes before the NUL.

    >>> import bytewright as bw
    >>> class Env(bw.Struct):
    ...     pairs: list[str] = bw.field(count=bw.REST, item=bw.CStr(max_len=64))
    >>> Env.unpack(b"HOME=/root\\x00TERM=xterm\\x00").pairs
    ['HOME=/root', 'TERM=xterm']
    """

    __slots__ = ("max_len", "encoding")  # noqa: RUF023 (field order)
    max_len: int
    encoding: str

    def __init__(self, max_len: int, encoding: str = "utf-8") -> None:
        self._init(max_len, encoding)


class Array(Value):
    """A list of ``item`` (any type); ``count`` is a constant, an expression or REST.

    ``list[X]`` with ``bw.field(count=...)`` declares the same; ``Array`` is the type as a
    value, e.g. the item of a list of lists.

    >>> import bytewright as bw
    >>> class Grid(bw.Struct):
    ...     rows: list[list[int]] = bw.field(count=2, item=bw.Array(bw.U8, 3))
    >>> Grid.unpack(bytes(range(6))).rows
    [[0, 1, 2], [3, 4, 5]]
    """

    __slots__ = ("item", "count")  # noqa: RUF023 (field order)
    item: Any
    count: Length

    def __init__(self, item: Any, count: Length = REST) -> None:
        self._init(item, count)


class Msgpack(Kind):
    """A self-describing MessagePack value (None, bool, int, float, str, bytes, list, dict,
    ExtType), nested up to the codec's depth limit."""

    __slots__ = ()

    def describe(self) -> str:
        return '{"t":"msgpack"}'


if TYPE_CHECKING:
    U8: TypeAlias = Annotated[int, Scalar("int", 1)]
    U16: TypeAlias = Annotated[int, Scalar("int", 2)]
    U24: TypeAlias = Annotated[int, Scalar("int", 3)]
    U32: TypeAlias = Annotated[int, Scalar("int", 4)]
    U64: TypeAlias = Annotated[int, Scalar("int", 8)]
    I8: TypeAlias = Annotated[int, Scalar("int", 1, True)]
    I16: TypeAlias = Annotated[int, Scalar("int", 2, True)]
    I24: TypeAlias = Annotated[int, Scalar("int", 3, True)]
    I32: TypeAlias = Annotated[int, Scalar("int", 4, True)]
    I64: TypeAlias = Annotated[int, Scalar("int", 8, True)]
    F16: TypeAlias = Annotated[float, Scalar("float", 2)]
    F32: TypeAlias = Annotated[float, Scalar("float", 4)]
    F64: TypeAlias = Annotated[float, Scalar("float", 8)]
    Bool: TypeAlias = Annotated[bool, Scalar("bool", 1)]
    VarUInt: TypeAlias = Annotated[int, Varint(False)]
    VarInt: TypeAlias = Annotated[int, Varint(True)]

    class ExtType(NamedTuple):
        """A MessagePack extension value: a type code (-128..127) and its bytes.

        >>> from bytewright.formats import msgpack
        >>> msgpack.unpackb(b"\\xd5\\x05\\x01\\x02")
        ExtType(code=5, data=b'\\x01\\x02')
        >>> msgpack.packb(msgpack.ExtType(5, b"\\x01\\x02"))
        b'\\xd5\\x05\\x01\\x02'
        """

        code: int
        data: bytes

else:

    def _aliases() -> dict[str, Any]:
        from typing import Annotated, NamedTuple

        class ExtType(NamedTuple):
            """A MessagePack extension value: a type code (-128..127) and its bytes.

            >>> from bytewright.formats import msgpack
            >>> msgpack.unpackb(b"\\xd5\\x05\\x01\\x02")
            ExtType(code=5, data=b'\\x01\\x02')
            >>> msgpack.packb(msgpack.ExtType(5, b"\\x01\\x02"))
            b'\\xd5\\x05\\x01\\x02'
            """

            code: int
            data: bytes

        ExtType.__module__ = __name__
        out: dict[str, Any] = {"ExtType": ExtType}
        for prefix, kind, py, signed in (
            ("U", "int", int, False),
            ("I", "int", int, True),
        ):
            for width in (1, 2, 3, 4, 8):
                out[f"{prefix}{width * 8}"] = Annotated[py, Scalar(kind, width, signed)]
        for width in (2, 4, 8):
            out[f"F{width * 8}"] = Annotated[float, Scalar("float", width)]
        out["Bool"] = Annotated[bool, Scalar("bool", 1)]
        out["VarUInt"] = Annotated[int, Varint(False)]
        out["VarInt"] = Annotated[int, Varint(True)]
        for alias in out.values():
            metadata = getattr(alias, "__metadata__", ())
            if metadata and isinstance(metadata[0], Scalar):
                SCALAR_ALIASES[id(alias)] = metadata[0]
        return out

    _LAZY = frozenset(
        {"Bool", "ExtType", "VarInt", "VarUInt", "F16", "F32", "F64"}
        | {f"{p}{w}" for p in "UI" for w in (8, 16, 24, 32, 64)}
    )

    def __getattr__(name: str) -> Any:
        # First use of a scalar alias (or ExtType): build them all, once.
        if name in _LAZY:
            globals().update(_aliases())
            return globals()[name]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(globals()) | _LAZY)
