"""The 16 data shapes of the pysafe-pickle performance page, exactly as it lists them.

The module path mirrors the page's `benchmarks/bench_data.py`, so the pickled dataclass
shapes carry a same-length module name and their pickle sizes match the page byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Point:
    x: float
    y: float
    z: float


@dataclass
class Address:
    street: str
    city: str
    zip_code: str


@dataclass
class Person:
    name: str
    age: int
    address: Address


CLASSES = (Point, Address, Person)


def nested_list(depth: int) -> list[Any]:
    """`[1]` wrapped `depth` times (the page's depth-5 shape pickles to 32 bytes)."""
    value: list[Any] = [1]
    for _ in range(depth):
        value = [value]
    return value


def complex_graph() -> dict[str, Any]:
    shared = {"shared_data": [1, 2, 3, 4, 5]}
    return {"list1": shared, "list2": shared, "nested": {"a": shared, "b": [shared, shared]}}


def shapes() -> dict[str, Any]:
    """Display name -> value, in the page's order."""
    return {
        "Primitives": [None, True, False, 0, 42, -42, 3.14, "hello", b"\x00\x01\x02"],
        "Nested list (depth 5)": nested_list(5),
        "Nested list (depth 20)": nested_list(20),
        "Wide Dict (100 keys)": {f"key_{i}": i for i in range(100)},
        "Wide Dict (10,000 keys)": {f"key_{i}": i for i in range(10_000)},
        "Simple Dataclass": Point(1.0, 2.0, 3.0),
        "Nested Dataclass": Person("Alice", 30, Address("123 Main St", "Springfield", "12345")),
        "Complex Graph (shared refs)": complex_graph(),
        "Large String (100 KB)": "x" * 100_000,
        "Mixed Container": {
            "primitives": [1, 2.5, "hello", True, None],
            "nested": {"deep": {"value": [1, 2, [3, 4, {"key": "val"}]]}},
            "bytes": b"\x00\x01\x02\x03",
            "set_data": [1, 2, 3, 4, 5],
        },
        "List of Records (1,000)": [
            {
                "id": i,
                "name": f"user{i}",
                "score": i * 1.5,
                "active": i % 2 == 0,
                "tags": ["a", "b"],
            }
            for i in range(1000)
        ],
        "List of Dataclasses (1,000)": [
            Person(f"user{i}", 20 + i % 60, Address(f"{i} Main St", "Springfield", f"{10000 + i}"))
            for i in range(1000)
        ],
        "Ints (10,000)": list(range(-5000, 5000)),
        "Floats (10,000)": [i * 0.1 for i in range(10_000)],
        "Short Strings (10,000)": [f"s{i}" for i in range(10_000)],
        "Bytes (1 MB)": bytes(range(256)) * 4096,
    }
