"""`bytewright.pickle`: registered subclasses of the builtin exceptions, `OrderedDict`,
`defaultdict`, `bytearray` and `complex`, and defaultdicts whose factory is any class,
compared with what `pickle` gives (type, items, state, sharing and cycles)."""

import collections
import errno
import io
import pickle as std_pickle

import pytest
from bytewright import pickle
from hypothesis import given, settings
from hypothesis import strategies as st
from records import record

# ---------------------------------------------------------------- classes of the tests


class AppError(ValueError):
    """No hooks: pickle calls the class with its args, then sets its __dict__."""


class CodeError(Exception):
    """An __init__ whose signature differs from its args (pickle calls it with the args)."""

    def __init__(self, code):
        super().__init__(f"error {code}")
        self.code = code


class PairError(Exception):
    """An __init__ that pickle cannot call with the args it wrote (a TypeError)."""

    def __init__(self, a, b):
        super().__init__(a)
        self.b = b


class FileError(OSError):
    pass


class Reduced(RuntimeError):
    """Its own __reduce__ and __setstate__, whose state is not a dict."""

    def __init__(self, text, level=0):
        super().__init__(text)
        self.level = level

    def __reduce__(self):
        return (type(self), (self.args[0],), ("level", self.level))

    def __setstate__(self, state):
        CALLS.append(f"__setstate__ {state!r}")
        self.level = state[1]


class Grouped(ExceptionGroup):
    pass


class Ordered(collections.OrderedDict):
    pass


class Tally(collections.defaultdict):
    pass


class Buffer(bytearray):
    pass


class Phase(complex):
    pass


class Factory:
    """A registered class used as a defaultdict's factory."""


CALLS: list[str] = []


class Watched(Exception):
    """Records when its code runs."""

    def __init__(self, *args):
        CALLS.append(f"__init__ {args!r}")
        super().__init__(*args)


class WatchedOrdered(collections.OrderedDict):
    def __init__(self, *a, **kw):
        CALLS.append("__init__")
        super().__init__(*a, **kw)

    def __setitem__(self, key, value):
        CALLS.append("__setitem__")
        super().__setitem__(key, value)


CLASSES = [
    AppError,
    CodeError,
    PairError,
    FileError,
    Reduced,
    Grouped,
    Ordered,
    Tally,
    Buffer,
    Phase,
    Factory,
    Watched,
    WatchedOrdered,
]


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


def exception_facts(exc):
    """What pickle keeps of an exception: its type, args, str and attributes."""
    fields = {
        name: repr(getattr(exc, name))
        for name in ("errno", "strerror", "filename", "filename2", "code", "b", "level")
        if hasattr(exc, name)
    }
    if isinstance(exc, BaseExceptionGroup):
        fields["exceptions"] = [exception_facts(e) for e in exc.exceptions]
    return (type(exc), repr(exc.args), str(exc), repr(vars(exc)), fields)


# ---------------------------------------------------------------- exceptions of yours


def exceptions():
    app = AppError("bad value", 3)
    app.field = {"k": [1]}
    app.add_note("while parsing")
    file_error = FileError(errno.ENOENT, "No such file", "a.txt")
    grouped = Grouped("two", [ValueError(1), AppError("x")])
    return [app, CodeError(5), file_error, Reduced("r", 2), grouped, AppError()]


@pytest.mark.parametrize("exc", exceptions(), ids=lambda e: type(e).__name__)
def test_exceptions_of_yours_round_trip_as_with_pickle(exc):
    back = roundtrip(exc)
    assert exception_facts(back) == exception_facts(std_roundtrip(exc))


def test_init_runs_with_the_args_as_pickle_calls_it():
    back = roundtrip(CodeError(5))
    # pickle calls CodeError("error 5"), whose __init__ makes the args "error error 5";
    # the state then gives back code 5.
    assert back.args == ("error error 5",) == std_roundtrip(CodeError(5)).args
    assert back.code == 5


def test_an_init_that_cannot_take_its_args_fails_as_with_pickle():
    exc = PairError("a", "b")
    with pytest.raises(TypeError):
        std_roundtrip(exc)
    with pytest.raises(pickle.UnpicklingError, match=r"its __init__ and __setstate__") as info:
        roundtrip(exc)
    assert isinstance(info.value, TypeError)


def test_cause_context_and_cycles_of_exceptions_of_yours():
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise AppError("outer") from inner
    except AppError as outer:
        exc = outer
    exc.me = exc
    holder = [exc, exc]
    exc.holder = holder
    back = roundtrip(holder)
    assert back[0] is back[1] and back[0].me is back[0] and back[0].holder is back
    assert type(back[0].__cause__) is KeyError and back[0].__suppress_context__ is True
    # Two exceptions of yours, each the other's context.
    a, b = AppError("a"), CodeError(1)
    a.__context__, b.__context__ = b, a
    x, y = roundtrip([a, b])
    assert x.__context__ is y and y.__context__ is x


def test_code_of_yours_runs_only_after_the_whole_record_is_read():
    exc = Watched("w")
    data = pickle.dumps([exc, exc])
    CALLS.clear()
    back = pickle.loads(data, classes=CLASSES)
    assert back[0] is back[1] and CALLS == ["__init__ ('w',)"]
    # A record that turns out to be bad runs nothing of yours.
    CALLS.clear()
    bad = pickle.dumps([exc, Ordered()])
    with pytest.raises(pickle.UnpicklingError, match=r"pass classes=\[Ordered\]"):
        pickle.loads(bad, classes=[Watched])
    assert CALLS == []
    CALLS.clear()
    back = roundtrip(Reduced("r", 4))
    assert back.level == 4 and CALLS == ["__setstate__ ('level', 4)"]


def test_an_exception_class_of_yours_as_a_value_and_unregistered():
    back = roundtrip([AppError, AppError("x")])
    assert back[0] is AppError and type(back[1]) is AppError
    with pytest.raises(pickle.UnpicklingError, match=r"pass classes=\[AppError\]"):
        pickle.loads(pickle.dumps(AppError("x")))


def test_a_reduction_that_does_not_call_the_class_is_refused():
    class Elsewhere(Exception):
        def __reduce__(self):
            return (ValueError, ("x",))

    with pytest.raises(pickle.PicklingError, match="its __reduce_ex__ must give"):
        pickle.dumps(Elsewhere())


# ---------------------------------------------------------------- mappings and values


def mapping_values():
    ordered = Ordered(a=1, b=[2], c=None)
    ordered.move_to_end("a")
    ordered.label = "o"
    tally = Tally(list, a=[1])
    tally.label = "t"
    factory = Tally(Factory, k=[1])
    nothing = Tally(None)
    buffer = Buffer(b"\x00\xff data")
    buffer.label = "b"
    phase = Phase(1.5, -0.0)
    phase.label = "p"
    return [ordered, tally, factory, nothing, buffer, phase, Buffer(), Phase()]


def facts(value):
    items = list(value.items()) if isinstance(value, dict) else value
    factory = getattr(value, "default_factory", "-")
    return (type(value), repr(items), factory, getattr(value, "__dict__", {}).get("label"))


@pytest.mark.parametrize("value", mapping_values(), ids=lambda v: type(v).__name__)
def test_subclasses_round_trip_as_with_pickle(value):
    back = roundtrip(value)
    ref = std_roundtrip(value)
    assert facts(back)[:3] == facts(ref)[:3] == facts(value)[:3]
    # pickle drops a defaultdict subclass's attributes; bytewright.pickle keeps them.
    assert facts(back) == facts(value)
    if not isinstance(value, collections.defaultdict):
        assert facts(ref) == facts(value)


def test_ordered_dict_subclasses_keep_their_own_order_and_cycles():
    ordered = Ordered(a=1, b=2, c=3)
    ordered.move_to_end("a")
    ordered.move_to_end("c", last=False)
    ordered["self"] = ordered
    ordered.me = ordered
    back = roundtrip([ordered, ordered])
    assert back[0] is back[1] and list(back[0]) == ["c", "b", "a", "self"]
    assert back[0]["self"] is back[0] and back[0].me is back[0]
    back[0].move_to_end("c")  # its linked order is intact
    assert list(back[0]) == ["b", "a", "self", "c"]


def test_loading_an_ordered_dict_subclass_runs_none_of_its_methods():
    w = WatchedOrdered(a=1)
    data = pickle.dumps(w)
    CALLS.clear()
    back = pickle.loads(data, classes=CLASSES)
    assert type(back) is WatchedOrdered and back == {"a": 1} and CALLS == []


def test_defaultdicts_whose_factory_is_any_class():
    plain = collections.defaultdict(Factory)
    plain["made"]
    tree = collections.defaultdict(collections.Counter, a=collections.Counter("ab"))
    table = [plain, collections.defaultdict(object), collections.defaultdict(Ordered), tree]
    for value in table:
        back = roundtrip(value)
        assert type(back) is collections.defaultdict
        assert back.default_factory is value.default_factory
        assert list(back) == list(value)
    assert std_roundtrip(table)[0].default_factory is Factory
    # Cycles through a defaultdict with a factory value, and the factory shared.
    loop = collections.defaultdict(Factory)
    loop["self"] = loop
    tally = Tally(Factory)
    tally["loop"] = loop
    back = roundtrip([loop, tally])
    assert back[0]["self"] is back[0] and back[1]["loop"] is back[0]
    assert back[0].default_factory is Factory is back[1].default_factory
    # The factory class must be registered to load.
    with pytest.raises(pickle.UnpicklingError, match=r"pass classes=\[Factory\]"):
        pickle.loads(pickle.dumps(loop))


def test_factories_that_are_not_classes_are_refused():
    with pytest.raises(pickle.PicklingError, match="default_factory is <function"):
        pickle.dumps(collections.defaultdict(lambda: 0))
    with pytest.raises(pickle.PicklingError, match="whose default_factory is"):
        pickle.dumps(Tally(lambda: 0))


def test_deterministic_output_of_the_new_records():
    value = [Ordered(a=1), Tally(Factory, b=2), Buffer(b"x"), Phase(1), AppError("e")]
    assert pickle.dumps(value, deterministic=True) == pickle.dumps(value, deterministic=True)


keys = st.text(max_size=4)
leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | keys


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(keys, leaves), max_size=6),
    st.lists(keys, max_size=3),
    st.binary(max_size=20),
    st.sampled_from([None, list, int, Factory, Ordered]),
    st.tuples(keys, st.integers()),
)
def test_hypothesis_subclasses_agree_with_pickle(pairs, moves, data, factory, args):
    ordered = Ordered(pairs)
    for key in moves:
        if key in ordered:
            ordered.move_to_end(key)
    tally = Tally(factory, pairs)
    tally["ordered"] = ordered
    exc = AppError(*args)
    exc.ordered = ordered
    value = [ordered, tally, Buffer(data), exc]
    back = roundtrip(value)
    ref = std_roundtrip(value)
    assert [facts(v)[:3] for v in back[:3]] == [facts(v)[:3] for v in ref[:3]]
    assert back[1]["ordered"] is back[0] and back[3].ordered is back[0]
    assert exception_facts(back[3])[:3] == exception_facts(ref[3])[:3]


# ---------------------------------------------------------------- malformed records


def short(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 32
    return bytes([0x40 + len(data)]) + data


def derived(cls: type, code: int) -> bytes:
    name = f"{cls.__module__}.{cls.__qualname__}".encode()
    return b"\xb5\x00" + bytes([len(name)]) + name + b"\x01\x00" + bytes([code])


def class_value(cls: type) -> bytes:
    name = f"{cls.__module__}.{cls.__qualname__}".encode()
    return b"\xb2\x00" + bytes([len(name)]) + name + b"\x01\x00"


NO_STATE = b"\x74\x90\x90\x90\x91"  # (None, None, None, False)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (derived(AppError, 14) + b"\x60" + NO_STATE, "arguments of an exception of class"),
        (derived(AppError, 14) + b"\x70\x80", "state must be a tuple of 4"),
        (derived(AppError, 14) + b"\x70\x74\x90\x01\x90\x91", "cause must be an exception"),
        (derived(AppError, 14) + b"\x70\x74\x90\x90\x90\x01", "must be a bool"),
        (derived(AppError, 14) + b"\x70\x74\x60\x90\x90\x91", "attributes must be a dict"),
        (
            derived(AppError, 14) + b"\x70\x74\x81" + short("__class__") + b"\x90\x90\x90\x91",
            "'__class__' is not allowed",
        ),
        (derived(Ordered, 14) + b"\x70" + NO_STATE, "holds a exception, but the class"),
        (derived(AppError, 12) + b"\x00\x80", "holds a OrderedDict, but the class"),
        (derived(Buffer, 10) + b"\x9f\x00\x80", "its value must be a bytearray, not bytes"),
        (derived(Phase, 11) + b"\x9a" + bytes(8) + b"\x80", "must be a complex, not float"),
        (derived(Tally, 13) + b"\x40\x00\x80", "unknown defaultdict factory code 64"),
        (derived(Tally, 13) + b"\xff\x00\x01\x80", "factory must be None or a class, not int"),
        (b"\xad\xff\x00\x60", "factory must be None or a class, not list"),
        (b"\xad\x40\x00", "unknown defaultdict factory code 64"),
        (derived(Ordered, 12) + b"\x01\x41a\x01\x60", "its state must be a dict"),
        (derived(Ordered, 16) + b"\x00\x80", "DERIVED record at byte 0: unknown builtin base code"),
    ],
)
def test_malformed_records_name_the_record(body, match):
    CALLS.clear()
    with pytest.raises(pickle.UnpicklingError, match=match) as info:
        pickle.loads(record(body), classes=CLASSES)
    assert info.value.offset is not None and CALLS == []


def all_kinds():
    exc = CodeError(7)
    exc.add_note("n")
    ordered = Ordered(a=1)
    ordered["self"] = ordered
    plain = collections.defaultdict(Factory, k=1)
    return [exc, ordered, Tally(int, a=1), plain, Buffer(b"b"), Phase(1j), Watched("w")]


def test_every_cut_of_a_record_is_an_eof_error_and_runs_nothing():
    data = pickle.dumps(all_kinds())
    assert pickle.loads(data, classes=CLASSES)[0].__notes__ == ["n"]
    for cut in range(len(data)):
        CALLS.clear()
        with pytest.raises(EOFError):
            pickle.loads(data[:cut], classes=CLASSES)
        assert CALLS == []


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
    kinds = [n.kind for n in ex["records[0].body"].children]
    assert kinds[0] == f"{__name__}.CodeError (exception subclass)"
    assert kinds[1] == f"{__name__}.Ordered (OrderedDict subclass)"
    assert kinds[2] == f"{__name__}.Tally (defaultdict subclass)"
    assert kinds[3] == "defaultdict"
    assert kinds[4:6] == [
        f"{__name__}.Buffer (bytearray subclass)",
        f"{__name__}.Phase (complex subclass)",
    ]
