"""CPython fast paths and their portable fallbacks (crates/python/src/cpython.rs).

`make test` runs the whole suite twice: as the interpreter allows, and with
`BYTEWRIGHT_PORTABLE=1` (only the public C API). These tests check that the variable is
honoured, that the choice is made once at import, and that both ways give the same bytes
and the same values, whichever way this process runs.
"""

import os
import pickle as std_pickle
import subprocess
import sys
from dataclasses import dataclass

import bytewright as bw
from bytewright import _native
from bytewright import pickle as bwp

FAST_PATHS = {
    "int_digits",
    "list_internals",
    "private_functions",
    "int_to_bytes",
    "dict_entries",
    "bytes_in_place",
    "class_from_spec",
}


def fast_paths_in_child(portable: str | None) -> dict[str, bool]:
    env = {k: v for k, v in os.environ.items() if k != "BYTEWRIGHT_PORTABLE"}
    if portable is not None:
        env["BYTEWRIGHT_PORTABLE"] = portable
    code = "from bytewright import _native; print(sorted(_native.fast_paths().items()))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    ).stdout
    return dict(eval(out))  # a list of (str, bool) pairs printed by the child


def test_this_run_takes_the_paths_its_environment_asks_for():
    paths = _native.fast_paths()
    assert set(paths) == FAST_PATHS
    if os.environ.get("BYTEWRIGHT_PORTABLE") == "1":
        assert not any(paths.values()), paths
    elif sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11):
        assert all(paths.values()) == (sys.int_info.bits_per_digit == 30), paths
        assert paths["list_internals"] and paths["private_functions"], paths
        assert paths["dict_entries"], paths
        assert paths["bytes_in_place"], paths
        assert paths["class_from_spec"], paths


def test_the_variable_is_read_once_at_import(monkeypatch):
    before = _native.fast_paths()
    monkeypatch.setenv("BYTEWRIGHT_PORTABLE", "0" if any(before.values()) else "1")
    assert _native.fast_paths() == before


def test_portable_forces_every_fallback_and_other_values_do_not():
    assert not any(fast_paths_in_child("1").values())
    assert fast_paths_in_child("0") == fast_paths_in_child(None) == fast_paths_in_child("")


@dataclass
class Point:
    x: float
    label: str
    tags: list


# Values that go through every helper: ints at each digit-count edge and beyond 64 bits,
# long and short lists (filled in place or appended), presized dicts, declared fields.
EDGES = sorted(
    {
        s * (2**e + d)
        for e in (0, 29, 30, 31, 59, 60, 61, 63, 64, 89, 90, 200)
        for d in (-1, 0, 1)
        for s in (1, -1)
    }
)
VALUES = [
    EDGES,
    [float(i) / 7 for i in range(40)] + list(range(-300, 300, 7)) + ["s", "tt", None, True],
    {f"k{i}": [i, -i, 2**70 + i] for i in range(30)},
    [Point(0.5, "p", [1, 2, 3]), Point(-1.0, "q", [])],
    [[i] * (i % 20) for i in range(50)],
]
CODE = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
from test_portable import results
sys.stdout.buffer.write(pickle.dumps(results()))
"""


def results() -> list:
    """What every path makes of VALUES: records, the values read back (as their repr, the
    same text in any process), wire bytes."""
    out = []
    for value in VALUES:
        record = bwp.dumps(value)
        std = std_pickle.dumps(value, protocol=2)
        out.append(
            (
                record,
                repr(bwp.loads(record, classes=[Point])),
                repr(bwp.loads_pickle(std, classes=[Point])),
                repr(bwp.loads_pickle(std_pickle.dumps(value, protocol=0), classes=[Point])),
            )
        )

    class Wide(bw.Struct, byteorder="little"):
        a: bw.U64
        b: bw.I64

    fits = [(v, w) for v in EDGES for w in EDGES if 0 <= v < 2**64 and -(2**63) <= w < 2**63]
    out.append((Wide.pack_many(fits), [Wide(a=a, b=b).pack() for a, b in fits]))
    return out


def test_both_ways_give_the_same_bytes_and_values():
    env = dict(os.environ)
    here = results()
    for portable in ("1", "0"):
        env["BYTEWRIGHT_PORTABLE"] = portable
        child = subprocess.run(
            [sys.executable, "-c", CODE, os.path.dirname(os.path.abspath(__file__))],
            env=env,
            check=True,
            capture_output=True,
        ).stdout
        assert std_pickle.loads(child) == here
    for value, (_, loaded, *read) in zip(VALUES, here, strict=False):
        assert loaded == repr(value) == read[0] == read[1]


def test_an_int_beyond_64_bits_is_named_too_large_or_too_small():
    # The sign is read through the public API (3.12+ keep no sign in an int's ob_size).
    class Wide(bw.Struct, byteorder="little"):
        v: bw.I64

    for value, side in ((2**64, "too large"), (-(2**64) - 5, "too small"), (2**200, "too large")):
        try:
            Wide(v=value).pack()
        except bw.PackError as exc:
            assert side in str(exc), exc
        else:
            raise AssertionError(f"{value} packed")
