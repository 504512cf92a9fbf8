"""dumps/loads and their file and stream forms."""

from __future__ import annotations

from bytewright import _native
from bytewright.pickle import _classes
from bytewright.pickle._errors import LimitError, TruncatedError, UnpicklingError
from bytewright.pickle._limits import DEFAULT_LIMITS, Limits

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, BinaryIO, TypeAlias

    Buffer: TypeAlias = bytes | bytearray | memoryview
    Classes: TypeAlias = Iterable[type] | Mapping[str, type]

# Both are native functions; their signatures are in bytewright/_native.pyi:
#   dumps(obj, protocol=None, *, hmac_key=None, deterministic=False) -> bytes
#   loads(data, *, classes=(), hmac_key=None, limits=None) -> Any
dumps = _native.pickle_dumps
loads = _native.pickle_loads
# Decoder(*, classes=(), hmac_key=None, limits=None).loads(data): loads with its options
# checked once (native; docs/pickle.md, "Decoding many records").
Decoder = _native.Decoder


def _read_exactly(file: BinaryIO, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = file.read(n)
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _in_record(exc: UnpicklingError, record: int) -> UnpicklingError:
    """The same error, its message naming the record of the stream."""
    out = type(exc)(f"record {record}: {exc}")
    out.offset = exc.offset
    return out


class Pickler:
    """Writes records to a binary file, one per `dump`.

    >>> import io
    >>> from bytewright import pickle as bwp
    >>> f = io.BytesIO()
    >>> writer = bwp.Pickler(f)
    >>> writer.dump({"a": 1})
    >>> writer.dump([2, 3])
    >>> f.getvalue()[:3]
    b'BW\\x01'
    """

    def __init__(
        self,
        file: BinaryIO,
        protocol: int | None = None,
        *,
        hmac_key: Buffer | None = None,
        deterministic: bool = False,
    ) -> None:
        self._file = file
        self._key = hmac_key
        self._deterministic = bool(deterministic)

    def dump(self, obj: Any) -> None:
        """Write one record for `obj`."""
        self._file.write(dumps(obj, hmac_key=self._key, deterministic=self._deterministic))


class Unpickler:
    """Reads records from a binary file, exactly one per `load`; `EOFError` at the end.

    >>> import io
    >>> from bytewright import pickle as bwp
    >>> f = io.BytesIO(bwp.dumps("first") + bwp.dumps("second"))
    >>> reader = bwp.Unpickler(f)
    >>> (reader.load(), reader.load())
    ('first', 'second')
    >>> reader.load()
    Traceback (most recent call last):
    EOFError: no more records in the stream
    """

    def __init__(
        self,
        file: BinaryIO,
        *,
        classes: Classes = (),
        hmac_key: Buffer | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._file = file
        self._classes = _classes.class_map(classes)
        self._key = hmac_key
        self._limits = limits if limits is not None else DEFAULT_LIMITS
        if not isinstance(self._limits, Limits):
            raise TypeError(f"limits must be a pickle.Limits, not {type(limits).__name__}")
        self._records = 0

    def load(self) -> Any:
        """Read exactly one record; `EOFError` when the stream has no more."""
        record = self._records + 1
        head = _read_exactly(self._file, 4)
        if not head:
            raise EOFError("no more records in the stream")
        # Header: 4 fixed bytes then the body length varint (at most 10 bytes).
        while len(head) < 14 and (len(head) < 5 or head[-1] & 0x80):
            byte = self._file.read(1)
            if not byte:
                break
            head += byte
        try:
            total = _native.graph_record_len(head)
        except UnpicklingError as exc:
            raise _in_record(exc, record) from None
        if total > self._limits.max_bytes:
            raise LimitError(
                f"record {record}: {total} bytes exceeds the limit of {self._limits.max_bytes}"
            )
        rest = _read_exactly(self._file, total - len(head))
        if len(head) + len(rest) != total:
            raise TruncatedError(f"record {record}: truncated, the stream ends inside it")
        self._records = record
        try:
            return loads(
                head + rest, classes=self._classes, hmac_key=self._key, limits=self._limits
            )
        except UnpicklingError as exc:
            raise _in_record(exc, record) from exc.__cause__


def dump(
    obj: Any,
    file: BinaryIO,
    protocol: int | None = None,
    *,
    hmac_key: Buffer | None = None,
    deterministic: bool = False,
) -> None:
    """Write one record for `obj` to `file`.

    >>> import io
    >>> from bytewright import pickle as bwp
    >>> f = io.BytesIO()
    >>> bwp.dump({1, 2}, f)
    >>> bwp.loads(f.getvalue())
    {1, 2}
    """
    Pickler(file, hmac_key=hmac_key, deterministic=deterministic).dump(obj)


def load(
    file: BinaryIO,
    *,
    classes: Classes = (),
    hmac_key: Buffer | None = None,
    limits: Limits | None = None,
) -> Any:
    """Read exactly one record from `file`.

    >>> import io
    >>> from bytewright import pickle as bwp
    >>> bwp.load(io.BytesIO(bwp.dumps((1, "two"))))
    (1, 'two')
    """
    return Unpickler(file, classes=classes, hmac_key=hmac_key, limits=limits).load()
