"""Streams: Reader, read_messages (asyncio), iter_unpack and pack_many."""

from __future__ import annotations

import asyncio
import random
import struct

import bytewright as bw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Frame(bw.Struct):
    length: bw.U32
    kind: bw.U8
    payload: bytes = bw.field(len="length")


class Point(bw.Struct, byteorder="little"):
    x: bw.I16
    y: bw.I16


class Named(bw.Struct):
    id: bw.U16
    n: bw.U8
    name: str = bw.field(len="n")


def frames(k: int, seed: int = 1) -> list[Frame]:
    rnd = random.Random(seed)
    return [Frame(kind=i % 256, payload=rnd.randbytes(rnd.randrange(0, 300))) for i in range(k)]


def wire_of(items: list[Frame]) -> bytes:
    return b"".join(struct.pack(">IB", len(f.payload), f.kind) + f.payload for f in items)


class CountingCodec:
    """Wraps a codec's parse to record every attempt (offset and buffer length)."""

    def __init__(self, codec) -> None:
        self.codec = codec
        self.calls: list[tuple[int, int]] = []

    def parse(self, data, offset=0):
        self.calls.append((offset, len(data)))
        return self.codec.parse(data, offset)


# --- Reader ------------------------------------------------------------------------------


def test_reader_basic_feed_and_iterate():
    r = Frame.reader()
    # An empty reader asks for what parse asks for (it used to say 1 without looking).
    assert r.buffered == 0 and r.needed == Frame.parse(b"").needed > 1
    assert list(r) == []
    r.feed(b"\x00\x00\x00\x03\x07ab")
    assert r.buffered == 7 and r.needed == 1
    assert list(r) == []
    r.feed(b"c\x00\x00")
    assert r.needed == 0
    assert list(r) == [Frame(kind=7, payload=b"abc")]
    assert r.buffered == 2 and r.needed == 2  # the u32 length first
    r.feed(b"\x00\x00\x01")
    assert next(r) == Frame(kind=1, payload=b"")
    assert r.buffered == 0
    with pytest.raises(StopIteration):
        next(r)


def test_reader_needed_never_overshoots():
    wire = wire_of(frames(30, seed=4))
    r = Frame.reader()
    got, fed = [], 0
    while fed < len(wire):
        k = r.needed
        assert k >= 1
        r.feed(wire[fed : fed + k])
        fed += k
        got.extend(r)
        assert fed == len(wire_of(got)) + r.buffered
    assert r.buffered == 0 and len(got) == 30


def test_reader_one_byte_at_a_time():
    items = frames(40)
    wire = wire_of(items)
    r = Frame.reader()
    got = []
    for i in range(len(wire)):
        r.feed(wire[i : i + 1])
        got.extend(r)
    assert got == items and r.buffered == 0


@SETTINGS
@given(st.data())
def test_reader_random_chunks(data):
    items = frames(data.draw(st.integers(0, 30)), seed=data.draw(st.integers(0, 1000)))
    wire = wire_of(items)
    r = Frame.reader()
    got, i = [], 0
    while i < len(wire):
        k = data.draw(st.integers(1, 700))
        r.feed(memoryview(wire)[i : i + k])
        i += k
        got.extend(r)
        assert r.buffered == len(wire[:i]) - len(wire_of(got))
    assert got == items and r.buffered == 0


def byte_by_byte_attempts(items: list[Frame]) -> CountingCodec:
    wire = wire_of(items)
    counter = CountingCodec(bw.compile(Frame))
    r = bw.Reader(counter)
    got = []
    for i in range(len(wire)):
        r.feed(wire[i : i + 1])
        got.extend(r)
    assert len(got) == len(items) and r.buffered == 0
    # Every attempt starts at the message being read, never re-reading earlier ones.
    starts, off = set(), 0
    for f in items:
        starts.add(off)
        off += 5 + len(f.payload)
    assert {offset for offset, _ in counter.calls} <= starts
    return counter


def test_reader_work_is_linear_in_bytes_fed():
    short = [Frame(kind=1, payload=bytes(10)) for _ in range(100)]
    long = [Frame(kind=1, payload=bytes(1000)) for _ in range(100)]
    a = len(byte_by_byte_attempts(short).calls)
    b = len(byte_by_byte_attempts(long).calls)
    # A few attempts per message (header steps, payload, the complete parse), however
    # long the payload: not one attempt per byte fed.
    assert a == b <= 4 * 100
    assert len(byte_by_byte_attempts(frames(200, seed=7)).calls) <= 4 * 200


def test_reader_attempts_with_one_big_feed():
    items = frames(100, seed=3)
    codec = bw.compile(Frame)
    counter = CountingCodec(codec)
    r = bw.Reader(counter)
    r.feed(wire_of(items))
    assert list(r) == [codec.unpack(f.pack()) for f in items]
    assert len(counter.calls) == 100  # one parse per message


def test_reader_compacts_its_buffer():
    items = frames(2000, seed=5)
    wire = wire_of(items)
    assert len(wire) > 4 * (1 << 16)
    r = Frame.reader()
    n = 0
    for i in range(0, len(wire), 4096):
        r.feed(wire[i : i + 4096])
        n += len(list(r))
        # consumed bytes are dropped once 64 KiB have been read (amortized O(1))
        assert len(r._buf) <= (1 << 16) + 4096 + 305
    assert n == 2000


def test_reader_decode_error_propagates():
    r = Named.reader()
    r.feed(b"\x00\x01\x02\xff\xfe")
    with pytest.raises(bw.DecodeError) as ei:
        list(r)
    assert ei.value.path == "name"


def test_reader_zero_byte_messages_are_an_error():
    class Empty(bw.Struct):
        n: bw.U8 = bw.field(when="0", default=0)

    r = Empty.reader()
    r.feed(b"x")
    with pytest.raises(bw.DecodeError) as ei:
        next(r)
    assert "zero bytes" in str(ei.value)


def test_reader_over_dict_codec_and_registry():
    class Msg(bw.Struct, registry="t"):
        t: bw.U8

    class A(Msg, tag=1):
        v: bw.U8

    class B(Msg, tag=2):
        v: bw.U16

    r = Msg.reader()
    r.feed(b"\x01\x05\x02\x00")
    assert list(r) == [A(v=5)]
    r.feed(b"\x07")
    assert list(r) == [B(v=7)]
    d = bw.Reader(bw.compile(Msg))
    d.feed(b"\x02\x00\x07\x01")
    assert list(d) == [{"t": 2, "v": 7}] and d.needed == 1


# --- asyncio -----------------------------------------------------------------------------


async def collect(chunks: list[bytes], target, eof: bool = True) -> list:
    stream = asyncio.StreamReader()

    async def writer():
        for c in chunks:
            stream.feed_data(c)
            await asyncio.sleep(0)
        if eof:
            stream.feed_eof()

    task = asyncio.create_task(writer())
    out = [m async for m in bw.read_messages(stream, target, chunk_size=7)]
    await task
    return out


def test_read_messages_in_chunks():
    items = frames(20, seed=11)
    wire = wire_of(items)
    chunks = [wire[i : i + 13] for i in range(0, len(wire), 13)]
    assert asyncio.run(collect(chunks, Frame)) == items
    assert asyncio.run(collect([wire], Frame)) == items
    assert asyncio.run(collect([wire[i : i + 1] for i in range(len(wire))], Frame)) == items


def test_read_messages_dict_codec():
    wire = Point(x=1, y=-1).pack() + Point(x=2, y=-2).pack()
    assert asyncio.run(collect([wire], bw.compile(Point))) == [
        {"x": 1, "y": -1},
        {"x": 2, "y": -2},
    ]


def test_read_messages_empty_stream():
    assert asyncio.run(collect([], Frame)) == []


def test_read_messages_eof_inside_a_message():
    wire = wire_of(frames(3))
    with pytest.raises(bw.DecodeError) as ei:
        asyncio.run(collect([wire[:-1]], Frame))
    assert "ended inside a message" in str(ei.value)


# --- iter_unpack -------------------------------------------------------------------------


def test_iter_unpack():
    items = frames(50, seed=2)
    wire = wire_of(items)
    assert Frame.iter_unpack(wire) == items
    assert Frame.iter_unpack(bytearray(wire)) == items
    assert Frame.iter_unpack(b"") == []
    assert bw.compile(Point).iter_unpack(b"\x01\x00\xff\xff\x02\x00\xfe\xff") == [
        {"x": 1, "y": -1},
        {"x": 2, "y": -2},
    ]


def test_iter_unpack_errors_name_the_message():
    wire = wire_of(frames(3, seed=2))
    with pytest.raises(bw.DecodeError) as ei:
        Frame.iter_unpack(wire + b"\x00\x00\x00\x09\x01abc")
    assert ei.value.path == "[3].payload" and ei.value.offset == len(wire) + 5
    bad = Named(id=1, name="ok").pack() + b"\x00\x02\x01\xff"
    with pytest.raises(bw.DecodeError) as ei:
        Named.iter_unpack(bad)
    assert ei.value.path == "[1].name"


# --- pack_many ---------------------------------------------------------------------------


def test_pack_many_instances_mappings_and_tuples():
    want = (
        Named(id=1, name="a").pack() + Named(id=2, name="bc").pack() + Named(id=3, name="").pack()
    )
    items = [
        Named(id=1, name="a"),
        {"id": 2, "name": "bc"},
        (3, None, ""),  # every named field in order; None for the derived length
    ]
    assert Named.pack_many(items) == want
    assert Named.pack_many(iter(items)) == want
    assert bw.compile(Named).pack_many([{"id": 1, "name": "a"}, (2, 2, "bc"), (3, 0, "")]) == want
    assert Named.pack_many([]) == b""


def test_pack_many_round_trips_with_iter_unpack():
    items = frames(100, seed=9)
    wire = Frame.pack_many(items)
    assert wire == wire_of(items)
    assert Frame.iter_unpack(wire) == items
    pts = [(i, -i) for i in range(1000)]
    assert Point.pack_many(pts) == struct.pack("<" + "hh" * 1000, *[v for p in pts for v in p])


@pytest.mark.parametrize("order,prefix", [("big", ">"), ("little", "<")])
def test_pack_many_int_records_of_every_width_match_struct(order, prefix):
    # Records of plain ints take pack_many's fast lane; 24-bit fields checked with to_bytes.
    Rec = bw.make_struct(
        "Rec",
        [("a", bw.U8), ("b", bw.I16), ("c", bw.U24), ("d", bw.I24), ("e", bw.I32), ("f", bw.U64)],
        byteorder=order,
    )
    rnd = random.Random(5)
    rows = [
        (
            rnd.randrange(256),
            rnd.randrange(-(2**15), 2**15),
            rnd.randrange(2**24),
            rnd.randrange(-(2**23), 2**23),
            rnd.randrange(-(2**31), 2**31),
            rnd.choice([0, 2**64 - 1, 2**63, rnd.randrange(2**64)]),
        )
        for _ in range(500)
    ]
    rows += [
        (255, -(2**15), 2**24 - 1, -(2**23), 2**31 - 1, 2**60),
        (0, 2**15 - 1, 0, 2**23 - 1, -1, 1),
    ]

    def one(r):
        a, b, c, d, e, f = r
        return (
            struct.pack(prefix + "Bh", a, b)
            + c.to_bytes(3, order)
            + d.to_bytes(3, order, signed=True)
            + struct.pack(prefix + "iQ", e, f)
        )

    assert Rec.pack_many(rows) == b"".join(one(r) for r in rows)
    assert Rec.iter_unpack(Rec.pack_many(rows)) == [
        Rec(**dict(zip("abcdef", r, strict=True))) for r in rows
    ]
    for bad in [
        (256, 0, 0, 0, 0, 0),
        (0, 0, 2**24, 0, 0, 0),
        (0, 0, 0, -(2**23) - 1, 0, 0),
        (0, 0, 0, 0, 0, 2**64),
        (0, 0, 0, 0, 0, -1),
    ]:
        with pytest.raises(bw.PackError) as ei:
            Rec.pack_many([rows[0], bad])
        assert ei.value.path.startswith("[1].")


def test_pack_many_errors_name_the_item():
    with pytest.raises(bw.PackError) as ei:
        Point.pack_many([(1, 2), {"x": 3, "y": 4}, (5, 70000)])
    assert ei.value.path == "[2].y"
    with pytest.raises(bw.PackError) as ei:
        Point.pack_many([(1, 2), (3,)])
    assert ei.value.path.startswith("[1]") and "needs 2 items" in str(ei.value)
    with pytest.raises(bw.PackError) as ei:
        Named.pack_many([(1, 5, "abc")])
    assert ei.value.path.startswith("[0]")


def test_pack_many_registry_variants():
    class Msg(bw.Struct, registry="t"):
        t: bw.U8

    class A(Msg, tag=1):
        v: bw.U8

    class B(Msg, tag=2):
        v: bw.U16

    assert Msg.pack_many([A(v=1), B(v=2), {"t": 1, "v": 3}]) == b"\x01\x01\x02\x00\x02\x01\x03"


def test_reader_of_a_lazily_compiled_class_compiles_once(monkeypatch):
    import bytewright.struct as bs

    class Msg(bw.Struct, registry="t"):
        t: bw.U8

    class A(Msg, tag=1):
        v: bw.U8

    compiles = []
    real = bs.compile_struct

    def counting(*args, **kwargs):
        compiles.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(bs, "compile_struct", counting)
    r = Msg.reader()  # holds the registry's stand-in codec
    for _ in range(50):
        r.feed(b"\x01\x02")
        assert list(r) == [A(v=2)]
    # It used to compile the whole schema again for every parse.
    assert compiles == [Msg]

    class B(Msg, tag=2):
        pass

    r.feed(b"\x02")
    assert list(r) == [B()]  # a later variant still reaches the reader


class Samples(bw.Struct):
    n: bw.U32
    values: list[bw.U16] = bw.field(count="n")
    points: list[Point] = bw.field(count=2)


def test_reader_count_prefixed_array_is_linear():
    def attempts(k: int) -> int:
        wire = Samples(values=list(range(k)), points=[Point(x=1, y=2)] * 2).pack()
        counter = CountingCodec(bw.compile(Samples))
        r = bw.Reader(counter)
        got = []
        for i in range(len(wire)):
            r.feed(wire[i : i + 1])
            got.extend(r)
        assert len(got) == 1 and got[0]["values"] == list(range(k))
        return len(counter.calls)

    # It used to take one attempt per array item, each re-reading the message from its
    # start: quadratic work for a count-prefixed array fed in small pieces.
    assert attempts(10) == attempts(1000) <= 6


def test_truncated_static_array_asks_for_the_rest_and_names_the_item():
    wire = Samples(values=[1, 2, 3], points=[Point(x=1, y=2)] * 2).pack()
    part = Samples.parse(wire[:7])  # the count, one value and half of the next
    assert not part and part.needed == 3  # the two remaining values at once
    with pytest.raises(bw.DecodeError) as ei:
        Samples.unpack(wire[:7])
    assert ei.value.path == "values[1]" and ei.value.offset == 6
    assert Samples.parse(wire[:10]) == bw.Incomplete(8)  # then both points at once


def test_pack_many_bulk_lane_matches_struct_and_falls_back_for_errors():
    import random
    import struct

    class Rec(bw.Struct, byteorder="little"):
        a: bw.U32
        b: bw.U16
        c: bw.I16
        d: bw.U64

    rnd = random.Random(7)
    rows = [
        (
            rnd.getrandbits(32),
            rnd.getrandbits(16),
            rnd.randint(-(2**15), 2**15 - 1),
            rnd.getrandbits(64),
        )
        for _ in range(500)
    ]
    assert Rec.pack_many(rows) == b"".join(struct.pack("<IHhQ", *r) for r in rows)
    # Mixed item kinds, and a bool (an int subclass) that the lane leaves to the VM.
    mixed = [rows[0], {"a": 1, "b": 2, "c": -3, "d": 4}, Rec(a=1, b=2, c=-3, d=4), (True, 2, -3, 4)]
    assert Rec.pack_many(mixed) == b"".join(
        struct.pack("<IHhQ", *r) for r in [rows[0], (1, 2, -3, 4), (1, 2, -3, 4), (1, 2, -3, 4)]
    )
    with pytest.raises(bw.PackError) as ei:
        Rec.pack_many([rows[0], (1, 2, 40000, 4)])
    assert ei.value.path == "[1].c"
