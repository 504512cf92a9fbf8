"""pcap capture files: both byte orders, micro- and nanosecond magic, record by record."""

from __future__ import annotations

import io
import struct

import bytewright as bw
import dpkt
import pytest
from bytewright.formats import pcap

RECORDS = [
    (1_700_000_000, 123_456, b"\x01\x02\x03", 3),
    (1_700_000_001, 999_999, bytes(range(256)) * 3, 768),
    (1_700_000_002, 0, b"", 0),
    (1_700_000_003, 5, b"snapped", 1500),
]


def by_hand(prefix: str, magic: int, records: list[tuple[int, int, bytes, int]]) -> bytes:
    out = struct.pack(prefix + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
    for sec, frac, data, orig in records:
        out += struct.pack(prefix + "IIII", sec, frac, len(data), orig) + data
    return out


CASES = [
    ("<", 0xA1B2C3D4, "little", False),
    (">", 0xA1B2C3D4, "big", False),
    ("<", 0xA1B23C4D, "little", True),
    (">", 0xA1B23C4D, "big", True),
]


@pytest.mark.parametrize(("prefix", "magic", "order", "nano"), CASES)
def test_hand_built_files(prefix: str, magic: int, order: str, nano: bool) -> None:
    data = by_hand(prefix, magic, RECORDS)
    f = pcap.Pcap.unpack(data)
    assert f.nanoseconds is nano
    assert f.body.header.snaplen == 65535 and f.body.header.linktype == 1
    got = [(r.ts_sec, r.ts_frac, r.data, r.orig_len) for r in f.body.records]
    assert got == RECORDS
    assert [(r.ts_sec, r.ts_frac, r.data, r.orig_len) for r in pcap.iter_records(data)] == RECORDS
    assert f.pack() == data
    assert pcap.write(RECORDS, byteorder=order, nanoseconds=nano) == data


@pytest.mark.parametrize("nano", [False, True])
def test_dpkt_reads_ours(nano: bool) -> None:
    data = pcap.write(RECORDS, nanoseconds=nano)
    rd = dpkt.pcap.Reader(io.BytesIO(data))
    got = list(rd)
    assert [buf for _, buf in got] == [r[2] for r in RECORDS]
    scale = 1e9 if nano else 1e6
    for (ts, _), (sec, frac, _, _) in zip(got, RECORDS, strict=True):
        assert float(ts) == pytest.approx(sec + frac / scale)


@pytest.mark.parametrize("nano", [False, True])
def test_we_read_dpkt(nano: bool) -> None:
    buf = io.BytesIO()
    w = dpkt.pcap.Writer(buf, snaplen=1500, linktype=dpkt.pcap.DLT_EN10MB, nano=nano)
    w.writepkt(b"\xaa" * 60, ts=1_700_000_000.5)
    w.writepkt(b"\xbb" * 14, ts=1_700_000_001.25)
    data = buf.getvalue()
    recs = list(pcap.iter_records(data))
    assert [r.data for r in recs] == [b"\xaa" * 60, b"\xbb" * 14]
    assert [r.ts_sec for r in recs] == [1_700_000_000, 1_700_000_001]
    scale = 10**9 if nano else 10**6
    assert [r.ts_frac for r in recs] == [scale // 2, scale // 4]
    f = pcap.Pcap.unpack(data)
    assert f.nanoseconds is nano and f.body.header.snaplen == 1500
    assert f.pack() == data


def test_errors() -> None:
    data = by_hand("<", 0xA1B2C3D4, RECORDS)
    with pytest.raises(bw.DecodeError):
        pcap.Pcap.unpack(b"\x00\x00\x00\x00" + data[4:])
    with pytest.raises(bw.DecodeError):
        list(pcap.iter_records(b"\x00\x00\x00\x00" + data[4:]))
    with pytest.raises(bw.DecodeError):
        pcap.Pcap.unpack(data[:-1])
    recs = pcap.iter_records(data[:-1])
    assert next(recs).data == b"\x01\x02\x03"
    with pytest.raises(bw.DecodeError):
        list(recs)
    with pytest.raises(bw.DecodeError):
        list(pcap.iter_records(data[:10]))
