"""What `read_records` and `to_records` need of a codec on the workers, and its errors."""

from __future__ import annotations

import re
from typing import Any

from dask.base import normalize_token

import bytewright as bw

Format = type[bw.Struct] | bw.Codec[Any]


def codec_for(X: Format) -> bw.Codec[Any]:
    """The codec of a `bw.Struct` class or a `bw.Codec`, checked at the client."""
    if isinstance(X, bw.Codec):
        return X
    if isinstance(X, type) and issubclass(X, bw.Struct):
        return bw.compile(X)
    raise TypeError(f"X must be a bw.Struct class or a bw.Codec, not {X!r}")


class PortableCodec:
    """A codec that reaches the workers as its byte form when it has one (`Codec.to_bytes`),
    so they need not import the classes it came from (a notebook's, say); otherwise it
    travels as the codec itself, by reference to its classes."""

    __slots__ = ("blob", "codec")

    def __init__(self, codec: bw.Codec[Any]) -> None:
        self.codec = codec
        try:
            self.blob: bytes | None = codec.to_bytes()
        except TypeError:  # a typed codec, or defaults that are not plain data
            self.blob = None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self.blob is not None:
            return _from_bytes, (self.blob,)
        return PortableCodec, (self.codec,)

    def __dask_tokenize__(self) -> object:
        if self.blob is not None:
            return ("bytewright-codec", self.blob)
        return ("bytewright-codec", self.codec.schema, normalize_token(self.codec))


def _from_bytes(blob: bytes) -> PortableCodec:
    return PortableCodec(bw.Codec.from_bytes(blob))


class FileDecodeError(bw.DecodeError):
    """A message in one file of `read_records` does not decode.

    `file` names the file, `offset` is absolute in it, and `path` starts with the row of the
    message in the file (`"[1042].text"`), so the message is easy to find with any tool.

    >>> import pathlib, tempfile
    >>> import bytewright as bw
    >>> from bytewright.dask import FileDecodeError, read_records
    >>> class Note(bw.Struct):
    ...     n: bw.U8 = bw.derived()
    ...     text: str = bw.field(len="n")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "notes.bin"
    >>> _ = path.write_bytes(Note(text="ok").pack() + bytes([2, 0xFF, 0xFE]))  # not UTF-8
    >>> try:
    ...     read_records(str(path), Note).compute(scheduler="sync")
    ... except FileDecodeError as e:
    ...     print(e.path, e.offset, e.file == str(path))
    [1].text 4 True
    """

    def __init__(
        self, message: str, path: str = "", offset: int | None = None, *, file: str = ""
    ) -> None:
        super().__init__(message, path, offset)
        self.file = file

    def __reduce__(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        return FileDecodeError, (str(self), self.path, self.offset), {"file": self.file}


_ROW = re.compile(r"^\[(\d+)\]")


def in_file(e: bw.DecodeError, file: str, base: int, row: int) -> FileDecodeError:
    """`e`, raised decoding bytes that start at `base` in `file` with message number `row`,
    with its offset and row made absolute in the file and the file named."""
    rel = e.offset
    offset = None if rel is None else base + rel
    path = _ROW.sub(lambda m: f"[{int(m.group(1)) + row}]", e.path, count=1)
    text = str(e)
    detail = text[len(e.path) + 2 :] if e.path and text.startswith(e.path + ": ") else text
    if rel is not None:
        found = re.search(rf"\bat offset {rel}\b", detail)
        if found is None:
            detail += f" (at offset {offset})"
        else:
            detail = f"{detail[: found.start()]}at offset {offset}{detail[found.end() :]}"
    where = f"{path}: " if path else ""
    return FileDecodeError(f"{file}: {where}{detail}", path, offset, file=file)
