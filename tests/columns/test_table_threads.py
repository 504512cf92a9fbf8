"""Variable-size messages on several threads: the threads after the first guess where a
message starts, and the guesses are checked against the real boundaries. Whatever the
guesses hit, the table and the first error are the one-thread ones. The inputs are large
enough (over 64 KiB per thread) for the threads to be used."""

from __future__ import annotations

import random

import bytewright as bw
import pytest
from column_oracles import decode_error

pa = pytest.importorskip("pyarrow")


class Reading(bw.Struct):
    sensor: bw.U16
    n: bw.U8 = bw.derived()
    samples: list[bw.I32] = bw.field(count="n")
    note_len: bw.U8 = bw.derived()
    note: str = bw.field(len="note_len", encoding="utf-8")


class Same(bw.Struct):
    """Every message is ``02 02 02``: a guess that starts off a boundary decodes messages
    too, and never meets the real boundaries."""

    n: bw.U8
    data: bytes = bw.field(len="n")


class Tagged(bw.Struct):
    """A guess that starts off a boundary fails at once on the magic."""

    magic: bw.U16 = bw.const(0xBEEF)
    n: bw.U8 = bw.derived()
    data: bytes = bw.field(len="n")


def readings(count: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    return b"".join(
        Reading(
            sensor=rng.randrange(65536),
            samples=[rng.randrange(-(2**31), 2**31) for _ in range(rng.randrange(12))],
            note="é" * rng.randrange(4),
        ).pack()
        for _ in range(count)
    )


def rows(cls: type, data: bytes, threads: int) -> list[dict[str, object]]:
    return cls.unpack_table(data, threads=threads).to_pylist()


@pytest.fixture(scope="module")
def reading_wire() -> bytes:
    return readings(12_000)  # about 290 KiB


def test_threads_give_the_one_thread_table(reading_wire: bytes) -> None:
    want = rows(Reading, reading_wire, 1)
    assert want == list(bw.compile(Reading).iter_unpack(reading_wire))
    for threads in (2, 3, 4):
        assert rows(Reading, reading_wire, threads) == want


@pytest.mark.parametrize("count", [100_000, 100_001, 100_002])
def test_guesses_that_never_meet_the_boundaries_are_dropped(count: int) -> None:
    data = b"\x02" * (3 * count)
    for threads in (2, 3, 4):
        t = Same.unpack_table(data, threads=threads)
        assert len(t) == count
        assert t["data"].to_pylist() == [b"\x02\x02"] * count


def test_guesses_that_fail_at_once_are_decoded_from_the_boundaries() -> None:
    rng = random.Random(3)
    msgs = [Tagged(data=rng.randbytes(rng.randrange(40))).pack() for _ in range(12_000)]
    data = b"".join(msgs)
    want = Tagged.unpack_table(data, threads=1).to_pylist()
    assert len(want) == len(msgs)
    for threads in (2, 3, 4):
        assert Tagged.unpack_table(data, threads=threads).to_pylist() == want


@pytest.mark.parametrize("where", [0.1, 0.45, 0.55, 0.8, 0.999])
def test_the_first_bad_message_is_the_error_whichever_thread_meets_it(where: float) -> None:
    rng = random.Random(5)
    msgs = [Tagged(data=rng.randbytes(rng.randrange(40))).pack() for _ in range(12_000)]
    k = int(len(msgs) * where)
    bad = list(msgs)
    bad[k] = b"\x00" + bad[k][1:]
    if where > 0.5:  # a second bad message after the first: the first one is the error
        bad[k - 100] = b"\x00" + bad[k - 100][1:]
    data = b"".join(bad)
    want = decode_error(bw.compile(Tagged).iter_unpack, data)
    assert want is not None
    for threads in (1, 2, 3, 4):
        assert decode_error(Tagged.unpack_table, data, threads=threads) == want


def test_a_cut_last_message_is_the_error_on_every_thread_count(reading_wire: bytes) -> None:
    data = reading_wire[:-3]
    want = decode_error(bw.compile(Reading).iter_unpack, data)
    assert want is not None
    for threads in (1, 2, 3, 4):
        assert decode_error(Reading.unpack_table, data, threads=threads) == want


def test_count_with_threads(reading_wire: bytes) -> None:
    want = rows(Reading, reading_wire, 1)[:9_000]
    for threads in (1, 2, 3):
        assert Reading.unpack_table(reading_wire, count=9_000, threads=threads).to_pylist() == want
