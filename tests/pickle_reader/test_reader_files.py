"""load_pickle and PickleUnpickler read files like pickle.load and pickle.Unpickler: any
object with read and readline, exactly one pickle per call, the file left just after it."""

import io
import pickle
import socket
import threading

import pytest
from bytewright.pickle import (
    LimitError,
    Limits,
    PickleUnpickler,
    TruncatedError,
    UnpicklingError,
    load_pickle,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from reader_values import BUILTIN_VALUES, CLASS_VALUES, CLASSES


class ReadOnly:
    """Only read and readline, and reads that may return fewer bytes than asked."""

    def __init__(self, data, most=7):
        self._data = io.BytesIO(data)
        self._most = most
        self.calls = 0

    def read(self, n=-1):
        self.calls += 1
        return self._data.read(n if n < 0 else min(n, self._most))

    def readline(self):
        self.calls += 1
        return self._data.readline()

    def rest(self):
        return self._data.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


VALUES = [v for k, v in BUILTIN_VALUES.items() if not k.startswith("big") and v == v]


def stream_of(protocol, count=4):
    values = [{"n": i, "values": VALUES, "pad": "x" * (i * 70_000)} for i in range(count)]
    return values, b"".join(pickle.dumps(v, protocol) for v in values) + b"tail"


@pytest.mark.parametrize("protocol", range(6))
@pytest.mark.parametrize("kind", ["bytesio", "readonly", "buffered-pipe"])
def test_consecutive_pickles_and_the_file_left_after_each(protocol, kind):
    values, data = stream_of(protocol)
    if kind == "bytesio":
        f = io.BytesIO(data)
    elif kind == "readonly":
        f = ReadOnly(data)
    else:  # an unseekable buffered file, fed by another thread
        a, b = socket.socketpair()
        threading.Thread(target=lambda: (b.sendall(data), b.close()), daemon=True).start()
        f = a.makefile("rb")
    with f:
        for value in values:
            assert load_pickle(f) == pickle.loads(pickle.dumps(value, protocol))
        rest = f.rest() if kind == "readonly" else f.read()
    assert rest == b"tail"


def test_end_of_file_is_an_eof_error_like_pickle_load():
    f = io.BytesIO(pickle.dumps(1))
    assert load_pickle(f) == 1
    with pytest.raises(EOFError) as info:
        load_pickle(f)
    assert isinstance(info.value, TruncatedError)
    with pytest.raises(EOFError):
        pickle.load(io.BytesIO(b""))


@pytest.mark.parametrize("protocol", range(6))
def test_a_file_cut_short_raises_what_loads_pickle_raises(protocol):
    data = pickle.dumps({"k": list(range(50)), "s": "text"}, protocol)
    for end in range(1, len(data)):
        with pytest.raises(UnpicklingError) as from_file:
            load_pickle(ReadOnly(data[:end]))
        with pytest.raises(UnpicklingError) as from_bytes:
            pickle_bytes = data[:end]
            from bytewright.pickle import loads_pickle

            loads_pickle(pickle_bytes)
        assert type(from_file.value) is type(from_bytes.value)


def test_reads_exactly_what_the_opcodes_need():
    data = pickle.dumps(list(range(1000)), 4) + b"next"
    f = ReadOnly(data, most=1 << 30)
    assert load_pickle(f) == list(range(1000))
    assert f.calls == 5  # PROTO and its argument, FRAME and its length, the whole frame
    assert f.rest() == b"next"


def test_unreadable_input_and_limits():
    with pytest.raises(UnpicklingError, match="unknown pickle opcode"):
        load_pickle(io.BytesIO(b"\xff\xff"))
    big = pickle.dumps("x" * 10_000, 2)
    with pytest.raises(LimitError):
        load_pickle(ReadOnly(big), limits=Limits(max_bytes=1000))
    with pytest.raises(LimitError):
        load_pickle(io.BytesIO(big), limits=Limits(max_bytes=1000))
    huge = b"\x80\x04\x8e" + (1 << 60).to_bytes(8, "little")
    with pytest.raises(LimitError):
        load_pickle(ReadOnly(huge))


def test_pickle_unpickler_is_configured_once():
    values = list(CLASS_VALUES.values())
    buf = io.BytesIO()
    for v in values:
        pickle.dump(v, buf, 4)
    buf.seek(0)
    reader = PickleUnpickler(buf, classes=CLASSES)
    got = [reader.load() for _ in values]
    assert [type(v) for v in got] == [type(v) for v in values]
    with pytest.raises(EOFError):
        reader.load()
    with pytest.raises(TypeError):
        PickleUnpickler(object())
    with pytest.raises(UnpicklingError, match="classes="):
        PickleUnpickler(io.BytesIO(pickle.dumps(values[0]))).load()


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.recursive(
            st.none() | st.integers() | st.text() | st.binary() | st.floats(allow_nan=False),
            lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
            max_leaves=20,
        ),
        min_size=1,
        max_size=5,
    ),
    protocol=st.integers(0, 5),
    most=st.integers(1, 100),
)
def test_any_stream_of_pickles(values, protocol, most):
    data = b"".join(pickle.dumps(v, protocol) for v in values)
    f = ReadOnly(data, most)
    assert [load_pickle(f) for _ in values] == values
    assert f.rest() == b""


def one_pickler(values, protocol):
    """The stream one pickle.Pickler writes with a dump per value (its memo kept)."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol)
    for v in values:
        pickler.dump(v)
    return buf.getvalue()


def assert_same_sharing(got, expected):
    """The same values, with the same objects shared between and within them."""
    assert got == expected
    ids_got, ids_expected = {}, {}

    def walk(a, b):
        if isinstance(b, (list, dict, set, tuple, bytearray)):
            assert ids_got.setdefault(id(a), id(b)) == id(b)
            assert ids_expected.setdefault(id(b), id(a)) == id(a)
            if isinstance(b, dict):
                for k in b:
                    walk(a[k], b[k])
            elif not isinstance(b, (set, bytearray)):
                for x, y in zip(a, b, strict=True):
                    walk(x, y)

    walk(got, expected)


@pytest.mark.parametrize("protocol", range(6))
def test_the_memo_persists_between_loads_like_pickle_unpickler(protocol):
    shared, table = ["shared"], {"k": 1}
    values = [shared, {"again": shared, "t": table}, (shared, table), table, "s", "s"]
    data = one_pickler(values, protocol)
    theirs = pickle.Unpickler(io.BytesIO(data))
    expected = [theirs.load() for _ in values]
    reader = PickleUnpickler(ReadOnly(data))
    got = [reader.load() for _ in values]
    assert_same_sharing(got, expected)
    assert got[1]["again"] is got[0] and got[3] is got[1]["t"]
    assert reader.memo.keys() == theirs.memo.copy().keys()
    # With the memo cleared, the second pickle's references find nothing. (Protocols 4+
    # number their memo entries by count, which _pickle's clear() does not reset.)
    second, theirs = PickleUnpickler(io.BytesIO(data)), pickle.Unpickler(io.BytesIO(data))
    second.load(), theirs.load()
    second.memo.clear(), theirs.memo.clear()
    if protocol < 4:
        with pytest.raises(pickle.UnpicklingError, match=r"(?i)memo"):
            theirs.load()
        with pytest.raises(UnpicklingError, match="memo"):
            second.load()


def test_an_earlier_container_may_grow_but_never_be_called():
    # The second pickle appends to the first one's list (as pickle does) ...
    data = pickle.dumps(["a"], 2) + b"\x80\x02h\x00K\x01a."
    reader = PickleUnpickler(io.BytesIO(data))
    first = reader.load()
    assert reader.load() is first and first == ["a", 1]
    # ... but an opaque value from the memo is never called.
    reader = PickleUnpickler(io.BytesIO(b"\x80\x02h\x00)R."))
    reader.memo[0] = print
    with pytest.raises(UnpicklingError, match="REDUCE"):
        reader.load()


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.recursive(
            st.none() | st.integers() | st.text(max_size=5) | st.binary(max_size=5),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner),
            max_leaves=12,
        ),
        min_size=1,
        max_size=5,
    ),
    reuse=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=6),
    protocol=st.integers(0, 5),
)
def test_any_stream_from_one_pickler(values, reuse, protocol):
    # Later values refer to earlier ones: one pickler writes them as memo references.
    values = list(values)
    for to, fro in reuse:
        if fro < to < len(values):
            values[to] = [values[fro], values[to]]
    data = one_pickler(values, protocol)
    theirs = pickle.Unpickler(io.BytesIO(data))
    expected = [theirs.load() for _ in values]
    reader = PickleUnpickler(ReadOnly(data, 13))
    assert_same_sharing([reader.load() for _ in values], expected)
