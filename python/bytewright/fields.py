"""Field options: ``bw.field(...)`` and its shorthands, and codec limits."""

from __future__ import annotations

from bytewright import _native
from bytewright._value import MISSING, Value
from bytewright.errors import SchemaError, unknown
from bytewright.types import Bits

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Literal, TypedDict, TypeVar, Unpack, overload

    from bytewright.types import Length

    T = TypeVar("T")

    class _Options(TypedDict, total=False):
        """The options of ``bw.field`` other than ``default`` and ``type``."""

        len: Length
        count: Length
        size: int | str
        encoding: str
        when: str
        byteorder: Literal["big", "little"]
        nul_terminated: bool
        max_len: int
        max_count: int
        tag: str
        cases: Mapping[Any, Any]
        default_case: Any
        item: Any
        const: Any
        align: int
        convert: tuple[Callable[[Any], Any], Callable[[Any], Any]]

    class _TypedOptions(_Options, total=False):
        type: Any

else:

    def overload(f):  # typing.overload, without importing typing
        return f


__all__ = [
    "CHECKSUMS",
    "MISSING",
    "Crc",
    "FieldSpec",
    "Limits",
    "bits",
    "checksum",
    "const",
    "derived",
    "enum",
    "field",
    "flag",
    "normalize_byteorder",
    "pad",
]

# Every option, in slot order ("default" and "const" are MISSING when not given: None is a
# value; the others default to None).
_OPTIONS = (
    "default",
    "len",
    "count",
    "size",
    "encoding",
    "when",
    "byteorder",
    "nul_terminated",
    "max_len",
    "max_count",
    "tag",
    "cases",
    "default_case",
    "item",
    "type",
    "const",
    "align",
    "convert",
    "checksum",
)


class Limits(Value):
    """Limits for untrusted input: the largest item count and byte length of any field, and
    the deepest nesting of structs (recursive types; at most 1000).

    Give them to a class (``limits=``) or to ``bw.compile``; a message past a limit is a
    ``DecodeError`` before anything is allocated for it.

    >>> import bytewright as bw
    >>> class Blob(bw.Struct, limits=bw.Limits(max_len=4)):
    ...     n: bw.U8 = bw.derived()
    ...     data: bytes = bw.field(len="n")
    >>> Blob.unpack(b"\\x05hello")
    Traceback (most recent call last):
    bytewright.errors.DecodeError: data: the length 5 exceeds the limit 4
    """

    __slots__ = ("max_count", "max_len", "max_depth")  # noqa: RUF023 (field order)
    max_count: int
    max_len: int
    max_depth: int

    def __init__(
        self,
        max_count: int = 16 * 1024 * 1024,
        max_len: int = 64 * 1024 * 1024,
        max_depth: int = 64,
    ) -> None:
        self._init(max_count, max_len, max_depth)
        for name, v in zip(self.__slots__, self._values(), strict=True):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise SchemaError(f"Limits.{name} must be a non-negative int, got {v!r}")


class FieldSpec(Value):
    """The options of one field, as given to ``bw.field`` (immutable).

    ``is_pad`` and ``pad_size`` mark unnamed padding (``bw.pad``)."""

    __slots__ = (*_OPTIONS, "is_pad", "pad_size")
    default: Any
    len: Length | None
    count: Length | None
    size: int | str | None
    encoding: str | None
    when: str | None
    byteorder: str | None
    nul_terminated: bool
    max_len: int | None
    max_count: int | None
    tag: str | None
    cases: Mapping[Any, Any] | None
    default_case: Any
    item: Any
    type: Any
    const: Any
    align: int | None
    convert: Any
    checksum: tuple[str | Crc, tuple[str, ...] | None, bool] | None
    is_pad: bool
    pad_size: int

    def __new__(
        cls,
        *,
        default: Any = MISSING,
        len: Length | None = None,
        count: Length | None = None,
        size: int | str | None = None,
        encoding: str | None = None,
        when: str | None = None,
        byteorder: str | None = None,
        nul_terminated: bool | None = False,
        max_len: int | None = None,
        max_count: int | None = None,
        tag: str | None = None,
        cases: Mapping[Any, Any] | None = None,
        default_case: Any = None,
        item: Any = None,
        type: Any = None,
        const: Any = MISSING,
        align: int | None = None,
        convert: Any = None,
        checksum: tuple[str | Crc, tuple[str, ...] | None, bool] | None = None,
        is_pad: bool = False,
        pad_size: int = 0,
        **other: Any,
    ) -> FieldSpec:
        if other:
            for k in other:
                raise unknown(f"unknown field option {k!r}", k, _OPTIONS, kind="unknown_option")
        # Filled in as a _DraftSpec (plain slot stores, which FieldSpec's own __setattr__
        # refuses), then frozen by becoming a FieldSpec.
        self = _new_draft(_DraftSpec)
        self.default = default
        self.len = len
        self.count = count
        self.size = size
        self.encoding = encoding
        self.when = when
        self.byteorder = byteorder
        self.nul_terminated = False if nul_terminated is None else nul_terminated
        self.max_len = max_len
        self.max_count = max_count
        self.tag = tag
        self.cases = cases
        self.default_case = default_case
        self.item = item
        self.type = type
        self.const = const
        self.align = align
        self.convert = convert
        self.checksum = checksum
        self.is_pad = is_pad
        self.pad_size = pad_size
        _set_class(self, cls)
        return self

    def given(self) -> dict[str, Any]:
        """The options that were given (as keywords for ``FieldSpec``)."""
        out = {}
        for k in _OPTIONS:
            v = getattr(self, k)
            if v is not None and v is not MISSING and not (k == "nul_terminated" and v is False):
                out[k] = v
        return out

    def replace(self, **options: Any) -> FieldSpec:
        """A copy with some options changed."""
        return FieldSpec(is_pad=self.is_pad, pad_size=self.pad_size, **{**self.given(), **options})

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self.given().items()]
        return f"field({', '.join(shown)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_field_spec, (self.is_pad, self.pad_size, self.given()))


class _DraftSpec(FieldSpec):
    """A FieldSpec being filled in: its slots take plain writes."""

    __slots__ = ()
    # object's own, not defs (both share one type slot): each write stays a C-level store.
    __setattr__ = object.__setattr__  # type: ignore[assignment]
    __delattr__ = object.__delattr__


_new_draft = object.__new__
_set_class = object.__dict__["__class__"].__set__


def _field_spec(is_pad: bool, pad_size: int, options: dict[str, Any]) -> FieldSpec:
    return FieldSpec(is_pad=is_pad, pad_size=pad_size, **options)


# A field declared with an annotation alone (or with a plain default, see ``StructMeta``).
PLAIN = FieldSpec()
# What ``bw.field`` gives its native constructor: the class, each option's slot, the defaults.
_SPEC = (
    FieldSpec,
    {n: i for i, n in enumerate(FieldSpec.__slots__)},
    tuple([getattr(PLAIN, n) for n in FieldSpec.__slots__]),
)


@overload
def field(*, default: T, **options: Unpack[_TypedOptions]) -> T: ...
@overload
def field(**options: Unpack[_TypedOptions]) -> Any: ...  # noqa: F811 (overload is typing's)
def field(**options: Any) -> Any:  # noqa: F811
    """Declares a field's wire options.

    ``len`` / ``count`` / ``size`` take a constant, an expression string over earlier fields
    (``"payload_len"``, ``"width * height"``) or ``bw.REST``; ``when`` makes the field
    conditional; ``tag``/``cases``/``default_case`` make a tagged union; ``encoding``,
    ``nul_terminated``/``max_len`` shape text; ``byteorder`` overrides the struct's;
    ``item`` gives an array's item type; ``default`` and ``const`` give values.
    Unknown options raise ``SchemaError`` naming the nearest valid one.

    >>> import bytewright as bw
    >>> class Packet(bw.Struct, byteorder="big"):
    ...     kind: bw.U8
    ...     size: bw.U16 = bw.derived()
    ...     body: bytes = bw.field(len="size")
    ...     extra: bw.U32 = bw.field(when="kind == 2", default=0)
    >>> Packet(kind=1, body=b"hi").pack()
    b'\\x01\\x00\\x02hi'
    >>> Packet.unpack(b"\\x02\\x00\\x00\\x00\\x00\\x00\\x07").extra
    7
    """
    # One native call stores the slots; it gives None for an unknown option, which
    # FieldSpec reports.
    spec = _native.new_spec(_SPEC, options)
    return FieldSpec(**options) if spec is None else spec


def pad(n: int) -> Any:
    """``n`` unnamed zero bytes: written as zeros, skipped on unpack, not a field of the value.

    >>> import bytewright as bw
    >>> class Header(bw.Struct):
    ...     kind: bw.U8
    ...     _: None = bw.pad(3)
    ...     size: bw.U32
    >>> Header(kind=1, size=2).pack()
    b'\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x02'
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise SchemaError(f"pad size must be a non-negative int, got {n!r}")
    return FieldSpec(is_pad=True, pad_size=n)


def const(value: T) -> T:
    """A constant or magic: written on pack, verified on unpack.

    >>> import bytewright as bw
    >>> class File(bw.Struct):
    ...     magic: bytes = bw.const(b"BWF1")
    ...     size: bw.U8
    >>> File(size=3).pack()
    b'BWF1\\x03'
    >>> File.unpack(b"ZIP!\\x03")
    Traceback (most recent call last):
    bytewright.errors.DecodeError: magic: expected the constant b'BWF1', found b'ZIP!'
    """
    return FieldSpec(const=value)  # type: ignore[return-value]  # a field specifier


def derived(spec: Any = None) -> Any:
    """Declares a length, count or size field that pack computes: it defaults to None, so
    type checkers let you leave it out (``payload_len: bw.U16 = bw.derived()``).

    ``spec`` gives the field's other options, e.g. ``bw.derived(bw.bits(4))`` for a bit
    field. Whether a field is derived is decided by the fields that refer to it; this only
    gives it its default.

    >>> import bytewright as bw
    >>> class Names(bw.Struct):
    ...     count: bw.U8 = bw.derived()
    ...     names: list[str] = bw.field(count="count", item=bw.CStr(max_len=16))
    >>> Names(names=["a", "bc"]).pack()
    b'\\x02a\\x00bc\\x00'
    >>> Names.unpack(b"\\x01x\\x00").count
    1
    """
    if spec is None:
        return FieldSpec(default=None)
    if not isinstance(spec, FieldSpec) or spec.is_pad:
        raise SchemaError(f"derived() takes the field's options (bw.field(...)), got {spec!r}")
    return spec.replace(default=None)


def bits(
    width: int, *, signed: bool = False, default: Any = MISSING, **options: Unpack[_Options]
) -> Any:
    """A bit field of ``width`` bits (1..64); see the struct's ``bitorder``.

    Adjacent bit fields share whole bytes, most significant bit first unless the struct
    says ``bitorder="lsb"``.

    >>> import bytewright as bw
    >>> class Head(bw.Struct):
    ...     version: int = bw.bits(4)
    ...     ihl: int = bw.bits(4)
    >>> Head(version=4, ihl=5).pack()
    b'E'
    >>> Head.unpack(b"\\x46").ihl
    6
    """
    return FieldSpec(type=Bits(width, signed), default=default, **options)


def flag(*, default: Any = MISSING, **options: Unpack[_Options]) -> Any:
    """A one-bit bool field (a named flag of a bit mask).

    >>> import bytewright as bw
    >>> class Flags(bw.Struct):
    ...     urgent: bool = bw.flag()
    ...     ack: bool = bw.flag()
    ...     rest: int = bw.bits(6, default=0)
    >>> Flags(urgent=False, ack=True).pack()
    b'@'
    >>> Flags.unpack(b"\\x80").urgent
    True
    """
    return FieldSpec(type=Bits(1, False, True), default=default, **options)


def enum(
    wire_type: Any,
    *,
    unknown: Literal["keep", "raise"] = "keep",
    default: Any = MISSING,
    **options: Unpack[_Options],
) -> Any:
    """An integer field decoded to the annotated ``IntEnum``/``IntFlag``.

    ``unknown="keep"`` leaves values the enum does not define as plain ints; ``"raise"``
    makes them a ``DecodeError``.

    >>> import enum
    >>> import bytewright as bw
    >>> class Color(enum.IntEnum):
    ...     RED = 1
    ...     GREEN = 2
    >>> class Pixel(bw.Struct):
    ...     color: Color = bw.enum(bw.U8)
    >>> Pixel.unpack(b"\\x02").color
    <Color.GREEN: 2>
    >>> Pixel.unpack(b"\\x09").color
    9
    """
    if unknown not in ("keep", "raise"):
        raise _unknown_error("unknown= must be 'keep' or 'raise'", unknown, ("keep", "raise"))
    # Untyped: a convert= in options is Python's "multiple values" TypeError.
    make: Any = FieldSpec
    return make(type=wire_type, default=default, convert=("enum", unknown == "raise"), **options)


_unknown_error = unknown  # ``enum`` has a parameter of that name


class Crc(Value):
    """Custom CRC parameters (the usual "Rocksoft" model, as in the CRC catalogue).

    >>> import bytewright as bw
    >>> XMODEM = bw.Crc(width=16, poly=0x1021)
    >>> class Block(bw.Struct, byteorder="big"):
    ...     data: bytes = bw.field(len=9)
    ...     crc: bw.U16 = bw.checksum(XMODEM, over=["data"])
    >>> Block(data=b"123456789").pack()[-2:].hex()
    '31c3'
    """

    __slots__ = ("width", "poly", "init", "refin", "refout", "xorout")  # noqa: RUF023 (field order)
    width: int
    poly: int
    init: int
    refin: bool
    refout: bool
    xorout: int

    def __init__(
        self,
        width: int,
        poly: int,
        init: int = 0,
        refin: bool = False,
        refout: bool = False,
        xorout: int = 0,
    ) -> None:
        self._init(width, poly, init, refin, refout, xorout)


_ORDERS = ("big", "little")


def normalize_byteorder(value: Any, where: str) -> str | None:
    """A ``byteorder=`` value (None when not given); ``where`` names the class or field."""
    if value is None:
        return None
    if value not in _ORDERS:
        raise unknown(
            f"byteorder must be 'big' or 'little', got {value!r}", value, _ORDERS, where=where
        )
    return str(value)


_DIGEST_SIZES = {"md5": 16, "sha1": 20, "sha256": 32}

# The core's list, so the names accepted here are exactly the ones it implements.
CHECKSUMS: tuple[str, ...] = tuple(_native.checksum_names())


def digest_size(algo: object) -> int | None:
    """The byte length of a digest algorithm's value (None for the integer checksums)."""
    return _DIGEST_SIZES.get(algo.lower().replace("_", "-")) if isinstance(algo, str) else None


def checksum(
    algo: str | Crc, *, over: list[str] | tuple[str, ...] | None = None, verify: bool = True
) -> Any:
    """A checksum or digest field: computed on pack, verified on unpack.

    ``algo`` is a name (see ``CHECKSUMS``) or ``bw.Crc(...)`` parameters. ``over`` names the
    fields covered, in order; by default the whole struct is covered. The field's own bytes
    count as zeros. ``verify=False`` skips the check on unpack.

    >>> import zlib
    >>> import bytewright as bw
    >>> class Chunk(bw.Struct, byteorder="big"):
    ...     data: bytes = bw.field(len=5)
    ...     crc: bw.U32 = bw.checksum("crc32", over=["data"])
    >>> wire = Chunk(data=b"hello").pack()
    >>> int.from_bytes(wire[5:], "big") == zlib.crc32(b"hello")
    True
    >>> Chunk.unpack(b"jello" + wire[5:])
    Traceback (most recent call last):
    bytewright.errors.DecodeError: crc: checksum mismatch: stored 0x3610a686, computed 0x4cd0f5e6
    """
    if isinstance(algo, str):
        norm = algo.lower().replace("_", "-")
        if norm not in CHECKSUMS:
            raise unknown(f"unknown checksum algorithm {algo!r}", algo, CHECKSUMS, match=norm)
    elif not isinstance(algo, Crc):
        raise SchemaError(f"checksum algorithm must be a name or bw.Crc(...), got {algo!r}")
    if over is not None and (isinstance(over, str) or not all(isinstance(x, str) for x in over)):
        raise SchemaError("checksum over= must be a list of field names")
    return FieldSpec(checksum=(algo, tuple(over) if over is not None else None, bool(verify)))
