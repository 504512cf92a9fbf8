"""Every supported type and its edge values round-trip exactly."""

import collections
import datetime as dt
import decimal
import fractions
import ipaddress
import math
import pathlib
import pickle as std_pickle
import struct
import uuid
import zoneinfo

import pytest
from bytewright import pickle


def roundtrip(value, **kw):
    return pickle.loads(pickle.dumps(value), **kw)


def same(a, b) -> bool:
    """Type and value equality, recursing so floats compare bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, list | tuple | collections.deque):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    return a == b


NAN_PAYLOAD = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_DEAD_BEEF))[0]

ATOMS = [
    None,
    True,
    False,
    ...,
    0,
    1,
    63,
    64,
    255,
    256,
    -1,
    -256,
    -257,
    65535,
    65536,
    -65536,
    -65537,
    2**31 - 1,
    -(2**31),
    2**31,
    2**63 - 1,
    -(2**63),
    2**63,
    2**64,
    -(2**64) - 1,
    10**400,
    -(10**400),
    0.0,
    -0.0,
    1.5,
    0.1,
    -1e308,
    5e-324,
    math.inf,
    -math.inf,
    math.nan,
    NAN_PAYLOAD,
    1e38,
    3.4028234663852886e38,
    complex(1, -0.0),
    complex(math.nan, math.inf),
    "",
    "a",
    "x" * 31,
    "y" * 32,
    "z" * 70_000,
    "héllo wörld ✓ 🎉",
    "\ud800",
    "a\udfffb\ud83d",
    "\x00\n\t",
    b"",
    b"\x00\xff" * 40,
    bytearray(),
    bytearray(b"abc"),
    range(0),
    range(-5, 10**30, 7),
    slice(None),
    slice(1, "a", 2.5),
]


@pytest.mark.parametrize("value", ATOMS, ids=repr)
def test_atoms_round_trip(value):
    assert same(roundtrip(value), value)


def test_float_bits_survive_inside_containers():
    values = [-0.0, math.nan, NAN_PAYLOAD, 1.0000001, 2.0**-149]
    back = roundtrip(values)
    assert [struct.pack("<d", v) for v in back] == [struct.pack("<d", v) for v in values]


def test_long_lists_of_floats_mixed_with_other_items_keep_every_bit():
    # Long lists take runs of floats through a path of their own; 0.5 and 0.25 have the
    # short 4-byte encoding, so the runs mix both float encodings with other items.
    floats = [-0.0, math.nan, NAN_PAYLOAD, math.inf, 0.5, 0.1, 2.0**-149, 0.25, 1e308]
    values = floats * 5 + ["s", 7, None] + floats * 3 + [[0.1, 0.5]] + floats
    back = roundtrip(values)
    assert len(back) == len(values)
    assert all(same(a, b) for a, b in zip(back, values, strict=True))
    shared = [0.1] * 40  # one float object, forty times
    back = roundtrip([shared, shared])
    assert (
        back[0] is back[1]
        and [struct.pack("<d", v) for v in back[0]] == [struct.pack("<d", 0.1)] * 40
    )


def test_long_lists_of_ints_of_every_width_round_trip():
    # Long lists take runs of same-width ints through a path of their own.
    edges = [0, 1, 63, 64, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**63, 2**100]
    edges += [-v for v in edges] + [-1 - v for v in edges]
    values = sorted(edges) * 3 + list(range(-70_000, 70_000, 7)) + [True, None, 1.5, 2**64]
    back = roundtrip(values)
    assert back == values
    assert [type(v) for v in back] == [type(v) for v in values]


CONTAINERS = [
    [],
    [1, [2, [3, []]]],
    list(range(1000)),
    (),
    (1,),
    tuple(range(20)),
    {},
    {"b": 1, "a": 2, 3: [4], (5, 6): None, None: b"x", 1.5: "f"},
    {f"k{i}": i for i in range(100)},
    set(),
    {1, "a", (2, 3), frozenset({4})},
    frozenset(),
    frozenset({1, 2, 3}),
    [[1.5] * 3, ("a", "b"), {"k": {"j": []}}],
]


@pytest.mark.parametrize("value", CONTAINERS, ids=lambda v: type(v).__name__ + str(len(v)))
def test_containers_round_trip(value):
    back = roundtrip(value)
    assert same(back, value)
    assert back == std_pickle.loads(std_pickle.dumps(value))


def test_dict_order_kept():
    d = {k: k for k in ["z", "a", "m", "b"]}
    assert list(roundtrip(d)) == ["z", "a", "m", "b"]


UTC2 = dt.timezone(dt.timedelta(hours=2), "UTC+2 custom")
PARIS = zoneinfo.ZoneInfo("Europe/Paris")

STDLIB = [
    dt.date(1, 1, 1),
    dt.date(9999, 12, 31),
    dt.time(),
    dt.time(23, 59, 59, 999999, tzinfo=dt.UTC, fold=1),
    dt.datetime(2024, 2, 29, 12, 30, 15, 123456),
    dt.datetime(2024, 10, 27, 2, 30, tzinfo=PARIS, fold=1),
    dt.datetime(2000, 1, 1, tzinfo=UTC2),
    dt.timedelta(),
    dt.timedelta(days=-1, microseconds=1),
    dt.timedelta.max,
    dt.UTC,
    UTC2,
    dt.timezone(dt.timedelta(minutes=-90)),
    PARIS,
    decimal.Decimal("1.50"),
    decimal.Decimal("-0"),
    decimal.Decimal("NaN"),
    decimal.Decimal("-sNaN123"),
    decimal.Decimal("Infinity"),
    decimal.Decimal("-Infinity"),
    decimal.Decimal("1e-999999"),
    fractions.Fraction(-3, 7),
    fractions.Fraction(10**50, 3),
    uuid.UUID(int=0),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    pathlib.PurePosixPath("/a/b"),
    pathlib.PureWindowsPath(r"C:\x\y"),
    pathlib.PosixPath("rel/ative"),
    pathlib.Path("/tmp"),
    ipaddress.IPv4Address("192.168.0.1"),
    ipaddress.IPv6Address("fe80::1%eth0"),
    ipaddress.IPv4Network("10.0.0.0/8"),
    ipaddress.IPv6Network("2001:db8::/32"),
    ipaddress.IPv4Interface("10.1.2.3/24"),
    ipaddress.IPv6Interface("::1/128"),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    collections.Counter("mississippi"),
    collections.defaultdict(list, {"a": [1]}),
    collections.defaultdict(None),
    collections.defaultdict(int, {1: 2}),
    collections.deque([1, 2, 3]),
    collections.deque([1, 2], maxlen=2),
    collections.deque(maxlen=0),
]


@pytest.mark.parametrize("value", STDLIB, ids=lambda v: type(v).__name__ + ":" + str(v)[:30])
def test_stdlib_types_round_trip(value):
    back = roundtrip(value)
    assert type(back) is type(value)
    assert same(back, value) or (str(back) == str(value) and repr(back) == repr(value))
    if isinstance(value, dt.datetime | dt.time):
        assert back.fold == value.fold
        assert back.tzinfo == value.tzinfo
    if isinstance(value, collections.defaultdict):
        assert back.default_factory is value.default_factory
    if isinstance(value, collections.deque):
        assert back.maxlen == value.maxlen
    if isinstance(value, collections.OrderedDict):
        assert list(back.items()) == list(value.items())


def test_ordered_dict_keeps_moved_order():
    od = collections.OrderedDict(a=1, b=2, c=3)
    od.move_to_end("a")
    assert list(roundtrip(od)) == ["b", "c", "a"]


def test_utc_stays_the_singleton():
    assert roundtrip(dt.UTC) is dt.UTC


def test_protocol_is_accepted_and_ignored():
    assert pickle.dumps([1], 5) == pickle.dumps([1]) == pickle.dumps([1], protocol=2)


@pytest.mark.parametrize(
    "value",
    [
        lambda: 1,
        open,
        object(),
        iter([]),
        memoryview(b"x"),
        collections.defaultdict(lambda: 1),
        (x for x in []),
    ],
    ids=lambda v: type(v).__name__,
)
def test_unsupported_types_raise_pickling_error(value):
    with pytest.raises(pickle.PicklingError, match="cannot pickle"):
        pickle.dumps(value)


def test_pickling_error_names_the_path():
    with pytest.raises(pickle.PicklingError) as info:
        pickle.dumps({"a": [1, 2, {"b": (3, object())}]})
    assert '$["a"][2]["b"][1]' in str(info.value)
    assert "'object'" in str(info.value)
    assert isinstance(info.value, std_pickle.PicklingError)


def test_subclasses_of_builtin_types_no_record_holds_are_rejected():
    class MyDay(dt.date):
        pass

    with pytest.raises(pickle.PicklingError, match="MyDay"):
        pickle.dumps(MyDay(2024, 1, 31))


def test_too_deep_to_dump_is_a_pickling_error():
    v: list = []
    for _ in range(5000):
        v = [v]
    with pytest.raises(pickle.PicklingError, match="nesting"):
        pickle.dumps(v)


def test_what_dumps_writes_loads_back_with_default_limits():
    huge = 7**300_000  # about 250,000 digits
    assert roundtrip(huge) == huge
    assert pickle.loads(pickle.dumps([huge]), limits=pickle.Limits()) == [huge]


def test_strs_of_every_short_length_and_kind_round_trip():
    texts = [c * n for n in range(40) for c in ("a", "é", "€", "\U0001f600")]
    texts += ["x" * n + "é" for n in range(33)] + ["lone \udc80 surrogate"]
    shared = "shared text"
    value = [*texts, {t: t for t in texts}, shared, shared]
    back = pickle.loads(pickle.dumps(value))
    assert back == value and all(type(t) is str for t in back[: len(texts)])
    assert back[-1] is back[-2]


def test_a_record_does_not_depend_on_the_previous_one():
    # Each thread reuses its output buffer: a large record must leave nothing behind.
    small = {"a": [1, 2.5, "three"], "b": None}
    first, canonical = pickle.dumps(small), pickle.dumps(small, deterministic=True)
    pickle.dumps(["big " * 50_000, list(range(100_000))])
    pickle.dumps(list(range(10_000)), deterministic=True)
    assert pickle.dumps(small) == first
    assert pickle.dumps(small, deterministic=True) == canonical
    assert pickle.loads(first) == pickle.loads(canonical) == small


def test_large_values_round_trip_from_many_threads():
    # Large data is copied, hashed and validated with the GIL released.
    from concurrent.futures import ThreadPoolExecutor

    values = [
        b"\x00\xff" * 40_000,
        "ascii " * 20_000,
        "ünïcode " * 20_000,
        bytearray(b"z" * 70_000),
        ["x" * 70_000, b"y" * 70_000, "x" * 70_000],
        {"k": "€" * 40_000, "n": list(range(30_000))},
    ]

    def work(i):
        value = values[i % len(values)]
        for key in (None, b"key"):
            back = pickle.loads(pickle.dumps(value, hmac_key=key), hmac_key=key)
            assert back == value and type(back) is type(value)
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(48)))


@pytest.mark.parametrize("edge", [-4097, -4096, -4095, -1, 0, 1, 4095, 4096, 4097])
def test_large_values_at_page_edges_keep_every_byte(edge):
    # A large bytes or str is copied into pages mapped ahead of the copy: lengths on and
    # around page boundaries, and the bytes just inside both ends, must come back exact.
    n = (1 << 20) + edge
    data = bytes((i * 7 + 3) & 0xFF for i in range(256)) * (n // 256) + b"\x5a" * (n % 256)
    text = "".join(chr(0x21 + i % 90) for i in range(n))
    for value in (data, text, [data, text]):
        for key in (None, b"key"):
            record = pickle.dumps(value, hmac_key=key)
            back = pickle.loads(record, hmac_key=key)
            assert back == value and type(back) is type(value)
    assert len(data) == len(text) == n
    back = pickle.loads(pickle.dumps(data))
    assert back[:1] == data[:1] and back[-1:] == data[-1:]
