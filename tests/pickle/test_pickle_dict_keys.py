"""Short dict keys are kept from one `loads` to the next (docs/pickle.md, "Dict keys").

In a small record (body of at most 1,024 bytes), a str key of at most 24 UTF-8 bytes, in a
dict of at most 256 entries, is taken from a small table of keys that earlier calls made;
the value is the same as without the table, and equal keys may be the same object. Every
case is also checked against the general builder, which does not use the table (forced
here by `general()`, as in test_pickle_small_records).
"""

import pytest
from bytewright import pickle
from records import record
from test_pickle_small_records import general, outcome

KEYS = ["a", "id", "name", "é", "日本", "k" * 24, "k" * 25, "x" * 31, "", "key with spaces"]


def both(data: bytes):
    """The value through the one-pass builder and through the general builder."""
    return pickle.loads(data), pickle.loads(data, limits=general(data))


@pytest.mark.parametrize("key", KEYS)
def test_keys_load_as_written_in_both_builders(key):
    value = {key: 1, "other": [key], (key,): key}
    data = pickle.dumps(value)
    for got in both(data):
        assert got == value
        assert [type(k) for k in got] == [str, str, tuple]


def test_equal_short_keys_are_one_object_across_calls():
    data = pickle.dumps({"id": 1, "name": "x"})
    first, second = pickle.loads(data), pickle.loads(data)
    assert first == second == {"id": 1, "name": "x"}
    assert [id(k) for k in first] == [id(k) for k in second]


def test_long_keys_and_wide_dicts_are_fresh_objects():
    data = pickle.dumps({"k" * 25: 1})
    assert next(iter(pickle.loads(data))) is not next(iter(pickle.loads(data)))
    wide = {f"f{i}": i for i in range(300)}
    data = pickle.dumps(wide)
    first, second = pickle.loads(data), pickle.loads(data)
    assert first == second == wide
    assert all(a is not b for a, b in zip(first, second, strict=True))


def test_many_distinct_keys_replace_each_other_safely():
    # Far more keys than the table holds: slots are replaced over and over, and every
    # value, old or new, stays intact.
    kept = []
    for i in range(3000):
        value = {f"k{i}": i, f"j{i % 7}": [i]}
        got = pickle.loads(pickle.dumps(value))
        assert got == value
        kept.append(got)
    assert kept[0] == {"k0": 0, "j0": [0]}
    assert kept[-1] == {"k2999": 2999, "j3": [2999]}


def test_keys_of_every_length_differing_in_one_byte_stay_apart():
    # The table matches a key by its length and its bytes read a word at a time: keys of
    # 1 to 24 bytes that differ in a single byte (anywhere, also past a word's end), or
    # only in length, each load as themselves, in a first call and from the table after.
    keys = []
    for n in range(1, 25):
        base = "".join(chr(ord("a") + (i * 7) % 26) for i in range(n))
        keys.append(base)
        keys += [base[:i] + "Z" + base[i + 1 :] for i in range(n)]
        keys.append(base[:-1] + "é")
    for _ in range(3):
        for key in keys:
            got = pickle.loads(pickle.dumps({key: 1}))
            assert list(got) == [key]


def test_a_shared_key_keeps_its_identity_within_the_record():
    key = "shared-key"
    value = [{key: 1}, {key: 2}, key]
    for got in both(pickle.dumps(value)):
        assert got == value
        (a,), (b,) = got[0], got[1]
        assert a is b is got[2]


@pytest.mark.parametrize(
    "body",
    [
        # A dict (81) whose short-str key (42) is not UTF-8.
        b"\x81\x42\xff\xfe\x01",
        # The same key shared (a6) first.
        b"\x81\xa6\x42\xff\xfe\x01",
        # A key cut short: the record ends inside it.
        b"\x81\x45ab",
    ],
)
def test_bad_keys_raise_as_without_the_table(body):
    data = record(body)
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data)
    assert outcome(data) == outcome(data, limits=general(data))
