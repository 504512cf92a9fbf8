"""Malformed streams raise UnpicklingError (or LimitError) only: never a crash, hang or
another exception type."""

import pickle
import struct

import pytest
from bytewright.pickle import LimitError, Limits, UnpicklingError, loads_pickle
from reader_values import BUILTIN_VALUES, CLASS_VALUES, CLASSES, Point

RICH = {
    "builtins": [v for k, v in BUILTIN_VALUES.items() if not k.startswith("big")],
    "classes": list(CLASS_VALUES.values()),
    "shared": [[1, 2]] * 3,
}


def rich_payloads():
    for proto in range(6):
        value = dict(RICH)
        if proto < 2:
            value["classes"] = [v for v in RICH["classes"] if not hasattr(v, "__slots__")]
        yield proto, pickle.dumps(value, proto)


def try_load(data, **kw):
    try:
        loads_pickle(data, classes=CLASSES, **kw)
    except UnpicklingError:
        pass


@pytest.mark.parametrize(("proto", "data"), list(rich_payloads()), ids=lambda x: str(x)[:8])
def test_every_truncation(proto, data):
    step = 1
    for end in range(0, len(data), step):
        with pytest.raises(UnpicklingError):
            loads_pickle(data[:end], classes=CLASSES)


@pytest.mark.parametrize(("proto", "data"), list(rich_payloads()), ids=lambda x: str(x)[:8])
def test_every_single_byte_flip(proto, data):
    step = 1
    for i in range(0, len(data), step):
        for flip in (0x01, 0x80, 0xFF):
            mutated = bytearray(data)
            mutated[i] ^= flip
            try_load(bytes(mutated))


@pytest.mark.parametrize(
    "payload",
    [
        b"\x80\x04\x8e" + struct.pack("<Q", 2**62) + b"xx.",  # BINBYTES8
        b"\x80\x04\x8d" + struct.pack("<Q", 2**63) + b".",  # BINUNICODE8
        b"\x80\x05\x96" + struct.pack("<Q", 2**64 - 1) + b".",  # BYTEARRAY8
        b"X" + struct.pack("<I", 2**32 - 1) + b"abc.",  # BINUNICODE
        b"B" + struct.pack("<I", 2**31) + b".",  # BINBYTES
        b"\x80\x02\x8b" + struct.pack("<I", 2**32 - 1) + b"\x01.",  # LONG4
        b"\x80\x04\x95" + struct.pack("<Q", 2**60) + b"N.",  # FRAME
        b"T" + struct.pack("<I", 2**31) + b".",  # BINSTRING
    ],
)
def test_huge_declared_lengths(payload):
    with pytest.raises(UnpicklingError):
        loads_pickle(payload)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b".",
        b"N",
        b"(.",
        b"a.",
        b"]a.",
        b"}K\x01s.",
        b"(K\x01d.",
        b"\x80\x06N.",
        b"\xff.",
        b"I12x\n.",
        b"Fnot-a-float\n.",
        b"L12\n",
        b"\x80\x04\x93.",
        b"\x80\x04K\x01K\x02\x93.",
        b"1.",
        b"0.",
        b"2.",
        b"R.",
        b"b.",
        b"S'py2 str\n.",
        b"S'\\x'\n.",
        b"U\x02\xff\xfe.",
        b"\x80\x02\x85.",
        b"X\x02\x00\x00\x00\xff\xfe.",
    ],
)
def test_malformed_small_streams(payload):
    with pytest.raises(UnpicklingError):
        loads_pickle(payload)


def test_deep_nesting_is_a_limit_not_a_crash():
    deep = b"\x80\x02" + b"]" * 200_000 + b"a" * 199_999 + b"."
    with pytest.raises(LimitError):
        loads_pickle(deep)
    marks = b"(" * 100_000 + b"."
    with pytest.raises(LimitError):
        loads_pickle(marks)
    tuples = b"\x80\x02N" + b"\x85" * 100_000 + b"."
    with pytest.raises(LimitError):
        loads_pickle(tuples)


def test_deep_nesting_within_the_limit_loads():
    nested = b"\x80\x02" + b"]" * 1500 + b"a" * 1499 + b"."
    value = loads_pickle(nested, limits=Limits(max_depth=2000))
    for _ in range(1499):
        (value,) = value
    assert value == []


def test_limits():
    data = pickle.dumps({"s": "x" * 100, "b": b"y" * 100, "n": 10**50, "l": list(range(100))})
    for limits in [
        Limits(max_bytes=10),
        Limits(max_str_len=50),
        Limits(max_bytes_len=50),
        Limits(max_int_digits=20),
        Limits(max_items=50),
        Limits(max_container_len=50),
        Limits(max_depth=1),
    ]:
        with pytest.raises(LimitError):
            loads_pickle(data, limits=limits)
    assert loads_pickle(data, limits=Limits())["n"] == 10**50
    with pytest.raises(TypeError):
        loads_pickle(data, limits={"max_bytes": 1})


def test_trailing_bytes_after_stop_are_ignored_like_pickle():
    assert loads_pickle(pickle.dumps([1]) + b"junk") == [1]


def test_bad_field_values_are_unpickling_errors():
    # A dataclass state with an unknown field, and a date with a bad month.
    bad_state = pickle.dumps(Point(1)).replace(b"\x8c\x01y", b"\x8c\x01w")
    with pytest.raises(UnpicklingError, match="unknown fields"):
        loads_pickle(bad_state, classes=[Point])
    import datetime

    bad_date = pickle.dumps(datetime.date(2024, 1, 1), 2).replace(b"\x01\x01", b"\x0d\x01")
    with pytest.raises(UnpicklingError):
        loads_pickle(bad_date)
