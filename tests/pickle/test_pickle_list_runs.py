"""`bytewright.pickle.dumps` of lists long enough to be written in runs of atoms (ints,
floats, short ASCII strs, `None`, bools, with anything else between): the same bytes for
each item as a one-item list writes, and a list changed while it is written is refused."""

import pytest
from bytewright import pickle


def body(data: bytes) -> bytes:
    """The record body of `data` (after the 4-byte header start and the body length)."""
    n = shift = 0
    i = 4
    while True:
        b = data[i]
        n |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            break
        shift += 7
    assert len(data) == i + n
    return data[i:]


def item(make) -> bytes:
    """What a one-item list (written item by item, not in runs) writes for `make()`, an
    object the list alone holds (as each item of the lists below)."""
    b = body(pickle.dumps([make()]))
    assert b[0] == 0x61  # a short list of one item
    return b[1:]


def fresh_str(s):
    return lambda: s.encode().decode()


def const(x):
    return lambda: x


EDGES = [
    0,
    1,
    63,
    64,
    255,
    256,
    65535,
    65536,
    2**31 - 1,
    2**31,
    2**32,
    2**60,
    2**63 - 1,
    2**63,
    2**70,
]
INTS = [const(s * (e + d)) for e in EDGES for d in (-1, 0, 1) for s in (1, -1)]
FLOATS = [const(f) for f in (0.0, -0.0, 1.5, 0.1, 1e300, float("inf"), -2.5e-310)]
STRS = [fresh_str(s) for s in ("", "a", "ab", "abc", "abcd", "x" * 7, "x" * 8, "y" * 15)]
STRS += [fresh_str(s) for s in ("y" * 16, "z" * 31, "w" * 32, "w" * 300, "\u00e9t\u00e9")]
OTHERS = [
    const(None),
    const(True),
    const(False),
    lambda: bytes([97, 98]),
    lambda: bytearray(b"c"),
    lambda: tuple([1, "t"]),
    lambda: [2, 3.5],
    lambda: {"k": 1},
    lambda: complex(1, 2),
]


@pytest.mark.parametrize(
    "makers",
    [
        INTS,
        FLOATS * 3,
        STRS * 2,
        INTS[:5] + OTHERS + FLOATS + OTHERS + INTS[-5:],
        [list, const(1), const(2.5), fresh_str("st"), const(None)] * 5,
        OTHERS * 3,
    ],
    ids=["ints", "floats", "strs", "mixed", "alternating", "others"],
)
@pytest.mark.parametrize("deterministic", [False, True])
def test_each_item_is_written_as_on_its_own(makers, deterministic):
    assert len(makers) >= 16
    items = [make() for make in makers]
    data = pickle.dumps(items, deterministic=deterministic)
    b = body(data)
    rest = b"".join(item(make) for make in makers)
    assert b.endswith(rest) and 1 < len(b) - len(rest) <= 3
    back = pickle.loads(data)
    assert back == items
    assert [type(x) for x in back] == [type(x) for x in items]


def test_shared_strs_in_a_long_list_are_written_once():
    s = "shared-text"
    items = [s, 1, s, 2.5, s] * 4
    back = pickle.loads(pickle.dumps(items))
    assert back == items
    assert back[0] is back[2] is back[-1]


class Changer:
    """Changes the list that holds it while it is written."""

    target: list = []
    how = "clear"

    def __getstate__(self):
        if Changer.how == "clear":
            Changer.target.clear()
        elif Changer.how == "grow":
            Changer.target.extend(range(50))
        else:
            del Changer.target[-3:]
        return {}


@pytest.mark.parametrize("how", ["clear", "grow", "shrink"])
@pytest.mark.parametrize("n", [3, 40])
def test_a_list_changed_while_written_is_refused(how, n):
    items = list(range(n)) + [Changer()] + ["a", 1.5, None] * n
    Changer.target = items
    Changer.how = how
    with pytest.raises(pickle.PicklingError, match="list changed size during pickling"):
        pickle.dumps(items)
