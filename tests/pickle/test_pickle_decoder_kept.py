"""A `Decoder` resolves its classes once, when it is made: records of them must still give
exactly what `loads(data, classes=...)` gives, values and errors, whatever the classes."""

import dataclasses
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


@dataclass
class Node:
    label: str
    next: "Node | None" = None


@dataclass
class WithDefault:
    x: int
    y: int = 5


class Plain:
    """No declared fields: any attribute."""

    def __init__(self, a):
        self.a = a

    def __eq__(self, other):
        return type(other) is Plain and vars(other) == vars(self)


@dataclass(slots=True)
class Slotted:
    a: int
    b: int


CLASSES = (Point, Named, Node, WithDefault, Plain, Slotted)


def name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def outcome(fn, data):
    try:
        return ("ok", repr(fn(data)))
    except Exception as exc:
        return ("error", type(exc), str(exc))


def point_class(tag: str, fields=("x", "y"), version=None) -> type:
    """A new class named `test_pickle_decoder_kept.P` (the same name each time), tagged."""
    cls = dataclasses.make_dataclass("P", list(fields))
    cls.__module__ = __name__
    cls.__qualname__ = "P"
    cls.tag = tag
    if version is not None:
        cls.__bytewright_version__ = version
    return cls


# --- which classes are kept ------------------------------------------------------------


def test_kept_classes_are_exactly_the_registered_ones_that_declare_fields():
    decoder = pickle.Decoder(classes=[Point, Named, Plain, Slotted])
    assert decoder._kept() == [
        (name(Point), Point),
        (name(Named), Named),
        (name(Slotted), Slotted),
    ]
    assert pickle.Decoder()._kept() == []
    assert pickle.Decoder(classes=[Plain])._kept() == []
    assert pickle.Decoder(classes=iter([Node]))._kept() == [(name(Node), Node)]


def test_kept_classes_of_a_dict_are_kept_under_its_names():
    decoder = pickle.Decoder(classes={"app.Point": Point, name(Named): Named})
    assert decoder._kept() == [("app.Point", Point), (name(Named), Named)]


def test_a_dict_is_read_once_when_the_decoder_is_made():
    classes = {name(Point): Point}
    decoder = pickle.Decoder(classes=classes)
    data = pickle.dumps(Point(1, 2))
    classes.clear()
    assert decoder.loads(data) == Point(1, 2)
    named = pickle.dumps(Named("a", Point(1, 2)))
    classes[name(Named)] = Named
    with pytest.raises(pickle.UnpicklingError, match="is not allowed"):
        decoder.loads(named)


# --- the same values as loads ----------------------------------------------------------

VALUES = [
    Point(1.0, 2.0),
    Named("n", Point(3, 4)),
    [Named(f"n{i}", Point(i, -i)) for i in range(5)],
    [Named(f"n{i}", Point(i, -i)) for i in range(200)],  # past the one-pass builder
    {"p": Point(1, 2), "list": [Point(3, 4), None], "t": (Point(5, 6),)},
    WithDefault(1),
    WithDefault(1, 7),
    Plain(3),
    Slotted(1, 2),
    [Point(1, 2), Plain(Point(3, 4)), Slotted(5, 6), {1, 2}],
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_decoder_loads_what_loads_loads(value):
    decoder = pickle.Decoder(classes=CLASSES)
    data = pickle.dumps(value)
    for _ in range(3):
        got = decoder.loads(data)
        assert got == pickle.loads(data, classes=CLASSES) == value
        assert type(got) is type(value)


def test_instances_get_the_declared_fields_in_their_dict():
    decoder = pickle.Decoder(classes=CLASSES)
    got = decoder.loads(pickle.dumps(WithDefault(1)))
    assert vars(got) == {"x": 1, "y": 5}
    got = decoder.loads(pickle.dumps(Named("n", Point(1, 2))))
    assert vars(got) == {"name": "n", "at": Point(1, 2)}
    assert list(vars(got.at)) == ["x", "y"]


# --- classes re-registered or changed ----------------------------------------------------


def test_the_same_name_in_two_decoders_gives_each_its_own_class():
    first, second = point_class("first"), point_class("second")
    data = pickle.dumps(first(1, 2))
    by_first = pickle.Decoder(classes=[first])
    by_second = pickle.Decoder(classes=[second])
    for _ in range(3):
        a, b = by_first.loads(data), by_second.loads(data)
        assert (type(a).tag, type(b).tag) == ("first", "second")
        assert (a.x, a.y, b.x, b.y) == (1, 2, 1, 2)


def test_a_class_changed_since_the_record_was_written():
    old = point_class("old")
    data = pickle.dumps(old(1, 2))
    for new in (
        point_class("more fields", fields=("x", "y", "z")),
        point_class("renamed field", fields=("x", "w")),
        point_class("new version", version=2),
    ):
        decoder = pickle.Decoder(classes=[new])
        assert decoder._kept() == [(name(new), new)]
        for _ in range(2):
            assert outcome(decoder.loads, data) == outcome(
                lambda d, new=new: pickle.loads(d, classes=[new]), data
            )


def test_a_record_of_the_new_class_with_a_decoder_of_the_old():
    old, new = point_class("old"), point_class("new", fields=("x", "y", "z"))
    data = pickle.dumps(new(1, 2, 3))
    decoder = pickle.Decoder(classes=[old])
    assert outcome(decoder.loads, data) == outcome(lambda d: pickle.loads(d, classes=[old]), data)


def test_two_decoders_with_different_classes():
    points, named = pickle.Decoder(classes=[Point]), pickle.Decoder(classes=[Named, Point])
    data = pickle.dumps(Named("n", Point(1, 2)))
    with pytest.raises(pickle.UnpicklingError, match=r"'test_pickle_decoder_kept\.Named' is not"):
        points.loads(data)
    assert named.loads(data) == Named("n", Point(1, 2))
    assert points.loads(pickle.dumps(Point(1, 2))) == Point(1, 2)


# --- sharing, cycles and code that must not run twice -------------------------------------


def test_shared_instances_and_cycles():
    decoder = pickle.Decoder(classes=CLASSES)
    p = Point(1, 2)
    got = decoder.loads(pickle.dumps([p, p, Named("n", p)]))
    assert got[0] is got[1] is got[2].at
    node = Node("a")
    node.next = node
    got = decoder.loads(pickle.dumps(node))
    assert got.next is got and got.label == "a"
    a, b = Node("a"), Node("b")
    a.next, b.next = b, a
    got = decoder.loads(pickle.dumps([a, b]))
    assert got[0].next is got[1] and got[1].next is got[0]


def test_an_instance_as_a_dict_key_is_hashed_once():
    hashed = []

    @dataclass(eq=False)
    class Key:
        k: int

        def __hash__(self):
            hashed.append(self.k)
            return self.k

    Key.__qualname__ = "Key"
    decoder = pickle.Decoder(classes=[Key])
    data = pickle.dumps({Key(1): "a"})
    hashed.clear()
    got = decoder.loads(data)
    assert hashed == [1] and [k.k for k in got] == [1]
    # The same instance met first as a value, then (shared) as a key, in a record the
    # one-pass builder gives up on after the key (a set): still hashed once.
    key = Key(2)
    data = pickle.dumps([key, {key: "b"}, {1, 2}])
    hashed.clear()
    got = decoder.loads(data)
    assert hashed == [2] and got[0] is next(iter(got[1])) and got[2] == {1, 2}
    data = pickle.dumps([key, {key: "b"}, "c"])
    hashed.clear()
    got = decoder.loads(data)
    assert hashed == [2] and got[0] is next(iter(got[1])) and got[2] == "c"


def test_a_finalizer_runs_once_per_instance():
    finalized = []

    @dataclass
    class Final:
        k: int

        def __del__(self):
            finalized.append(self.k)

    Final.__qualname__ = "Final"
    decoder = pickle.Decoder(classes=[Final])
    # The set is not in the one-pass builder's grammar: it gives up, the general builder
    # makes the record. An instance made and dropped on the way would run __del__ too.
    for value in ([Final(1), {2}], [Final(1)]):
        data = pickle.dumps(value)
        finalized.clear()
        got = decoder.loads(data)
        assert finalized == []
        del got
        assert finalized == [1]
    finalized.clear()


def test_a_field_that_is_a_class_attribute_or_descriptor():
    @dataclass
    class Prop:
        x: int

    Prop.__qualname__ = "Prop"
    data = pickle.dumps(Prop(1))
    decoder = pickle.Decoder(classes=[Prop])
    assert decoder.loads(data) == Prop(1)
    Prop.x = 9  # a plain class attribute: the field still goes to the instance
    got = decoder.loads(data)
    assert got.x == 1 and vars(got) == {"x": 1}
    Prop.x = property(lambda self: "property")  # a data descriptor: stored in the dict
    got = decoder.loads(data)
    assert vars(got) == {"x": 1}
    assert outcome(decoder.loads, data) == outcome(lambda d: pickle.loads(d, classes=[Prop]), data)


# --- malformed input, limits, integrity -------------------------------------------------------

RECORDS = [
    pickle.dumps(Point(1, 2)),
    pickle.dumps(Named("n", Point(3, 4))),
    pickle.dumps([Point(1, 2), Point(3, 4)]),
]


@pytest.mark.parametrize("data", RECORDS, ids=range(len(RECORDS)))
def test_malformed_records_fail_as_loads_fails(data):
    decoder = pickle.Decoder(classes=CLASSES)

    def loads(d):
        return pickle.loads(d, classes=CLASSES)

    for cut in range(len(data)):
        assert outcome(decoder.loads, data[:cut]) == outcome(loads, data[:cut])
    for at in range(5, len(data)):  # every byte of the body, flipped every way but one
        for bits in (0x01, 0x02, 0x10, 0x80, 0xFF):
            bad = bytearray(data)
            bad[at] ^= bits
            bad = bytes(bad)
            assert outcome(decoder.loads, bad) == outcome(loads, bad), (at, bits)


@pytest.mark.parametrize(
    "limits",
    [
        pickle.Limits(max_str_len=10),  # the class name is longer
        pickle.Limits(max_depth=1),
        pickle.Limits(max_items=2),
        pickle.Limits(max_container_len=1),  # fewer than the fields
        pickle.Limits(max_bytes=20),
    ],
    ids=["str_len", "depth", "items", "container_len", "bytes"],
)
def test_limits_apply_to_records_of_kept_classes(limits):
    decoder = pickle.Decoder(classes=CLASSES, limits=limits)
    got = [outcome(decoder.loads, data) for data in RECORDS]
    assert got == [
        outcome(lambda d: pickle.loads(d, classes=CLASSES, limits=limits), data) for data in RECORDS
    ]
    # Each limit stops the nested records at least (a Point is one level deep).
    assert [g[:2] for g in got[1:]] == [("error", pickle.LimitError)] * 2


def test_signed_records_of_kept_classes():
    decoder = pickle.Decoder(classes=CLASSES, hmac_key=b"k3y")
    assert decoder.loads(pickle.dumps(Point(1, 2), hmac_key=b"k3y")) == Point(1, 2)
    with pytest.raises(pickle.IntegrityError):
        decoder.loads(pickle.dumps(Point(1, 2), hmac_key=b"other"))
    with pytest.raises(pickle.IntegrityError):
        decoder.loads(pickle.dumps(Point(1, 2)))


def test_threads_share_one_decoder():
    decoder = pickle.Decoder(classes=CLASSES)
    data = [pickle.dumps(Named(f"n{i}", Point(i, i))) for i in range(20)]
    errors = []

    def work():
        try:
            for _ in range(50):
                for i, d in enumerate(data):
                    assert decoder.loads(d) == Named(f"n{i}", Point(i, i))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
