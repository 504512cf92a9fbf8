"""`bytewright.pickle.dumps` of dicts whose tables have holes, non-str keys, split tables,
and dicts changed while they are written: the same pairs, in the same order, as a fresh
copy of the dict (the walker reads a combined table in place on CPython 3.11)."""

import pytest
from bytewright import pickle


def fresh(d):
    """A compact copy of `d` with new str keys (so no key gains a second owner)."""
    return {k.encode().decode() if type(k) is str else k: v for k, v in d.items()}


def test_deleted_str_keys_are_skipped_and_order_kept():
    d = {f"k{i}": i for i in range(12)}
    for k in ("k0", "k5", "k11"):
        del d[k]
    n = 5
    d[f"k{n}"] = "again"  # appended after the holes (a key of its own, not a constant)
    data = pickle.dumps(d)
    assert data == pickle.dumps(fresh(d))
    back = pickle.loads(data)
    assert back == d and list(back) == list(d)


@pytest.mark.parametrize("keys", [list(range(-3, 9)), [1, "a", 2.5, None, (1, 2), b"x", True]])
def test_deleted_keys_of_a_general_table(keys):
    d = {k: i for i, k in enumerate(keys)}
    del d[keys[0]]
    del d[keys[-2]]
    data = pickle.dumps(d)
    assert data == pickle.dumps(fresh(d))
    back = pickle.loads(data)
    assert back == d and list(back) == list(d)


def test_a_dict_emptied_by_deletion():
    d = {"a": 1, 2: 2}
    del d["a"], d[2]
    assert pickle.dumps(d) == pickle.dumps({})


class Slotless:
    pass


def test_an_instance_dict_with_a_split_table():
    objs = [Slotless() for _ in range(3)]
    for i, o in enumerate(objs):
        o.a, o.b, o.c = i, str(i), [i]
    state = vars(objs[1])
    back = pickle.loads(pickle.dumps(state))
    assert back == {"a": 1, "b": "1", "c": [1]} and list(back) == ["a", "b", "c"]


class Grower:
    """Adds keys to the dict that holds it while it is written."""

    target: dict = {}

    def __getstate__(self):
        for i in range(100):
            Grower.target[f"new{i}"] = i
        return {}


class Shrinker:
    """Removes every key of the dict that holds it while it is written."""

    target: dict = {}

    def __getstate__(self):
        Shrinker.target.clear()
        return {}


@pytest.mark.parametrize("cls", [Grower, Shrinker])
def test_a_dict_changed_while_written_is_refused(cls):
    d = {"a": 1, "x": cls(), "z": [3]}
    cls.target = d
    with pytest.raises(pickle.PicklingError, match="dict changed size during pickling"):
        pickle.dumps(d)


def test_a_split_table_with_a_deleted_and_readded_attribute():
    objs = [Slotless() for _ in range(2)]
    for o in objs:
        o.a, o.b, o.c = 1, 2, 3
    del objs[0].b
    objs[0].b = "back"
    back = pickle.loads(pickle.dumps(vars(objs[0])))
    assert back == {"a": 1, "c": 3, "b": "back"} and list(back) == ["a", "c", "b"]
    assert list(pickle.loads(pickle.dumps(vars(objs[1])))) == ["a", "b", "c"]
