"""The three workloads of Part A: values, reference bytes and checksums.

Values are the named mappings a user would hold (derived fields omitted). The reference bytes
are written here by a tiny independent encoder, so every implementation, including the
hand-written `struct` one, is gated against them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any

WORKLOADS = ("scalars", "vector", "telemetry")
UNIT = {"scalars": "field", "vector": "item", "telemetry": "record"}

SESSION = bytes.fromhex("00112233445566778899aabbccddeeff")
SOURCE = "edge-gateway-eu"
# Wire sizes for telemetry(m). Issue 4 lists 210 for m=4; its own record formula gives 216
# (58 + 4*26 + 12+13+14+15), and 96/786/3066/12186 match that formula, so 216 is used.
TELEMETRY_SIZES = {1: 96, 4: 216, 16: 786, 64: 3066, 256: 12186}


def scalar_names(n: int) -> list[str]:
    return [f"f{i}" for i in range(n)]


def scalars_value(n: int) -> dict[str, int]:
    return {f"f{i}": (i * 7 + 3) & 0xFFFF for i in range(n)}


def vector_value(m: int) -> dict[str, Any]:
    return {"items": [{"a": (i * 3 + 1) & 0xFFFF, "b": (i * 5 + 2) & 0xFFFF} for i in range(m)]}


def record_value(i: int) -> dict[str, Any]:
    return {
        "record_id": 10_000 + i,
        "kind": (i * 3 + 1) & 0xFF,
        "status": (i * 5 + 2) & 0xFF,
        "code": (i * 97 + 11) & 0xFFFF,
        "x": -1_000_000 + i * 101,
        "y": 2_000_000 - i * 103,
        "reading": 1_000_000_000_000 + i * 1_000_003,
        "payload": bytes((i * 13 + j * 17 + 5) & 0xFF for j in range(12 + i % 20)),
    }


def telemetry_value(m: int) -> dict[str, Any]:
    return {
        "frame": {
            "version": 3,
            "flags": 0xA5,
            "message_type": 0x1201,
            "sequence": 0x10203040,
            "timestamp": 1_750_000_000_123_456,
            "session": SESSION,
            "source_id": 0xA0B0C0D0,
            "source": SOURCE,
            "records": [record_value(i) for i in range(m)],
        }
    }


def value(workload: str, size: int) -> dict[str, Any]:
    return {"scalars": scalars_value, "vector": vector_value, "telemetry": telemetry_value}[
        workload
    ](size)


# ---- reference bytes: written field by field, the slow obvious way -------------------------


def _reference_record(r: dict[str, Any]) -> bytes:
    fixed = struct.pack(
        ">IBBHiiQH",
        r["record_id"],
        r["kind"],
        r["status"],
        r["code"],
        r["x"],
        r["y"],
        r["reading"],
        len(r["payload"]),
    )
    return fixed + r["payload"]


def reference_bytes(workload: str, size: int) -> bytes:
    v = value(workload, size)
    if workload == "scalars":
        return b"".join(x.to_bytes(2, "big") for x in v.values())
    if workload == "vector":
        items = v["items"]
        body = b"".join(it["a"].to_bytes(2, "big") + it["b"].to_bytes(2, "big") for it in items)
        return len(items).to_bytes(2, "big") + body
    f = v["frame"]
    src = f["source"].encode("utf-8")
    frame = (
        struct.pack(
            ">BBHIQ16sIB",
            f["version"],
            f["flags"],
            f["message_type"],
            f["sequence"],
            f["timestamp"],
            f["session"],
            f["source_id"],
            len(src),
        )
        + src
        + len(f["records"]).to_bytes(2, "big")
        + b"".join(_reference_record(r) for r in f["records"])
    )
    wire = len(frame).to_bytes(4, "big") + frame
    if size in TELEMETRY_SIZES and len(wire) != TELEMETRY_SIZES[size]:
        raise AssertionError(f"telemetry({size}) is {len(wire)} bytes")
    return wire


def reference_checksum(workload: str, size: int) -> int:
    """The sum of every non-derived field; bytes and str count as the sum of their bytes."""
    v = value(workload, size)
    if workload == "scalars":
        return sum(v.values())
    if workload == "vector":
        return sum(it["a"] + it["b"] for it in v["items"])
    f = v["frame"]
    total = f["version"] + f["flags"] + f["message_type"] + f["sequence"] + f["timestamp"]
    total += sum(f["session"]) + f["source_id"] + sum(f["source"].encode("utf-8"))
    for r in f["records"]:
        total += r["record_id"] + r["kind"] + r["status"] + r["code"] + r["x"] + r["y"]
        total += r["reading"] + sum(r["payload"])
    return total


# ---- checksum readers: every implementation of one access style shares the same reader -----

Reader = Callable[[Any], int]


def scalars_reader(n: int, *, attributes: bool) -> Reader:
    names = scalar_names(n)
    get = attrgetter(*names) if attributes else itemgetter(*names)
    if n == 1:
        return get  # type: ignore[return-value]
    return lambda obj: sum(get(obj))


def vector_map(d: Any) -> int:
    return sum([it["a"] + it["b"] for it in d["items"]])


def vector_attr(o: Any) -> int:
    return sum([it.a + it.b for it in o.items])


def telemetry_map(env: Any) -> int:
    f = env["frame"]
    total = f["version"] + f["flags"] + f["message_type"] + f["sequence"] + f["timestamp"]
    total += sum(f["session"]) + f["source_id"] + sum(f["source"].encode("utf-8"))
    for r in f["records"]:
        total += r["record_id"] + r["kind"] + r["status"] + r["code"] + r["x"] + r["y"]
        total += r["reading"] + sum(r["payload"])
    return total


def telemetry_attr(env: Any) -> int:
    f = env.frame
    total = f.version + f.flags + f.message_type + f.sequence + f.timestamp
    total += sum(f.session) + f.source_id + sum(f.source.encode("utf-8"))
    for r in f.records:
        total += r.record_id + r.kind + r.status + r.code + r.x + r.y
        total += r.reading + sum(r.payload)
    return total


def reader(workload: str, size: int, *, attributes: bool) -> Reader:
    if workload == "scalars":
        return scalars_reader(size, attributes=attributes)
    if workload == "vector":
        return vector_attr if attributes else vector_map
    return telemetry_attr if attributes else telemetry_map


@dataclass(frozen=True)
class Case:
    """One implementation of one workload at one size, ready to time."""

    held: Any  # the mapping or typed object the user holds before packing
    pack: Callable[[Any], bytes]
    unpack: Callable[[bytes], Any]  # the library's normal named result
    read: Reader  # reads every field of that result into the checksum

    def pack_held(self) -> bytes:
        return self.pack(self.held)

    def unpack_sum(self, buf: bytes) -> int:
        return self.read(self.unpack(buf))
