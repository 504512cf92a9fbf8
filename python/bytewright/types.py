"""The type vocabulary: scalar annotations and the runtime type objects.

Scalars are ``Annotated`` aliases, so type checkers read ``bw.U16`` as ``int``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final, NamedTuple

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
    "Msgpack",
    "Str",
    "VarInt",
    "VarUInt",
    "Varint",
]


@dataclass(frozen=True)
class Scalar:
    """Wire facts of a scalar annotation: kind (int, float, bool), width in bytes, signedness."""

    kind: str
    width: int
    signed: bool = False

    def describe(self, order: str | None) -> dict[str, Any]:
        if self.kind == "bool":
            return {"t": "bool"}
        d: dict[str, Any] = {"t": self.kind, "width": self.width}
        if self.kind == "int":
            d["signed"] = self.signed
        if order is not None:
            d["order"] = order
        return d


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

U8 = Annotated[int, Scalar("int", 1)]
U16 = Annotated[int, Scalar("int", 2)]
U24 = Annotated[int, Scalar("int", 3)]
U32 = Annotated[int, Scalar("int", 4)]
U64 = Annotated[int, Scalar("int", 8)]
I8 = Annotated[int, Scalar("int", 1, True)]
I16 = Annotated[int, Scalar("int", 2, True)]
I24 = Annotated[int, Scalar("int", 3, True)]
I32 = Annotated[int, Scalar("int", 4, True)]
I64 = Annotated[int, Scalar("int", 8, True)]
F16 = Annotated[float, Scalar("float", 2)]
F32 = Annotated[float, Scalar("float", 4)]
F64 = Annotated[float, Scalar("float", 8)]
Bool = Annotated[bool, Scalar("bool", 1)]

Length = int | str | _Rest


@dataclass(frozen=True)
class Bits:
    """A bit field of ``width`` bits (1..64). Adjacent bit fields share whole bytes; the
    struct's ``bitorder`` ("msb", network order, or "lsb", C-compiler order) places them."""

    width: int
    signed: bool = False
    boolean: bool = False

    def describe(self) -> dict[str, Any]:
        return {"t": "bits", "width": self.width, "signed": self.signed, "boolean": self.boolean}


@dataclass(frozen=True)
class Varint:
    """LEB128 variable-length integer; ``zigzag`` for signed values (protobuf's sint)."""

    zigzag: bool = False

    def describe(self) -> dict[str, Any]:
        return {"t": "varint", "zigzag": self.zigzag}


VarUInt = Annotated[int, Varint(False)]
VarInt = Annotated[int, Varint(True)]


@dataclass(frozen=True)
class DnsName:
    """A DNS domain name (RFC 1035): text like ``"www.example.com."``; compression pointers
    (counted from the start of the outermost value) are followed on unpack and, when
    ``compress`` is set, written on pack. See ``bytewright.formats.dns``."""

    compress: bool = True

    def describe(self) -> dict[str, Any]:
        return {"t": "dnsname", "compress": self.compress}


@dataclass(frozen=True)
class Bytes:
    """Raw bytes whose length is a constant, an expression over earlier fields, or REST."""

    len: Length


@dataclass(frozen=True)
class Str:
    """Text of a byte length given like ``Bytes``; encoding utf-8, ascii or latin-1."""

    len: Length
    encoding: str = "utf-8"


@dataclass(frozen=True)
class CStr:
    """NUL-terminated text of at most ``max_len`` bytes before the NUL."""

    max_len: int
    encoding: str = "utf-8"


@dataclass(frozen=True)
class Array:
    """A list of ``item`` (any type); ``count`` is a constant, an expression or REST."""

    item: Any
    count: Length = REST


class ExtType(NamedTuple):
    """A MessagePack extension value: a type code (-128..127) and its bytes."""

    code: int
    data: bytes


@dataclass(frozen=True)
class Msgpack:
    """A self-describing MessagePack value (None, bool, int, float, str, bytes, list, dict,
    ExtType), nested up to the codec's depth limit."""

    def describe(self) -> dict[str, Any]:
        return {"t": "msgpack"}
