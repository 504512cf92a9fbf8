"""Registered subclasses of collections.deque: DERIVED records of base code 15 (bytewright.pickle)
and pickle's own reduction of them (loads_pickle)."""

import collections
import io
import pickle as std_pickle
from typing import Any

import pytest
from bytewright import pickle
from records import record


class Queue(collections.deque):  # type: ignore[type-arg]
    pass


class Window(collections.deque):  # type: ignore[type-arg]
    __slots__ = ("__dict__", "label")


class Stateful(collections.deque):  # type: ignore[type-arg]
    def __getstate__(self) -> dict[str, Any]:
        return {"kept": self.kept}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.kept = state["kept"]
        self.restored = True


class Holder:
    def __init__(self, q: Any) -> None:
        self.q = q


CLASSES = [Queue, Window, Stateful, Holder]


def std_roundtrip(value: Any, protocol: int = std_pickle.HIGHEST_PROTOCOL) -> Any:
    buf = io.BytesIO()
    pickler = std_pickle.Pickler(buf, protocol)
    pickler.dispatch_table = {}
    pickler.dump(value)
    return std_pickle.loads(buf.getvalue())


def roundtrip(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value), classes=CLASSES)


def same(a: Any, b: Any) -> bool:
    """The same type, maxlen, items (compared by value) and attributes."""
    attrs = lambda v: vars(v) if hasattr(v, "__dict__") else {}  # noqa: E731
    slot = lambda v: getattr(v, "label", None)  # noqa: E731
    return (
        type(a) is type(b)
        and a.maxlen == b.maxlen
        and list(a) == list(b)
        and attrs(a) == attrs(b)
        and slot(a) == slot(b)
    )


def values() -> list[Any]:
    plain = Queue([1, "two", None])
    bounded = Queue(range(10), maxlen=4)  # the oldest items already dropped
    bounded.note = "n"
    empty = Queue(maxlen=0)
    window = Window([1.5, b"x"], maxlen=2)
    window.label = "w"
    window.extra = [1]
    nested = Queue([Queue([1], maxlen=1), collections.deque([2], maxlen=5)])
    return [plain, bounded, empty, window, nested]


@pytest.mark.parametrize("value", values(), ids=lambda v: f"{type(v).__name__}-{v.maxlen}")
def test_deque_subclasses_round_trip_as_with_pickle(value):
    back = roundtrip(value)
    assert same(back, value)
    assert same(std_roundtrip(value), back)
    if isinstance(value[0] if value else None, collections.deque):
        assert same(back[0], value[0]) and same(back[1], value[1])


def test_maxlen_is_set_before_the_items():
    q = Queue([1, 2, 3], maxlen=3)
    back = roundtrip(q)
    back.append(4)  # the maxlen holds: the oldest drops out
    assert list(back) == [2, 3, 4] and back.maxlen == 3


def test_getstate_and_setstate_run_as_with_pickle():
    q = Stateful([1, 2], maxlen=5)
    q.kept = "k"
    q.dropped = "d"
    back = roundtrip(q)
    theirs = std_roundtrip(q)
    assert type(back) is Stateful and list(back) == [1, 2] and back.maxlen == 5
    assert vars(back) == vars(theirs) == {"kept": "k", "restored": True}


def test_shared_references_and_cycles():
    q = Queue([1], maxlen=3)
    q.append(q)  # contains itself
    q.me = q  # and refers to itself by an attribute
    holder = Holder(q)
    value = [q, q, holder]
    back = roundtrip(value)
    theirs = std_roundtrip(value)
    for got in (back, theirs):
        q2 = got[0]
        assert type(q2) is Queue and q2 is got[1] and got[2].q is q2
        assert q2.maxlen == 3 and q2[0] == 1 and q2[1] is q2 and q2.me is q2


def test_a_cycle_that_overflows_maxlen_drops_as_pickle_drops():
    q = Queue([1, 2], maxlen=2)
    q.append(q)  # [2, q]
    back = roundtrip(q)
    assert len(back) == 2 and back[0] == 2 and back[1] is back and back.maxlen == 2


def test_the_record_layout_is_the_documented_one():
    data = pickle.dumps(Queue([1, "a"], maxlen=2))
    name = f"{Queue.__module__}.{Queue.__qualname__}".encode()
    body = b"\xb5\x00" + bytes([len(name)]) + name + b"\x01\x00"  # DERIVED, new class entry
    body += b"\x0f\x03\x02\x01\x41a\x80"  # base 15, maxlen 2 (+1), 2 items, state {}
    assert data == record(body)
    unbounded = pickle.dumps(Queue())
    assert unbounded == record(body[: -len(b"\x0f\x03\x02\x01\x41a\x80")] + b"\x0f\x00\x00\x80")


def test_the_writer_is_deterministic():
    a, b = values(), values()
    assert pickle.dumps(a) == pickle.dumps(b)
    assert pickle.dumps(a, deterministic=True) == pickle.dumps(b, deterministic=True)


def test_records_of_the_earlier_format_still_load():
    # Written before base code 15 existed: a DEQUE record, and a DERIVED list record.
    deque_record = record(b"\xae\x04\x02\x01\x02")  # deque([1, 2], maxlen=3)
    back = pickle.loads(deque_record)
    assert type(back) is collections.deque and list(back) == [1, 2] and back.maxlen == 3
    name = f"{Queue.__module__}.{Queue.__qualname__}".encode()
    body = b"\xb5\x00" + bytes([len(name)]) + name + b"\x01\x00" + b"\x02\x01\x01\x80"
    with pytest.raises(pickle.UnpicklingError, match="holds a list, but the class subclasses"):
        pickle.loads(record(body), classes=CLASSES)


def derived(cls: type, code: int) -> bytes:
    name = f"{cls.__module__}.{cls.__qualname__}".encode()
    return b"\xb5\x00" + bytes([len(name)]) + name + b"\x01\x00" + bytes([code])


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (derived(Holder, 15) + b"\x00\x00\x80", "holds a deque, but the class subclasses no"),
        (derived(Queue, 2) + b"\x00\x80", "holds a list, but the class subclasses"),
        (derived(Queue, 15) + b"\x00\x00\x60", "its state must be a dict"),
        (derived(Queue, 15) + b"\x00\x00\x81\x48__dict__\x90", "bad field"),
        (derived(Queue, 15) + b"\x81" + b"\x80" * 8 + b"\x01\x00\x80", "maxlen out of range"),
        (derived(Queue, 15) + b"\x00\x05\x01\x80", "items cannot fit|truncated|too short"),
        (derived(Queue, 15) + b"\x00\x01\xa7\x05\x80", "unknown memo slot"),
        (derived(Queue, 16) + b"\x00\x00\x80", "unknown builtin base code 16"),
    ],
)
def test_malformed_deque_records_are_typed_errors(body, match):
    with pytest.raises(pickle.UnpicklingError, match=match) as info:
        pickle.loads(record(body), classes=CLASSES)
    assert info.value.offset is not None


@pytest.fixture(scope="module")
def payload() -> bytes:
    q = Queue([1, "two", 3.5], maxlen=5)
    q.append(q)
    q.note = [q]
    w = Window([b"x"], maxlen=1)
    w.label = "w"
    s = Stateful([], maxlen=0)
    s.kept = (1,)
    return pickle.dumps([q, w, s, q])


def loads_or_unpickling_error(data: bytes) -> None:
    try:
        pickle.loads(data, classes=CLASSES)
    except pickle.UnpicklingError:
        pass


def test_the_payload_loads(payload):
    back = pickle.loads(payload, classes=CLASSES)
    assert back[0] is back[3] and back[0][3] is back[0] and back[0].note[0] is back[0]


def test_every_truncation_of_a_deque_record(payload):
    for cut in range(len(payload)):
        with pytest.raises(pickle.UnpicklingError):
            pickle.loads(payload[:cut], classes=CLASSES)


@pytest.mark.parametrize("mask", [0x01, 0x02, 0x10, 0x80, 0xFF])
def test_every_byte_flip_of_a_deque_record(payload, mask):
    for i in range(len(payload)):
        flipped = bytearray(payload)
        flipped[i] ^= mask
        loads_or_unpickling_error(bytes(flipped))


@pytest.mark.parametrize("protocol", range(std_pickle.HIGHEST_PROTOCOL + 1))
def test_loads_pickle_reads_pickles_deque_subclasses(protocol):
    q = Queue([1, "a"], maxlen=3)
    q.append(q)
    q.note = "n"
    w = Window([2], maxlen=1)
    w.label = "w"
    value = [q, w, q, Queue()]
    data = std_pickle.dumps(value, protocol)
    back = pickle.loads_pickle(data, classes=CLASSES)
    theirs = std_pickle.loads(data)
    for got in (back, theirs):
        assert got[0] is got[2] and got[0][2] is got[0] and got[0].maxlen == 3
        assert list(got[0])[:2] == [1, "a"] and got[0].note == "n"
        assert type(got[1]) is Window and list(got[1]) == [2] and got[1].maxlen == 1
        assert got[1].label == "w" and type(got[3]) is Queue and got[3].maxlen is None


def test_loads_pickle_refuses_an_unregistered_deque_subclass():
    data = std_pickle.dumps(Queue([1], maxlen=2))
    with pytest.raises(pickle.UnpicklingError, match="Queue"):
        pickle.loads_pickle(data)
