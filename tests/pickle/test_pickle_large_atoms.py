"""A record that is one bytes or str too long for the small-record pass (built without the
general reader, from a few KiB up) behaves as any other: the same values, the same limits,
the same errors, with or without other threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from bytewright import pickle

BIG = 200_000  # above the size from which loads copies with the GIL released
MID = 4_000  # above the small-record pass's longest body, below that size


def _other_thread() -> tuple[threading.Thread, threading.Event]:
    """A second thread that waits: loads then hands the GIL over around its copies."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    return t, stop


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize(
    "value",
    [
        bytes(range(256)) * (BIG // 256),
        "a" * BIG,
        "é" * BIG,
        "x" * (BIG - 1) + "\u20ac",
        b"",
        "q" * 70_000,
        bytes(range(256)) * (MID // 256),
        "a" * MID,
        "é" * MID,
        "x" * (MID - 1) + "\u20ac",
        b"m" * 1_025,
    ],
    ids=[
        "bytes",
        "ascii",
        "latin",
        "ascii-then-euro",
        "empty",
        "just-above",
        "mid-bytes",
        "mid-ascii",
        "mid-latin",
        "mid-ascii-then-euro",
        "mid-just-above-small",
    ],
)
def test_single_large_atom_round_trips(value: object, threads: bool) -> None:
    other = _other_thread() if threads else None
    try:
        data = pickle.dumps(value)
        for loads in (pickle.loads, pickle.Decoder().loads):
            out = loads(data)
            assert out == value and type(out) is type(value)
            assert loads(bytearray(data)) == value
            assert loads(memoryview(data)) == value
    finally:
        if other is not None:
            other[1].set()
            other[0].join()


@pytest.mark.parametrize("n", [BIG, MID])
@pytest.mark.parametrize(
    ("kind", "field", "name"),
    [
        (bytes, "max_bytes_len", "bytes"),
        (str, "max_str_len", "str"),
        (bytes, "max_items", "objects"),
    ],
)
def test_single_large_atom_limits(n: int, kind: type, field: str, name: str) -> None:
    value: object = b"b" * n if kind is bytes else "s" * n
    below = 0 if field == "max_items" else n - 1
    data = pickle.dumps(value)
    with pytest.raises(pickle.LimitError, match=name):
        pickle.loads(data, limits=pickle.Limits(**{field: below}))
    with pytest.raises(pickle.LimitError, match=name):
        pickle.Decoder(limits=pickle.Limits(**{field: below})).loads(data)
    assert pickle.loads(data, limits=pickle.Limits(**{field: below + 1})) == value


@pytest.mark.parametrize("n", [BIG, MID])
def test_single_large_str_that_is_not_utf8_is_an_error(n: int) -> None:
    data = bytearray(pickle.dumps("a" * n))
    data[-1] = 0xFF  # the str's last byte: no longer UTF-8
    with pytest.raises(pickle.UnpicklingValueError, match="cannot rebuild str") as e:
        pickle.loads(bytes(data))
    assert "at byte" in str(e.value)


@pytest.mark.parametrize("n", [BIG, MID])
@pytest.mark.parametrize("cut", [1, 2, 100, MID // 2])
def test_single_large_atom_truncated_or_padded(n: int, cut: int) -> None:
    data = pickle.dumps(b"z" * n)
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data[:-cut])
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data + b"\0" * cut)


@pytest.mark.parametrize("n", [BIG, MID])
def test_single_large_atom_signed(n: int) -> None:
    key = b"k" * 32
    value = b"s" * n
    data = pickle.dumps(value, hmac_key=key)
    assert pickle.loads(data, hmac_key=key) == value
    bad = bytearray(data)
    bad[-1] ^= 1
    with pytest.raises(pickle.IntegrityError):
        pickle.loads(bytes(bad), hmac_key=key)


def _out_of_memory(data: str) -> str:
    """A script that dumps `data` (a Python expression) with 64 MB of address space to
    spare, prints MemoryError if that fails, then checks that dumps works again."""
    return f"""
import resource
import bytewright.pickle as bwp
data = {data}
bwp.dumps([1, 2, 3])  # the next record starts small and has to grow
with open("/proc/self/statm") as f:
    used = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + 64_000_000, resource.RLIM_INFINITY))
try:
    bwp.dumps(data)
except MemoryError:
    print("MemoryError")
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
assert bwp.loads(bwp.dumps(data)) == data
print("ok")
"""


_OUT_OF_MEMORY = _out_of_memory("[bytes([i]) * 2_000_000 for i in range(100)]")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs RLIMIT_AS and /proc")
def test_dumps_out_of_memory_while_growing_in_place_is_memory_error() -> None:
    """A record built in its bytes object that cannot grow raises MemoryError (it used to
    abort the process), and the next dumps works."""
    from bytewright import _native

    if not _native.fast_paths()["bytes_in_place"]:
        pytest.skip("records are built in place only on the fast paths")
    r = subprocess.run(
        [sys.executable, "-c", _OUT_OF_MEMORY], capture_output=True, text=True, timeout=300
    )
    assert (r.returncode, r.stdout.split(), r.stderr) == (0, ["MemoryError", "ok"], "")


# Atoms too small to be deferred: every byte goes through the writer's buffer.
_OUT_OF_MEMORY_IN_OWN_BUFFER = _out_of_memory(
    '[bytes([i % 256]) * 8000 + i.to_bytes(4, "little") for i in range(10_000)]'
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs RLIMIT_AS and /proc")
@pytest.mark.parametrize("portable", ["0", "1"])
def test_dumps_out_of_memory_while_growing_is_memory_error(portable: str) -> None:
    """A record that cannot grow raises MemoryError whether it is built in its bytes object
    or (portable mode) in a buffer of the writer's own, which used to abort the process; the
    next dumps works."""
    env = {**os.environ, "BYTEWRIGHT_PORTABLE": portable}
    r = subprocess.run(
        [sys.executable, "-c", _OUT_OF_MEMORY_IN_OWN_BUFFER],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert (r.returncode, r.stdout.split(), r.stderr) == (0, ["MemoryError", "ok"], "")


@pytest.mark.parametrize("n", [4095, 4096, 4097, 4259, 12_001, 100_003, 524_288, 524_289])
def test_large_data_copied_at_every_placement(n: int) -> None:
    """Large str and bytes data is copied by the extension's own loop when the source and
    the destination sit differently within 32 bytes: a prefix of 0-32 bytes moves the data's
    place in the record through every such difference, at sizes around the loop's bounds."""
    blob = bytes((i * 7 + n) % 251 for i in range(n))
    text = "".join(chr(32 + (i * 13 + n) % 95) for i in range(n))
    for k in range(33):
        for value in (blob, text):
            out = pickle.dumps([b"p" * k, value])
            data = value if isinstance(value, bytes) else value.encode("ascii")
            assert out.endswith(data)  # the record ends with the data, copied whole
            assert pickle.loads(out) == [b"p" * k, value]
        top = pickle.dumps(blob[k:])
        assert top.endswith(blob[k:]) and pickle.loads(top) == blob[k:]
