"""`struct`, hand-written: the mapping adapters a user must write are in the timed path."""

from __future__ import annotations

import struct
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from benchmarks.arms import Incorrect
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case


class TelemetryCodec:
    """The whole Envelope/Frame/Record layout as application code around compiled formats."""

    def __init__(self) -> None:
        self.u32 = struct.Struct(">I")
        self.u16 = struct.Struct(">H")
        self.head = struct.Struct(">BBHIQ16sIB")
        self.record = struct.Struct(">IBBHiiQH")

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


def _scalars(n: int) -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    names = w.scalar_names(n)
    fmt = struct.Struct(">" + "H" * n)
    if n == 1:

        def pack(d: dict[str, int]) -> bytes:
            return fmt.pack(d["f0"])

    else:
        get = itemgetter(*names)

        def pack(d: dict[str, int]) -> bytes:
            return fmt.pack(*get(d))

    def unpack(buf: bytes) -> dict[str, int]:
        return dict(zip(names, fmt.unpack(buf), strict=True))

    return pack, unpack


_U16 = struct.Struct(">H")
_ITEM = struct.Struct(">HH")


def _vector_pack(d: dict[str, Any]) -> bytes:
    item = _ITEM.pack
    items = d["items"]
    return _U16.pack(len(items)) + b"".join([item(it["a"], it["b"]) for it in items])


def _vector_unpack(buf: bytes) -> dict[str, Any]:
    (count,) = _U16.unpack_from(buf, 0)
    if len(buf) != 2 + 4 * count:
        raise ValueError("vector count does not match the buffer")
    items = [{"a": a, "b": b} for a, b in _ITEM.iter_unpack(buf[2:])]
    return {"count": count, "items": items}


class StructImpl:
    name = "struct"

    def __init__(self) -> None:
        self._telemetry = TelemetryCodec()

    def case(self, workload: str, size: int) -> Case:
        held = w.value(workload, size)
        read = w.reader(workload, size, attributes=False)
        if workload == "scalars":
            pack, unpack = _scalars(size)
            return Case(held, pack, unpack, read)
        if workload == "vector":
            return Case(held, _vector_pack, _vector_unpack, read)
        if workload == "telemetry":
            return Case(held, self._telemetry.pack, self._telemetry.unpack, read)
        raise Incorrect(f"unknown workload {workload}")

    def build_telemetry(self) -> bytes:
        return TelemetryCodec().pack(w.telemetry_value(1))
