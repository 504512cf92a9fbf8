"""`pickle.Decoder`: `loads` with its options checked once gives what `loads` gives."""

import threading
from dataclasses import dataclass

import pytest
from bytewright import pickle


@dataclass
class Point:
    x: float
    y: float


@dataclass
class Named:
    name: str
    at: Point


VALUES = [
    None,
    [1, "a", None, 2.5, b"xy", True],
    {"id": 7, "tags": ["a", "b"], "nested": {"k": (1, 2)}},
    Point(1.0, 2.0),
    [Named(f"n{i}", Point(i, -i)) for i in range(50)],
    {f"key_{i}": i for i in range(300)},
]


def outcome(fn, data):
    try:
        return ("ok", fn(data))
    except Exception as exc:
        return ("error", type(exc), str(exc))


NAMED = {f"{c.__module__}.{c.__qualname__}": c for c in (Point, Named)}


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize(
    "make",
    [
        lambda: [Point, Named],
        lambda: (Point, Named),
        lambda: dict(NAMED),
        lambda: iter([Point, Named]),  # read once, at construction
        lambda: (c for c in (Point, Named)),
    ],
    ids=["list", "tuple", "dict", "iterator", "generator"],
)
def test_decoder_loads_what_loads_loads(value, make):
    decoder = pickle.Decoder(classes=make())
    data = pickle.dumps(value)
    for _ in range(3):  # the same decoder, call after call
        assert decoder.loads(data) == pickle.loads(data, classes=make()) == value


def test_decoder_with_key_and_limits():
    key = b"secret"
    decoder = pickle.Decoder(classes=[Point], hmac_key=key, limits=pickle.Limits(max_items=10))
    assert decoder.loads(pickle.dumps(Point(1, 2), hmac_key=key)) == Point(1, 2)
    with pytest.raises(pickle.IntegrityError):
        decoder.loads(pickle.dumps(Point(1, 2), hmac_key=b"other"))
    with pytest.raises(pickle.IntegrityError):
        decoder.loads(pickle.dumps(Point(1, 2)))
    with pytest.raises(pickle.LimitError):
        decoder.loads(pickle.dumps(list(range(20)), hmac_key=key))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"BW",
        pickle.dumps([1, 2, 3])[:-1],
        pickle.dumps([1, 2, 3]) + b"\x00",
        pickle.dumps(Point(1, 2)),  # a class that was not passed
        b"BW\x09\x00\x01\x90",  # an unknown version
    ],
)
def test_decoder_errors_are_those_of_loads(data):
    decoder = pickle.Decoder(classes=[Named])
    got = outcome(decoder.loads, data)
    assert got[0] == "error"
    assert got == outcome(lambda d: pickle.loads(d, classes=[Named]), data)


def test_bad_options_fail_at_construction():
    with pytest.raises(TypeError, match="classes"):
        pickle.Decoder(classes=[Point, 3])
    with pytest.raises(TypeError, match="classes"):
        pickle.Decoder(classes={"x": 3})
    with pytest.raises(TypeError, match="limits"):
        pickle.Decoder(limits={"max_items": 3})
    with pytest.raises(TypeError, match="hmac_key"):
        pickle.Decoder(hmac_key="text")
    with pytest.raises(ValueError, match="hmac_key"):
        pickle.Decoder(hmac_key=b"")
    with pytest.raises(TypeError):
        pickle.Decoder([Point])  # keywords only
    with pytest.raises(TypeError, match="bytes"):
        pickle.Decoder().loads("text")


def test_decoder_takes_any_buffer_and_reads_a_copy():
    decoder = pickle.Decoder()
    data = pickle.dumps({"a": [1, 2]})
    assert decoder.loads(bytearray(data)) == decoder.loads(memoryview(data)) == {"a": [1, 2]}


def test_decoder_repr_hides_the_key():
    text = repr(pickle.Decoder(classes=[Point], hmac_key=b"secret", limits=pickle.Limits()))
    assert text.startswith("Decoder(classes=(<class ")
    assert "secret" not in text and "hmac_key=<set>" in text
    assert repr(pickle.Decoder()) == "Decoder(classes=(), hmac_key=None, limits=None)"


def test_decoder_is_immutable_and_shared_by_threads():
    decoder = pickle.Decoder(classes=[Point, Named])
    with pytest.raises(AttributeError):
        decoder.loads = None  # type: ignore[misc]
    data = pickle.dumps([Named(f"n{i}", Point(i, i)) for i in range(200)])
    want = pickle.loads(data, classes=[Point, Named])
    results = []

    def work():
        results.append(all(decoder.loads(data) == want for _ in range(20)))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 4


def test_decoder_loads_takes_exactly_one_positional_argument():
    decoder = pickle.Decoder()
    data = pickle.dumps([1, "a"])
    # Called through the class, as a bound method and as a method object kept aside.
    assert pickle.Decoder.loads(decoder, data) == decoder.loads(data) == [1, "a"]
    method = decoder.loads
    assert method(data) == [1, "a"]
    with pytest.raises(TypeError, match="exactly one argument"):
        decoder.loads()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="exactly one argument"):
        decoder.loads(data, data)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="no keyword arguments"):
        decoder.loads(data=data)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="Decoder"):
        pickle.Decoder.loads(object(), data)  # type: ignore[arg-type]
    assert decoder.loads.__name__ == "loads"
    assert "Rebuild the object graph" in (pickle.Decoder.loads.__doc__ or "")
