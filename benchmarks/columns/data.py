"""Part D's inputs, generated here (no committed files), with what a correct decode gives."""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import need
from benchmarks.wire import workloads as w

LAB_FORMAT, LAB_NAMES = "<IHHQ", ("a", "b", "c", "d")
LAB_SEED = 20261001  # Part B's records


@dataclass(frozen=True)
class Lab:
    data: bytes
    columns: dict[str, Any]  # name -> NumPy array
    count: int


def lab(n: int, repeat: int = 1) -> Lab:
    """`n` random `<IHHQ` records (Part B's), repeated `repeat` times."""
    np = need("numpy")
    rng = random.Random(LAB_SEED)
    rows = [tuple(rng.getrandbits(b) for b in (32, 16, 16, 64)) for _ in range(n)]
    pack = struct.Struct(LAB_FORMAT).pack
    dtypes = ("<u4", "<u2", "<u2", "<u8")
    columns = {
        k: np.tile(np.array(c, dtype=t), repeat)
        for k, c, t in zip(LAB_NAMES, zip(*rows, strict=True), dtypes, strict=True)
    }
    return Lab(b"".join([pack(*t) for t in rows]) * repeat, columns, n * repeat)


RECORDS = [w.record_value(i) for i in range(64)]


@dataclass(frozen=True)
class Envelopes:
    data: bytes
    rows: list[dict[str, Any]]

    @property
    def count(self) -> int:
        return len(self.rows)


def envelopes(n: int) -> Envelopes:
    """`n` back-to-back telemetry envelopes of 1 to 4 records, and their rows (derived fields
    included), as any per-message decoder returns them."""
    chunks, rows = [], []
    for i in range(n):
        v = w.telemetry_value(0, sequence=i)
        v["frame"]["records"] = [RECORDS[(i + k) % 64] for k in range(1 + i % 4)]
        wire = w.envelope_bytes(v)
        chunks.append(wire)
        f = v["frame"]
        frame = {**{k: f[k] for k in w.FRAME_FIELDS}, "session": f["session"]}
        frame |= {
            "source_id": f["source_id"],
            "source_len": len(f["source"]),
            "source": f["source"],
        }
        frame |= {
            "record_count": len(f["records"]),
            "records": [_record_row(r) for r in f["records"]],
        }
        rows.append({"frame_size": len(wire) - 4, "frame": frame})
    return Envelopes(b"".join(chunks), rows)


def _record_row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        **{k: r[k] for k in w.RECORD_FIELDS},
        "payload_len": len(r["payload"]),
        "payload": r["payload"],
    }


@dataclass(frozen=True)
class Records:
    """Back-to-back telemetry `Record` messages (variable size), a block repeated."""

    data: bytes
    count: int
    sums: dict[str, int]  # per integer field


def records(size: int, block: int = 4096) -> Records:
    """About `size` bytes of Record messages: `block` distinct records, repeated."""
    rows = [_record_row(w.record_value(i)) for i in range(block)]
    one = b"".join(w.record_bytes(w.record_value(i)) for i in range(block))
    times = max(1, size // len(one))
    sums = {k: times * sum(r[k] for r in rows) for k in (*w.RECORD_FIELDS, "payload_len")}
    return Records(one * times, times * block, sums)


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    total = (total >> 16) + (total & 0xFFFF)
    return ~(total + (total >> 16)) & 0xFFFF


def _packet(i: int) -> tuple[bytes, int]:
    """Ethernet + IPv4 or IPv6 + TCP or UDP + 0-63 bytes of payload; and the source port."""
    v6, tcp = i % 3 == 0, i % 2 == 0
    sport, dport = 1024 + (i * 7919) % 60000, (80, 443, 53, 8080)[i % 4]
    payload = bytes((i + j) & 0xFF for j in range((i * 13) % 64))
    if tcp:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, i, 0, 5 << 4, 0x18, 65535, 0, 0) + payload
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    proto = 6 if tcp else 17
    if v6:
        src, dst = (
            bytes([0x20, 0x01, 0x0D, 0xB8, *[0] * 10, i >> 8 & 0xFF, i & 0xFF]),
            bytes([0xFE, 0x80, *[0] * 13, 1]),
        )
        ip = struct.pack("!IHBB16s16s", 6 << 28, len(l4), proto, 64, src, dst)
    else:
        head = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(l4),
            i & 0xFFFF,
            0,
            64,
            proto,
            0,
            bytes([10, 0, i >> 8 & 0xFF, i & 0xFF]),
            bytes([192, 168, 1, 1]),
        )
        ip = head[:10] + struct.pack("!H", _checksum(head)) + head[12:]
    ether = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02" + (
        b"\x86\xdd" if v6 else b"\x08\x00"
    )
    return ether + ip + l4, sport


@dataclass(frozen=True)
class Capture:
    data: bytes  # a whole pcap file, microsecond timestamps, little-endian, Ethernet
    lengths: list[int]  # captured length per packet
    sports: list[int]  # TCP or UDP source port per packet

    @property
    def count(self) -> int:
        return len(self.lengths)

    def head(self, k: int) -> bytes:
        """A pcap of the first `k` packets."""
        return self.data[: 24 + sum(16 + n for n in self.lengths[:k])]


def capture(n: int, distinct: int = 1024) -> Capture:
    """A pcap of `n` packets cycling through `distinct` different ones, 1 ms apart."""
    packets = [_packet(i) for i in range(min(n, distinct))]
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    record = struct.Struct("<IIII").pack
    chunks, lengths, sports = [header], [], []
    for i in range(n):
        packet, sport = packets[i % len(packets)]
        chunks += [
            record(1_750_000_000 + i // 1000, (i % 1000) * 1000, len(packet), len(packet)),
            packet,
        ]
        lengths.append(len(packet))
        sports.append(sport)
    return Capture(b"".join(chunks), lengths, sports)
