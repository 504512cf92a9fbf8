"""Builtin types called with plain values (REDUCE, NEWOBJ, NEWOBJ_EX), struct sequences,
and the attribute names BUILD interns.

Each stream is cross-checked with `pickle.loads`: the same value (and type), or an error
of the same family (`TypeError`, `ValueError`, ...). Arguments whose type could run code
(an instance of a registered class, say) are never passed to a builtin.
"""

import os
import pickle
import resource
import struct
import sys
import time

import pytest
from bytewright.pickle import LimitError, Limits, UnpicklingError, loads_pickle
from hypothesis import given, settings
from hypothesis import strategies as st

FAMILIES = (EOFError, ValueError, TypeError, OverflowError)
BUILTINS = [
    "int",
    "float",
    "str",
    "bytes",
    "bool",
    "complex",
    "bytearray",
    "tuple",
    "list",
    "dict",
    "set",
    "frozenset",
]


def same_as_pickle(data: bytes, **kwds):
    try:
        expected = pickle.loads(data)
    except Exception as exc:
        with pytest.raises(UnpicklingError) as info:
            loads_pickle(data, **kwds)
        family = next((f for f in FAMILIES if isinstance(exc, f)), None)
        if family is not None:
            assert isinstance(info.value, family), (data, exc, info.value)
        return info.value
    got = loads_pickle(data, **kwds)
    assert type(got) is type(expected), data
    assert got == expected or (got != got and expected != expected), data
    return got


def atom(value) -> bytes:
    """Opcodes (protocol 2+, no memo) for a plain value."""
    if value is None:
        return b"N"
    if value is True or value is False:
        return b"\x88" if value else b"\x89"
    if type(value) is int:
        if -(2**31) <= value < 2**31:
            return b"J" + struct.pack("<i", value)
        raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        return b"\x8a" + bytes([len(raw)]) + raw
    if type(value) is float:
        return b"G" + struct.pack(">d", value)
    if type(value) is str:
        raw = value.encode("utf-8", "surrogatepass")
        return b"X" + struct.pack("<I", len(raw)) + raw
    if type(value) is bytes:
        return b"C" + bytes([len(value)]) + value
    if type(value) is tuple:
        return b"(" + b"".join(atom(v) for v in value) + b"t"
    if type(value) is list:
        return b"](" + b"".join(atom(v) for v in value) + b"e"
    if type(value) is dict:
        return b"}(" + b"".join(atom(k) + atom(v) for k, v in value.items()) + b"u"
    raise TypeError(value)


def reduce_stream(name: str, args: tuple) -> bytes:
    return b"\x80\x02c__builtin__\n" + name.encode() + b"\n" + atom(args) + b"R."


def newobj_stream(name: str, args: tuple, ex: bool = False) -> bytes:
    tail = b"}\x92." if ex else b"\x81."
    return b"\x80\x04cbuiltins\n" + name.encode() + b"\n" + atom(args) + tail


def test_the_suite_cases():
    assert loads_pickle(b"cbuiltins\nint\n)R.") == 0
    assert loads_pickle(b"cbuiltins\nint\n)\x81.") == 0
    assert loads_pickle(b"cbuiltins\nint\n)}\x92.") == 0
    assert loads_pickle(b"cbuiltins\nstr\n(Vreduce_A\ntR.") == "reduce_A"
    with pytest.raises(TypeError):
        loads_pickle(b"N)R.")
    with pytest.raises(TypeError):
        loads_pickle(b"cbuiltins\nint\nNR.")


CASES = [
    ("int", ()),
    ("int", ("5",)),
    ("int", (" -12 ",)),
    ("int", ("ff", 16)),
    ("int", ("1_000",)),
    ("int", (b"42",)),
    ("int", (2.75,)),
    ("int", (True,)),
    ("int", ("x",)),
    ("int", (None,)),
    ("int", ("5", 1)),
    ("int", (5, 10)),
    ("int", ([1],)),
    ("float", ("1e500",)),
    ("float", ("nan",)),
    ("float", (3,)),
    ("float", ("x",)),
    ("float", (b"2.5",)),
    ("str", ()),
    ("str", ("text",)),
    ("str", (12,)),
    ("str", (None,)),
    ("bytes", ()),
    ("bytes", (b"ab",)),
    ("bytes", ([1, 2, 255],)),
    ("bytes", ([256],)),
    ("bytes", ("text",)),
    ("bytes", (3,)),
    ("bytes", (-1,)),
    ("bool", ()),
    ("bool", ([],)),
    ("bool", ("x",)),
    ("complex", ("1+2j",)),
    ("complex", (1, 2.5)),
    ("complex", ("1+2j", 1)),
    ("bytearray", (b"xy",)),
    ("bytearray", ([1, 2],)),
    ("bytearray", (4,)),
    ("tuple", ([1, "a"],)),
    ("tuple", ("ab",)),
    ("tuple", (5,)),
    ("list", ((1, 2),)),
    ("list", ({"a": 1},)),
    ("list", ("xy",)),
    ("dict", ([(1, 2), ("a", None)],)),
    ("dict", ([[1, 2]],)),
    ("dict", ([1],)),
    ("dict", ({"a": 1},)),
    ("set", ((1, 1, 2),)),
    ("set", ([[1]],)),
    ("frozenset", ("aab",)),
    ("frozenset", ([(1, 2)],)),
    ("int", (1, 2, 3)),
    ("str", ("a", "b", "c", "d")),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=repr)
def test_reduce_of_builtin_types(name, args):
    same_as_pickle(reduce_stream(name, args))


@pytest.mark.parametrize(("name", "args"), CASES, ids=repr)
def test_newobj_of_builtin_types(name, args):
    same_as_pickle(newobj_stream(name, args))
    same_as_pickle(newobj_stream(name, args, ex=True))


plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-300, 300)
    | st.sampled_from([2**63, -(2**70), 2**64 + 1])
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(BUILTINS), args=st.lists(plain, max_size=2).map(tuple))
def test_builtin_calls_any_plain_arguments(name, args):
    streams = [reduce_stream(name, args)]
    if name != "bytearray":  # bytearray.__new__ ignores its arguments
        streams.append(newobj_stream(name, args))
    refused = (name == "str" and any(type(a) in (list, tuple, dict) for a in args)) or (
        name in ("str", "bytes", "bytearray") and len(args) >= 2
    )
    for data in streams:
        if not refused:
            same_as_pickle(data)
            continue
        # str() of a container, and an encoding (a codec by name), are refused; where
        # the types alone make pickle's TypeError, that TypeError.
        with pytest.raises(UnpicklingError) as info:
            loads_pickle(data)
        if isinstance(info.value, TypeError):
            with pytest.raises(TypeError):
                pickle.loads(data)
    if name == "bytearray":
        same_as_pickle(newobj_stream(name, args))


class Sneaky:
    """Its instances would run code when a builtin converts or hashes them."""

    calls: list[str] = []

    def __index__(self):
        Sneaky.calls.append("__index__")
        return 3

    def __str__(self):
        Sneaky.calls.append("__str__")
        return "sneaky"

    def __hash__(self):
        Sneaky.calls.append("__hash__")
        return 1

    def __iter__(self):
        Sneaky.calls.append("__iter__")
        return iter([(1, 2)])


def instance() -> bytes:
    """Protocol 2 opcodes for a new Sneaky instance (no memo)."""
    return f"c{Sneaky.__module__}\nSneaky\n".encode() + b")\x81"


@pytest.mark.parametrize("name", BUILTINS)
def test_registered_instances_are_never_arguments(name):
    # A registered class's instance, alone, in a tuple, or in a list.
    call = b"\x80\x02c__builtin__\n" + name.encode() + b"\n"
    streams = [
        call + instance() + b"\x85R.",
        call + instance() + b"\x85\x85R.",
        call + instance() + b"\x85\x81.",
    ]
    if name not in ("set", "frozenset"):
        # set([...]) and frozenset([...]) hash their items, as building a set does.
        streams.append(call + b"]" + instance() + b"a\x85R.")
    Sneaky.calls.clear()
    for data in streams:
        with pytest.raises(UnpicklingError, match=f"builtins.{name}"):
            loads_pickle(data, classes=[Sneaky])
    assert Sneaky.calls == []


def test_containers_after_a_registered_class_are_not_arguments():
    # The list is built before the class is named, but the stream could have put an
    # instance in it through the memo: after any non-builtin global, only atoms pass.
    data = b"\x80\x02]q\x00K\x01a" + instance() + b"0c__builtin__\ntuple\nh\x00\x85R."
    with pytest.raises(UnpicklingError, match=r"builtins\.tuple"):
        loads_pickle(data, classes=[Sneaky])
    # Atoms still do.
    data = b"\x80\x02" + instance() + b"0c__builtin__\nint\nU\x0212\x85R."
    assert loads_pickle(data, classes=[Sneaky]) == 12


def test_bytes_of_a_count_is_limited():
    data = reduce_stream("bytes", (10**6,))
    with pytest.raises(LimitError, match="max_bytes_len"):
        loads_pickle(data, limits=Limits(max_bytes_len=1000))
    assert loads_pickle(reduce_stream("bytes", (5,))) == bytes(5)
    with pytest.raises(OverflowError):
        loads_pickle(reduce_stream("bytes", (2**80,)))
    with pytest.raises(LimitError):
        loads_pickle(newobj_stream("bytes", (10**6,)), limits=Limits(max_bytes_len=1000))
    # bytearray.__new__ makes an empty one, whatever the count.
    assert loads_pickle(newobj_stream("bytearray", (10**12,))) == bytearray()


def test_str_with_an_encoding_or_of_a_container_is_refused():
    data = reduce_stream("str", (b"x", "utf-8"))
    assert pickle.loads(data) == "x"
    with pytest.raises(UnpicklingError, match=r"builtins\.str"):
        loads_pickle(data)
    # Printing a container prints a shared item at each reference: 2**60 of them here.
    nested = b"\x80\x02]q\x00K\x01a" + b"".join(
        b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86q" + bytes([i + 1]) + b"0" for i in range(60)
    )
    data = nested + b"c__builtin__\nstr\nh\x3c\x85R."
    with pytest.raises(UnpicklingError, match=r"builtins\.str"):
        loads_pickle(data)


STRUCT_SEQUENCES = [
    time.localtime(),
    os.stat(os.curdir),
    os.statvfs(os.curdir),
    os.terminal_size((80, 24)),
    os.times(),
    os.uname(),
    resource.getrusage(resource.RUSAGE_SELF),
]
if sys.platform != "win32":
    import grp
    import pwd

    STRUCT_SEQUENCES += [pwd.getpwuid(os.getuid()), grp.getgrgid(os.getgid())]


@pytest.mark.parametrize("value", STRUCT_SEQUENCES, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("proto", range(6))
def test_struct_sequences(value, proto):
    data = pickle.dumps(value, proto)
    got = same_as_pickle(data)
    assert type(got) is type(value)
    assert tuple(got) == tuple(value)
    expected = pickle.loads(data)
    for name in dir(value):
        if not name.startswith("_") and not callable(getattr(value, name)):
            assert getattr(got, name) == getattr(expected, name), name


class Plain:
    pass


def test_build_interns_attribute_names():
    x = Plain()
    x.foo, x.bar = 42, "hello"
    setattr(x, "".join(["dyn", "amic"]), 1)  # not interned when it is made
    for proto in range(6):
        data = pickle.dumps(x, proto)
        y = loads_pickle(data, classes=[Plain])
        z = pickle.loads(data)
        assert vars(y) == vars(x)
        for key in vars(y):
            assert key is sys.intern(key)
        assert [k is sys.intern(k) for k in vars(z)] == [True] * 3


def test_interning_keeps_sharing():
    # The attribute name "name" is also the attribute's value (the same memoized str).
    x = Plain()
    key = "".join(["na", "me"])
    x.__dict__[key] = key
    for proto in range(2, 6):
        data = pickle.dumps(x, proto)
        y, z = loads_pickle(data, classes=[Plain]), pickle.loads(data)
        (yk, yv), (zk, zv) = next(iter(vars(y).items())), next(iter(vars(z).items()))
        assert (yk is sys.intern("name"), yk is yv) == (zk is sys.intern("name"), zk is zv)
        assert yv == "name"


def test_many_instances_share_interned_names():
    items = [Plain() for _ in range(50)]
    for i, item in enumerate(items):
        item.alpha, item.beta = i, str(i)
    got = loads_pickle(pickle.dumps(items, 5), classes=[Plain])
    names = {id(k) for item in got for k in vars(item)}
    assert names == {id(sys.intern("alpha")), id(sys.intern("beta"))}
