"""`encoding=` and `errors=`: Python 2 str (STRING, BINSTRING, SHORT_BINSTRING) as pickle reads it.

Every stream is a hand-written opcode stream, the way Python 2's pickler writes a str at
protocols 0, 1 and 2, and every answer is cross-checked with `pickle.loads` given the same
keywords: the same value, or an error of the same family.
"""

import codecs
import datetime
import io
import pickle
import struct

import pytest
from bytewright.pickle import (
    PickleUnpickler,
    UnpicklingError,
    load_pickle,
    loads_pickle,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def python2_str(raw: bytes, proto: int) -> bytes:
    """The opcodes Python 2's pickler writes for the str `raw` at protocol `proto`."""
    if proto == 0:
        text = "".join(chr(b) if 32 <= b < 127 and b not in b"\\'" else f"\\x{b:02x}" for b in raw)
        return b"S'" + text.encode("ascii") + b"'\n"
    if len(raw) < 256:
        return b"U" + bytes([len(raw)]) + raw
    return b"T" + struct.pack("<i", len(raw)) + raw


def stream(raw: bytes, proto: int) -> bytes:
    head = b"\x80\x02" if proto == 2 else b""
    return head + python2_str(raw, proto) + b"."


def same_as_pickle(data: bytes, **kwds):
    """loads_pickle's answer, checked against pickle.loads with the same keywords."""
    try:
        expected = pickle.loads(data, **kwds)
    except Exception as exc:
        with pytest.raises(UnpicklingError) as info:
            loads_pickle(data, **kwds)
        family = next(
            (f for f in (EOFError, ValueError, TypeError, OverflowError) if isinstance(exc, f)),
            None,
        )
        if family is not None:
            assert isinstance(info.value, family), (exc, info.value)
        return info.value
    got = loads_pickle(data, **kwds)
    assert type(got) is type(expected)
    assert got == expected
    return got


RAW = [b"", b"abc", b"a\x00\xa0", b"\xff" * 3, bytes(range(256)), b"x" * 300, b"it's \\ here"]
ENCODINGS = [
    {},
    {"encoding": "bytes"},
    {"encoding": "latin1"},
    {"encoding": "koi8-r"},
    {"encoding": "utf-8"},
    {"encoding": "utf-8", "errors": "replace"},
    {"encoding": "utf-8", "errors": "surrogateescape"},
    {"encoding": "ASCII", "errors": "ignore"},
    {"encoding": "utf-16"},
    {"encoding": "cp1252"},
    {"encoding": "Latin-1"},
]


@pytest.mark.parametrize("kwds", ENCODINGS, ids=repr)
@pytest.mark.parametrize("proto", [0, 1, 2])
@pytest.mark.parametrize("raw", RAW, ids=repr)
def test_python2_str_as_pickle_reads_it(raw, proto, kwds):
    same_as_pickle(stream(raw, proto), **kwds)


def test_the_suite_cases():
    assert loads_pickle(b"S'a\\x00\\xa0'\n.", encoding="bytes") == b"a\x00\xa0"
    assert loads_pickle(b"U\x03a\x00\xa0.", encoding="bytes") == b"a\x00\xa0"
    assert loads_pickle(b"\x80\x03U\x00q\x00.", encoding="koi8-r") == ""
    assert loads_pickle(b"X\x02\x00\x00\x00\xcf\x80.", encoding="bytes") == "π"


def test_default_is_ascii_strict():
    with pytest.raises(ValueError):
        loads_pickle(b"U\x01\xa0.")
    assert loads_pickle(b"U\x01\xa0.", encoding="latin1") == "\xa0"
    assert loads_pickle(b"U\x01\xa0.", errors="ignore") == ""


@settings(max_examples=150, deadline=None)
@given(
    raw=st.binary(max_size=40),
    proto=st.sampled_from([0, 1, 2]),
    kwds=st.sampled_from(ENCODINGS),
)
def test_python2_str_any_bytes(raw, proto, kwds):
    same_as_pickle(stream(raw, proto), **kwds)


def test_inside_containers_and_memo():
    # A list of the same memoized str twice, and a dict keyed by a str (protocol 2).
    data = b"\x80\x02]q\x00(U\x02\xe9\xe8q\x01h\x01}q\x02U\x01\xa0K\x01se."
    for kwds in ENCODINGS:
        got = same_as_pickle(data, **kwds)
        if isinstance(got, list):
            assert got[0] is got[1]


def test_decoding_fails_before_any_effect():
    # A call waits for the stream to pass; the str after it cannot decode as UTF-8.
    data = b"\x80\x02c__builtin__\nset\n)R" + b"U\x01\xff" + b"\x86."
    same_as_pickle(data, encoding="utf-8")
    with pytest.raises(ValueError, match="encoding="):
        loads_pickle(data, encoding="utf-8")


def test_datetime_from_python2():
    # Python 2: pickle.dumps(datetime.datetime(2000, 1, 2, 3, 4, 5, 6), 2), date and time.
    state = b"\x07\xd0\x01\x02\x03\x04\x05\x00\x00\x06"
    dt = b"\x80\x02cdatetime\ndatetime\nq\x01U\n" + state + b"\x85R."
    d = b"\x80\x02cdatetime\ndate\nU\x04\x07\xd0\x01\x02\x85R."
    t = b"\x80\x02cdatetime\ntime\nU\x06\x03\x04\x05\x00\x00\x06\x85R."
    tz = b"\x80\x02cdatetime\ntime\nU\x06\x03\x04\x05\x00\x00\x06N\x86R."
    for data in (dt, d, t, tz):
        for kwds in ({"encoding": "latin1"}, {"encoding": "bytes"}, {}):
            same_as_pickle(data, **kwds)
    assert loads_pickle(dt, encoding="latin1") == datetime.datetime(2000, 1, 2, 3, 4, 5, 6)
    # A state that is ASCII reads under the default too, as in pickle.
    ascii_state = b"\x80\x02cdatetime\ndate\nU\x04\x07\x01\x01\x02\x85R."
    assert same_as_pickle(ascii_state) == datetime.date(1793, 1, 2)


def test_only_codecs_python_ships():
    def evil(name):
        if name == "evil_codec":
            raise AssertionError("a registered search function was asked")
        return None

    codecs.register(evil)
    try:
        with pytest.raises(LookupError, match="evil_codec"):
            loads_pickle(b"N.", encoding="evil_codec")
        with pytest.raises(LookupError, match="hex"):
            loads_pickle(b"N.", encoding="hex")
        with pytest.raises(LookupError, match="my_handler"):
            loads_pickle(b"N.", encoding="latin1", errors="my_handler")
        with pytest.raises(TypeError):
            loads_pickle(b"N.", encoding=b"latin1")
    finally:
        codecs.unregister(evil)


def test_load_pickle_and_unpickler_take_it():
    data = stream(b"\xe9", 1) + stream(b"\xe8", 2)
    f = io.BytesIO(data)
    assert load_pickle(f, encoding="latin1") == "é"
    assert load_pickle(f, encoding="bytes") == b"\xe8"
    reader = PickleUnpickler(io.BytesIO(data), encoding="bytes")
    assert (reader.load(), reader.load()) == (b"\xe9", b"\xe8")
    with pytest.raises(LookupError):
        PickleUnpickler(io.BytesIO(data), encoding="no-such-codec")
