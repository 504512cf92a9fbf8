"""Field options: ``bw.field(...)`` and its shorthands, and codec limits."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from bytewright import _native
from bytewright.errors import SchemaError

__all__ = [
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
    "pad",
    "suggest",
]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

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


def suggest(name: str, options: Any) -> str:
    """``; did you mean 'x'?`` for the nearest option name, or an empty string."""
    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True)
class Limits:
    """Limits for untrusted input: the largest item count and byte length of any field, and
    the deepest nesting of structs (recursive types; at most 1000)."""

    max_count: int = 16 * 1024 * 1024
    max_len: int = 64 * 1024 * 1024
    max_depth: int = 64

    def __post_init__(self) -> None:
        for name in ("max_count", "max_len", "max_depth"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise SchemaError(f"Limits.{name} must be a non-negative int, got {v!r}")


class FieldSpec:
    """The options of one field, as given to ``bw.field``."""

    __slots__ = (*_OPTIONS, "is_pad", "pad_size")

    def __init__(self, **options: Any) -> None:
        for k in options:
            if k not in _OPTIONS:
                raise SchemaError(f"unknown field option {k!r}{suggest(k, _OPTIONS)}")
        for k in _OPTIONS:
            default = MISSING if k in ("default", "const") else None
            object.__setattr__(self, k, options.get(k, default))
        if self.nul_terminated is None:
            object.__setattr__(self, "nul_terminated", False)
        object.__setattr__(self, "is_pad", False)
        object.__setattr__(self, "pad_size", 0)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FieldSpec is immutable")

    def __repr__(self) -> str:
        shown = []
        for k in _OPTIONS:
            v = getattr(self, k)
            if v is not None and v is not MISSING and v is not False:
                shown.append(f"{k}={v!r}")
        return f"field({', '.join(shown)})"


def field(**options: Any) -> Any:
    """Declares a field's wire options.

    ``len`` / ``count`` / ``size`` take a constant, an expression string over earlier fields
    (``"payload_len"``, ``"width * height"``) or ``bw.REST``; ``when`` makes the field
    conditional; ``tag``/``cases``/``default_case`` make a tagged union; ``encoding``,
    ``nul_terminated``/``max_len`` shape text; ``byteorder`` overrides the struct's;
    ``item`` gives an array's item type; ``default`` and ``const`` give values.
    Unknown options raise ``SchemaError`` naming the nearest valid one.
    """
    return FieldSpec(**options)


def pad(n: int) -> Any:
    """``n`` unnamed zero bytes: written as zeros, skipped on unpack, not a field of the value."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise SchemaError(f"pad size must be a non-negative int, got {n!r}")
    spec = FieldSpec()
    object.__setattr__(spec, "is_pad", True)
    object.__setattr__(spec, "pad_size", n)
    return spec


def const(value: Any) -> Any:
    """A constant or magic: written on pack, verified on unpack."""
    return FieldSpec(const=value)


def derived() -> Any:
    """Marks a length, count or size field that pack computes (it defaults to None).

    Optional: derived fields work without it; it tells type checkers the field may be omitted.
    """
    return FieldSpec(default=None)


def bits(width: int, *, signed: bool = False, **options: Any) -> Any:
    """A bit field of ``width`` bits (1..64); see the struct's ``bitorder``."""
    from bytewright.types import Bits

    return FieldSpec(type=Bits(width, signed), **options)


def flag(**options: Any) -> Any:
    """A one-bit bool field (a named flag of a bit mask)."""
    from bytewright.types import Bits

    return FieldSpec(type=Bits(1, False, True), **options)


class _EnumConverter:
    """Maps wire integers to members of an ``IntEnum``/``IntFlag`` and back."""

    __slots__ = ("cls", "strict", "valid")

    def __init__(self, cls: type, strict: bool) -> None:
        import enum as _enum

        self.cls = cls
        self.strict = strict
        if issubclass(cls, _enum.Flag):
            mask = 0
            for m in cls:
                mask |= int(m)
            self.valid: Any = mask
        else:
            self.valid = None

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


def enum(wire_type: Any, *, unknown: str = "keep", **options: Any) -> Any:
    """An integer field decoded to the annotated ``IntEnum``/``IntFlag``.

    ``unknown="keep"`` leaves values the enum does not define as plain ints; ``"raise"``
    makes them a ``DecodeError``.
    """
    if unknown not in ("keep", "raise"):
        raise SchemaError(
            f"unknown= must be 'keep' or 'raise'{suggest(unknown, ('keep', 'raise'))}"
        )
    spec = FieldSpec(type=wire_type, **options)
    object.__setattr__(spec, "convert", ("enum", unknown == "raise"))
    return spec


@dataclass(frozen=True)
class Crc:
    """Custom CRC parameters (the usual "Rocksoft" model, as in the CRC catalogue)."""

    width: int
    poly: int
    init: int = 0
    refin: bool = False
    refout: bool = False
    xorout: int = 0


_DIGEST_SIZES = {"md5": 16, "sha1": 20, "sha256": 32}

# The core's list, so the names accepted here are exactly the ones it implements.
CHECKSUMS: tuple[str, ...] = tuple(_native.checksum_names())


def digest_size(algo: Any) -> int | None:
    """The byte length of a digest algorithm's value (None for the integer checksums)."""
    return _DIGEST_SIZES.get(algo.lower().replace("_", "-")) if isinstance(algo, str) else None


def checksum(
    algo: str | Crc, *, over: list[str] | tuple[str, ...] | None = None, verify: bool = True
) -> Any:
    """A checksum or digest field: computed on pack, verified on unpack.

    ``algo`` is a name (see ``CHECKSUMS``) or ``bw.Crc(...)`` parameters. ``over`` names the
    fields covered, in order; by default the whole struct is covered. The field's own bytes
    count as zeros. ``verify=False`` skips the check on unpack.
    """
    if isinstance(algo, str):
        norm = algo.lower().replace("_", "-")
        if norm not in CHECKSUMS:
            raise SchemaError(f"unknown checksum algorithm {algo!r}{suggest(norm, CHECKSUMS)}")
    elif not isinstance(algo, Crc):
        raise SchemaError(f"checksum algorithm must be a name or bw.Crc(...), got {algo!r}")
    if over is not None and (isinstance(over, str) or not all(isinstance(x, str) for x in over)):
        raise SchemaError("checksum over= must be a list of field names")
    return FieldSpec(checksum=(algo, tuple(over) if over is not None else None, bool(verify)))
