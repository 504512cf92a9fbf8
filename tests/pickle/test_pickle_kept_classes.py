"""Each thread keeps the classes it resolved for a `classes=` tuple: loads must still give
exactly what resolving afresh gives, whatever tuples, lists and classes come and go."""

import dataclasses
import enum
import threading

import pytest
from bytewright import pickle


def point_class(tag: str) -> type:
    """A new class `test_pickle_kept_classes.Point` (same name each time), tagged."""

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    Point.__qualname__ = "Point"
    Point.tag = tag  # type: ignore[attr-defined]
    return Point


def test_two_tuples_naming_the_same_class_each_get_their_own():
    first, second = point_class("first"), point_class("second")
    data = pickle.dumps(first(1, 2))
    by_first, by_second = (first,), (second,)
    for _ in range(3):
        a = pickle.loads(data, classes=by_first)
        b = pickle.loads(data, classes=by_second)
        assert type(a) is first and type(b) is second
        assert (a.x, a.y, b.x, b.y) == (1, 2, 1, 2)


def test_fresh_tuples_every_call():
    classes = [point_class(str(i)) for i in range(40)]
    data = pickle.dumps(classes[0](3, 4))
    for _ in range(2):
        for cls in classes:
            got = pickle.loads(data, classes=tuple([cls]))
            assert type(got) is cls and (got.x, got.y) == (3, 4)


def test_a_list_changed_between_calls_is_read_again():
    first, second = point_class("first"), point_class("second")
    data = pickle.dumps(first(5, 6))
    allowed = [first]
    assert type(pickle.loads(data, classes=allowed)) is first
    allowed[0] = second
    assert type(pickle.loads(data, classes=allowed)) is second
    allowed.clear()
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        pickle.loads(data, classes=allowed)


def test_other_definitions_of_the_class_are_not_confused():
    class Box:
        pass

    Box.__qualname__ = "Box"
    small, large = Box(), Box()
    small.a = 1
    large.a, large.b = 2, "two"
    small_data, large_data = pickle.dumps(small), pickle.dumps(large)
    allowed = (Box,)
    for _ in range(3):
        got_small = pickle.loads(small_data, classes=allowed)
        got_large = pickle.loads(large_data, classes=allowed)
        assert vars(got_small) == {"a": 1}
        assert vars(got_large) == {"a": 2, "b": "two"}


def test_an_enum_record_of_a_kept_object_class_is_still_refused():
    class Color(enum.Enum):
        RED = 1

    Color.__qualname__ = "Color"
    first = point_class("first")
    data = pickle.dumps(first(1, 2))
    # A member record naming the dataclass (same length, so the record stays whole).
    renamed = pickle.dumps(Color.RED).replace(b"Color", b"Point")
    allowed = (first,)
    pickle.loads(data, classes=allowed)
    with pytest.raises(pickle.UnpicklingError, match="enum member"):
        pickle.loads(renamed, classes=allowed)


def test_threads_resolve_their_own():
    classes = [point_class(str(i)) for i in range(4)]
    data = pickle.dumps(classes[0](7, 8))
    errors = []

    def work(cls: type) -> None:
        allowed = (cls,)
        for _ in range(200):
            got = pickle.loads(data, classes=allowed)
            if type(got) is not cls:
                errors.append(type(got).tag)

    threads = [threading.Thread(target=work, args=(cls,)) for cls in classes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
