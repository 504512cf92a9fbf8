"""classes=: user classes come back as themselves, without running their code."""

import collections
import dataclasses
import enum
import keyword
import typing

import pytest
from bytewright import pickle
from hypothesis import given, settings
from hypothesis import strategies as st


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: int
    b: tuple = ()


@dataclasses.dataclass(slots=True)
class Slotted:
    a: int
    b: str = "b"


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenSlotted:
    a: int


@dataclasses.dataclass
class Base:
    a: int


@dataclasses.dataclass
class Derived(Base):
    b: list = dataclasses.field(default_factory=list)


class Row(typing.NamedTuple):
    id: int
    name: str = "?"


Pair = collections.namedtuple("Pair", "left right")


class Color(enum.Enum):
    RED = "r"
    GREEN = "g"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    R = 4
    W = 2


class Plain:
    def __init__(self, v):
        self.v = v
        self.other = [v]


class WithSlots:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a


class Spy:
    """Records every hook that pickle might call."""

    calls: typing.ClassVar[list] = []

    def __init__(self):
        Spy.calls.append("__init__")
        self.x = 1

    def __new__(cls, *args):
        Spy.calls.append("__new__")
        return super().__new__(cls)

    def __setstate__(self, state):
        Spy.calls.append("__setstate__")
        object.__getattribute__(self, "__dict__").update(state)

    def __reduce__(self):
        Spy.calls.append("__reduce__")
        return (print, ("pwned",))

    def __setattr__(self, name, value):
        Spy.calls.append("__setattr__")
        object.__setattr__(self, name, value)


@dataclasses.dataclass
class PostInit:
    calls: typing.ClassVar[list] = []
    x: int = 0

    def __post_init__(self):
        PostInit.calls.append("post_init")


ALL = [Point, Frozen, Slotted, FrozenSlotted, Base, Derived, Row, Pair, Color, Level, Perm]
ALL += [Plain, WithSlots, Spy, PostInit]


def rt(value, classes=ALL):
    return pickle.loads(pickle.dumps(value), classes=classes)


@pytest.mark.parametrize(
    "value",
    [
        Point(1, 2),
        Frozen(1, (2, 3)),
        Slotted(5),
        FrozenSlotted(7),
        Base(1),
        Derived(1, [2]),
        Row(1, "a"),
        Pair([1], {"x": 2}),
        Color.GREEN,
        Level.HIGH,
        Perm.R,
    ],
    ids=lambda v: type(v).__name__,
)
def test_classes_round_trip_as_the_real_class(value):
    back = rt(value)
    assert type(back) is type(value)
    assert back == value


def test_methods_and_frozenness_survive():
    back = rt(Point(3, -4))
    assert back.norm1() == 7
    f = rt(Frozen(1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.a = 2  # type: ignore[misc]
    fs = rt(FrozenSlotted(1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fs.a = 2  # type: ignore[misc]
    assert hash(fs) == hash(FrozenSlotted(1))


def test_enum_members_are_the_singletons():
    assert rt([Color.RED, Level.LOW]) == [Color.RED, Level.LOW]
    assert rt(Color.RED) is Color.RED


def test_composite_flags_are_rejected_with_a_reason():
    with pytest.raises(pickle.PicklingError, match="only named members"):
        pickle.dumps(Perm.R | Perm.W)


def test_plain_classes_with_dict_and_slots():
    p = rt(Plain(5))
    assert type(p) is Plain and vars(p) == {"v": 5, "other": [5]}
    s = rt(WithSlots(1))
    assert s.a == 1 and not hasattr(s, "b")


def test_only_setstate_of_the_class_runs_on_load():
    obj = Spy()
    Spy.calls.clear()
    data = pickle.dumps(obj)
    assert Spy.calls == []  # __reduce__ is never consulted
    back = pickle.loads(data, classes=[Spy])
    assert back.x == 1 and type(back) is Spy
    assert Spy.calls == ["__setstate__"]  # as pickle does; no __new__, __init__, __setattr__
    PostInit.calls.clear()
    data = pickle.dumps(PostInit(3))
    PostInit.calls.clear()
    assert pickle.loads(data, classes=[PostInit]).x == 3
    assert PostInit.calls == []


def test_unknown_class_names_the_class_and_the_fix():
    data = pickle.dumps([Point(1, 2)])
    with pytest.raises(pickle.UnpicklingError) as info:
        pickle.loads(data)
    message = str(info.value)
    assert f"{__name__}.Point" in message
    assert "classes=[Point]" in message


def test_classes_may_be_a_mapping_of_names():
    data = pickle.dumps(Point(1, 2))
    assert pickle.loads(data, classes={f"{__name__}.Point": Point}) == Point(1, 2)

    @dataclasses.dataclass
    class Other:
        x: int
        y: int = 0

    # A mapping can route a record name to another class with the same fields.
    back = pickle.loads(data, classes={f"{__name__}.Point": Other})
    assert type(back) is Other and back.x == 1


def test_a_class_of_the_wrong_kind_is_rejected():
    data = pickle.dumps(Color.RED)
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data, classes={f"{__name__}.Color": Point})
    data = pickle.dumps(Point(1))
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data, classes={f"{__name__}.Point": Color})


def test_bad_classes_argument():
    data = pickle.dumps(Point(1))
    with pytest.raises(TypeError):
        pickle.loads(data, classes=[1])


def test_dunder_attributes_are_never_written_or_read():
    p = Plain(1)
    p.__dict__["__class__"] = 5
    with pytest.raises(pickle.PicklingError, match="dunder"):
        pickle.dumps(p)


def test_instance_cycles_and_sharing():
    a = Plain(1)
    b = Plain(2)
    a.other = b
    b.other = a
    back = rt([a, b])
    assert back[0].other is back[1] and back[1].other is back[0]


def test_namedtuple_in_a_cycle_through_a_list():
    r = Row(1, [])
    r.name.append(r)
    back = rt(r)
    assert back.name[0] is back


def test_instances_of_many_shapes():
    objs = []
    for i in range(5):
        p = Plain(i)
        if i % 2:
            p.extra = i
        objs.append(p)
    back = rt(objs)
    assert [vars(o) for o in back] == [vars(o) for o in objs]


class Guarded:
    """A plain class whose property setter must never run on load."""

    log: typing.ClassVar[list] = []

    @property
    def secret(self):
        return self.__dict__.get("secret")

    @secret.setter
    def secret(self, value):
        Guarded.log.append(value)


def test_payload_field_names_never_reach_descriptors():
    g = Guarded()
    g.__dict__["secret"] = "from the payload"
    g.__dict__["other"] = 1
    back = rt(g, classes=[Guarded])
    assert Guarded.log == []
    assert back.__dict__ == {"secret": "from the payload", "other": 1}


@dataclasses.dataclass
class Later:
    a: int
    b: int


def test_a_descriptor_added_after_a_load_is_never_called():
    # The class resolved by the first load is kept per thread; the second load must still
    # see the property added since and store the field past it.
    allowed = (Later,)
    data = pickle.dumps(Later(1, 2))
    assert pickle.loads(data, classes=allowed) == Later(1, 2)
    calls = []
    Later.b = property(lambda self: self.__dict__["b"], lambda self, v: calls.append(v))
    try:
        back = pickle.loads(data, classes=allowed)
    finally:
        del Later.b
    assert calls == []
    assert back.__dict__ == {"a": 1, "b": 2}


class LaterBase:
    pass


@dataclasses.dataclass
class LaterDerived(LaterBase):
    a: int


def test_a_descriptor_added_to_a_base_after_loads_is_never_called():
    # Loads of a class with no attribute of a field's name remember that until the class or
    # a base changes; a property added to a base must end it.
    allowed = (LaterDerived,)
    data = pickle.dumps(LaterDerived(1))
    for _ in range(3):
        assert pickle.loads(data, classes=allowed) == LaterDerived(1)
    calls = []
    LaterBase.a = property(lambda self: self.__dict__["a"], lambda self, v: calls.append(v))
    try:
        back = pickle.loads(data, classes=allowed)
    finally:
        del LaterBase.a
    assert calls == []
    assert back.__dict__ == {"a": 1}
    assert pickle.loads(data, classes=allowed).__dict__ == {"a": 1}


def test_field_order_mismatch_takes_the_checked_path():
    p = Point(1, 2)
    del p.__dict__["x"]
    p.__dict__["x"] = 5  # dict order now y, x
    back = rt(p)
    assert back == Point(5, 2)


_FIELD_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name)
)
_FIELD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.binary(max_size=20),
    st.lists(st.integers(), max_size=4),
)


def _twins(names: list[str]) -> tuple[type, type]:
    """A dataclass and a plain class recorded under the same name: the dataclass's declared
    fields take the stored class definition, the plain class's attributes the general path."""
    declared = dataclasses.make_dataclass("Twin", names)
    plain = type("Twin", (), {})
    for cls in (declared, plain):
        cls.__module__, cls.__qualname__ = __name__, f"Twin_{'_'.join(names)}"
    return declared, plain


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_FIELD_NAMES, min_size=0, max_size=6, unique=True),
    st.data(),
    st.booleans(),
)
def test_stored_class_definitions_write_what_the_general_path_writes(names, data, det):
    declared, plain = _twins(names)
    rows = data.draw(st.lists(st.tuples(*[_FIELD_VALUES] * len(names)), min_size=1, max_size=5))
    extra = data.draw(st.sampled_from([None, *range(len(rows))]))
    records, twins = [], []
    for i, row in enumerate(rows):
        record, twin = declared(*row), plain()
        twin.__dict__.update(zip(names, row, strict=True))
        if i == extra:  # one record of another shape in between
            record.added = twin.added = f"extra {i}"
        records.append(record)
        twins.append(twin)
    for _ in range(2):  # the class's description cached, then from the cache
        out = pickle.dumps(records, deterministic=det)
        assert out == pickle.dumps(twins, deterministic=det)
        back = pickle.loads(out, classes=[plain])
        assert [vars(r) for r in back] == [vars(r) for r in records]
        if extra is None:
            back = pickle.loads(out, classes=[declared])
            assert back == records and {type(r) for r in back} == {declared}


def test_classes_made_and_dropped_in_turn_are_each_written_as_themselves():
    # A class met in one call is known in the next; a class that died may leave its
    # address to a new one, which must still be written with its own name and fields.
    import gc

    for i in range(40):
        fields = [(f"f{i}_{j}", int) for j in range(i % 3 + 1)]
        cls = dataclasses.make_dataclass(f"Made{i}", fields)
        value = cls(*range(len(fields)))
        for _ in range(2):
            back = pickle.loads(pickle.dumps(value), classes=[cls])
            assert type(back) is cls
            assert back == value
        del cls, value, back
        gc.collect()
