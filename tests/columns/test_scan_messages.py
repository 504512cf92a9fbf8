"""Codec.scan_messages: walking back-to-back messages to a position without decoding them,
cross-checked against the message boundaries that packing each message gives."""

from __future__ import annotations

import bisect
import itertools

import bytewright as bw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


class Temperature(bw.Struct):
    celsius: bw.F32


class Position(bw.Struct):
    lat: bw.F64
    lon: bw.F64


class Event(bw.Struct, byteorder="little"):
    kind: bw.U8
    body: Temperature | Position = bw.field(tag="kind", cases={1: Temperature, 2: Position})
    n: bw.U8 = bw.derived()
    text: str = bw.field(len="n")
    flagged: bw.U8
    extra: int | None = bw.field(type=bw.U32, when="flagged == 1", default=None)


class Fixed(bw.Struct):
    a: bw.U32
    b: bw.I16


EVENT = bw.compile(Event)


def event(i: int) -> bytes:
    body = Temperature(celsius=i / 2) if i % 2 else Position(lat=i, lon=-i)
    flagged = int(i % 3 == 0)
    return Event(
        kind=1 if i % 2 else 2,
        body=body,
        text="é" * (i % 4),
        flagged=flagged,
        extra=i if flagged else None,
    ).pack()


MESSAGES = [event(i) for i in range(300)]
DATA = b"".join(MESSAGES)
STARTS = [0, *itertools.accumulate(len(m) for m in MESSAGES)]  # and the end


def first_at_or_after(stop: int) -> tuple[int, int]:
    """(messages that start before `stop`, where the first at or after it starts)."""
    count = bisect.bisect_left(STARTS[:-1], stop)
    return count, STARTS[count]


@given(st.integers(0, len(DATA) + 10))
@settings(max_examples=300, deadline=None)
def test_stop_finds_the_first_message_at_or_after_it(stop: int) -> None:
    assert EVENT.scan_messages(DATA, stop=stop) == first_at_or_after(stop)
    assert Event.__bw__.codec.scan_messages(DATA, stop=stop) == first_at_or_after(stop)


@given(st.integers(0, len(MESSAGES) - 1), st.integers(0, len(DATA)))
@settings(max_examples=200, deadline=None)
def test_from_a_message_start_to_a_stop(row: int, stop: int) -> None:
    count, end = EVENT.scan_messages(DATA, offset=STARTS[row], stop=stop)
    if stop <= STARTS[row]:
        assert (count, end) == (0, STARTS[row])
    else:
        before, at = first_at_or_after(stop)
        assert (count, end) == (before - row, at)


@given(st.integers(1, len(DATA)))
@settings(max_examples=200, deadline=None)
def test_a_message_cut_off_by_the_end_is_not_counted(cut: int) -> None:
    whole = bisect.bisect_right(STARTS, cut) - 1  # messages that end at or before `cut`
    assert EVENT.scan_messages(DATA[:cut]) == (whole, STARTS[whole])


def test_walking_a_stream_in_chunks_gives_the_boundaries() -> None:
    found, buf, base, pos, rows = [], b"", 0, 0, 0
    for piece in (DATA[i : i + 13] for i in range(0, len(DATA), 13)):
        buf, base = buf[pos - base :] + piece, pos
        n, end = EVENT.scan_messages(buf, offset=pos - base)
        rows, pos = rows + n, base + end
        found.append(pos)
    assert (rows, pos) == (len(MESSAGES), len(DATA))
    assert set(found) <= set(STARTS)


def test_fixed_size_messages() -> None:
    data = Fixed.pack_many(Fixed(a=i, b=-i) for i in range(10))
    codec = Fixed.__bw__.codec
    assert codec.static_size == 6
    assert codec.scan_messages(data) == (10, 60)
    assert codec.scan_messages(data, stop=7) == (2, 12)
    assert codec.scan_messages(data, offset=12, stop=12) == (0, 12)
    assert codec.scan_messages(data[:59]) == (9, 54)
    assert codec.scan_messages(b"") == (0, 0)


def test_a_malformed_message_names_its_row_and_offset() -> None:
    bad = bytearray(DATA)
    bad[STARTS[40]] = 7  # an unknown union tag: the size of the rest depends on it
    with pytest.raises(bw.DecodeError) as caught:
        EVENT.scan_messages(bytes(bad))
    assert caught.value.path == "[40].body" and caught.value.offset == STARTS[40] + 1
    with pytest.raises(bw.DecodeError) as caught:
        EVENT.scan_messages(bytes(bad), offset=STARTS[30])
    assert caught.value.path == "[10].body"  # rows count from `offset`
    # Only what sizes depend on is read: invalid UTF-8 in a text is not a scan's concern.
    bad = bytearray(DATA)
    bad[STARTS[3] + 1 + 4 + 1] = 0xFF  # message 3: a Temperature, then "ééé"
    assert EVENT.scan_messages(bytes(bad)) == (len(MESSAGES), len(DATA))
    with pytest.raises(bw.DecodeError):
        EVENT.unpack_table(bytes(bad))


def test_arguments() -> None:
    with pytest.raises(ValueError, match="past the end"):
        EVENT.scan_messages(DATA, offset=len(DATA) + 1)
    assert EVENT.scan_messages(memoryview(DATA), offset=len(DATA)) == (0, len(DATA))
    assert EVENT.scan_messages(bytearray(DATA)) == (len(MESSAGES), len(DATA))
    with pytest.raises(TypeError):
        EVENT.scan_messages("text")  # type: ignore[arg-type]
