"""`bytewright.pickle`: classes as values, the builtins table (types, exception classes,
NotImplemented), builtin exceptions, and instances of registered subclasses of builtin
types, compared with what `pickle` gives."""

import builtins
import collections
import dataclasses
import datetime
import enum
import errno
import io
import pickle as std_pickle
from typing import NamedTuple

import pytest
from bytewright import pickle
from hypothesis import given, settings
from hypothesis import strategies as st
from records import record

# ---------------------------------------------------------------- classes of the tests


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Color(enum.Enum):
    RED = 1


class Pair(NamedTuple):
    a: int
    b: int


class Tags(dict):
    """A dict subclass with an attribute of its own."""


class Row(list):
    pass


class Bag(set):
    pass


class Frozen(frozenset):
    pass


class Coords(tuple):
    pass


class Name(str):
    pass


class Blob(bytes):
    pass


class Count(int):
    pass


class Ratio(float):
    pass


class Slotted(list):
    __slots__ = ("label",)


CALLS: list[str] = []


class Guarded(dict):
    """Its own methods must not run while loading (only __setstate__, at the end)."""

    def __init__(self, *a, **kw):
        CALLS.append("__init__")
        super().__init__(*a, **kw)

    def __setitem__(self, key, value):
        CALLS.append("__setitem__")
        super().__setitem__(key, value)

    def __getstate__(self):
        return {"note": self.note}

    def __setstate__(self, state):
        CALLS.append(f"__setstate__ {len(self)}")
        self.note = state["note"].upper()


DERIVED = [Tags, Row, Bag, Frozen, Coords, Name, Blob, Count, Ratio, Slotted, Guarded]
CLASSES = [Point, Color, Pair, *DERIVED]


def roundtrip(value, **kw):
    return pickle.loads(pickle.dumps(value, **kw), classes=CLASSES)


def std_roundtrip(value):
    """pickle's round trip with its own reduction, whatever a library registered in copyreg
    (distributed installs tblib's reducers for every exception class)."""
    buf = io.BytesIO()
    pickler = std_pickle.Pickler(buf, std_pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {}
    pickler.dump(value)
    return std_pickle.loads(buf.getvalue())


# ---------------------------------------------------------------- classes as values


def test_a_registered_class_is_a_value():
    value = [Point, Color, Pair, Tags, {"k": Point}, (Point,)]
    back = roundtrip(value)
    assert back == value and back[0] is Point and back[4]["k"] is Point and back[5][0] is Point
    data = pickle.dumps([Point] * 10)
    # Written once, then referred to.
    assert data.count(b"Point") == 1 and data.count(b"\xa7\x00") == 9


def test_a_class_needs_registering_to_load():
    data = pickle.dumps({"cls": Point})
    with pytest.raises(pickle.UnpicklingError, match=r"pass classes=\[Point\]"):
        pickle.loads(data)


def test_instances_and_their_class_share_one_entry():
    back = roundtrip([Point(1, 2), Point, Point(3)])
    assert back == [Point(1, 2), Point, Point(3)] and back[1] is Point


def test_builtin_types_and_exception_classes_are_values():
    names = [n for n, v in vars(builtins).items() if isinstance(v, type) and n[0] != "_"]
    values = [getattr(builtins, n) for n in names]
    values += [type(None), type(NotImplemented), type(...), NotImplemented]
    back = pickle.loads(pickle.dumps(values))
    assert len(back) == len(values)
    for a, b in zip(back, values, strict=True):
        assert a is b
    assert pickle.loads(pickle.dumps(NotImplemented)) is NotImplemented
    assert std_roundtrip(values) == back


def test_classes_that_are_neither_builtin_nor_python_defined_are_refused():
    with pytest.raises(pickle.PicklingError, match="cannot pickle the class 'OrderedDict'"):
        pickle.dumps([collections.OrderedDict])


# ---------------------------------------------------------------- builtin exceptions

SPECIAL_ARGS = {
    "BaseExceptionGroup": ("group", [KeyboardInterrupt(), ValueError(1)]),
    "ExceptionGroup": ("group", [ValueError(1), TypeError("t")]),
    "UnicodeDecodeError": ("utf-8", b"\xff", 0, 1, "invalid start byte"),
    "UnicodeEncodeError": ("ascii", "é", 0, 1, "out of range"),
    "UnicodeTranslateError": ("é", 0, 1, "no mapping"),
    "OSError": (errno.ENOENT, "No such file", "a.txt", None, "b.txt"),
    "SyntaxError": ("bad", ("f.py", 3, 4, "x y", 3, 5)),
    "SystemExit": (3,),
    "StopIteration": ("value",),
}

EXCEPTION_CLASSES = [
    v for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
]


def exception_of(cls):
    if issubclass(cls, SyntaxError):
        return cls(*SPECIAL_ARGS["SyntaxError"])
    return cls(*SPECIAL_ARGS.get(cls.__name__, ("message", 7)))


def describe(exc):
    """What pickle keeps of an exception: its type, args, str and attributes."""
    fields = {}
    for name in (
        "errno",
        "strerror",
        "filename",
        "filename2",
        "name",
        "path",
        "lineno",
        "offset",
        "text",
        "msg",
        "code",
        "value",
        "encoding",
        "start",
        "end",
        "reason",
        "message",
    ):
        if hasattr(exc, name):
            fields[name] = repr(getattr(exc, name))
    if isinstance(exc, BaseExceptionGroup):
        fields["exceptions"] = [describe(e) for e in exc.exceptions]
    return (type(exc), repr(exc.args), str(exc), repr(vars(exc)), fields)


@pytest.mark.parametrize("cls", EXCEPTION_CLASSES, ids=lambda c: c.__name__)
def test_every_builtin_exception_round_trips_as_with_pickle(cls):
    exc = exception_of(cls)
    exc.detail = {"k": [1, 2]}
    exc.add_note("a note")
    back = roundtrip(exc)
    assert describe(back) == describe(std_roundtrip(exc)) == describe(exc)
    assert back.__notes__ == ["a note"]


def test_os_errors_keep_their_subclass_and_fields():
    exc = OSError(errno.ENOENT, "No such file", "a.txt")
    assert type(exc) is FileNotFoundError
    back = roundtrip(exc)
    assert type(back) is FileNotFoundError
    assert (back.errno, back.strerror, back.filename) == (errno.ENOENT, "No such file", "a.txt")
    blocked = BlockingIOError(errno.EAGAIN, "again", 5)
    assert roundtrip(blocked).characters_written == 5
    imp = ImportError("no module", name="m", path="/p")
    back = roundtrip(imp)
    assert (back.name, back.path, back.args) == ("m", "/p", ("no module",))


def raised_chain():
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ValueError("outer") from inner
    except ValueError as outer:
        return outer


def test_cause_context_suppress_and_notes():
    exc = raised_chain()
    back = roundtrip(exc)
    assert type(back.__cause__) is KeyError and back.__cause__.args == ("inner",)
    assert back.__context__ is back.__cause__ and back.__suppress_context__ is True
    assert back.__traceback__ is None
    implicit = ValueError("v")
    implicit.__context__ = TypeError("t")
    back = roundtrip(implicit)
    assert type(back.__context__) is TypeError and back.__suppress_context__ is False
    assert back.__cause__ is None


def test_exceptions_referring_to_each_other_in_cycles():
    a, b = ValueError("a"), KeyError("b")
    a.__context__ = b
    b.__context__ = a
    a.me = a
    back = roundtrip([a, b, a])
    x, y, z = back
    assert x is z and x.__context__ is y and y.__context__ is x and x.me is x
    # A chain that loops back through three exceptions and a list.
    c = TypeError("c")
    holder = [c]
    c.__cause__ = RuntimeError("r")
    c.__cause__.__context__ = c
    c.holder = holder
    back = roundtrip(holder)
    assert back[0].holder is back and back[0].__cause__.__context__ is back[0]


def test_exception_groups_with_their_nested_exceptions():
    inner = ValueError("inner")
    inner.__cause__ = KeyError("k")
    group = ExceptionGroup("outer", [inner, ExceptionGroup("nested", [TypeError("t")])])
    group.add_note("note")
    back = roundtrip(group)
    assert describe(back) == describe(std_roundtrip(group))
    assert back.exceptions[0].__cause__.args == ("k",)
    assert type(back.exceptions[1]) is ExceptionGroup and back.__notes__ == ["note"]
    split = back.split(TypeError)[0]
    assert type(split.exceptions[0].exceptions[0]) is TypeError
    # A nested exception whose context is its own group.
    member = ValueError("m")
    looped = ExceptionGroup("loop", [member])
    member.__context__ = looped
    back = roundtrip([looped, member])
    assert back[0].exceptions[0] is back[1] and back[1].__context__ is back[0]


def test_an_exception_inside_its_own_arguments():
    exc = ValueError()
    box = [exc]
    exc.args = (box,)
    back = roundtrip(exc)
    assert back.args[0][0] is back


def test_subclasses_of_builtin_types_without_a_record_are_refused_when_dumped():
    class Day(datetime.date):
        pass

    with pytest.raises(pickle.PicklingError, match="built-in type 'date'"):
        pickle.dumps(Day(2024, 1, 31))


# ---------------------------------------------------------------- builtin subclasses


def derived_values():
    tags = Tags(a=1, b=[2])
    tags.label = "t"
    row = Row([1, "x", None])
    row.label = "r"
    bag = Bag({1, 2, "x"})
    bag.label = "b"
    frozen = Frozen({3, 4})
    frozen.label = "f"
    coords = Coords((1.5, -2))
    coords.label = "c"
    name = Name("héllo \ud800")
    name.label = "n"
    blob = Blob(b"\x00\xff")
    blob.label = "bl"
    count = Count(2**100)
    count.label = "ct"
    small = Count(-5)
    ratio = Ratio(-0.0)
    ratio.label = "ra"
    slotted = Slotted([1])
    slotted.label = "s"
    return [tags, row, bag, frozen, coords, name, blob, count, small, ratio, slotted]


def same(a, b):
    """Equal values of the same type, with the same attributes."""
    attrs = lambda v: vars(v) if hasattr(v, "__dict__") else {}  # noqa: E731
    slots = lambda v: getattr(v, "label", None)  # noqa: E731
    if isinstance(a, float):
        return type(a) is type(b) and repr(a) == repr(b) and attrs(a) == attrs(b)
    return type(a) is type(b) and a == b and attrs(a) == attrs(b) and slots(a) == slots(b)


@pytest.mark.parametrize("value", derived_values(), ids=lambda v: type(v).__name__)
def test_builtin_subclasses_round_trip_as_with_pickle(value):
    back = roundtrip(value)
    assert same(back, value)
    assert same(std_roundtrip(value), back)


def test_shared_and_cyclic_builtin_subclasses():
    tags = Tags()
    tags["self"] = tags
    tags.me = tags
    row = Row()
    row.append(row)
    bag = Bag({1})
    value = [tags, row, bag, bag, tags]
    back = roundtrip(value)
    t, r, b1, b2, t2 = back
    assert t is t2 and t["self"] is t and t.me is t
    assert r[0] is r and b1 is b2 and type(b1) is Bag


def test_an_immutable_subclass_met_again_inside_itself():
    inner: list = []
    coords = Coords((inner, 1))
    inner.append(coords)
    coords.again = coords
    back = roundtrip(coords)
    assert type(back) is Coords and back[0][0] is back and back.again is back


def test_loading_runs_no_method_of_the_class_but_setstate_at_the_end():
    g = Guarded(a=1)
    g.note = "n"
    data = pickle.dumps([g, g])
    CALLS.clear()
    back = pickle.loads(data, classes=CLASSES)
    assert back[0] is back[1] and type(back[0]) is Guarded
    assert back[0] == {"a": 1} and back[0].note == "N"
    assert CALLS == ["__setstate__ 1"]


def test_a_subclass_must_be_registered_and_match_the_record():
    data = pickle.dumps(Tags(a=1))
    with pytest.raises(pickle.UnpicklingError, match=r"pass classes=\[Tags\]"):
        pickle.loads(data)
    wrong = {f"{__name__}.Tags": Row}
    with pytest.raises(pickle.UnpicklingError, match="holds a dict, but the class subclasses"):
        pickle.loads(data, classes=wrong)
    # An OBJECT record cannot become a builtin subclass.
    with pytest.raises(pickle.UnpicklingError, match="subclasses the built-in type 'dict'"):
        pickle.loads(pickle.dumps(Point(1)), classes={f"{__name__}.Point": Tags})


def test_deterministic_output_of_set_subclasses():
    a, b = Bag(), Bag()
    for x in ["x", "y", "z"]:
        a.add(x)
    for x in ["z", "y", "x"]:
        b.add(x)
    assert pickle.dumps(a, deterministic=True) == pickle.dumps(b, deterministic=True)


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=4), json_like, max_size=5), st.lists(json_like, max_size=5))
def test_hypothesis_dict_and_list_subclasses_agree_with_pickle(items, elements):
    tags, row = Tags(items), Row(elements)
    tags.row = row
    row.extend([tags, row])
    value = [tags, row]
    back = roundtrip(value)
    ref = std_roundtrip(value)
    assert type(back[0]) is type(ref[0]) is Tags and type(back[1]) is type(ref[1]) is Row
    assert back[0].row is back[1] and back[1][-1] is back[1] and back[1][-2] is back[0]
    assert dict(back[0]).keys() == dict(ref[0]).keys() and len(back[1]) == len(ref[1])


# ---------------------------------------------------------------- malformed records


def short(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 32
    return bytes([0x40 + len(data)]) + data


def named(tag: int, name: str) -> bytes:
    return bytes([tag, len(name)]) + name.encode()


def derived(cls: type, code: int) -> bytes:
    name = f"{cls.__module__}.{cls.__qualname__}".encode()
    return b"\xb5\x00" + bytes([len(name)]) + name + b"\x01\x00" + bytes([code])


NO_STATE = b"\x74\x90\x90\x90\x91"  # (None, None, None, False)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (named(0xB3, "nope"), "BUILTIN record: 'nope' is not in the builtins table"),
        (named(0xB3, "\xff"), "BUILTIN record at byte 0"),
        (named(0xB4, "int") + b"\x70" + NO_STATE, "'int' is not a builtin exception class"),
        (
            named(0xB4, "ValueError") + b"\x60" + NO_STATE,
            "arguments of an exception of class 'ValueError' must be",
        ),
        (named(0xB4, "ValueError") + b"\x70\x90", "state must be a tuple of 4"),
        (named(0xB4, "ValueError") + b"\x70\x74\x90\x01\x90\x91", "cause must be an exception"),
        (named(0xB4, "ValueError") + b"\x70\x74\x90\x90\x90\x01", "must be a bool"),
        (
            named(0xB4, "ValueError") + b"\x70\x74\x81" + short("__class__") + b"\x90\x90\x90\x91",
            "'__class__' is not allowed",
        ),
        (
            named(0xB4, "ExceptionGroup") + b"\x72\x41m\x60" + NO_STATE,
            "exception of class 'ExceptionGroup'",
        ),
        (derived(Tags, 2) + b"\x00\x80", "holds a list, but the class subclasses"),
        (derived(Coords, 5) + b"\x60\x80", "its value must be a tuple, not list"),
        (derived(Tags, 1) + b"\x00\x60", "its state must be a dict"),
        (derived(Tags, 1) + b"\x00\x81" + short("__dict__") + b"\x90", "bad field"),
        (derived(Tags, 16) + b"\x00\x80", "DERIVED record at byte 0: unknown builtin base code"),
        (b"\xb5\x00\x03m.X\x01\x01\x01x\x01\x00\x80", "class entry of this record has no fields"),
    ],
)
def test_malformed_records_name_the_record(body, match):
    with pytest.raises(pickle.UnpicklingError, match=match) as info:
        pickle.loads(record(body), classes=CLASSES)
    assert info.value.offset is not None


def all_kinds():
    exc = raised_chain()
    exc.add_note("n")
    tags = Tags(k=[1])
    tags["self"] = tags
    return [Point, int, NotImplemented, exc, tags, Coords((1, 2)), Name("s"), Count(3)]


def test_every_cut_of_a_record_is_an_eof_error():
    data = pickle.dumps(all_kinds())
    assert pickle.loads(data, classes=CLASSES)[3].__notes__ == ["n"]
    for cut in range(len(data)):
        with pytest.raises(EOFError):
            pickle.loads(data[:cut], classes=CLASSES)
    with pytest.raises(pickle.TruncatedError):
        pickle.loads(b"")


def test_every_flipped_byte_is_an_unpickling_error_or_a_value():
    data = pickle.dumps(all_kinds())
    for i in range(5, len(data)):
        for flip in (0x01, 0x10, 0x80, 0xFF):
            changed = bytearray(data)
            changed[i] ^= flip
            try:
                pickle.loads(bytes(changed), classes=CLASSES)
            except pickle.UnpicklingError:
                pass


def test_explain_walks_the_new_records():
    ex = pickle.explain(pickle.dumps(all_kinds()), classes=CLASSES)
    assert ex.ok
    nodes = ex["records[0].body"].children
    kinds = [n.kind for n in nodes]
    assert kinds[:4] == ["class", "builtin", "builtin", "exception ValueError"]
    assert kinds[4] == f"{__name__}.Tags (dict subclass)"
    assert [n.value for n in nodes[:3]] == [Point, int, NotImplemented]
