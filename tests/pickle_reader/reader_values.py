"""Values of every type `bytewright.pickle` supports, and the classes they use."""

import collections
import dataclasses
import datetime as dt
import decimal
import enum
import fractions
import ipaddress
import pathlib
import typing
import uuid
import zoneinfo


class Color(enum.Enum):
    RED = 1
    GREEN = "g"


class Perm(enum.IntFlag):
    R = 4
    W = 2


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


@dataclasses.dataclass(frozen=True)
class Frozen:
    name: str
    tags: tuple = ()


@dataclasses.dataclass(slots=True)
class Slotted:
    a: int
    b: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Child(Point):
    z: float = 1.5


class Pair(typing.NamedTuple):
    left: typing.Any
    right: typing.Any = None


Row = collections.namedtuple("Row", "id name")


class Plain:
    def __init__(self, a=1, b="two"):
        self.a = a
        self.b = b

    def __eq__(self, other):
        return type(other) is type(self) and vars(other) == vars(self)


class WithSlots:
    __slots__ = ("p", "q")

    def __init__(self, p=1, q=2):
        self.p = p
        self.q = q

    def __eq__(self, other):
        return type(other) is type(self) and (other.p, other.q) == (self.p, self.q)


CLASSES = [Color, Perm, Point, Frozen, Slotted, Child, Pair, Row, Plain, WithSlots]

# Values that pickle at every protocol (0-5); name -> value.
BUILTIN_VALUES = {
    "none": None,
    "true": True,
    "false": False,
    "zero": 0,
    "small_int": 7,
    "neg_int": -300,
    "int32": 2**31 - 1,
    "int64": -(2**63),
    "bigint": 2**200 + 12345,
    "neg_bigint": -(3**150),
    "float": 1.5,
    "neg_zero": -0.0,
    "inf": float("inf"),
    "tiny": 5e-324,
    "complex": complex(1.5, -2),
    "str": "hello",
    "unicode": "h\u00e9llo \u2603 \U0001f600",
    "surrogate": "a\ud800b",
    "newline_str": "line\nbreak\\ \r",
    "empty_str": "",
    "bytes": b"\x00\xffbytes",
    "empty_bytes": b"",
    "long_bytes": bytes(range(256)) * 2,
    "bytearray": bytearray(b"\x00abc\xff"),
    "list": [1, "a", None],
    "tuple": (1, (2, (3,))),
    "empty_tuple": (),
    "dict": {"a": 1, 2: "b", (1, 2): [3]},
    "set": {1, 2, "x"},
    "empty_set": set(),
    "frozenset": frozenset({1, (2, 3)}),
    "range": range(1, 100, 7),
    "slice": slice(1, None, -2),
    "ellipsis": ...,
    "date": dt.date(2024, 2, 29),
    "time": dt.time(23, 59, 58, 999999),
    "time_tz": dt.time(1, 2, 3, tzinfo=dt.UTC),
    "datetime": dt.datetime(2024, 1, 2, 3, 4, 5, 6),
    "datetime_fold": dt.datetime(2024, 11, 3, 1, 30, fold=1),
    "datetime_tz": dt.datetime(2024, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=-5), "EST")),
    "datetime_zi": dt.datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris")),
    "timedelta": dt.timedelta(days=-3, seconds=5, microseconds=7),
    "timezone": dt.timezone(dt.timedelta(hours=5, minutes=30)),
    "zoneinfo": zoneinfo.ZoneInfo("America/New_York"),
    "decimal": decimal.Decimal("-1.2500"),
    "decimal_nan": decimal.Decimal("NaN"),
    "decimal_inf": decimal.Decimal("-Infinity"),
    "fraction": fractions.Fraction(-7, 3),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "pure_posix": pathlib.PurePosixPath("/a/b.txt"),
    "pure_windows": pathlib.PureWindowsPath("C:/x/y"),
    "posix": pathlib.PosixPath("rel/path"),
    "ipv4": ipaddress.IPv4Address("10.0.0.1"),
    "ipv6": ipaddress.IPv6Address("::1"),
    "ipv4net": ipaddress.IPv4Network("10.0.0.0/8"),
    "ipv6net": ipaddress.IPv6Network("2001:db8::/32"),
    "ipv4if": ipaddress.IPv4Interface("10.1.2.3/16"),
    "ipv6if": ipaddress.IPv6Interface("::2/64"),
    "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
    "deque": collections.deque([1, 2, 3]),
    "deque_maxlen": collections.deque([1, 2], maxlen=5),
    "counter": collections.Counter("abracadabra"),
    "defaultdict": collections.defaultdict(list, {"k": [1]}),
    "defaultdict_none": collections.defaultdict(None, {"k": 1}),
    "defaultdict_int": collections.defaultdict(int, {"k": 2}),
    "nested": {"rows": [(1, "a"), (2, "b")], "meta": {"ok": True, "n": None}},
    "big_list": list(range(2500)),
    "big_dict": {f"k{i}": i for i in range(1500)},
}

CLASS_VALUES = {
    "enum": Color.RED,
    "enum_str": Color.GREEN,
    "intflag": Perm.R,
    "intflag_combo": Perm.R | Perm.W,
    "dataclass": Point(1, 2),
    "frozen": Frozen("f", (1, 2)),
    "slotted": Slotted(3, [4]),
    "child": Child(1, 2, 3.5),
    "namedtuple": Pair(1, "x"),
    "collections_namedtuple": Row(5, "five"),
    "plain": Plain([1], {"x": 2}),
    "with_slots": WithSlots("p", None),
}


def protocols_for(value: object) -> range:
    """Protocols pickle itself can write `value` at (slots need protocol 2)."""
    kinds = (Slotted, WithSlots)
    return range(2, 6) if isinstance(value, kinds) else range(6)


def std_dumps(value, proto=None):
    """pickle.dumps with pickle's own reduction, whatever a library registered in copyreg
    (tblib registers reducers for exceptions when its tests' modules are collected)."""
    import io
    import pickle

    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, proto)
    pickler.dispatch_table = {}
    pickler.dump(value)
    return buf.getvalue()
