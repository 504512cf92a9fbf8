"""MessagePack: byte-identical with the msgpack package, both ways."""

from __future__ import annotations

import math
import struct
from typing import Any

import bytewright as bw
import msgpack
import pytest
from bytewright.formats import msgpack as mp
from hypothesis import given, settings
from hypothesis import strategies as st


def reference_unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, strict_map_key=False)


EVERY_FORMAT: list[Any] = [
    None,
    True,
    False,
    *[0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1],
    *[-1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63)],
    1.5,
    -0.0,
    math.inf,
    1e300,
    "",
    "a",
    "é" * 15,
    "x" * 31,
    "x" * 32,
    "x" * 255,
    "x" * 256,
    "x" * 65535,
    "x" * 65536,
    b"",
    b"\x00" * 255,
    b"x" * 256,
    b"x" * 65536,
    [],
    [1] * 15,
    [1] * 16,
    [None] * 65536,
    {},
    {"a": 1},
    {i: str(i) for i in range(15)},
    {i: str(i) for i in range(16)},
    {i: i for i in range(65536)},
    *[msgpack.ExtType(5, b"x" * n) for n in (1, 2, 4, 8, 16, 0, 3, 255, 256, 65536)],
    [[[{"a": [b"x", None, {"b": 1.25}]}]]],
    {b"bin key": 1, 2: [3], None: False, 1.5: "float key"},
]


@pytest.mark.parametrize("value", EVERY_FORMAT, ids=range(len(EVERY_FORMAT)))
def test_every_format_is_byte_identical(value: Any) -> None:
    wire = msgpack.packb(value)
    assert mp.packb(value) == wire
    back = mp.unpackb(wire)
    assert back == reference_unpack(wire)
    assert mp.packb(back) == wire


def test_formats_packb_never_chooses() -> None:
    # float 32 is decoded too (msgpack.packb only writes it with use_single_float).
    wire = b"\xca" + struct.pack(">f", 0.1)
    assert mp.unpackb(wire) == reference_unpack(wire)
    # Non-minimal encodings decode to the same values as msgpack's.
    for wire in (b"\xcc\x05", b"\xd0\x05", b"\xd9\x01a", b"\xdc\x00\x01\xc0", b"\xde\x00\x00"):
        assert mp.unpackb(wire) == reference_unpack(wire)


def test_ext_type_equals_msgpacks() -> None:
    v = mp.unpackb(msgpack.packb(msgpack.ExtType(7, b"abc")))
    assert v == msgpack.ExtType(7, b"abc") and v == mp.ExtType(7, b"abc")
    assert mp.packb(mp.ExtType(7, b"abc")) == msgpack.packb(msgpack.ExtType(7, b"abc"))


def test_tuples_and_subclasses_pack_like_msgpack() -> None:
    class MyInt(int):
        pass

    class MyDict(dict):  # type: ignore[type-arg]
        pass

    for v in [(1, 2), MyInt(300), MyDict(a=1), bytearray(b"ab"), memoryview(b"cd")]:
        assert mp.packb(v) == msgpack.packb(v)


def test_deep_nesting_is_a_decode_error() -> None:
    ok = b"\x91" * mp.MAX_DEPTH + b"\xc0"
    assert mp.unpackb(ok) == reference_unpack(ok)
    ok_maps = b"\x81\xc0" * mp.MAX_DEPTH + b"\xc0"
    assert mp.unpackb(ok_maps) == reference_unpack(ok_maps)
    for deep in (
        b"\x91" * 100_000 + b"\xc0",
        b"\xdc\x00\x01" * 100_000 + b"\xc0",
        b"\x81\xc0" * 50_000,
    ):
        with pytest.raises(bw.DecodeError) as e:
            mp.unpackb(deep)
        assert "depth" in str(e.value)
    nested: Any = None
    for _ in range(mp.MAX_DEPTH + 1):
        nested = [nested]
    with pytest.raises(bw.PackError):
        mp.packb(nested)


def test_malformed_input_gives_decode_errors() -> None:
    for bad in (
        b"",
        b"\xc1",  # never used
        b"\xd9\x05abc",  # truncated str
        b"\xa2\xff\xfe",  # invalid utf-8
        b"\x92\x01",  # array short of items
        b"\x81\x90\x01",  # unhashable key
        b"\xcf\x00",
        b"\x01\x02",  # trailing data
    ):
        with pytest.raises(bw.DecodeError):
            mp.unpackb(bad)
    wire = msgpack.packb({"a": [1, 2.5, "x" * 40, b"y" * 300, {"z": None}]})
    for cut in range(len(wire)):
        with pytest.raises(bw.DecodeError):
            mp.unpackb(wire[:cut])


def test_unpackable_values_are_pack_errors() -> None:
    for v in (2**64, -(2**63) - 1, object(), {1, 2}):
        with pytest.raises(bw.PackError):
            mp.packb(v)


keys = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text() | st.binary()
scalars = (
    keys
    | st.floats(allow_nan=False)
    | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=40))
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=20) | st.dictionaries(keys, inner, max_size=20),
    max_leaves=60,
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_random_values_match_msgpack(value: Any) -> None:
    wire = msgpack.packb(value)
    assert mp.packb(value) == wire
    assert mp.unpackb(wire) == reference_unpack(wire)


def _has_timestamp(v: Any) -> bool:
    if isinstance(v, msgpack.Timestamp):
        return True
    if isinstance(v, list):
        return any(_has_timestamp(x) for x in v)
    if isinstance(v, dict):
        return any(_has_timestamp(k) or _has_timestamp(x) for k, x in v.items())
    return False


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_decode_like_msgpack_or_fail_cleanly(data: bytes) -> None:
    try:
        ours = mp.unpackb(data)
    except bw.DecodeError:
        return
    try:
        theirs = reference_unpack(data)
    except ValueError:
        return  # msgpack refuses ext codes below -1; we keep them as ExtType
    if _has_timestamp(theirs):
        return  # ext -1 stays an ExtType here
    assert ours == theirs or repr(ours) == repr(theirs)  # NaN compares unequal
