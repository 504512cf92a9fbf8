"""The exceptions of bytewright's wire codecs, and the `Incomplete` marker of `parse`."""

from __future__ import annotations

from bytewright import _native

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Literal, TypeAlias

    SchemaErrorKind: TypeAlias = Literal[
        "invalid", "unknown_option", "unknown_value", "unknown_name", "unknown_field"
    ]

__all__ = ["DecodeError", "Error", "Incomplete", "PackError", "SchemaError"]


class Error(ValueError):
    """Base class of every bytewright wire error (a ``ValueError``).

    >>> import bytewright as bw
    >>> issubclass(bw.DecodeError, bw.Error) and issubclass(bw.Error, ValueError)
    True
    """


class SchemaError(Error):
    """A struct or field declaration is invalid (raised at class creation or compile).

    ``kind`` says what is wrong, so code can act on it without reading the message:
    ``"unknown_option"`` (a misspelled field option or class keyword), ``"unknown_value"``
    (a value outside a fixed set, such as a byte order, an encoding or a checksum name),
    ``"unknown_name"`` (an expression names a field that is not in scope: neither an
    earlier field of its struct nor one of an enclosing struct), ``"unknown_field"`` (a
    checksum's ``over=`` names a field its struct does not have) or ``"invalid"``. ``path`` names the field (``"Frame.records"``, or the class), ``name`` the
    unknown option, value or field name, and ``suggestion`` the nearest valid one (the
    message's "did you mean").

    >>> import bytewright as bw
    >>> try:
    ...     class Bad(bw.Struct):
    ...         data: bytes = bw.field(lenght=4)
    ... except bw.SchemaError as e:
    ...     print(e.kind, e.name, e.suggestion)
    unknown_option lenght len
    """

    kind: SchemaErrorKind
    path: str
    name: str | None
    suggestion: str | None

    def __init__(
        self,
        message: str,
        path: str = "",
        *,
        kind: SchemaErrorKind = "invalid",
        name: str | None = None,
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.path = path
        self.name = name
        self.suggestion = suggestion


def schema_error(where: str, detail: str) -> SchemaError:
    """``where: detail``, with ``where`` (a class or ``Class.field``) as the path."""
    return SchemaError(f"{where}: {detail}", where)


def unknown(
    detail: str,
    value: object,
    options: Iterable[object],
    *,
    kind: SchemaErrorKind = "unknown_value",
    where: str = "",
    match: str | None = None,
) -> SchemaError:
    """The error for an unknown option or value, suggesting the nearest of ``options``
    (by the compiler's rule; ``match`` is the form of ``value`` to compare, if not its text)."""
    suggestion = _native.suggest(str(value) if match is None else match, [str(o) for o in options])
    message = f"{where}: {detail}" if where else detail
    if suggestion is not None:
        message += f"; did you mean {suggestion!r}?"
    return SchemaError(message, where, kind=kind, name=str(value), suggestion=suggestion)


class PackError(Error):
    """A value cannot be packed. ``path`` names the field, e.g. ``frame.records[3].payload``.

    >>> import bytewright as bw
    >>> class Point(bw.Struct):
    ...     x: bw.U8
    >>> Point(x=300).pack()
    Traceback (most recent call last):
    bytewright.errors.PackError: x: 300 does not fit u8 (range 0..=255)
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class DecodeError(Error):
    """Input bytes are malformed. ``path`` names the field and ``offset`` the byte offset.

    >>> import bytewright as bw
    >>> class Pair(bw.Struct):
    ...     a: bw.U16
    ...     b: bw.U16
    >>> try:
    ...     Pair.unpack(b"\\x00\\x01\\x02")
    ... except bw.DecodeError as e:
    ...     print(e.path, e.offset, e)
    b 2 b: needs 2 bytes at offset 2, 1 left
    """

    def __init__(self, message: str, path: str = "", offset: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset


class Incomplete:
    """Returned by ``parse`` when the buffer ends before the message: falsy, with ``needed``,
    the number of further bytes the next step of decoding needs (at least 1).

    >>> import bytewright as bw
    >>> class Pair(bw.Struct):
    ...     a: bw.U16
    ...     b: bw.U16
    >>> Pair.parse(b"\\x00\\x01\\x02")
    Incomplete(needed=1)
    >>> Pair.parse(b"\\x00\\x01\\x02\\x03")
    (Pair(a=1, b=515), 4)
    """

    __slots__ = ("needed",)

    def __init__(self, needed: int) -> None:
        self.needed = needed

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return f"Incomplete(needed={self.needed})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Incomplete) and other.needed == self.needed

    def __hash__(self) -> int:
        return hash(("Incomplete", self.needed))
