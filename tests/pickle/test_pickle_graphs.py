"""Shared references and cycles are preserved; hypothesis over random graphs."""

import dataclasses
import pickle as std_pickle

from bytewright import pickle
from hypothesis import given, settings
from hypothesis import strategies as st


def test_shared_list_stays_shared():
    x = [1, 2]
    back = pickle.loads(pickle.dumps({"a": x, "b": x, "c": [x]}))
    assert back["a"] is back["b"] is back["c"][0]


def test_shared_strings_bytes_and_tuples():
    s = "a shared string"
    b = b"shared bytes"
    t = (1, 2, 3)
    back = pickle.loads(pickle.dumps([s, s, b, b, t, t]))
    assert back[0] is back[1] and back[2] is back[3] and back[4] is back[5]


def test_self_referencing_containers():
    lst: list = []
    lst.append(lst)
    back = pickle.loads(pickle.dumps(lst))
    assert back[0] is back
    d: dict = {}
    d["me"] = d
    back = pickle.loads(pickle.dumps(d))
    assert back["me"] is back


def test_cycle_through_a_tuple():
    t = ([],)
    t[0].append(t)
    back = pickle.loads(pickle.dumps(t))
    assert type(back) is tuple and back[0][0] is back
    std = std_pickle.loads(std_pickle.dumps(t))
    assert std[0][0] is std


def test_the_root_met_again_inside_itself_keeps_identity():
    for deterministic in (False, True):
        lst: list = []
        lst += [lst, lst, (lst,), {"me": lst}]
        back = pickle.loads(pickle.dumps(lst, deterministic=deterministic))
        assert back[0] is back and back[1] is back
        assert back[2][0] is back and back[3]["me"] is back
        t = ([], [])
        t[0].extend([t, t])
        t[1].append(t)
        back = pickle.loads(pickle.dumps(t, deterministic=deterministic))
        assert type(back) is tuple
        assert back[0][0] is back and back[0][1] is back and back[1][0] is back


def test_cycle_through_nested_tuples_and_dicts():
    d: dict = {}
    t = (1, (d, "x"))
    d["t"] = t
    back = pickle.loads(pickle.dumps([t, d]))
    assert back[0][1][0] is back[1]
    assert back[1]["t"] is back[0]


def test_cycle_through_frozenset_slice_and_set():
    d: dict = {}
    fs = frozenset([("k", 1)])
    s = slice(d, None)
    d["s"] = s
    d["fs"] = fs
    back = pickle.loads(pickle.dumps([d, s]))
    assert back[0]["s"] is back[1] and back[1].start is back[0]


def test_shared_stdlib_values():
    import collections
    import datetime as dt

    dq = collections.deque([1])
    dq.append(dq)
    back = pickle.loads(pickle.dumps(dq))
    assert back[1] is back
    when = dt.datetime(2020, 1, 1)
    back = pickle.loads(pickle.dumps([when, when]))
    assert back[0] is back[1]


_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
)


@st.composite
def graphs(draw):
    """Containers linked at random: shared references, cycles, cycles through tuples."""
    nodes: list = [draw(st.sampled_from([list, dict]))() for _ in range(draw(st.integers(1, 8)))]
    for node in nodes:
        for i in range(draw(st.integers(0, 5))):
            how = draw(st.sampled_from(["leaf", "node", "tuple"]))
            if how == "leaf":
                child = draw(_LEAVES)
            elif how == "node":
                child = nodes[draw(st.integers(0, len(nodes) - 1))]
            else:
                child = (nodes[draw(st.integers(0, len(nodes) - 1))], draw(_LEAVES))
            if isinstance(node, list):
                node.append(child)
            else:
                node[f"k{i}"] = child
    return nodes[0]


def _identity_signature(value, seen=None):
    """The value's shape with shared containers numbered by first visit."""
    seen = {} if seen is None else seen
    if isinstance(value, list | dict):
        if id(value) in seen:
            return ("ref", seen[id(value)])
        seen[id(value)] = len(seen)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return (type(value).__name__, [(k, _identity_signature(v, seen)) for k, v in items])
    if isinstance(value, tuple):
        return ("tuple", [_identity_signature(v, seen) for v in value])
    return ("leaf", type(value).__name__, repr(value))


@settings(max_examples=300, deadline=None)
@given(graphs(), st.booleans())
def test_random_graphs_round_trip_with_identity(value, sign):
    key = b"k" if sign else None
    back = pickle.loads(pickle.dumps(value, hmac_key=key), hmac_key=key)
    expected = _identity_signature(std_pickle.loads(std_pickle.dumps(value)))
    assert _identity_signature(back) == _identity_signature(value) == expected


@settings(max_examples=100, deadline=None)
@given(st.sets(st.one_of(st.integers(), st.text(), st.tuples(st.integers())), max_size=30))
def test_deterministic_sets_are_canonical(items):
    a = pickle.dumps({"s": set(items), "f": frozenset(items)}, deterministic=True)
    rebuilt = set()
    for item in sorted(items, key=repr, reverse=True):
        rebuilt.add(item)
    b = pickle.dumps({"s": rebuilt, "f": frozenset(rebuilt)}, deterministic=True)
    assert a == b
    assert pickle.loads(a) == {"s": set(items), "f": frozenset(items)}


def test_deterministic_output_is_independent_of_the_hash_seed():
    import subprocess
    import sys

    code = (
        "from bytewright import pickle;"
        "import sys;"
        "sys.stdout.write(pickle.dumps({'a','b','c','d',('x',1),frozenset('xyz')},"
        " deterministic=True).hex())"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": str(seed), "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(outs) == 1


def test_large_data_around_tuple_cycles_and_signatures():
    big_s = "s" * 40_000
    big_b = b"b" * 50_000
    t = ([], big_s)
    t[0].append((big_b, t, "x" * 20_000))
    value = [big_b, t, big_s, bytearray(30_000), ("tail", big_b)]
    for key in (None, b"k"):
        for det in (False, True):
            data = pickle.dumps(value, hmac_key=key, deterministic=det)
            back = pickle.loads(data, hmac_key=key)
            assert back[1][0][0][1] is back[1]
            assert back[0] == big_b and back[2] == big_s and back[4][1] is back[0]
            assert back[1][0][0][2] == "x" * 20_000
            assert bytes(back[3]) == bytes(30_000)


@dataclasses.dataclass
class _Node:
    name: str
    child: object = None


class _SubNode(_Node):
    pass


def _fresh_records():
    """A graph whose objects nothing outside it references (built inside the call)."""
    return [
        {"node": _Node(f"n{i}", _SubNode("leaf", [i, f"v{i}", i * 0.5])), "tags": ["a", "b"]}
        for i in range(50)
    ]


def test_objects_only_the_graph_holds_are_not_marked_shared():
    # The walker's own references must not count as a second owner: without outside
    # references, the default output is the canonical (deterministic) one.
    # (Computed outside `assert`: pytest's rewriting would hold the arguments.)
    default = pickle.dumps(_fresh_records())
    assert default == pickle.dumps(_fresh_records(), deterministic=True)
    default = pickle.dumps(_Node("x", _Node("y")))
    assert default == pickle.dumps(_Node("x", _Node("y")), deterministic=True)


def test_instances_keep_identity_cycles_and_exact_types():
    shared = _SubNode("shared")
    loop = _Node("loop")
    loop.child = loop
    value = [shared, _Node("a", shared), loop, _Node("b"), _Node("b")]
    for det in (False, True):
        back = pickle.loads(pickle.dumps(value, deterministic=det), classes=[_Node, _SubNode])
        assert type(back[0]) is _SubNode and back[1].child is back[0]
        assert back[2].child is back[2] and type(back[2]) is _Node
        assert back[3] == back[4] and back[3] is not back[4]


def test_short_shared_str_and_bytes_keep_identity_in_every_position():
    # Short str and bytes with a second owner are written by the atom path of each
    # container (list and tuple items, dict keys and values, instance fields).
    s = "".join(["sha", "red"])
    b = bytes([1, 2, 3])
    empty = b""
    value = [s, b, (s, b, empty), {s: b, "k": s, "e": empty}, _Node(s, b), empty]
    for det in (False, True):
        back = pickle.loads(pickle.dumps(value, deterministic=det), classes=[_Node])
        bs, bb = back[0], back[1]
        assert (bs, bb) == (s, b) and type(bs) is str and type(bb) is bytes
        assert back[2][0] is bs and back[2][1] is bb and back[2][2] is back[5]
        (key,) = [k for k in back[3] if k != "k" and k != "e"]
        assert key is bs and back[3][key] is bb and back[3]["k"] is bs
        assert back[3]["e"] is back[5]
        assert back[4].name is bs and back[4].child is bb


def _body(record: bytes) -> bytes:
    # Header: b"BW", version, flags, then the body length as one varint byte (short bodies).
    assert record[:2] == b"BW" and record[4] == len(record) - 5
    return record[5:]


def test_only_containers_with_a_second_owner_take_a_memo_slot():
    # SHARE (0xa6) marks a value with a memo slot; REF (0xa7) + slot is a later occurrence.
    # Short lists are 0x60 + length, short dicts 0x80 + pairs, short tuples 0x70 + length.
    inner = [1]
    body = _body(pickle.dumps([[inner], inner, [[2]]]))
    assert body == bytes([0x63, 0x61, 0xA6, 0x61, 1, 0xA7, 0, 0x61, 0x61, 2])
    # Held by nothing outside the graph: no slot at any depth, for any container kind.
    body = _body(pickle.dumps([[[]], {1: {}}, ([],)]))
    assert body == bytes([0x63, 0x61, 0x60, 0x81, 1, 0x80, 0x71, 0x60])
    # The same graph with its innermost containers held outside: each takes a slot once.
    a, b, c = [], {}, []
    body = _body(pickle.dumps([[a], {1: b}, (c,), a, b, c]))
    assert body == bytes(
        [0x66, 0x61, 0xA6, 0x60, 0x81, 1, 0xA6, 0x80, 0x71, 0xA6, 0x60, 0xA7, 0, 0xA7, 1, 0xA7, 2]
    )
    # A cycle goes through the memo although nothing outside the graph holds the list
    # (its reference to itself is a second owner).
    loop: list = []
    loop.append(loop)
    outer = [loop]
    del loop
    body = _body(pickle.dumps(outer))
    assert body == bytes([0x61, 0xA6, 0x61, 0xA7, 0])
    # Deterministic output shares only what the graph itself repeats.
    det = _body(pickle.dumps([[inner], [inner]], deterministic=True))
    assert det == bytes([0x62, 0x61, 0xA6, 0x61, 1, 0x61, 0xA7, 0])
    det = _body(pickle.dumps([[inner], [2]], deterministic=True))
    assert det == bytes([0x62, 0x61, 0x61, 1, 0x61, 2])


def test_many_shared_objects_keep_identity_at_every_memo_size():
    # The encoder's memo keeps its first entries in line, scans the next ones out of line,
    # and spills the rest into a map: each count crosses one of those boundaries.
    for count in (1, 8, 9, 16, 17, 40):
        items = [[i] for i in range(count)]
        value = items + items[::-1]
        data = pickle.dumps(value)
        back = pickle.loads(data)
        assert back == value
        for i in range(count):
            assert back[i] is back[2 * count - 1 - i]
        assert data == pickle.dumps(value)
