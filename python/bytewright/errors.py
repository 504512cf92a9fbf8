"""The exceptions of bytewright's wire codecs, and the `Incomplete` marker of `parse`."""

from __future__ import annotations

__all__ = ["DecodeError", "Error", "Incomplete", "PackError", "SchemaError"]


class Error(ValueError):
    """Base class of every bytewright wire error."""


class SchemaError(Error):
    """A struct or field declaration is invalid (raised at class creation or compile)."""


class PackError(Error):
    """A value cannot be packed. ``path`` names the field, e.g. ``frame.records[3].payload``."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class DecodeError(Error):
    """Input bytes are malformed. ``path`` names the field and ``offset`` the byte offset."""

    def __init__(self, message: str, path: str = "", offset: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset


class Incomplete:
    """Returned by ``parse`` when the buffer ends before the message: falsy, with ``needed``,
    the number of further bytes the next step of decoding needs (at least 1)."""

    __slots__ = ("needed",)

    def __init__(self, needed: int) -> None:
        self.needed = needed

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Incomplete(needed={self.needed})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Incomplete) and other.needed == self.needed

    def __hash__(self) -> int:
        return hash(("Incomplete", self.needed))
