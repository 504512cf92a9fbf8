"""loads_pickle builds what pickle.loads builds, for every supported type and protocol."""

import collections
import math
import pathlib
import pickle
import pickletools

import pytest
from bytewright.pickle import UnpicklingError, loads, loads_pickle
from reader_values import (
    BUILTIN_VALUES,
    CLASS_VALUES,
    CLASSES,
    Color,
    Pair,
    Plain,
    Point,
    protocols_for,
    std_dumps,
)

PROTOCOLS = range(6)


def same(a, b):
    """Equal with the same type all the way down (and NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (a != a and b != b)
    if isinstance(a, list | tuple | collections.deque):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and not isinstance(a, type) and type(a).__eq__ is object.__eq__:
        return vars(a) == vars(b)
    return a == b or (a != a and b != b)


def cases(values):
    return [
        pytest.param(value, proto, id=f"{name}-p{proto}")
        for name, value in values.items()
        for proto in protocols_for(value)
    ]


@pytest.mark.parametrize(("value", "proto"), cases(BUILTIN_VALUES))
def test_builtin_types_every_protocol(value, proto):
    data = pickle.dumps(value, proto)
    got = loads_pickle(data)
    assert same(got, pickle.loads(data))
    assert same(got, value)


@pytest.mark.parametrize(("value", "proto"), cases(CLASS_VALUES))
def test_registered_classes_every_protocol(value, proto):
    data = pickle.dumps(value, proto)
    got = loads_pickle(data, classes=CLASSES)
    assert type(got) is type(value)
    assert same(got, pickle.loads(data))


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_enum_members_are_the_members(proto):
    assert loads_pickle(pickle.dumps(Color.RED, proto), classes=[Color]) is Color.RED


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_defaultdict_keeps_its_factory(proto):
    d = collections.defaultdict(list, {"a": [1]})
    got = loads_pickle(pickle.dumps(d, proto))
    assert got.default_factory is list
    got["new"].append(1)
    assert got["new"] == [1]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_deque_maxlen(proto):
    got = loads_pickle(pickle.dumps(collections.deque([1, 2, 3], maxlen=3), proto))
    assert got.maxlen == 3 and list(got) == [1, 2, 3]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_shared_references_stay_shared(proto):
    inner = [1, 2]
    s = "shared string"
    p = Point(1, 2)
    value = {"a": inner, "b": inner, "t": (inner, inner), "s": [s, s], "p": [p, p]}
    got = loads_pickle(pickle.dumps(value, proto), classes=[Point])
    assert got["a"] is got["b"] is got["t"][0] is got["t"][1]
    assert got["p"][0] is got["p"][1]
    assert got["s"][0] is got["s"][1]


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_cycles_through_lists_dicts_and_objects(proto):
    a: list = [1]
    a.append(a)
    d: dict = {}
    d["self"] = d
    obj = Plain()
    obj.me = obj
    t = ([],)
    t[0].append(t)
    got = loads_pickle(pickle.dumps([a, d, obj, t], proto), classes=[Plain])
    ga, gd, gobj, gt = got
    assert ga[1] is ga
    assert gd["self"] is gd
    assert gobj.me is gobj
    assert gt[0][0] is gt


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_memo_heavy_payload(proto):
    keys = [f"key{i}" for i in range(300)]
    rows = [dict.fromkeys(keys, i) for i in range(5)]
    data = pickle.dumps(rows, proto)
    ops = {op.name for op, _, _ in pickletools.genops(data)}
    assert ops & {"GET", "BINGET", "LONG_BINGET"}
    assert loads_pickle(data) == rows


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_named_tuple_with_nested_values(proto):
    value = Pair(Point(1), [Pair(2)])
    got = loads_pickle(pickle.dumps(value, proto), classes=[Pair, Point])
    assert got == value and type(got.right[0]) is Pair


def test_classes_as_a_mapping_and_the_real_class_comes_back():
    name = f"{Point.__module__}.{Point.__qualname__}"
    got = loads_pickle(pickle.dumps(Point(3, 4)), classes={name: Point})
    assert isinstance(got, Point) and got == Point(3, 4)


def test_setstate_of_a_registered_class_runs_and_init_does_not():
    calls = []

    class Noisy:
        def __init__(self):
            calls.append("init")
            self.x = 1

        def __setstate__(self, state):
            calls.append("setstate")
            self.__dict__.update(state)

    Noisy.__qualname__ = "Noisy"
    globals()["Noisy"] = Noisy
    try:
        data = pickle.dumps(Noisy())
        calls.clear()
        got = loads_pickle(data, classes=[Noisy])
    finally:
        del globals()["Noisy"]
    assert calls == ["setstate"] and got.x == 1  # as pickle.loads does


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_fields_go_into_the_instance_dict_never_through_a_descriptor(proto):
    import dataclasses

    calls = []

    @dataclasses.dataclass
    class Guarded:
        x: int = 0
        y: int = 0

    # A data descriptor named like a field: pickle writes the instance dict, not through it.
    Guarded.x = property(lambda self: self.__dict__["x"], lambda self, v: calls.append(v))
    Guarded.__qualname__ = "Guarded"
    globals()["Guarded"] = Guarded
    try:
        obj = object.__new__(Guarded)
        obj.__dict__.update(x=1, y=2)
        data = pickle.dumps([obj, obj, Guarded.__new__(Guarded)], proto)
        got = loads_pickle(data, classes=[Guarded])
    finally:
        del globals()["Guarded"]
    assert calls == []
    assert got[0] is got[1] and got[0].__dict__ == {"x": 1, "y": 2} and got[0].x == 1


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_many_instances_share_field_names_and_stay_apart(proto):
    values = [Point(i, -i) for i in range(50)]
    got = loads_pickle(pickle.dumps(values, proto), classes=[Point])
    assert got == values and len({id(p) for p in got}) == 50


def test_allow_names_an_extra_constructor():
    data = pickle.dumps(collections.ChainMap({"a": 1}))
    with pytest.raises(UnpicklingError, match=r"collections\.ChainMap"):
        loads_pickle(data)
    # ChainMap pickles through copyreg; a simpler trusted constructor shows allow=:
    data = b"cmath\nhypot\n(K\x03K\x04tR."
    with pytest.raises(UnpicklingError, match=r"allow=\[math.hypot\]"):
        loads_pickle(data)
    import math as m

    assert loads_pickle(data, allow=[m.hypot]) == 5.0
    assert loads_pickle(data, allow={"math.hypot": m.hypot}) == 5.0


def test_inputs_bytes_like_and_file(tmp_path):
    data = pickle.dumps({"x": [1, 2]})
    assert loads_pickle(bytearray(data)) == {"x": [1, 2]}
    assert loads_pickle(memoryview(data)) == {"x": [1, 2]}
    # A slice of a larger message is read in place, and leaves no export behind.
    message = b"head" + data + b"tail"
    whole = memoryview(message)
    assert loads_pickle(whole[4 : 4 + len(data)]) == {"x": [1, 2]}
    whole.release()
    path = tmp_path / "f.pkl"
    path.write_bytes(data)
    from bytewright.pickle import load_pickle

    with open(path, "rb") as f:
        assert load_pickle(f) == {"x": [1, 2]}
    with pytest.raises(TypeError):
        loads_pickle("not bytes")


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bytewright_loads_points_to_loads_pickle(proto):
    with pytest.raises(UnpicklingError, match="loads_pickle"):
        loads(pickle.dumps([1, 2], proto))


def test_load_pickle_reads_one_pickle_at_a_time(tmp_path):
    path = tmp_path / "many.pkl"
    with open(path, "wb") as f:
        for i in range(3):
            pickle.dump({"record": i}, f, protocol=i * 2)
    from bytewright.pickle import load_pickle

    with open(path, "rb") as f:
        assert [load_pickle(f) for _ in range(3)] == [{"record": i} for i in range(3)]
        with pytest.raises(EOFError):
            load_pickle(f)


def test_inst_then_put_memoizes_the_instance():
    # Python 2 style: INST of a registered class (no arguments), its memo entry fetched
    # again, then BUILD. Both list items are the one instance.
    cls = f"{Plain.__module__}\n{Plain.__qualname__}\n".encode()
    data = b"(lp0\n(i" + cls + b"p1\n(dp2\nVa\np3\nI5\nsbag1\na."
    got = loads_pickle(data, classes=[Plain])
    assert got[0] is got[1] and type(got[0]) is Plain and got[0].a == 5


@pytest.mark.parametrize("module", ["pathlib", "pathlib._local"])
def test_pathlib_classes_under_the_module_python_3_13_names(module):
    """CPython 3.13 defines the pathlib classes in pathlib._local, and its pickles say so."""
    for name in ("PurePosixPath", "PureWindowsPath"):
        data = f"c{module}\n{name}\n(Va/b\ntR.".encode()
        value = loads_pickle(data)
        assert type(value) is getattr(pathlib, name)
        assert value == getattr(pathlib, name)("a/b")


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_types_exception_classes_and_constants_as_values(proto):
    import builtins

    exceptions = [
        v for v in vars(builtins).values() if isinstance(v, type) and issubclass(v, BaseException)
    ]
    values = [
        int,
        str,
        type,
        object,
        range,
        slice,
        NotImplemented,
        Ellipsis,
        (int, bytes),
        {"error": KeyError, "types": [dict, frozenset]},
        *exceptions,
    ]
    for value in values:
        data = pickle.dumps(value, proto)
        assert loads_pickle(data) == pickle.loads(data)
        # Protocols 0-2 write some classes by the Python 2 name of their base (OSError).
        assert loads_pickle(data) == value or proto < 3


def test_a_value_global_is_never_called():
    with pytest.raises(UnpicklingError, match="REDUCE"):
        loads_pickle(b"cbuiltins\nNotImplemented\n(Vx\ntR.")
    with pytest.raises(UnpicklingError, match="REDUCE"):
        loads_pickle(b"cbuiltins\ntype\n(Vx\nVy\ntR.")  # type(x) only, as type(None)
    assert loads_pickle(b"cbuiltins\ntype\n(NtR.") is type(None)
    # Python 2 module names are read as Python 3's, like pickle.loads does.
    assert loads_pickle(b"cexceptions\nStandardError\n.") is Exception
    assert loads_pickle(b"c__builtin__\nunicode\n.") is str


def exception_values():
    noted = ValueError("with a note", 3)
    noted.add_note("a note")
    noted.extra = {"k": [1, 2]}
    return [
        ValueError("bad", 1),
        KeyError("k"),
        OSError(2, "No such file", "/x"),
        FileNotFoundError(2, "gone"),
        UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
        StopIteration(5),
        SystemExit(3),
        noted,
        [ValueError("shared")] * 2,
    ]


def same_exception(a, b):
    if isinstance(a, list):
        return [type(x) for x in a] == [type(x) for x in b] and all(
            same_exception(x, y) for x, y in zip(a, b, strict=True)
        )
    return type(a) is type(b) and a.args == b.args and vars(a) == vars(b)


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_builtin_exception_instances(proto):
    for value in exception_values():
        data = std_dumps(value, proto)
        got = loads_pickle(data)
        assert same_exception(got, pickle.loads(data))
        if proto >= 3:
            assert same_exception(got, value)
    shared = loads_pickle(std_dumps([ValueError("s")] * 2, proto))
    assert shared[0] is shared[1]


def test_exception_states_that_could_run_code_are_refused():
    state = b"cbuiltins\nValueError\n(Vx\ntR(dV__class__\ncbuiltins\nKeyError\nsb."
    with pytest.raises(UnpicklingError, match="__class__"):
        loads_pickle(state)


@pytest.mark.parametrize("proto", range(6))
def test_python2_names_are_mapped_at_protocols_0_to_2_only(proto):
    # pickle's fix_imports: a stream of protocol 3 and up names Python 3 modules only.
    data = (b"\x80" + bytes([proto]) if proto >= 2 else b"") + b"c__builtin__\nlist\n."
    if proto < 3:
        assert loads_pickle(data) is pickle.loads(data) is list
    else:
        with pytest.raises(ImportError):
            pickle.loads(data)
        with pytest.raises(UnpicklingError, match="__builtin__"):
            loads_pickle(data)
