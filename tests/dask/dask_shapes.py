"""The values the Dask tests send through the family, and the classes the cluster allows.

Workers import this module too (by name, from the test directory on their `sys.path`), to
rebuild the allowed classes and to compare what they received.
"""

from __future__ import annotations

import collections
import dataclasses
import decimal
import enum
import struct
import sys
import typing
from pathlib import Path
from typing import Any

import numpy as np

_TESTS = Path(__file__).resolve().parents[1]
for _path in (str(_TESTS.parent), str(_TESTS / "pickle")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from test_pickle_roundtrip import ATOMS, CONTAINERS, STDLIB  # noqa: E402

from benchmarks.bench_data import CLASSES as BENCH_CLASSES  # noqa: E402
from benchmarks.bench_data import Person, shapes  # noqa: E402

KEY = b"the cluster's HMAC key, shared by the client and every worker"
BIG = 16 << 20  # past the tests' 1 MiB shard size: distributed splits the frame in transit
SHARD = "1 MiB"


class Unit(enum.Enum):
    CELSIUS = "C"
    KELVIN = "K"


class Sample(typing.NamedTuple):
    when: int
    value: float


@dataclasses.dataclass
class Reading:
    sensor: str
    unit: Unit
    samples: list[Sample]
    raw: Any  # a NumPy array


@dataclasses.dataclass
class Box:
    """Keeps a graph in one record: distributed splits a top-level list, tuple or dict."""

    value: Any


class NotAllowed:
    """A class the cluster never allows."""

    def __init__(self, x: int) -> None:
        self.x = x


CLASSES: tuple[type, ...] = (*BENCH_CLASSES, Unit, Sample, Reading, Box)


def shared_graph() -> dict[str, Any]:
    shared = {"shared_data": [1, 2, 3, 4, 5]}
    cyclic: list[Any] = []
    cycle_tuple = (cyclic, "t")
    cyclic.append(cycle_tuple)
    array = np.arange(100_000, dtype=np.float64)
    return {
        "list1": shared,
        "list2": shared,
        "nested": {"a": shared, "b": [shared, shared]},
        "cyclic": cyclic,
        "arrays": [array, array[::-1], array],
    }


def values() -> list[tuple[str, Any]]:
    """(name, value): the pickle test shapes, the 16 benchmark shapes, NumPy values.

    The benchmark shapes are boxed: distributed would send the items of a top-level list
    or dict one by one (10,000 records for a list of 10,000 ints, slowly), and its own
    splitting is covered by the smaller pickle test shapes.
    """
    out: list[tuple[str, Any]] = []
    out += [(f"atom{i}", v) for i, v in enumerate(ATOMS)]
    out += [(f"container{i}", v) for i, v in enumerate(CONTAINERS)]
    out += [(f"stdlib{i}", v) for i, v in enumerate(STDLIB)]
    out += [(name, Box(v)) for name, v in shapes().items()]
    out += [
        ("bytes root", bytes(range(256)) * 1024),
        ("bytearray root", bytearray(b"\x01" * 300_000)),
        ("memoryview", memoryview(bytearray(400_000)).cast("i", (1000, 100))),
        ("scalars", [np.float32(1.5), np.int64(-7), np.str_("s"), np.datetime64(1, "ms")]),
        ("fortran", np.asfortranarray(np.arange(120_000, dtype=">i4").reshape(300, 400))),
        ("structured", np.zeros(50_000, dtype=[("x", "<i4"), ("y", ">f8", (2,))])),
        ("reading", reading()),
        ("boxed graph", Box(shared_graph())),
    ]
    return out


def reading() -> Reading:
    samples = [Sample(i, i / 4) for i in range(100)]
    return Reading("t-1", Unit.KELVIN, samples, np.linspace(0, 1, 200_000))


def large_array() -> Any:
    return np.arange(BIG // 8, dtype=np.float64)


def person() -> Person:
    return Person("Ada", 36, BENCH_CLASSES[1]("1 Main St", "London", "N1"))


def same(a: Any, b: Any, seen: set[tuple[int, int]] | None = None) -> bool:
    """Deep equality with exact types; floats and NumPy data compare bit for bit.

    A pair of containers met again (a cycle) counts as equal the second time.
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return bool(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes())
    if isinstance(a, np.generic):
        return np.asarray(a).tobytes() == np.asarray(b).tobytes()
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, memoryview):
        return (a.format, a.shape, a.readonly, a.tobytes()) == (
            b.format,
            b.shape,
            b.readonly,
            b.tobytes(),
        )
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    seen = set() if seen is None else seen
    if (id(a), id(b)) in seen:
        return True
    seen.add((id(a), id(b)))
    if dataclasses.is_dataclass(a):
        names = [f.name for f in dataclasses.fields(a)]
        return all(same(getattr(a, n), getattr(b, n), seen) for n in names)
    if isinstance(a, list | tuple | collections.deque):
        if isinstance(a, collections.deque) and a.maxlen != b.maxlen:
            return False
        return len(a) == len(b) and all(same(x, y, seen) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        if isinstance(a, collections.defaultdict) and a.default_factory is not b.default_factory:
            return False
        return list(a) == list(b) and all(same(a[k], b[k], seen) for k in a)
    return bool(a == b)


def received(value: Any, expected: Any) -> bool:
    """Run on a worker: the value it decoded equals `expected`, which Dask pickled.

    Dask's pickling turns a memoryview task argument into bytes, so those compare as bytes.
    """
    if type(value) is memoryview and type(expected) is bytes:
        return value.tobytes() == expected
    return same(value, expected)
