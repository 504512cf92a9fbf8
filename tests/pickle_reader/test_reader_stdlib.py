"""The standard library's values that real pickles hold load from the builtin table.

Cross-checked with `pickle.loads` on what `pickle.dumps` writes at protocols 0-5, with
the Python 2 names protocols 0-2 write, and against hostile arguments.
"""

import array
import builtins
import collections
import os
import pickle
import random
import struct
import sys
import time
import types

import pytest
from bytewright.pickle import UnpicklingError, UnpicklingValueError, loads_pickle
from hypothesis import given, settings
from hypothesis import strategies as st
from reader_values import std_dumps

PROTOCOLS = range(6)


def values():
    ns = types.SimpleNamespace(a=1, b=[2, "x"], c=None)
    user_dict = collections.UserDict({"a": 1, "b": [2]})
    user_dict.label = "kept"
    return {
        "struct_time": time.localtime(86400 * 365),
        "struct_time_gm": time.gmtime(0),
        "stat_result": os.stat(os.path.dirname(__file__)),
        "namespace": ns,
        "namespace_empty": types.SimpleNamespace(),
        "array_i": array.array("i", [1, -2, 3]),
        "array_d": array.array("d", [1.5, -0.0, float("inf")]),
        "array_b": array.array("b", []),
        "array_Q": array.array("Q", [2**64 - 1]),
        "array_u": array.array("u", "héllo"),
        "user_dict": user_dict,
        "user_list": collections.UserList([1, [2], "three"]),
        "user_string": collections.UserString("text"),
        "types": [type(None), type(NotImplemented), type(...), int, type, object],
        "singletons": [None, NotImplemented, ..., True],
    }


def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple) and not isinstance(a, time.struct_time | os.stat_result):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, time.struct_time | os.stat_result):
        names = [n for n in dir(a) if n.startswith(("tm_", "st_"))]
        return tuple(a) == tuple(b) and all(getattr(a, n) == getattr(b, n) for n in names)
    if hasattr(a, "__dict__") and not isinstance(a, type) and vars(a) != vars(b):
        return False
    return a == b or (a != a and b != b)


CASES = [
    pytest.param(name, proto, id=f"{name}-p{proto}") for name in values() for proto in PROTOCOLS
]


@pytest.mark.parametrize(("name", "proto"), CASES)
def test_stdlib_values_as_pickle_loads_them(name, proto):
    value = values()[name]
    data = std_dumps(value, proto)
    got = loads_pickle(data)
    assert same(got, pickle.loads(data))
    assert same(got, value)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_shared_and_nested(proto):
    ns = types.SimpleNamespace()
    ns.me = ns
    items = collections.UserList()
    items.append(items)
    arr = array.array("h", [1, 2])
    value = [ns, items, arr, arr, collections.UserDict(k=ns)]
    data = std_dumps(value, proto)
    got = loads_pickle(data)
    assert got[0].me is got[0]
    assert got[1][0] is got[1]
    assert got[2] is got[3] and got[2] == arr
    assert got[4]["k"] is got[0]


@pytest.mark.parametrize(
    ("py2", "cls"),
    [
        (b"UserDict\nIterableUserDict", collections.UserDict),
        (b"UserDict\nUserDict", collections.UserDict),
        (b"UserList\nUserList", collections.UserList),
        (b"UserString\nUserString", collections.UserString),
    ],
)
@pytest.mark.parametrize("proto", [0, 1, 2])
def test_python2_names_of_the_user_collections(py2, cls, proto):
    data = b"c" + py2 + b"\n"
    assert loads_pickle(data + b".") is cls
    value = cls({"a": 1} if cls is collections.UserDict else "ab")
    written = std_dumps(value, proto)
    assert py2.split(b"\n")[0] in written  # protocols 0-2 write the Python 2 name
    assert same(loads_pickle(written), pickle.loads(written))


EXCEPTIONS = sorted(
    (
        v
        for k, v in vars(builtins).items()
        if isinstance(v, type) and issubclass(v, BaseException) and k[0] != "_"
    ),
    key=lambda t: t.__name__,
)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_every_builtin_exception_class_and_instance(proto):
    for cls in EXCEPTIONS:
        data = std_dumps(cls, proto)
        # protocols 0-2 name OSError's subclasses OSError, as pickle.loads reads them
        assert loads_pickle(data) is pickle.loads(data), cls
        try:
            if issubclass(cls, BaseExceptionGroup):
                error = cls("group", [ValueError(1)])
            elif cls is UnicodeDecodeError:
                error = cls("utf-8", b"\xff", 0, 1, "bad")
            elif cls is UnicodeEncodeError:
                error = cls("ascii", "é", 0, 1, "bad")
            elif cls is UnicodeTranslateError:
                error = cls("é", 0, 1, "bad")
            else:
                error = cls("message", 2)
        except TypeError:
            error = cls()
        data = std_dumps(error, proto)
        expected = pickle.loads(data)
        got = loads_pickle(data)
        assert type(got) is type(expected) and repr(got.args) == repr(expected.args), cls
        assert vars(got) == vars(expected)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_every_builtin_type_as_a_value(proto):
    kinds = [v for k, v in vars(builtins).items() if isinstance(v, type) and k[0] != "_"]
    kinds += [type(None), type(NotImplemented), type(...)]
    data = std_dumps(kinds, proto)
    assert loads_pickle(data) == pickle.loads(data)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_the_table_classes_as_values(proto):
    kinds = [
        time.struct_time,
        os.stat_result,
        types.SimpleNamespace,
        array.array,
        collections.UserDict,
        collections.UserList,
        collections.UserString,
    ]
    data = std_dumps(kinds, proto)
    assert loads_pickle(data) == kinds


# Hostile arguments: the checker bounds the kinds, the C constructors check the values.

P2 = b"\x80\x02"


def u(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def b(raw: bytes) -> bytes:
    return b"C" + bytes([len(raw)]) + raw


RECON = b"carray\n_array_reconstructor\n(carray\narray\n"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (u("i") + b"K\x07" + b(b"\x00\x00\x00"), UnpicklingValueError),  # not a whole item
        (u("z") + b"K\x07" + b(b""), UnpicklingValueError),  # no such typecode
        (u("ii") + b"K\x07" + b(b""), UnpicklingError),  # not one character
        (u("i") + b"K\x63" + b(b""), UnpicklingValueError),  # no such machine format
        (u("i") + b"J\xff\xff\xff\xff" + b(b""), UnpicklingValueError),
        (u("u") + b"K\x12" + b(b"\x00"), UnpicklingValueError),  # half a UTF-16 unit
    ],
)
def test_array_reconstructor_with_hostile_arguments(args, error):
    payload = P2 + RECON + args + b"tR."
    with pytest.raises(error) as info:
        loads_pickle(payload)
    assert info.value.offset == len(payload) - 2  # the REDUCE


@pytest.mark.parametrize(
    "payload",
    [
        RECON[: -len(b"carray\narray\n")]
        + b"ccollections\nOrderedDict\n"
        + u("i")
        + b"K\x07"
        + b(b"")
        + b"tR.",
        b"carray\n_array_reconstructor\n(" + u("i") + b"K\x07" + b(b"") + b"tR.",
        b"carray\narray\n(" + u("i") + b"K\x01tR.",
        b"ctime\nstruct_time\n(K\x01tR.",
        b"ctypes\nSimpleNamespace\n(}tR.",
        b"cos\nstat_result\n(]tR.",
        b"ccollections\nUserDict\n(}tR.",
        P2 + b"ctypes\nSimpleNamespace\n)R]b.",
        P2 + b"ccollections\nUserList\n)\x81}" + u("__class__") + b"K\x01sb.",
        b"c__builtin__\ntype\n(K\x01K\x02tR.",
    ],
)
def test_table_calls_with_the_wrong_kinds_are_refused(payload):
    with pytest.raises(UnpicklingError) as info:
        loads_pickle(payload)
    assert info.value.offset is not None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3), st.integers(-5, 30), st.binary(max_size=40))
def test_array_reconstructor_never_crashes(typecode, mformat, raw):
    payload = P2 + RECON + u(typecode) + b"J" + struct.pack("<i", mformat) + b(raw) + b"tR."
    try:
        expected = pickle.loads(payload)
    except Exception as exc:
        with pytest.raises(UnpicklingError) as info:
            loads_pickle(payload)
        assert isinstance(info.value, type(exc)) or type(exc) is UnicodeDecodeError
    else:
        got = loads_pickle(payload)
        assert got == expected or (got != got and expected != expected) or str(got) == str(expected)


def test_struct_time_and_stat_result_with_hostile_shapes():
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randrange(0, 25)
        items = b"".join(b"K" + bytes([rng.randrange(256)]) for _ in range(n))
        extra = b"}" if rng.random() < 0.5 else b""
        for cls in (b"time\nstruct_time\n", b"os\nstat_result\n"):
            payload = (
                b"\x80\x02c"
                + cls
                + b"("
                + items
                + b"t"
                + extra
                + (b"\x86R." if extra else b"\x85R.")
            )
            try:
                expected = pickle.loads(payload)
            except Exception:
                with pytest.raises(UnpicklingError):
                    loads_pickle(payload)
            else:
                assert same(loads_pickle(payload), expected)


def test_nothing_is_imported():
    before = set(sys.modules)
    for value in values().values():
        loads_pickle(std_dumps(value, 2))
    assert set(sys.modules) == before
