"""bytewright: declarative binary codecs and safe pickling, with a Rust core.

Importing it loads no more than it must: the scalar aliases (``bw.U16`` ...) load ``typing``
on first use, the schema compiler loads with the first Struct class, ``asyncio`` only
through the stream a caller passes, and ``bytewright.formats`` / ``bytewright.pickle`` when
imported.
"""

from bytewright._explain import Explained, ExplainNode, explain
from bytewright._native import Column, Table, TableSchema, __version__
from bytewright.errors import DecodeError, Error, Incomplete, PackError, SchemaError
from bytewright.fields import (
    CHECKSUMS,
    Crc,
    Limits,
    bits,
    checksum,
    const,
    derived,
    enum,
    field,
    flag,
    pad,
)
from bytewright.stream import Reader, read_messages
from bytewright.struct import Codec, Struct, compile, make_struct
from bytewright.types import REST, Array, Bits, Bytes, CStr, DnsName, Str

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from bytewright.types import (
        F16,
        F32,
        F64,
        I8,
        I16,
        I24,
        I32,
        I64,
        U8,
        U16,
        U24,
        U32,
        U64,
        Bool,
        VarInt,
        VarUInt,
    )
else:
    _SCALARS = frozenset(
        {"Bool", "VarInt", "VarUInt", "F16", "F32", "F64"}
        | {f"{p}{w}" for p in "UI" for w in (8, 16, 24, 32, 64)}
    )

    def __getattr__(name):
        # The scalar aliases are typing.Annotated: built (and typing imported) on first use.
        if name in _SCALARS:
            from bytewright import types

            value = getattr(types, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(globals()) | _SCALARS)


__all__ = [
    "CHECKSUMS",
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
    "Codec",
    "Column",
    "Crc",
    "DecodeError",
    "DnsName",
    "Error",
    "ExplainNode",
    "Explained",
    "Incomplete",
    "Limits",
    "PackError",
    "Reader",
    "SchemaError",
    "Str",
    "Struct",
    "Table",
    "TableSchema",
    "VarInt",
    "VarUInt",
    "__version__",
    "bits",
    "checksum",
    "compile",
    "const",
    "derived",
    "enum",
    "explain",
    "field",
    "flag",
    "make_struct",
    "pad",
    "read_messages",
]
