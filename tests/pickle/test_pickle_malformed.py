"""Bad input only ever raises UnpicklingError (or a subclass): no crash, hang or other type."""

import collections
import dataclasses
import datetime as dt
import decimal
import enum
import pickle as std_pickle
import uuid

import pytest
from bytewright import pickle
from records import record


@dataclasses.dataclass
class Item:
    name: str
    tags: list


class Kind(enum.Enum):
    A = 1


def rich_value():
    shared = [1, "shared"]
    cyclic: list = []
    t = (cyclic, 2)
    cyclic.append(t)
    return {
        "ints": [0, 63, 64, 255, -1, -300, 70_000, 2**40, -(2**70), 10**30],
        "floats": [0.5, 0.1, -0.0, float("inf")],
        "text": ["", "short", "a longer string of more than thirty-one bytes", "\ud800x"],
        "bin": [b"raw", bytearray(b"ba")],
        "shared": (shared, shared),
        "cycle": cyclic,
        "sets": [{1, 2}, frozenset({"x"})],
        "misc": [None, True, ..., 1 + 2j, range(1, 9, 2), slice(1, 2)],
        "std": [
            dt.datetime(2020, 5, 17, 1, 2, 3, tzinfo=dt.UTC),
            decimal.Decimal("-1.5"),
            uuid.UUID(int=5),
        ],
        "coll": [
            collections.OrderedDict(a=1),
            collections.Counter("aab"),
            collections.defaultdict(list, {1: [2]}),
            collections.deque([1], maxlen=3),
        ],
        "objs": [Item("a", ["x"]), Item("b", []), Kind.A],
    }


CLASSES = [Item, Kind]


def only_unpickling_errors(data: bytes, **kw) -> None:
    try:
        pickle.loads(data, classes=CLASSES, **kw)
    except pickle.UnpicklingError:
        pass


@pytest.fixture(scope="module")
def rich() -> bytes:
    data = pickle.dumps(rich_value())
    assert len(data) > 300
    return data


def test_rich_payload_is_valid(rich):
    back = pickle.loads(rich, classes=CLASSES)
    assert back["objs"][0] == Item("a", ["x"])


def test_every_truncation(rich):
    for cut in range(len(rich)):
        with pytest.raises(pickle.UnpicklingError):
            pickle.loads(rich[:cut], classes=CLASSES)


@pytest.mark.parametrize("mask", [0x01, 0x02, 0x10, 0x80, 0xFF])
def test_every_single_byte_flip(rich, mask):
    for i in range(len(rich)):
        flipped = bytearray(rich)
        flipped[i] ^= mask
        only_unpickling_errors(bytes(flipped))


@pytest.mark.parametrize("value", [0x00, 0x90, 0xA6, 0xA7, 0xA8, 0xB0, 0xFF])
def test_every_byte_set_to_a_tag(rich, value):
    for i in range(5, len(rich)):
        changed = bytearray(rich)
        changed[i] = value
        only_unpickling_errors(bytes(changed))


def varint(n: int) -> bytes:
    return record(b"")[4:5] if n == 0 else _varint(n)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@pytest.mark.parametrize("tag", [0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xAB, 0xAC, 0x9D, 0x9F, 0xA0, 0x99])
def test_counts_claiming_2_to_the_32_items(tag):
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(record(bytes([tag]) + _varint(2**32) + b"\x90" * 8))


def test_huge_claims_are_refused_before_allocating():
    body = b"\xa1" + _varint(2**20) + b"\x90"
    with pytest.raises(pickle.UnpicklingError, match="too short"):
        pickle.loads(record(body))
    header_only = b"BW\x01\x00" + _varint(2**60)
    with pytest.raises(pickle.UnpicklingError, match="truncated"):
        pickle.loads(header_only)


def test_nesting_a_million_deep_is_a_limit_error():
    body = b"\x61" * 1_000_000 + b"\x90"
    with pytest.raises(pickle.LimitError, match="nesting"):
        pickle.loads(record(body))


def test_nesting_a_million_deep_decodes_iteratively_when_allowed():
    body = b"\x61" * 1_000_000 + b"\x90"
    deep = pickle.loads(record(body), limits=pickle.Limits(max_depth=2_000_000))
    assert type(deep) is list and type(deep[0]) is list


@pytest.mark.parametrize("tag", range(0xB6, 0x100))
def test_unknown_tags(tag):
    with pytest.raises(pickle.UnpicklingError, match="unknown tag"):
        pickle.loads(record(bytes([tag])))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "empty input"),
        (b"B", "truncated"),
        (b"BW", "truncated"),
        (b"XX\x01\x00\x01\x90", "not a bytewright.pickle record"),
        (b"BW\x00\x00\x01\x90", "version 0"),
        (b"BW\x02\x00\x01\x90", "version 2"),
        (b"BW\x01\x02\x01\x90", "flags"),
        (b"BW\x01\x80\x01\x90", "flags"),
        (b"BW\x01\x00", "truncated"),
        (b"BW\x01\x00\x80", "truncated"),
        (b"BW\x01\x00" + b"\xff" * 11, "truncated"),
        (b"BW\x01\x00\x00", "truncated"),
        (b"BW\x01\x00\x02\x90", "truncated"),
        (b"BW\x01\x00\x01\x90\x90", "trailing"),
        (b"BW\x01\x00\x02\x90\x90", "trailing"),
        (b"hello world", "text"),
    ],
)
def test_bad_headers_and_framing(data, match):
    with pytest.raises(pickle.UnpicklingError, match=match):
        pickle.loads(data)


@pytest.mark.parametrize(
    "data",
    [b"", b"B", b"BW", b"BW\x01", b"BW\x01\x00", b"BW\x01\x00\x80", b"BW\x01\x00\x02\x90"],
)
def test_truncated_or_empty_input_is_an_eof_error_like_pickles(data):
    with pytest.raises(pickle.TruncatedError) as info:
        pickle.loads(data)
    assert isinstance(info.value, EOFError) and isinstance(info.value, pickle.UnpicklingError)
    assert info.value.offset == len(data)
    whole = pickle.dumps({"a": [1, 2, 3]})
    for end in range(len(whole)):
        with pytest.raises(EOFError):
            pickle.loads(whole[:end])


@pytest.mark.parametrize("protocol", range(0, 6))
def test_standard_pickle_streams_are_recognised(protocol):
    with pytest.raises(pickle.UnpicklingError, match="standard pickle"):
        pickle.loads(std_pickle.dumps({"a": [1, 2]}, protocol=protocol))


def test_trailing_data_after_a_valid_record():
    data = pickle.dumps([1, 2, 3])
    with pytest.raises(pickle.UnpicklingError, match="trailing"):
        pickle.loads(data + b"\x00")
    with pytest.raises(pickle.UnpicklingError, match="trailing"):
        pickle.loads(data + data)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"\xa7\x00", "unknown memo slot"),
        (b"\xa6\x71\xa7\x00", "before its value is complete"),
        (b"\xa6\xa6\x90", "SHARE"),
        (b"\xa8\x00\xa8\x00\x90", "REPLACE"),
        (b"\xa8\x05\x90", "memo slot 5"),
        (b"\x62\xa6\x90\xa8\x01\x90", "never filled"),
        (b"\xb0\x05", "undefined class"),
        (b"\xb0\x00\x03a.B\x01\x01\x08__dict__\x90", "dunder"),
        (b"\xb0\x00\x00", "empty"),
        (b"\xb1\x00\x03a.B\x01\x01\x01x\x90", "no fields"),
        (b"\xaf\x63\x70", "unknown standard-library kind"),
        (b"\xaf\x01\x90", "must be a tuple"),
        (b"\xaf\x01\x73\x01\x02\x41x", "wrong type"),
        (b"\xad\x63\x00", "factory"),
        (b"\xa9\x41a\x01\x02", "ints"),
        (b"\x9d\x02\xff\xfe", "cannot rebuild str"),
        (b"\x99\x00", "zero bytes"),
        (b"\xa4\x01\x60", "unhashable"),
    ],
)
def test_structural_errors(body, match):
    with pytest.raises(pickle.UnpicklingError, match=match):
        pickle.loads(record(body))


def test_disallowed_or_bad_classes_in_crafted_records():
    body = b"\xb0\x00\x0bos.system.x\x01\x00"
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        pickle.loads(record(body))


@pytest.mark.parametrize(
    ("limits", "value"),
    [
        (pickle.Limits(max_bytes=10), list(range(20))),
        (pickle.Limits(max_depth=3), [[[[[]]]]]),
        (pickle.Limits(max_items=10), list(range(20))),
        (pickle.Limits(max_container_len=5), list(range(6))),
        (pickle.Limits(max_container_len=5), {i: i for i in range(6)}),
        (pickle.Limits(max_str_len=10), "x" * 11),
        (pickle.Limits(max_bytes_len=10), b"x" * 11),
        (pickle.Limits(max_bytes_len=10), bytearray(11)),
        (pickle.Limits(max_int_digits=20), 10**40),
    ],
)
def test_each_limit(limits, value):
    data = pickle.dumps(value)
    with pytest.raises(pickle.LimitError):
        pickle.loads(data, limits=limits)
    assert pickle.loads(data) == value


def test_limits_validate_their_fields():
    with pytest.raises(ValueError):
        pickle.Limits(max_depth=-1)
    with pytest.raises(ValueError):
        pickle.Limits(max_items="many")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pickle.loads(pickle.dumps(1), limits={"max_depth": 3})  # type: ignore[arg-type]


def test_input_types():
    data = pickle.dumps([1, "a"])
    assert pickle.loads(bytearray(data)) == [1, "a"]
    assert pickle.loads(memoryview(data)) == [1, "a"]
    with pytest.raises(TypeError):
        pickle.loads(data.decode("latin-1"))  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [10, 4_000, 300_000])
def test_memoryview_inputs_read_in_place_or_copied(size):
    """A memoryview of bytes is read in place (a slice of a larger message): the same values,
    and the view can be released at once after (no export is left behind); views of
    anything that may change, and strided views, are read as before."""
    value = [b"v" * size, "s" * size, size]
    record = pickle.dumps(value)
    message = b"head" + record + b"tail"
    decoder = pickle.Decoder()
    for loads in (pickle.loads, decoder.loads):
        whole = memoryview(message)
        view = whole[4 : 4 + len(record)]
        assert loads(view) == value
        assert loads(view.toreadonly()) == value
        assert loads(memoryview(view)) == value
        view.release()
        whole.release()  # raises BufferError if an export were still held
        mutable = bytearray(message)
        view = memoryview(mutable)[4 : 4 + len(record)]
        assert loads(view) == value
        view.release()
        mutable.extend(b"more")  # raises BufferError if an export were still held
        with pytest.raises(pickle.UnpicklingError):
            loads(memoryview(message)[5 : 4 + len(record)])
    strided = bytes(b for pair in zip(record, b"x" * len(record), strict=True) for b in pair)
    assert pickle.loads(memoryview(strided)[::2]) == value


def test_error_classes_subclass_the_stdlib():
    assert issubclass(pickle.UnpicklingError, std_pickle.UnpicklingError)
    assert issubclass(pickle.PicklingError, std_pickle.PicklingError)
    assert issubclass(pickle.IntegrityError, pickle.UnpicklingError)
    assert issubclass(pickle.LimitError, pickle.UnpicklingError)
