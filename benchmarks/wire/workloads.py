"""Part A's three workloads: the values a user holds, reference bytes and checksums.

Values are named mappings (derived fields omitted). The reference bytes come from a tiny
independent encoder written here, so every arm, the hand-written `struct` one included, is
gated against them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any

UNIT = {"scalars": "field", "vector": "item", "telemetry": "record"}
SESSION = bytes.fromhex("00112233445566778899aabbccddeeff")
SOURCE = "edge-gateway-eu"
# Wire sizes of telemetry(m): 58 + 26 m + the payloads (12 + i % 20 bytes each).
TELEMETRY_SIZES = {1: 96, 4: 216, 16: 786, 64: 3066, 256: 12186}
RECORD_FIELDS = ("record_id", "kind", "status", "code", "x", "y", "reading")
FRAME_FIELDS = ("version", "flags", "message_type", "sequence", "timestamp")


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


def telemetry_value(m: int, first: int = 0, sequence: int = 0x10203040) -> dict[str, Any]:
    frame = {"version": 3, "flags": 0xA5, "message_type": 0x1201, "sequence": sequence}
    frame |= {"timestamp": 1_750_000_000_123_456, "session": SESSION, "source_id": 0xA0B0C0D0}
    frame |= {"source": SOURCE, "records": [record_value(first + i) for i in range(m)]}
    return {"frame": frame}


def value(workload: str, size: int) -> dict[str, Any]:
    make = {"scalars": scalars_value, "vector": vector_value, "telemetry": telemetry_value}
    return make[workload](size)


def record_bytes(r: dict[str, Any], order: str = ">") -> bytes:
    fixed = struct.pack(order + "IBBHiiQH", *(r[k] for k in RECORD_FIELDS), len(r["payload"]))
    return fixed + r["payload"]


def envelope_bytes(v: dict[str, Any]) -> bytes:
    f = v["frame"]
    src = f["source"].encode("utf-8")
    head = struct.pack(
        ">BBHIQ16sIB", *(f[k] for k in FRAME_FIELDS), f["session"], f["source_id"], len(src)
    )
    body = b"".join(record_bytes(r) for r in f["records"])
    frame = head + src + len(f["records"]).to_bytes(2, "big") + body
    return len(frame).to_bytes(4, "big") + frame


def reference_bytes(workload: str, size: int) -> bytes:
    v = value(workload, size)
    if workload == "scalars":
        return b"".join(x.to_bytes(2, "big") for x in v.values())
    if workload == "vector":
        items = v["items"]
        body = b"".join(it["a"].to_bytes(2, "big") + it["b"].to_bytes(2, "big") for it in items)
        return len(items).to_bytes(2, "big") + body
    wire = envelope_bytes(v)
    if len(wire) != TELEMETRY_SIZES.get(size, len(wire)):
        raise AssertionError(f"telemetry({size}) is {len(wire)} bytes")
    return wire


# ---- checksums: the sum of every non-derived field; bytes and str count as their bytes ----


# The readers are in the timed path: written out field by field, no generator per record.
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


def vector_map(d: Any) -> int:
    return sum([it["a"] + it["b"] for it in d["items"]])


def vector_attr(o: Any) -> int:
    return sum([it.a + it.b for it in o.items])


def reader(workload: str, size: int, *, attributes: bool) -> Callable[[Any], int]:
    """Reads every field of one access style (keys or attributes) into the checksum."""
    if workload == "scalars":
        get = (attrgetter if attributes else itemgetter)(*scalar_names(size))
        return get if size == 1 else lambda obj: sum(get(obj))  # type: ignore[return-value]
    if workload == "vector":
        return vector_attr if attributes else vector_map
    return telemetry_attr if attributes else telemetry_map


def reference_checksum(workload: str, size: int) -> int:
    return reader(workload, size, attributes=False)(value(workload, size))


@dataclass(frozen=True)
class Case:
    """One arm on one workload at one size, ready to time."""

    held: Any  # the mapping or typed object the user holds before packing
    pack: Callable[[Any], bytes]
    unpack: Callable[[bytes], Any]  # the library's normal named result
    read: Callable[[Any], int]  # reads every field of that result into the checksum

    def unpack_sum(self, buf: bytes) -> int:
        return self.read(self.unpack(buf))


@dataclass(frozen=True)
class WireArm:
    """A Part A arm: `case(workload, size)` and `build()` (the telemetry schema from nothing,
    then its first pack, so lazily compiled schemas pay for compiling)."""

    case: Callable[[str, int], Case]
    build: Callable[[], bytes]
