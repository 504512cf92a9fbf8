"""Small records of plain data take a one-pass builder; it must agree with the general one.

A record whose body is at most 1,024 bytes and no longer than any count or length limit is
built in one recursive pass when it holds only lists, tuples, dicts, ints, floats, strs,
bytes, None and bools (shared or not). Anything else, and anything wrong, goes to the
general builder from the start. `general()` forces the general builder without changing
the outcome: a max_depth one below the body length (a body of n bytes nests at most n - 1
containers) makes the record ineligible.
"""

import math
import pickle as std_pickle

import pytest
from bytewright import pickle
from records import record

HEADER_LEN = 4


def body_len(data: bytes) -> int:
    pos, n, shift = HEADER_LEN, 0, 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n


def general(data: bytes) -> pickle.Limits:
    return pickle.Limits(max_depth=body_len(data) - 1)


def outcome(data: bytes, **kw):
    """('ok', repr of the value with its types) or ('error', class, message)."""
    try:
        value = pickle.loads(data, **kw)
    except Exception as exc:
        return ("error", type(exc), str(exc))
    return ("ok", typed(value))


def typed(v):
    if isinstance(v, list | tuple):
        return (type(v).__name__, [typed(x) for x in v])
    if isinstance(v, dict):
        return ("dict", [(typed(k), typed(x)) for k, x in v.items()])
    if isinstance(v, float):
        return ("float", v.hex() if not math.isnan(v) else "nan")
    return (type(v).__name__, repr(v))


SMALL = [
    [None, True, False, 0, 42, -42, 3.14, "hello", b"\x00\x01\x02"],
    [[[[[[1]]]]]],
    {"a": 1, "b": [1.5, -2.25], "c": {"d": (1, "x")}, "e": ""},
    (1, (2, (3, ())), [], {}),
    [63, 64, 255, 256, -1, -256, -257, 65535, -65536, 2**31 - 1, -(2**31), 2**40],
    ["", "é", "日本", "x" * 31, "y" * 32, b"", b"z" * 40, float("inf"), -0.0, 1e-300],
    {1: "int key", 2.5: "float key", None: 0, False: 1, (1, 2): "tuple key", b"k": 3},
    [0.5] * 20 + list(range(20)),
]


@pytest.mark.parametrize("value", SMALL, ids=range(len(SMALL)))
def test_small_records_round_trip_like_pickle(value):
    data = pickle.dumps(value)
    assert body_len(data) <= 1024
    got = pickle.loads(data)
    assert typed(got) == typed(std_pickle.loads(std_pickle.dumps(value)))
    assert outcome(data) == outcome(data, limits=general(data))


def test_shared_values_keep_their_identity():
    inner = [1]
    text = "shared text"
    pair = (inner, 2)
    got = pickle.loads(pickle.dumps([inner, inner, text, text, pair, pair, {"k": inner}]))
    assert got[0] is got[1] and got[2] is got[3] and got[4] is got[5]
    assert got[4][0] is got[0] and got[6]["k"] is got[0]
    assert got == [[1], [1], text, text, ([1], 2), ([1], 2), {"k": [1]}]


def test_a_list_that_holds_itself():
    cyclic: list = [1]
    cyclic.append(cyclic)
    got = pickle.loads(pickle.dumps(cyclic))
    assert got[0] == 1 and got[1] is got


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # SHARE (a6) of a tuple (71) holding a reference (a7) to its own slot.
        (b"\xa6\x71\xa7\x00", "before its value is complete"),
        # A dict (81) whose key is a list (61 01): unhashable.
        (b"\x81\x61\x01\x02", "unhashable"),
        # A short str (42) that is not UTF-8.
        (b"\x42\xff\xfe", "utf-8"),
        # Two values where the record holds one.
        (b"\x01\x02", "trailing"),
        # A list (a1) claiming 200 items in a few bytes.
        (b"\xa1\xc8\x01\x01\x02", "too short"),
        # A reference to a slot never shared, and SHARE before a reference.
        (b"\x62\xa7\x00\x01", "memo slot"),
        (b"\x62\xa6\xa7\x00\x01", "reference cannot be shared"),
        # A set (a4): not in the one-pass grammar, still read (here cut short).
        (b"\x62\x01\xa4", "truncated"),
    ],
)
def test_bad_small_records_raise_as_the_general_builder_does(body, message):
    data = record(body)
    with pytest.raises(pickle.UnpicklingError) as info:
        pickle.loads(data)
    assert message in str(info.value).lower()
    assert outcome(data) == outcome(data, limits=general(data))


def test_limits_still_hold_for_small_records():
    with pytest.raises(pickle.LimitError):
        pickle.loads(pickle.dumps([[[1]]]), limits=pickle.Limits(max_depth=2))
    with pytest.raises(pickle.LimitError):
        pickle.loads(pickle.dumps([1, 2, 3]), limits=pickle.Limits(max_items=3))
    with pytest.raises(pickle.LimitError):
        pickle.loads(pickle.dumps(["hello"]), limits=pickle.Limits(max_str_len=4))
    with pytest.raises(pickle.LimitError):
        pickle.loads(pickle.dumps([b"12345"]), limits=pickle.Limits(max_bytes_len=4))
    with pytest.raises(pickle.LimitError):
        pickle.loads(pickle.dumps([1, 2, 3]), limits=pickle.Limits(max_container_len=2))
    # At the limits exactly, the record loads.
    assert pickle.loads(pickle.dumps([[[1]]]), limits=pickle.Limits(max_depth=3)) == [[[1]]]


def test_records_beyond_the_one_pass_grammar_load():
    value = [{1, 2}, frozenset({3}), 1 + 2j, ..., 10**30, "\ud800", bytearray(b"x"), range(3)]
    assert pickle.loads(pickle.dumps(value)) == value
    deep = [1]
    for _ in range(100):  # deeper than the one pass follows
        deep = [deep]
    assert pickle.loads(pickle.dumps(deep)) == deep
    many = [f"s{i}" for i in range(66)] * 2  # more shared values than it keeps
    assert body_len(pickle.dumps(many)) <= 1024
    assert pickle.loads(pickle.dumps(many)) == many


def test_every_cut_and_byte_change_agrees_with_the_general_builder():
    for value in SMALL:
        data = pickle.dumps(value)
        start = len(data) - body_len(data)
        body = data[start:]
        variants = [record(body[:cut]) for cut in range(len(body))]
        for i in range(len(body)):
            for flip in (0x01, 0x10, 0x40, 0x80, 0xFF):
                changed = bytearray(body)
                changed[i] ^= flip
                variants.append(record(bytes(changed)))
        for v in variants:
            if body_len(v) == 0:
                continue
            assert outcome(v) == outcome(v, limits=general(v)), v.hex(" ")
