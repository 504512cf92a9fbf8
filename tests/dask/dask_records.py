"""Generated files for the read_records/to_records tests: telemetry (variable-size messages),
samples (fixed-size) and pcap captures, with what a single-process decode of them gives."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import IO, Any

import bytewright as bw
import pyarrow as pa

# pcap's little-endian magics (pcap.MAGIC_LE_US, pcap.MAGIC_LE_NS), spelled out so that
# workers running `pcap_header` need not import the formats.
PCAP_LE = (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1")


class Temperature(bw.Struct, byteorder="little"):
    celsius: bw.F32


class Position(bw.Struct, byteorder="little"):
    lat: bw.F64
    lon: bw.F64


class Telemetry(bw.Struct, byteorder="little"):
    device: bw.U32
    ts_ns: bw.U64
    kind: bw.U8
    body: Temperature | Position = bw.field(tag="kind", cases={1: Temperature, 2: Position})
    note_len: bw.U8 = bw.derived()
    note: str = bw.field(len="note_len")
    n: bw.U16 = bw.derived()
    samples: list[bw.I16] = bw.field(count="n")
    has_alarm: bw.U8
    alarm: int | None = bw.field(type=bw.U32, when="has_alarm == 1", default=None)


class Sample(bw.Struct, byteorder="big"):
    ts: bw.U64
    sensor: bw.U16
    flags: bw.U8
    ok: bw.Bool
    value: bw.F32


SAMPLE_SIZE = 16
assert Sample.__bw__.codec.static_size == SAMPLE_SIZE


def telemetry(seed: int, count: int) -> list[bytes]:
    """`count` packed Telemetry messages: both union cases, notes (some non-ASCII), sample
    lists of 0 to 40 items, alarms present and absent."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        kind = 1 + (i + seed) % 2
        body: Temperature | Position = (
            Temperature(celsius=rng.uniform(-40, 60))
            if kind == 1
            else Position(lat=rng.uniform(-90, 90), lon=rng.uniform(-180, 180))
        )
        alarm = rng.getrandbits(32) if i % 5 == 0 else None
        message = Telemetry(
            device=seed * 1000 + i % 17,
            ts_ns=1_700_000_000_000_000_000 + seed * 10**12 + i * 1000,
            kind=kind,
            body=body,
            note=["", "ok", "température", "x" * (i % 50)][i % 4],
            samples=[rng.randint(-(2**15), 2**15 - 1) for _ in range(rng.randint(0, 40))],
            has_alarm=int(alarm is not None),
            alarm=alarm,
        )
        out.append(message.pack())
    return out


def note_offset(messages: list[bytes], k: int) -> int:
    """Where the note of message `k` starts in the file of `messages`."""
    start = sum(len(m) for m in messages[:k])
    body = 4 if messages[k][12] == 1 else 16
    return start + 4 + 8 + 1 + body + 1


def samples(seed: int, count: int) -> bytes:
    rng = random.Random(seed)
    return b"".join(
        Sample(
            ts=seed * 10**9 + i,
            sensor=rng.getrandbits(16),
            flags=rng.getrandbits(8),
            ok=bool(i % 3),
            value=rng.uniform(0, 1),
        ).pack()
        for i in range(count)
    )


def ethernet_frame(rng: random.Random) -> bytes:
    """An Ethernet + IPv4 + UDP frame with a random payload (contents do not matter here)."""
    payload = rng.randbytes(rng.randint(0, 200))
    udp = struct.pack("!HHHH", rng.getrandbits(16), 53, 8 + len(payload), 0) + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, b"\n\0\0\1", b"\n\0\0\2"
    )
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp


def pcap_header(f: IO[bytes]) -> int:
    """read_records' header function for little-endian pcap files."""
    magic = f.read(4)
    if magic not in PCAP_LE:
        raise ValueError(f"not a little-endian pcap file: magic {magic!r}")
    return 24


def capture(seed: int, count: int) -> bytes:
    from bytewright.formats import pcap

    rng = random.Random(seed)
    packets = [(1_700_000_000 + i, rng.getrandbits(20), ethernet_frame(rng)) for i in range(count)]
    return pcap.write(packets)


def write_files(folder: Path, name: str, contents: list[bytes]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, data in enumerate(contents):
        path = folder / f"{name}-{i:02}.bin"
        path.write_bytes(data)
        paths.append(str(path))
    return paths


def expected(X: Any, contents: list[bytes], header: int = 0) -> list[dict[str, Any]]:
    """The rows of every file, decoded one file at a time in this process, concatenated."""
    tables = [pa.table(X.unpack_table(data, offset=header)) for data in contents]
    rows: list[dict[str, Any]] = pa.concat_tables(tables).to_pylist()
    return rows


def rows(df: Any) -> list[dict[str, Any]]:
    """The rows of a pandas DataFrame of Arrow-backed columns, as Python values."""
    got: list[dict[str, Any]] = pa.Table.from_pandas(df, preserve_index=False).to_pylist()
    return got
