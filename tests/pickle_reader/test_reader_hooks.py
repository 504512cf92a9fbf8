"""Registered classes are trusted: their pickling hooks run exactly as under pickle.loads.

Every hook kind is cross-checked against `pickle.loads` on what `pickle.dumps` writes at
every protocol that can write it; sharing and cycles are kept; a hostile stream that calls
a registered class's hooks with wrong arguments gets a typed error with an offset, and
nothing of the class runs before the whole stream has passed the checker.
"""

import copyreg
import pickle
import random
import struct

import pytest
from bytewright.pickle import (
    UnpicklingError,
    UnpicklingTypeError,
    UnpicklingValueError,
    loads_pickle,
)
from bytewright.pickle._pickle_reader import check_pickle
from hypothesis import given, settings
from hypothesis import strategies as st
from reader_values import std_dumps

PROTOCOLS = range(6)
EVENTS: list[str] = []


class Span:
    """`__reduce__` names the class itself: the reader calls `Span(start, stop)`."""

    __slots__ = ("start", "stop")

    def __init__(self, start, stop):
        EVENTS.append("Span.__init__")
        if stop < start:
            raise ValueError("stop before start")
        self.start, self.stop = start, stop

    def __reduce__(self):
        return (Span, (self.start, self.stop))

    def __eq__(self, other):
        return type(other) is Span and (self.start, self.stop) == (other.start, other.stop)


class Tagged:
    """`__reduce_ex__` with the protocol, a state and a `__setstate__`."""

    def __init__(self, name):
        self.name = name
        self.tags = []

    def __reduce_ex__(self, protocol):
        return (Tagged, (self.name,), {"tags": self.tags, "protocol": protocol})

    def __setstate__(self, state):
        EVENTS.append("Tagged.__setstate__")
        self.tags = state["tags"]
        self.seen_protocol = state["protocol"]

    def __eq__(self, other):
        return type(other) is Tagged and (self.name, self.tags) == (other.name, other.tags)


class ViaNewobj:
    """`__reduce__` through copyreg.__newobj__: NEWOBJ at protocol 2+, REDUCE before."""

    def __new__(cls, value=None):
        obj = super().__new__(cls)
        obj.made_with = value
        return obj

    def __reduce__(self):
        return (copyreg.__newobj__, (ViaNewobj, self.made_with), {"extra": 1})

    def __eq__(self, other):
        return type(other) is ViaNewobj and self.made_with == other.made_with


class NewArgs:
    """`__getnewargs__` with a `__new__` that needs them."""

    def __new__(cls, a, b):
        obj = super().__new__(cls)
        obj.total = a + b
        return obj

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __getnewargs__(self):
        return (self.a, self.b)

    def __eq__(self, other):
        return type(other) is NewArgs and vars(self) == vars(other)


class NewArgsEx:
    """`__getnewargs_ex__` with keyword arguments (NEWOBJ_EX at protocol 4+)."""

    def __new__(cls, a, *, scale=1):
        obj = super().__new__(cls)
        obj.scaled = a * scale
        return obj

    def __init__(self, a, *, scale=1):
        self.a, self.scale = a, scale

    def __getnewargs_ex__(self):
        return ((self.a,), {"scale": self.scale})

    def __eq__(self, other):
        return type(other) is NewArgsEx and vars(self) == vars(other)


class Celsius:
    """`__getstate__`/`__setstate__` with a state that is not a dict."""

    def __init__(self, degrees):
        self.degrees = degrees

    def __getstate__(self):
        return (self.degrees, "C")

    def __setstate__(self, state):
        EVENTS.append("Celsius.__setstate__")
        degrees, unit = state
        if unit != "C":
            raise ValueError(f"unknown unit {unit!r}")
        self.degrees = degrees

    def __eq__(self, other):
        return type(other) is Celsius and self.degrees == other.degrees


class Slotted:
    """`__slots__` and a `__dict__`: state as pickle's (dict, slots) pair."""

    __slots__ = ("__dict__", "x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return (
            type(other) is Slotted
            and (self.x, self.y) == (other.x, other.y)
            and vars(self) == vars(other)
        )


class Tags(dict):
    source: str


class Items(list):
    pass


class Members(set):
    pass


class Frozen(frozenset):
    pass


class Pair(tuple):
    pass


class Count(int):
    pass


class Text(str):
    pass


class TaskFailed(RuntimeError):
    """An exception subclass: BaseException's __reduce__ calls the class with its args."""

    def __init__(self, task, code):
        super().__init__(task, code)
        self.task = task

    def __eq__(self, other):
        return type(other) is TaskFailed and (self.args, vars(self)) == (other.args, vars(other))

    __hash__ = RuntimeError.__hash__


def rebuild(kind, value):
    """An `allow=` callable that `__reduce__` names."""
    EVENTS.append("rebuild")
    return Made(kind, value)


class Made:
    def __init__(self, kind, value):
        self.kind, self.value = kind, value

    def __reduce__(self):
        return (rebuild, (self.kind, self.value), {"note": "built"})

    def __eq__(self, other):
        return type(other) is Made and vars(self) == vars(other)


CLASSES = [
    Span,
    Tagged,
    ViaNewobj,
    NewArgs,
    NewArgsEx,
    Celsius,
    Slotted,
    Tags,
    Items,
    Members,
    Frozen,
    Pair,
    Count,
    Text,
    TaskFailed,
]


def same(a, b):
    """Equal, with the same types and the same instance state all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and not isinstance(a, type) and vars(a) != vars(b):
        return False
    return a == b


def values():
    tags = Tags(a=1, b=[2])
    tags.source = "import"
    items = Items([1, "two", (3,)])
    items.note = "n"
    members = Members({1, 2})
    members.label = "m"
    tagged = Tagged("t")
    tagged.tags.append("x")
    slotted = Slotted(1, [2])
    slotted.z = 3
    return {
        "span": Span(2, 5),
        "tagged": tagged,
        "newobj": ViaNewobj("v"),
        "newargs": NewArgs(1, 2),
        "newargs_ex": NewArgsEx(3, scale=2),
        "celsius": Celsius(21.5),
        "slotted": slotted,
        "dict": tags,
        "list": items,
        "set": members,
        "frozenset": Frozen({1, 2}),
        "tuple": Pair((1, "a")),
        "int": Count(7),
        "str": Text("text"),
        "exception": TaskFailed("job-1", 3),
        "class": Tags,
        "classes": [Span, Celsius],
    }


def writable(value, protocol):
    """True when pickle.dumps can write `value` at `protocol` (and names only classes the
    reader may allow: __getnewargs_ex__ with keywords is functools.partial at 2-3)."""
    try:
        data = std_dumps(value, protocol)
    except (TypeError, pickle.PicklingError):
        return False
    return b"functools" not in data


CASES = [
    pytest.param(name, proto, id=f"{name}-p{proto}")
    for name, value in values().items()
    for proto in PROTOCOLS
    if writable(value, proto)
]


def test_every_hook_kind_is_covered_at_several_protocols():
    names = {p.values[0] for p in CASES}
    assert names == set(values())
    assert len(CASES) >= 80


@pytest.mark.parametrize(("name", "proto"), CASES)
def test_hooks_run_as_under_pickle(name, proto):
    value = values()[name]
    data = std_dumps(value, proto)
    expected = pickle.loads(data)
    got = loads_pickle(data, classes=CLASSES)
    assert same(got, expected)
    assert got == value


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_all_together_with_the_same_calls_in_the_same_order(proto):
    value = [v for v in values().values() if writable(v, proto)]
    data = std_dumps(value, proto)
    EVENTS.clear()
    expected = pickle.loads(data)
    theirs = list(EVENTS)
    EVENTS.clear()
    got = loads_pickle(data, classes=CLASSES)
    assert EVENTS == theirs
    assert same(got, expected)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_reduce_to_an_allow_callable(proto):
    data = std_dumps([Made("k", [1])], proto)
    with pytest.raises(UnpicklingError, match="allow="):
        loads_pickle(data)
    got = loads_pickle(data, allow=[rebuild], classes=[Made])
    assert got == pickle.loads(data) and got[0].note == "built"


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_registered_class_as_a_value(proto):
    data = std_dumps(Span, proto)
    assert loads_pickle(data, classes=[Span]) is Span
    with pytest.raises(UnpicklingError, match=r"classes=\["):
        loads_pickle(data)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_sharing_and_cycles_through_state(proto):
    celsius = Celsius(1.0)
    tagged = Tagged("t")
    tagged.tags.append(tagged)
    tags = Tags(a=1)
    tags.source = "s"
    items = Items([tags])
    items.owner = tags
    value = [celsius, celsius, tagged, tagged, tags, items]
    data = std_dumps(value, proto)
    got = loads_pickle(data, classes=CLASSES)
    assert got[0] is got[1] and got[0].degrees == 1.0
    assert got[2] is got[3] and got[2].tags[0] is got[2]
    assert got[5][0] is got[4] and got[5].owner is got[4]
    assert same(got[4:], pickle.loads(data)[4:])


@pytest.mark.parametrize("proto", range(2, 6))
def test_cycles_through_container_subclass_items(proto):
    """From protocol 2 the items follow the object (pickle itself recurses forever on
    these at protocols 0-1, whose reconstructor takes the items as an argument)."""
    tags = Tags()
    tags["self"] = tags
    tags.source = "cycle"
    items = Items()
    items.append(items)
    items.owner = tags
    members = Members()
    members.me = members
    data = std_dumps([tags, items, members], proto)
    got = loads_pickle(data, classes=CLASSES)
    assert got[0]["self"] is got[0] and got[0].source == "cycle"
    assert got[1][0] is got[1] and got[1].owner is got[0]
    assert got[2].me is got[2]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_python2_names_of_copyreg_and_builtins(proto):
    """Protocols 0-2 name `copy_reg` and `__builtin__`; they map for classes= as well."""
    data = std_dumps(Items([1]), proto)
    if proto < 2:
        assert b"copy_reg" in data and b"__builtin__" in data
    assert same(loads_pickle(data, classes=[Items]), Items([1]))


def test_unregistered_classes_still_never_run():
    data = std_dumps(Span(1, 2), 2)
    EVENTS.clear()
    with pytest.raises(UnpicklingError, match="classes="):
        loads_pickle(data)
    assert EVENTS == []


# Hostile streams: hooks named with wrong arguments, and hooks before an exploit.

P2 = b"\x80\x02"


def g(cls) -> bytes:
    return f"c{cls.__module__}\n{cls.__qualname__}\n".encode()


def u(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


@pytest.mark.parametrize(
    ("payload", "error", "offset"),
    [
        # Span(5, 1): its __init__ raises ValueError
        (P2 + g(Span) + b"K\x05K\x01\x86R.", UnpicklingValueError, 2 + len(g(Span)) + 5),
        # Span(1): wrong argument count, a TypeError from the call
        (P2 + g(Span) + b"K\x01\x85R.", UnpicklingTypeError, 2 + len(g(Span)) + 3),
        # NewArgs.__new__ without its arguments
        (P2 + g(NewArgs) + b")\x81.", UnpicklingTypeError, 2 + len(g(NewArgs)) + 1),
        # Count("x"): int.__new__ raises ValueError
        (P2 + g(Count) + b"X\x01\x00\x00\x00x\x85\x81.", UnpicklingValueError, None),
        # Celsius.__setstate__ with a state it refuses
        (P2 + g(Celsius) + b")\x81K\x01X\x01\x00\x00\x00F\x86b.", UnpicklingValueError, None),
        # copyreg._reconstructor(Items, int, 1): int.__new__(Items) is not allowed
        (
            b"ccopy_reg\n_reconstructor\n(" + g(Items) + b"c__builtin__\nint\nK\x01tR.",
            UnpicklingTypeError,
            None,
        ),
        # copyreg.__newobj__(NewArgs, 1): one argument short
        (b"ccopyreg\n__newobj__\n(" + g(NewArgs) + b"K\x01tR.", UnpicklingTypeError, None),
        # NEWOBJ_EX with a keyword the class does not take
        (
            b"\x80\x04" + g(NewArgsEx) + b"K\x01\x85}X\x01\x00\x00\x00qK\x01s\x92.",
            UnpicklingTypeError,
            None,
        ),
        # APPENDS on a registered class without extend or append
        (P2 + g(Span) + b"K\x01K\x02\x86R(K\x01e.", UnpicklingError, None),
    ],
)
def test_hooks_with_wrong_arguments_raise_typed_errors_with_offsets(payload, error, offset):
    with pytest.raises(error) as info:
        loads_pickle(payload, classes=CLASSES)
    assert isinstance(info.value.offset, int)
    assert 0 <= info.value.offset < len(payload)
    if offset is not None:
        assert info.value.offset == offset
    assert info.value.__cause__ is not None


@pytest.mark.parametrize(
    "hook",
    [
        pytest.param(g(Span) + b"K\x01K\x02\x86R", id="reduce"),
        pytest.param(
            g(Tagged) + u("t") + b"\x85R}(" + u("tags") + b"]" + u("protocol") + b"K\x02ub",
            id="setstate",
        ),
        pytest.param(g(NewArgs) + b"K\x01K\x02\x86\x81", id="newobj"),
        pytest.param(g(Items) + b")\x81(K\x01e", id="appends"),
        pytest.param(g(Tags) + b")\x81(K\x01K\x02u", id="setitems"),
        pytest.param(g(Members) + b"]\x85R", id="set-subclass"),
        pytest.param(
            b"ccopy_reg\n_reconstructor\n(" + g(Items) + b"c__builtin__\nlist\n]tR",
            id="reconstructor",
        ),
    ],
)
def test_no_hook_runs_before_the_whole_stream_passes(hook):
    EVENTS.clear()
    payload = P2 + b"(" + hook + b"cos\nsystem\n" + u("true") + b"\x85Rl."
    with pytest.raises(UnpicklingError, match=r"os\.system"):
        loads_pickle(payload, classes=CLASSES)
    assert EVENTS == []
    # without the exploit, the same hook runs
    loads_pickle(P2 + b"(" + hook + b"l.", classes=CLASSES)


def test_hook_calls_are_refused_with_globals_as_arguments():
    payload = P2 + g(Span) + b"ccopyreg\n_reconstructor\nK\x01\x86R."
    with pytest.raises(UnpicklingError, match="only with values"):
        loads_pickle(payload, classes=CLASSES)
    assert check_pickle(payload, classes=CLASSES) is not None


def hook_pickles():
    out = []
    for value in values().values():
        for proto in PROTOCOLS:
            if writable(value, proto):
                out.append(std_dumps(value, proto))
    return out


def test_malformed_sweep_of_hook_pickles_raises_only_unpickling_errors():
    """Truncations and random byte changes of every hook pickle: an UnpicklingError
    (or a value), never another exception, a crash or a hang."""
    rng = random.Random(12)
    for data in hook_pickles():
        variants = [data[:i] for i in range(0, len(data), max(1, len(data) // 16))]
        for _ in range(12):
            b = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            variants.append(bytes(b))
        for variant in variants:
            try:
                loads_pickle(variant, classes=CLASSES)
            except UnpicklingError as exc:
                assert exc.offset is None or 0 <= exc.offset <= len(variant)


texts = st.text(max_size=8)
leaves = st.one_of(st.none(), st.integers(), texts, st.floats(allow_nan=False))


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(texts, leaves, max_size=5),
    st.lists(leaves, max_size=5),
    st.frozensets(st.integers(), max_size=5),
    st.integers(),
    st.sampled_from(list(PROTOCOLS)),
)
def test_random_container_subclasses_match_pickle(d, items, members, n, proto):
    tags = Tags(d)
    tags.source = "h"
    value = [tags, Items(items), Members(members), Frozen(members), Pair(items), Count(n)]
    value.append(Celsius(n))
    data = std_dumps(value, proto)
    assert same(loads_pickle(data, classes=CLASSES), pickle.loads(data))


def test_an_error_from_a_hook_has_the_offset_of_its_opcode():
    """The offset of an error raised by a hook is that of the opcode that called it."""
    prefix = P2 + b"]q\x00(" + g(Span)
    payload = prefix + b"K\x09K\x01\x86R" + b"e."
    reduce_at = len(prefix) + 5
    assert payload[reduce_at : reduce_at + 1] == b"R"
    with pytest.raises(UnpicklingValueError) as info:
        loads_pickle(payload, classes=CLASSES)
    assert info.value.offset == reduce_at
