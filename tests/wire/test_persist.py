"""Codec persistence: to_bytes/from_bytes, pickling, and codecs crossing process boundaries."""

from __future__ import annotations

import enum
import multiprocessing
import pickle
import subprocess
import sys
import zlib

import bytewright as bw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


class Kind(enum.IntEnum):
    A = 1
    B = 2


class Item(bw.Struct, bitorder="lsb", align=4):
    kind: Kind = bw.enum(bw.Bits(3))
    urgent: bool = bw.flag()
    prio: int = bw.bits(4, signed=True)
    size: bw.VarUInt
    delta: bw.VarInt
    ratio: bw.F16
    data: bytes = bw.field(len="size")


class Tree(bw.Struct, limits=bw.Limits(max_depth=5)):
    label: bw.U8
    n: bw.U8
    kids: list[Tree] = bw.field(count="n")


class Packet(bw.Struct, byteorder="little"):
    magic: bytes = bw.const(b"PK")
    count: bw.U16
    items: list[Item] = bw.field(count="count")
    tree: Tree
    wide: bw.U64 = bw.field(align=8)
    crc: bw.U32 = bw.checksum("crc32")
    custom: bw.U16 = bw.checksum(bw.Crc(16, 0x8005, 0xFFFF, True, True, 0), over=["count"])
    md: bytes = bw.checksum("sha1", over=["items"])


def sample() -> Packet:
    return Packet(
        items=[
            Item(kind=Kind.A, urgent=True, prio=-3, delta=-300, ratio=0.5, data=b"abc"),
            Item(kind=Kind.B, urgent=False, prio=7, delta=5, ratio=-2.0, data=b""),
        ],
        tree=Tree(label=1, kids=[Tree(label=2, kids=[]), Tree(label=3, kids=[])]),
        wide=2**64 - 1,
    )


WIRE = sample().pack()


class Msg(bw.Struct, registry="t"):
    t: bw.U8


class Hello(Msg, tag=1):
    name_len: bw.U8
    name: str = bw.field(len="name_len")


class Other(Msg, default=True):
    rest: bytes = bw.field(len=bw.REST)


def test_wire_sanity():
    assert WIRE[:4] == b"PK\x02\x00"
    back = Packet.unpack(WIRE)
    assert back.items[0].kind is Kind.A and back.items[1].prio == 7
    # the whole-struct crc, the custom CRC and the digest all hold
    assert back.crc == zlib.crc32(WIRE[: len(WIRE) - 4 - 2 - 20] + bytes(4) + WIRE[-22:])


def test_to_bytes_round_trip_behaves_identically():
    codec = bw.compile(Packet)
    blob = codec.to_bytes()
    assert isinstance(blob, bytes) and blob.startswith(b"bytewright-codec/1\n")
    again = bw.Codec.from_bytes(blob)
    assert again.static_size == codec.static_size and again.min_size == codec.min_size
    d = codec.unpack(WIRE)
    assert again.unpack(WIRE) == d
    assert again.pack(d) == WIRE
    assert again.to_bytes() == blob
    bad = bytearray(WIRE)
    bad[-1] ^= 1
    with pytest.raises(bw.DecodeError) as ei:
        again.unpack(bytes(bad))
    assert ei.value.path == "md"
    deep = bytes([1, 1]) * 6 + bytes([9, 0])
    with pytest.raises(bw.DecodeError):  # the class's depth limit travels with it
        bw.Codec.from_bytes(bw.compile(Tree).to_bytes()).unpack(deep)


def test_to_bytes_registry_dispatch():
    codec = bw.Codec.from_bytes(bw.compile(Msg).to_bytes())
    assert codec.unpack(b"\x01\x02hi") == {"t": 1, "name_len": 2, "name": "hi"}
    assert codec.unpack(b"\x07zz") == {"t": 7, "rest": b"zz"}
    assert codec.pack({"t": 1, "name": "yo"}) == b"\x01\x02yo"


def test_from_bytes_in_a_fresh_interpreter_without_the_classes():
    blob = bw.compile(Packet).to_bytes()
    code = (
        "import sys, bytewright as bw\n"
        "blob = sys.stdin.buffer.read()\n"
        "codec = bw.Codec.from_bytes(blob)\n"
        f"d = codec.unpack({WIRE!r})\n"
        "assert 'Packet' not in dir()\n"
        "sys.stdout.write(repr((d['count'], d['items'][0]['delta'], d['tree']['kids'][1]['label'],"
        " d['wide'], codec.pack(d) == " + repr(WIRE) + ")))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=blob, capture_output=True, check=True, timeout=60
    )
    assert out.stdout.decode() == repr((2, -300, 3, 2**64 - 1, True))


def test_typed_codecs_cannot_be_persisted_as_bytes():
    with pytest.raises(TypeError) as ei:
        Packet.__bw__.codec.to_bytes()
    assert "bw.compile" in str(ei.value)


def test_non_data_defaults_cannot_be_persisted():
    class WithObj(bw.Struct):
        flag: bw.U8
        extra: bw.U8 = bw.field(when="flag", default=object())

    with pytest.raises(TypeError) as ei:
        bw.compile(WithObj).to_bytes()
    assert "extra" in str(ei.value)


def test_bytes_defaults_persist():
    class WithBytes(bw.Struct):
        flag: bw.U8
        extra: bytes = bw.field(len=2, when="flag", default=b"\x00\x01")

    codec = bw.Codec.from_bytes(bw.compile(WithBytes).to_bytes())
    assert codec.unpack(b"\x00") == {"flag": 0, "extra": b"\x00\x01"}


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"not a codec",
        b"bytewright-codec/1\n{",
        b"bytewright-codec/1\n{}",
        b"bytewright-codec/1\n[]",
    ],
)
def test_corrupt_bytes_are_schema_errors(blob):
    with pytest.raises(bw.SchemaError):
        bw.Codec.from_bytes(blob)


def test_pickle_dict_and_typed_codecs():
    codec = bw.compile(Packet)
    again = pickle.loads(pickle.dumps(codec))
    assert again.unpack(WIRE) == codec.unpack(WIRE)
    typed = pickle.loads(pickle.dumps(Packet.__bw__.codec))
    assert typed.typed and typed.unpack(WIRE) == sample()
    assert pickle.loads(pickle.dumps(bw.compile(Msg))).unpack(b"\x01\x00") == {
        "t": 1,
        "name_len": 0,
        "name": "",
    }


def test_codec_decodes_in_a_spawned_worker():
    codec = bw.compile(Packet)
    ctx = multiprocessing.get_context("spawn")
    wires = [WIRE, Packet(items=[], tree=Tree(label=0, kids=[]), wide=1).pack()]
    with ctx.Pool(1) as pool:
        # A bound method pickles as (codec, "unpack"): the codec itself crosses over.
        results = pool.map(codec.unpack, wires)
        packed = pool.apply(codec.pack, (results[0],))
        with pytest.raises(bw.DecodeError):
            pool.apply(codec.unpack, (WIRE[:-1] + b"\x00",))
    assert results == [codec.unpack(w) for w in wires]
    assert packed == WIRE


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_input_gives_a_value_or_decode_error(data):
    """Bit fields, varints, F16, alignment, checksums and recursion on hostile input: a value
    or a DecodeError, never anything else."""
    wire = bytearray(WIRE)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(wire) - 1))
        wire[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(wire)))
    for codec in (Packet, bw.compile(Packet)):
        for buf in (bytes(wire), bytes(wire[:cut])):
            try:
                codec.unpack(buf)
            except bw.DecodeError:
                pass
            try:
                r = codec.parse(buf)
            except bw.DecodeError:
                continue
            assert isinstance(r, bw.Incomplete | tuple)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64))
def test_random_bytes_give_a_value_or_decode_error(raw):
    for codec in (Packet, Tree, Msg, Item, bw.compile(Msg)):
        try:
            codec.unpack(raw)
        except bw.DecodeError:
            pass
