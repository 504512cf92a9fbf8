"""A Struct class nobody refers to any more is freed by the garbage collector, with its
codecs, cached descriptions and ``__init__``: the native objects a class holds (which refer
back to it) report their references to the collector."""

import gc
import weakref

import bytewright as bw


def define() -> dict[str, type]:
    class Record(bw.Struct):
        n: bw.U8 = bw.derived()
        data: bytes = bw.field(len="n")
        code: bw.U16 = 7

    class Frame(bw.Struct):
        count: bw.U16
        records: list[Record] = bw.field(count="count")

    class Envelope(bw.Struct, byteorder="big"):
        size: bw.U32
        frame: Frame = bw.field(size="size")

    return {"Record": Record, "Frame": Frame, "Envelope": Envelope}


def collected(refs: list[weakref.ref[object]]) -> list[bool]:
    gc.collect()
    return [r() is None for r in refs]


def test_unused_classes_are_collected() -> None:
    classes = define()
    refs = [weakref.ref(c) for c in classes.values()]
    del classes
    assert collected(refs) == [True, True, True]


def test_classes_are_collected_after_packing_and_unpacking() -> None:
    c = define()
    env = c["Envelope"](frame=c["Frame"](records=[c["Record"](data=b"ab")]))
    data = env.pack()
    assert data == b"\x00\x00\x00\x07\x00\x01\x02ab\x00\x07"
    assert c["Envelope"].unpack(data).frame.records[0].data == b"ab"
    assert bw.compile(c["Frame"]).unpack(data[4:])["records"] == [
        {"n": 2, "data": b"ab", "code": 7}
    ]
    refs = [weakref.ref(x) for x in c.values()]
    del c, env
    assert collected(refs) == [True, True, True]


def test_a_nested_class_outlives_the_class_that_held_it() -> None:
    c = define()
    c["Envelope"](frame=c["Frame"](records=[])).pack()
    record = c["Record"]
    refs = [weakref.ref(x) for x in c.values()]
    del c
    assert collected(refs) == [False, True, True]
    assert record.unpack(b"\x01z\x00\x07").code == 7
    assert record(data=b"q").pack() == b"\x01q\x00\x07"
    del record
    assert collected(refs) == [True, True, True]


def test_a_class_keeps_the_classes_nested_in_it() -> None:
    # The outer class is the only holder of the nested ones: collecting must not clear
    # them (their methods, slots and defaults are still used through the outer class).
    c = define()
    envelope = c["Envelope"]
    data = envelope(frame=c["Frame"](records=[c["Record"](data=b"ab")])).pack()
    refs = [weakref.ref(x) for x in c.values()]
    del c
    for _ in range(3):
        assert collected(refs) == [False, False, False]
    env = envelope.unpack(data)
    record = env.frame.records[0]
    assert (record.n, record.data, record.code) == (2, b"ab", 7)
    assert type(record)(data=b"xyz").pack() == b"\x03xyz\x00\x07"
    assert env.pack() == data
    assert envelope(frame=type(env.frame)(records=[])).pack() == b"\x00\x00\x00\x02\x00\x00"


def test_a_class_described_again_keeps_its_nested_classes() -> None:
    # A nested class reached through another class's cached description, then a second
    # outer class built on the first: dropping the names in turn frees nothing still used.
    c = define()
    envelope = c["Envelope"]

    class Outer(bw.Struct):
        env: envelope  # type: ignore[valid-type]
        tail: bw.U8

    data = Outer(env=envelope(frame=c["Frame"](records=[])), tail=9).pack()
    refs = [weakref.ref(x) for x in c.values()]
    del c, envelope
    assert collected(refs) == [False, False, False]
    back = Outer.unpack(data)
    assert back.tail == 9 and back.env.frame.records == []
    assert type(back.env.frame)(records=[]).pack() == b"\x00\x00"
    oref = weakref.ref(Outer)
    del Outer, back
    assert collected([*refs, oref]) == [True, True, True, True]
