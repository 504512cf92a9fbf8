"""Incremental decoding: a feed-and-iterate ``Reader`` and an asyncio helper."""

from __future__ import annotations

from bytewright.errors import DecodeError, Incomplete

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncIterator, Iterator
    from typing import Any

__all__ = ["Reader", "read_messages"]

_COMPACT_AT = 1 << 16


def _codec_of(target: Any) -> Any:
    """A Struct class's typed codec, or ``target`` itself (a codec)."""
    info = getattr(target, "__bw__", None)
    return info.codec if info is not None else target


class Reader:
    """Decodes messages from data fed in arbitrary pieces.

    ``feed(data)`` appends bytes; iterating yields each complete message and stops when the
    buffer holds no complete message. A partial message is not re-parsed until at least
    ``needed`` more bytes have arrived, and consumed bytes are dropped in amortized O(1), so
    the total work is proportional to the bytes fed for length-framed formats.

    >>> import bytewright as bw
    >>> class Line(bw.Struct):
    ...     n: bw.U8 = bw.derived()
    ...     text: str = bw.field(len="n")
    >>> reader = Line.reader()
    >>> reader.feed(b"\\x02hi\\x03th")
    >>> [m.text for m in reader]
    ['hi']
    >>> reader.needed
    1
    >>> reader.feed(b"e")
    >>> [m.text for m in reader]
    ['the']
    """

    __slots__ = ("_buf", "_codec", "_off", "_want")

    def __init__(self, target: Any) -> None:
        self._codec = _codec_of(target)
        self._buf = bytearray()
        self._off = 0
        self._want = 1  # bytes that must be buffered before the next attempt

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as messages."""
        return len(self._buf) - self._off

    @property
    def needed(self) -> int:
        """How many more bytes the next message needs (0 when one is ready)."""
        if self.buffered >= self._want or not self.buffered:
            r = self._codec.parse(self._buf, self._off)
            if isinstance(r, Incomplete):
                self._want = self.buffered + r.needed
                return r.needed
            return 0
        return self._want - self.buffered

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self.buffered < self._want:
            raise StopIteration
        r = self._codec.parse(self._buf, self._off)
        if isinstance(r, Incomplete):
            self._want = self.buffered + r.needed
            raise StopIteration
        value, end = r
        if end == self._off:
            raise DecodeError("a message of zero bytes cannot be read from a stream", "", end)
        self._off = end
        self._want = 1
        if self._off >= _COMPACT_AT and self._off * 2 >= len(self._buf):
            del self._buf[: self._off]
            self._off = 0
        return value

    def __repr__(self) -> str:
        return f"<bytewright.Reader buffered={self.buffered}>"


async def read_messages(
    stream: asyncio.StreamReader, target: Any, *, chunk_size: int = 1 << 16
) -> AsyncIterator[Any]:
    """Yields each message read from ``stream`` until EOF.

    EOF in the middle of a message raises ``DecodeError``.

    >>> import asyncio
    >>> import bytewright as bw
    >>> class Line(bw.Struct):
    ...     n: bw.U8 = bw.derived()
    ...     text: str = bw.field(len="n")
    >>> async def main() -> list[str]:
    ...     stream = asyncio.StreamReader()
    ...     stream.feed_data(b"\\x02hi\\x03the")
    ...     stream.feed_eof()
    ...     return [m.text async for m in bw.read_messages(stream, Line)]
    >>> asyncio.run(main())
    ['hi', 'the']
    """
    reader = Reader(target)
    while True:
        for message in reader:
            yield message
        data = await stream.read(max(chunk_size, reader.needed))
        if not data:
            if reader.buffered:
                raise DecodeError(
                    f"the stream ended inside a message: {reader.buffered} bytes buffered, "
                    f"{reader.needed} more needed",
                    "",
                    None,
                )
            return
        reader.feed(data)
