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
