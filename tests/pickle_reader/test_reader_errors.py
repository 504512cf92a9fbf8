"""loads_pickle raises what pickle.loads raises: where pickle raises EOFError, ValueError,
TypeError or OverflowError, an UnpicklingError subclass that is also that class, with the
byte offset as an attribute. Cross-checked against pickle.loads itself (restricted to the
globals the reader allows) on hand-picked, truncated and mutated streams."""

import io
import pickle
import pickletools
import re
import warnings

import pytest
from bytewright.pickle import (
    LimitError,
    TruncatedError,
    UnpicklingError,
    UnpicklingOverflowError,
    UnpicklingTypeError,
    UnpicklingValueError,
    loads_pickle,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reader_values import BUILTIN_VALUES, CLASS_VALUES, CLASSES

PICKLE_CLASSES = (EOFError, ValueError, TypeError, OverflowError)
ALLOWED_MODULES = {
    "builtins",
    "__builtin__",
    "copyreg",
    "copy_reg",
    "_codecs",
    "datetime",
    "zoneinfo",
    "decimal",
    "fractions",
    "uuid",
    "pathlib",
    "ipaddress",
    "collections",
    "exceptions",
}
SAFE_BUILTINS = {
    "list",
    "dict",
    "set",
    "frozenset",
    "int",
    "float",
    "str",
    "bytes",
    "tuple",
    "bool",
    "complex",
    "bytearray",
    "object",
    "range",
    "slice",
    "Ellipsis",
    "NotImplemented",
}
REGISTERED = {(c.__module__, c.__qualname__) for c in CLASSES}


class Restricted(pickle.Unpickler):
    """pickle's own unpickler, limited to harmless globals: the oracle."""

    def find_class(self, module, name):
        if module in ("builtins", "__builtin__") and name not in SAFE_BUILTINS:
            raise pickle.UnpicklingError(f"refused {module}.{name}")
        if module not in ALLOWED_MODULES and (module, name) not in REGISTERED:
            raise pickle.UnpicklingError(f"refused {module}.{name}")
        if module == "_codecs" and name != "encode":
            raise pickle.UnpicklingError(f"refused {module}.{name}")
        if module in ("copyreg", "copy_reg") and name != "_reconstructor":
            raise pickle.UnpicklingError(f"refused {module}.{name}")
        if module == "collections" and name not in ("OrderedDict", "Counter", "defaultdict"):
            if name != "deque":
                raise pickle.UnpicklingError(f"refused {module}.{name}")
        return super().find_class(module, name)


def huge_bytearray(data):
    """True when the stream holds a BYTEARRAY8 of more than 1 GiB that it does not have.

    pickle allocates such a bytearray before reading it, and on CPython 3.11 a failed
    allocation in PyByteArray_FromStringAndSize frees the half-made object before setting
    its export count, which may print "SystemError: deallocated bytearray object has
    exported buffers" (plain pickle.loads does it too). Its outcome is a MemoryError,
    which the comparison skips anyway, so pickle is not asked.
    """
    if pickle.BYTEARRAY8 not in data:
        return False
    try:
        for _ in pickletools.genops(data):
            pass
    except ValueError as exc:
        found = re.match(r"expected (\d+) bytes in a bytearray8", str(exc))
        return found is not None and int(found[1]) > 1 << 30
    return False


def huge_memo(data):
    """True when the stream puts into the memo at an index past 2**24.

    pickle keeps its memo as an array as long as the largest index: a byte flip that makes
    a LONG_BINPUT index of 1.5 billion makes it allocate and clear 12 GB (2**24 is 128 MB).
    Such a stream is not asked of pickle (our reader still reads it: its memo is bounded by
    the stream).
    """
    with warnings.catch_warnings():  # pickletools warns on the escapes of mangled text
        warnings.simplefilter("ignore")
        try:
            for op, arg, _ in pickletools.genops(data):
                if op.name in ("PUT", "BINPUT", "LONG_BINPUT") and int(arg) > 1 << 24:
                    return True
        except Exception:  # the stream is malformed further on: what came before counts
            pass
    return False


def oracle(data):
    """pickle's outcome: ('ok', value) or ('error', exception)."""
    if huge_bytearray(data) or huge_memo(data):
        return "skip", None
    try:
        return "ok", Restricted(io.BytesIO(data)).load()
    except MemoryError:
        return "skip", None
    except Exception as exc:  # the oracle's own failures are what is compared
        return "error", exc


def ours(data):
    try:
        return "ok", loads_pickle(data, classes=CLASSES)
    except UnpicklingError as exc:
        return "error", exc


def prefix(data, end):
    """The stream as pickle reads it up to byte `end`, then ending there.

    A FRAME only tells the unpickler how many bytes to read at once: opcodes are read from
    the frame exactly as from the stream. But pickle reads a whole frame before running
    its first opcode, so a plain cut inside a frame fails at the FRAME itself. The frame
    that holds `end` is shortened to end there instead, so pickle runs every opcode before
    `end`, as on the whole stream.
    """
    cut = bytearray(data[:end])
    try:
        for op, arg, pos in pickletools.genops(data):
            if pos >= end:
                break
            if op.name == "FRAME" and pos + 9 <= end < pos + 9 + arg:
                cut[pos + 1 : pos + 9] = (end - pos - 9).to_bytes(8, "little")
    except ValueError:  # the rest cannot be read (a fault of its own)
        pass
    return bytes(cut)


def assert_compatible(data):
    """Where pickle raises one of its non-UnpicklingError classes, so do we (as a subclass
    of UnpicklingError too); we never raise anything but UnpicklingError."""
    theirs, their_value = oracle(data)
    mine, my_value = ours(data)
    if theirs != "error" or mine != "error":
        return
    assert isinstance(my_value, UnpicklingError)
    if isinstance(my_value, LimitError) or isinstance(their_value, pickle.UnpicklingError):
        return
    expected = next((c for c in PICKLE_CLASSES if isinstance(their_value, c)), None)
    if expected is None or "not allowed" in str(my_value):
        return
    if not isinstance(my_value, expected) and my_value.offset is not None:
        # Two faults: pickle fails in a constructor call, which the reader runs only
        # after checking the whole stream, so it reports a later fault first.
        before, early = oracle(prefix(data, my_value.offset))
        if before == "error" and type(early) is type(their_value):
            return
    assert isinstance(my_value, expected), (data, their_value, my_value)


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        (b"", TruncatedError),
        (b"N", TruncatedError),
        (b"(", TruncatedError),
        (b"\x80\x02", TruncatedError),
        (b"\x80\x06N.", UnpicklingValueError),
        (b"I09\n.", UnpicklingValueError),
        (b"Ix\n.", UnpicklingValueError),
        (b"LxL\n.", UnpicklingValueError),
        (b"L1LL\n.", UnpicklingValueError),
        (b"F 1.5\n.", UnpicklingValueError),
        (b"F1_0\n.", UnpicklingValueError),
        (b"F1e500\n.", UnpicklingOverflowError),
        (b"]p-1\n.", UnpicklingValueError),
        (b"]p1x\n.", UnpicklingValueError),
        (b"]p99999999999999999999999\n.", UnpicklingOverflowError),
        (b"gx\n.", UnpicklingValueError),
        (b"N)R.", UnpicklingTypeError),
        (b"K\x01)R.", UnpicklingTypeError),
        (b"cbuiltins\nset\nK\x01R.", UnpicklingTypeError),
        (b"(]Nd.", UnpicklingTypeError),
        (b"\x8f(]\x90.", UnpicklingTypeError),
        (b"(]\x91.", UnpicklingTypeError),
        (b"}(]Nu.", UnpicklingTypeError),
        (b"X\x02\x00\x00\x00\xff\xfe.", UnpicklingValueError),
        (b"\x82\x01.", UnpicklingValueError),
    ],
)
def test_error_classes_match_pickle(data, cls):
    with pytest.raises(Exception) as theirs:
        pickle.loads(data)
    with pytest.raises(cls) as info:
        loads_pickle(data)
    expected = next(
        c for c in (*PICKLE_CLASSES, pickle.UnpicklingError) if issubclass(theirs.type, c)
    )
    assert isinstance(info.value, expected)
    assert isinstance(info.value, UnpicklingError)
    assert isinstance(info.value.offset, int)


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"I 1\n.", True),
        (b"I-0\n.", False),
        (b"I\x001\n.", False),
        (b"I0x10\n.", 16),
        (b"I1_0\n.", 10),
        (b"I010\n.", 8),
        (b"I0b11\n.", 3),
        (b"I1 \n.", 1),
        (b"I1\x00x\n.", 1),
        (b"I 0x1_0\n.", 16),
        (b"I99999999999999999999\n.", 99999999999999999999),
        (b"I-0x8000000000000000\n.", -(2**63)),
        (b"I0x8000000000000000\n.", 2**63),
        (b"L0x10L\n.", 16),
        (b"L 1 L\n.", 1),
        (b"L-1_000_000_000_000_000_000_000L\n.", -(10**21)),
        (b"F1.5\x00x\n.", 1.5),
        (b"F-Infinity\n.", float("-inf")),
        (b"F1e-500\n.", 0.0),
        (b"F+.5\n.", 0.5),
        (b"F5.\n.", 5.0),
        (b"]p 1_0\n0g10\n.", []),
        (b"NN.", None),
        (b"(N.", None),
        (b"K\x01K\x02(K\x03.", 3),
    ],
)
def test_text_opcodes_and_stop_as_pickle(data, value):
    assert pickle.loads(data) == value
    got = loads_pickle(data)
    assert got == value and type(got) is type(value)


def test_messages_name_the_opcode_and_offset():
    with pytest.raises(UnpicklingValueError) as info:
        loads_pickle(b"\x80\x02]I09\n.")
    assert info.value.offset == 3
    assert "INT" in str(info.value) and "at byte 3" in str(info.value)
    with pytest.raises(TruncatedError) as info:
        loads_pickle(b"\x80\x02]")
    assert info.value.offset == 3
    with pytest.raises(UnpicklingTypeError) as info:
        loads_pickle(b"\x80\x02K\x01)R.")
    assert "REDUCE" in str(info.value) and info.value.offset == 5


def test_except_clauses_written_for_pickle_still_work():
    for data in (b"", pickle.dumps([1, 2])[:2]):
        try:
            loads_pickle(data)
        except EOFError:
            pass
    try:
        loads_pickle(b"\x80\x09N.")
    except ValueError as exc:
        assert "unsupported pickle protocol" in str(exc)


def payloads():
    for proto in range(6):
        values = [v for k, v in BUILTIN_VALUES.items() if not k.startswith("big")]
        classes = [v for v in CLASS_VALUES.values() if proto >= 2 or not hasattr(v, "__slots__")]
        yield pickle.dumps({"b": values, "c": classes, "s": [[1, 2]] * 3}, proto)
    yield pickle.dumps([1, -1, 2**40, 1.5, "s", None, True, {"k": ()}], 0)


PAYLOADS = list(payloads())


@pytest.mark.parametrize("data", PAYLOADS, ids=lambda d: f"p{d[1] if d[0] == 0x80 else 0}")
def test_every_truncation_matches_pickle(data):
    for end in range(len(data)):
        assert_compatible(data[:end])


@pytest.mark.parametrize("data", PAYLOADS, ids=lambda d: f"p{d[1] if d[0] == 0x80 else 0}")
def test_every_byte_flip_matches_pickle(data):
    for i in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            mutated = bytearray(data)
            mutated[i] ^= flip
            assert_compatible(bytes(mutated))


TEXT_LINES = st.text(alphabet="0123456789+-_ xXoObBeE.LlinfaINFAN\x00\t", max_size=12)
# Quoted Python 2 str literals: quotes, C escapes (octal, hex, unknown), non-ASCII bytes.
STRING_LINES = st.text(alphabet="'\"\\abfnrtvx0134789AFq \x00\xe9", max_size=12)


def assert_same_outcome(data):
    """pickle.loads and loads_pickle agree: the same value, or both fail compatibly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pickle's invalid escapes
        theirs, their_value = oracle(data)
    mine, my_value = ours(data)
    if theirs == "skip":  # pickle was not asked (see `oracle`)
        return
    if theirs == "ok":
        assert mine == "ok", (data, their_value, my_value)
        assert my_value == their_value or (my_value != my_value and their_value != their_value)
        assert type(my_value) is type(their_value)
    else:
        assert mine == "error", (data, their_value, my_value)
        assert_compatible(data)


@settings(max_examples=2000, deadline=None)
@given(op=st.sampled_from("IFLpg"), text=TEXT_LINES)
def test_text_arguments_parse_as_pickle(op, text):
    assert_same_outcome((b"]" if op in "pg" else b"") + op.encode() + text.encode() + b"\n.")


@settings(max_examples=2000, deadline=None)
@given(text=STRING_LINES)
def test_string_opcode_parses_as_pickle(text):
    assert_same_outcome(b"S" + text.encode("latin-1") + b"\n.")


@settings(max_examples=500, deadline=None)
@given(raw=st.binary(min_size=8, max_size=8))
def test_binfloat_reads_as_pickle(raw):
    assert_same_outcome(b"G" + raw + b".")


def test_errors_found_while_building_carry_the_offset():
    # A bad date state passes the check (it is bytes); date() rejects it once called.
    data = b"\x80\x02cdatetime\ndate\nC\x04\x07\xe8\x0d\x01\x85R."
    with pytest.raises(TypeError):
        pickle.loads(data)
    with pytest.raises(UnpicklingTypeError) as info:
        loads_pickle(data)
    assert info.value.offset == data.index(b"R.")
    assert f"(at byte {info.value.offset})" in str(info.value)


@settings(max_examples=300, deadline=None)
@given(
    which=st.integers(0, len(PAYLOADS) - 1),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=3)), max_size=4),
)
@example(which=1, edits=[(327, b"o")])  # OBJ on a str: pickle's TypeError
def test_mutated_streams_match_pickle(which, edits):
    data = bytearray(PAYLOADS[which])
    for at, chunk in edits:
        at %= len(data) + 1
        data[at : at + len(chunk)] = chunk
    assert_compatible(bytes(data))
