"""`bytewright.pickle`: `__getstate__`/`__setstate__` of registered classes, and the
standard library's values, compared with what `pickle` gives."""

import array
import collections
import datetime
import os
import pickle as std_pickle
import time
import types

import pytest
from bytewright import pickle
from hypothesis import given, settings
from hypothesis import strategies as st

CALLS: list[tuple[str, object]] = []


class Temperature:
    """A `__getstate__` that changes the representation, and its `__setstate__`."""

    def __init__(self, celsius):
        self.celsius = celsius

    def __getstate__(self):
        return {"kelvin": self.celsius + 273.15}

    def __setstate__(self, state):
        CALLS.append(("Temperature", dict(state)))
        self.celsius = round(state["kelvin"] - 273.15, 6)


class Plain:
    """A `__setstate__` only: it gets the instance dict, as with pickle."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __setstate__(self, state):
        CALLS.append(("Plain", state))
        self.__dict__.update(state)


class Slots:
    """`__slots__` and a `__dict__`, with a `__setstate__` taking pickle's pair."""

    __slots__ = ("__dict__", "x")

    def __init__(self, x):
        self.x = x

    def __setstate__(self, state):
        CALLS.append(("Slots", state))
        attrs, slots = state
        if attrs:
            self.__dict__.update(attrs)
        for key, value in slots.items():
            object.__setattr__(self, key, value)


class OnlyGetstate:
    """A `__getstate__` without `__setstate__`: its dict becomes the fields."""

    def __init__(self):
        self.secret = "not written"
        self.public = 1

    def __getstate__(self):
        return {"public": self.public}


class BadState:
    def __getstate__(self):
        return ("a", "tuple")


CLASSES = [Temperature, Plain, Slots, OnlyGetstate, BadState]


def roundtrip(value):
    return pickle.loads(pickle.dumps(value), classes=CLASSES)


def test_getstate_is_what_is_written_and_setstate_what_loads_call():
    CALLS.clear()
    back = roundtrip(Temperature(21.5))
    assert back.celsius == 21.5
    assert CALLS == [("Temperature", {"kelvin": 21.5 + 273.15})]
    CALLS.clear()
    std_pickle.loads(std_pickle.dumps(Temperature(21.5)))
    assert CALLS == [("Temperature", {"kelvin": 21.5 + 273.15})]  # the same call as pickle


def test_setstate_gets_the_state_pickle_gives():
    for value in (Plain(1, [2]), Slots(3)):
        if isinstance(value, Slots):
            value.extra = "e"
        CALLS.clear()
        ours = roundtrip(value)
        ours_state = CALLS[-1][1]
        CALLS.clear()
        theirs = std_pickle.loads(std_pickle.dumps(value, 2))
        assert ours_state == CALLS[-1][1]
        assert vars(ours) == vars(theirs)
        if isinstance(value, Slots):
            assert ours.x == theirs.x == 3


def test_getstate_without_setstate_writes_only_its_fields():
    back = roundtrip(OnlyGetstate())
    assert vars(back) == {"public": 1}


def test_a_state_that_is_not_a_dict_is_refused_when_writing():
    with pytest.raises(pickle.PicklingError, match="__getstate__ must return a dict"):
        pickle.dumps(BadState())


def test_sharing_and_cycles_through_setstate():
    a = Plain(1, None)
    a.b = a
    t = Temperature(1.0)
    CALLS.clear()
    back = roundtrip([a, a, t, t])
    assert back[0] is back[1] and back[0].b is back[0]
    assert back[2] is back[3] and back[2].celsius == 1.0
    assert [name for name, _ in CALLS] == ["Plain", "Temperature"]  # one call per object


def test_setstate_runs_only_after_the_whole_record_is_read():
    data = bytearray(pickle.dumps([Plain(1, 2), Temperature(3.0), "x" * 40]))
    data[-3] ^= 0xFF  # corrupt the last value: the record is refused, no setstate ran
    CALLS.clear()
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(bytes(data), classes=CLASSES)
    assert CALLS == []


def test_setstate_errors_are_unpickling_errors():
    class Strict:
        def __setstate__(self, state):
            raise ValueError("no")

    Strict.__qualname__ = "Strict"
    globals()["Strict"] = Strict
    try:
        s = Strict()
        s.x = 1
        data = pickle.dumps(s)
        with pytest.raises(pickle.UnpicklingError) as info:
            pickle.loads(data, classes=[Strict])
        assert isinstance(info.value, ValueError)
    finally:
        del globals()["Strict"]


def test_subclasses_of_other_builtin_types_are_still_refused_by_this_format():
    class Day(datetime.date):
        pass

    with pytest.raises(pickle.PicklingError, match="built-in type 'date'"):
        pickle.dumps(Day(2024, 1, 31))


# The standard library's values.


def stdlib_values():
    ns = types.SimpleNamespace(a=1, b=[2])
    ud = collections.UserDict({"k": [1]})
    ud.label = "x"
    return [
        time.localtime(0),
        time.gmtime(10**9),
        os.stat(os.path.dirname(__file__)),
        ns,
        array.array("d", [1.5, float("inf")]),
        array.array("u", "héllo"),
        array.array("Q", [2**64 - 1]),
        ud,
        collections.UserList([1, "a"]),
        collections.UserString("text"),
    ]


def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, time.struct_time | os.stat_result):
        names = [n for n in dir(a) if n.startswith(("tm_", "st_"))]
        return tuple(a) == tuple(b) and all(getattr(a, n) == getattr(b, n) for n in names)
    if hasattr(a, "__dict__") and vars(a) != vars(b):
        return False
    return a == b


@pytest.mark.parametrize("value", stdlib_values(), ids=lambda v: type(v).__name__)
def test_stdlib_values_round_trip_like_pickle(value):
    back = pickle.loads(pickle.dumps(value))
    assert same(back, value)
    assert same(back, std_pickle.loads(std_pickle.dumps(value)))


def test_stdlib_values_shared():
    arr = array.array("i", [1])
    ns = types.SimpleNamespace(x=1)
    back = pickle.loads(pickle.dumps([arr, arr, ns, ns]))
    assert back[0] is back[1] and back[2] is back[3]


def test_a_namespace_that_contains_itself_cannot_be_written():
    ns = types.SimpleNamespace()
    ns.me = ns
    with pytest.raises(pickle.PicklingError):
        pickle.dumps(ns)


@pytest.mark.parametrize(
    ("kind", "args"),
    [
        (21, ((1, 2), "UTC", 0)),  # not 9 ints
        (21, ((1,) * 9, 3, 0)),  # tm_zone not a str
        (22, ((1,) * 10, {"__class__": 1})),
        (22, (("a",) * 10, {})),
        (23, ({"__dict__": 1},)),
        (23, ({1: 2},)),
        (24, ("i", 99, b"")),
        (24, ("i", 8, b"\x00")),
        (24, ("zz", 8, b"")),
        (25, ({"__class__": dict},)),
        (26, ("data",)),
    ],
)
def test_hostile_stdlib_records_are_refused(kind, args):
    from bytewright.pickle import _stdlib

    builder = _stdlib.BUILDERS[kind]
    with pytest.raises(pickle.UnpicklingError):
        builder(*args)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5).filter(lambda k: not k.startswith("__")),
        st.one_of(st.integers(), st.text(max_size=5), st.none()),
        max_size=5,
    ),
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=10),
)
def test_random_namespaces_arrays_and_user_dicts(attrs, ints):
    value = [types.SimpleNamespace(**attrs), array.array("l", ints), collections.UserDict(attrs)]
    back = pickle.loads(pickle.dumps(value))
    assert all(same(x, y) for x, y in zip(back, value, strict=True))


class Packed:
    """A `__getstate__` that pickles its payload with `dumps` itself: a call inside a call,
    which must find the outer call's kept buffers and class storage taken and leave them
    as the outer call expects."""

    def __init__(self, payload, inner=None):
        self.payload = payload
        self.inner = inner

    def __getstate__(self):
        return {"blob": pickle.dumps(self.payload), "inner": self.inner}

    def __setstate__(self, state):
        self.payload = pickle.loads(state["blob"], classes=NESTED_CLASSES)
        self.inner = state["inner"]


NESTED_CLASSES = [Packed, Plain]


@pytest.mark.parametrize("shared", [False, True])
def test_a_getstate_that_calls_dumps(shared):
    leaf = Packed(["x" * 40, 1, 2.5, None, Plain(1, "b")])
    middle = Packed({"k": [leaf, "v"], "big": b"z" * 70_000}, inner=leaf)
    value = [middle, middle, "tail"] if shared else [middle, "tail"]
    for _ in range(3):  # the kept buffers of each depth are reused on the next call
        data = pickle.dumps(value)
        assert data == pickle.dumps(value)
        back = pickle.loads(data, classes=NESTED_CLASSES)
        got = back[0]
        assert got.payload["k"][1] == "v" and got.payload["big"] == b"z" * 70_000
        assert got.payload["k"][0].payload[:4] == ["x" * 40, 1, 2.5, None]
        assert vars(got.payload["k"][0].payload[4]) == {"a": 1, "b": "b"}
        assert got.inner.payload[0] == "x" * 40
        assert (back[1] is got) == shared
        signed = pickle.dumps(value, hmac_key=b"k" * 16, deterministic=True)
        assert pickle.loads(signed, hmac_key=b"k" * 16, classes=NESTED_CLASSES)[-1] == "tail"


def _make_classes(n, tag):
    return [type(f"{tag}{i}", (Plain,), {"__module__": __name__}) for i in range(n)]


@pytest.mark.parametrize("inner_count", [1, 9, 300])
def test_nested_dumps_with_many_classes_keeps_storage_apart(inner_count):
    """The kept class storage is taken by the outer call; a nested call of few, many (past
    the list lookup) or very many classes (past the kept size) allocates its own, and both
    calls, then the next ones, write what they would alone."""
    inner = [cls(i, "x") for i, cls in enumerate(_make_classes(inner_count, "In"))]
    outer_classes = _make_classes(12, "Out")

    class Wrap:
        def __getstate__(self):
            return {"blob": pickle.dumps(inner)}

    value = [cls(i, "o") for i, cls in enumerate(outer_classes)]
    value[5:5] = [Wrap()]
    alone = pickle.dumps(inner)
    first = pickle.dumps(value)
    for _ in range(3):
        assert pickle.dumps(value) == first
        assert pickle.dumps(inner) == alone
    blob = pickle.loads(first, classes=[*outer_classes, Wrap])[5].__dict__["blob"]
    assert blob == alone
