"""`loads` and `loads_pickle` take their arguments like Python functions do.

Both parse the vectorcall arguments themselves (no general argument machinery), so the
usual argument errors are checked here, as is a load nested inside another load.
"""

import dataclasses
import inspect
import io
import pickle as std_pickle
import subprocess
import sys

import pytest
from bytewright import pickle
from hypothesis import given, settings
from hypothesis import strategies as st

PAYLOAD = pickle.dumps({"a": [1, 2.5, "x"]})
STD_PAYLOAD = std_pickle.dumps({"a": [1, 2.5, "x"]}, protocol=5)


@pytest.mark.parametrize(
    ("load", "data", "keyword"),
    [(pickle.loads, PAYLOAD, "hmac_key"), (pickle.loads_pickle, STD_PAYLOAD, "allow")],
    ids=["loads", "loads_pickle"],
)
def test_arguments_are_checked_like_a_python_function(load, data, keyword):
    expected = {"a": [1, 2.5, "x"]}
    assert load(data) == expected
    assert load(data=data) == expected
    assert load(data, classes=None, limits=None, **{keyword: None}) == expected
    assert load(data, **{"clas" + "ses": ()}) == expected  # a keyword built at run time
    with pytest.raises(TypeError, match="missing required argument 'data'"):
        load()
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        load(data, data)
    with pytest.raises(TypeError, match="unexpected keyword argument 'clases'"):
        load(data, clases=())
    with pytest.raises(TypeError, match="multiple values for argument 'data'"):
        load(data, data=data)
    with pytest.raises(TypeError):
        load(data, limits=5)


@dataclasses.dataclass
class Box:
    __bytewright_version__ = 2
    inner: object


def test_a_load_nested_in_a_migration_gets_its_own_working_storage():
    inner = pickle.dumps([list(range(40)), {"k": "v"}] * 3)

    @dataclasses.dataclass
    class OldBox:
        inner: object

    OldBox.__module__, OldBox.__qualname__ = Box.__module__, "Box"
    old = pickle.dumps([OldBox(inner="see payload"), list(range(100)), "after"])

    @pickle.migrate(Box, from_version=1, to_version=2)
    def upgrade(fields):
        return {"inner": pickle.loads(inner)}

    back = pickle.loads(old, classes=[Box])
    assert back == [Box(inner=[list(range(40)), {"k": "v"}] * 3), list(range(100)), "after"]


def test_native_functions_import_what_they_need_on_first_use():
    """The native module imports the Python objects it uses by name (nothing is configured
    from Python), so it works whichever module a process imports first."""
    code = (
        "from bytewright import _native\n"
        "import pickle, datetime\n"
        "value = {'a': [1, 2.5, 'x'], 'when': datetime.date(2024, 5, 6)}\n"
        "assert _native.pickle_loads(_native.pickle_dumps(value)) == value\n"
        "assert _native.loads_pickle(pickle.dumps(value)) == value\n"
        "assert _native.check_pickle(pickle.dumps(len)) is not None\n"
        "try:\n"
        "    _native.pickle_loads(b'not a record')\n"
        "except Exception as exc:\n"
        "    from bytewright.pickle import UnpicklingError\n"
        "    assert isinstance(exc, UnpicklingError), exc\n"
        "else:\n"
        "    raise AssertionError('accepted')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_dumps_arguments_are_checked_like_a_python_function():
    value = {"a": [1, 2.5, "x"]}
    expected = pickle.dumps(value)
    assert pickle.dumps(obj=value) == expected
    assert pickle.dumps(value, 5) == pickle.dumps(value, protocol=None) == expected
    assert pickle.dumps(value, None, hmac_key=None, deterministic=False) == expected
    built = {"determin" + "istic": True}  # a keyword built at run time
    assert pickle.dumps(value, **built) == pickle.dumps(value, deterministic=True)
    with pytest.raises(TypeError, match="missing required argument 'obj'"):
        pickle.dumps()
    with pytest.raises(TypeError, match="takes from 1 to 2 positional arguments but 3 were"):
        pickle.dumps(value, 5, 5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'hmac'"):
        pickle.dumps(value, hmac=b"k")
    with pytest.raises(TypeError, match="multiple values for argument 'protocol'"):
        pickle.dumps(value, 5, protocol=5)
    with pytest.raises(TypeError, match="deterministic must be a bool, not str"):
        pickle.dumps(value, deterministic="yes")
    with pytest.raises(TypeError, match="hmac_key must be bytes-like"):
        pickle.dumps(value, hmac_key="key")
    assert str(inspect.signature(pickle.dumps)) == (
        "(obj, protocol=None, *, hmac_key=None, deterministic=False)"
    )


_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(), st.binary())
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.text(max_size=5), inner, max_size=5),
        st.tuples(inner, inner),
        inner.map(lambda shared: [shared, shared]),  # the same object twice
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(_VALUES, st.booleans(), st.sampled_from([None, b"k"]))
def test_every_way_of_calling_dumps_writes_the_same_bytes(value, det, key):
    expected = pickle.dumps(value, hmac_key=key, deterministic=det)
    assert pickle.dumps(value, 5, hmac_key=key, deterministic=det) == expected
    assert pickle.dumps(obj=value, protocol=None, deterministic=det, hmac_key=key) == expected
    if det:  # (without it, sharing follows reference counts, which the wrapper raises)
        stream = io.BytesIO()
        pickle.Pickler(stream, hmac_key=key, deterministic=det).dump(value)
        assert stream.getvalue() == expected
