"""`struct`, hand-written: the mapping adapters a user must write are in the timed path."""

from __future__ import annotations

import struct
from operator import itemgetter
from typing import Any

from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case, WireArm

_U16, _ITEM = struct.Struct(">H"), struct.Struct(">HH")


class Telemetry:
    """The whole Envelope/Frame/Record layout as application code around compiled formats."""

    def __init__(self) -> None:
        self.u32, self.u16 = struct.Struct(">I"), struct.Struct(">H")
        self.head, self.record = struct.Struct(">BBHIQ16sIB"), struct.Struct(">IBBHiiQH")

    def pack(self, env: dict[str, Any]) -> bytes:
        f = env["frame"]
        record = self.record.pack
        parts: list[bytes] = []
        for r in f["records"]:
            payload = r["payload"]
            parts.append(
                record(
                    r["record_id"],
                    r["kind"],
                    r["status"],
                    r["code"],
                    r["x"],
                    r["y"],
                    r["reading"],
                    len(payload),
                )
            )
            parts.append(payload)
        src = f["source"].encode("utf-8")
        frame = b"".join(
            [
                self.head.pack(
                    f["version"],
                    f["flags"],
                    f["message_type"],
                    f["sequence"],
                    f["timestamp"],
                    f["session"],
                    f["source_id"],
                    len(src),
                ),
                src,
                self.u16.pack(len(f["records"])),
                *parts,
            ]
        )
        return self.u32.pack(len(frame)) + frame

    def unpack(self, buf: bytes) -> dict[str, Any]:
        (frame_size,) = self.u32.unpack_from(buf, 0)
        if 4 + frame_size != len(buf):
            raise ValueError("frame_size does not match the buffer")
        version, flags, message_type, sequence, timestamp, session, source_id, source_len = (
            self.head.unpack_from(buf, 4)
        )
        off = 4 + self.head.size
        source = buf[off : off + source_len].decode("utf-8")
        off += source_len
        (count,) = self.u16.unpack_from(buf, off)
        off += 2
        record = self.record.unpack_from
        size = self.record.size
        records = []
        for _ in range(count):
            record_id, kind, status, code, x, y, reading, payload_len = record(buf, off)
            off += size
            payload = buf[off : off + payload_len]
            if len(payload) != payload_len:
                raise ValueError("truncated payload")
            off += payload_len
            records.append(
                {
                    "record_id": record_id,
                    "kind": kind,
                    "status": status,
                    "code": code,
                    "x": x,
                    "y": y,
                    "reading": reading,
                    "payload_len": payload_len,
                    "payload": payload,
                }
            )
        if off != len(buf):
            raise ValueError("trailing bytes in the frame")
        frame = {
            "version": version,
            "flags": flags,
            "message_type": message_type,
            "sequence": sequence,
            "timestamp": timestamp,
            "session": session,
            "source_id": source_id,
            "source_len": source_len,
            "source": source,
            "record_count": count,
            "records": records,
        }
        return {"frame_size": frame_size, "frame": frame}


def vector_pack(d: dict[str, Any]) -> bytes:
    item = _ITEM.pack
    items = d["items"]
    return _U16.pack(len(items)) + b"".join([item(it["a"], it["b"]) for it in items])


def vector_unpack(buf: bytes) -> dict[str, Any]:
    (count,) = _U16.unpack_from(buf, 0)
    if len(buf) != 2 + 4 * count:
        raise ValueError("vector count does not match the buffer")
    items = [{"a": a, "b": b} for a, b in _ITEM.iter_unpack(buf[2:])]
    return {"count": count, "items": items}


def scalars(n: int) -> tuple[Any, Any]:
    names, fmt = w.scalar_names(n), struct.Struct(">" + "H" * n)
    get = itemgetter(*names)

    def pack_one(d: dict[str, int]) -> bytes:
        return fmt.pack(d["f0"])

    def pack(d: dict[str, int]) -> bytes:
        return fmt.pack(*get(d))

    def unpack(buf: bytes) -> dict[str, int]:
        return dict(zip(names, fmt.unpack(buf), strict=True))

    return (pack_one if n == 1 else pack), unpack


_TELEMETRY = Telemetry()


def case(workload: str, size: int) -> Case:
    pack, unpack = {
        "vector": (vector_pack, vector_unpack),
        "telemetry": (_TELEMETRY.pack, _TELEMETRY.unpack),
    }.get(workload) or scalars(size)
    return Case(w.value(workload, size), pack, unpack, w.reader(workload, size, attributes=False))


ARMS = {"struct": WireArm(case, lambda: Telemetry().pack(w.telemetry_value(1)))}
