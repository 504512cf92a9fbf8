"""pcap.read_table: every capture decodes to one row per packet that agrees with pcap.read,
and the columns hold what per-packet decoding gives."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import bytewright as bw
import pytest
from bytewright.formats import ethernet, ip, ipv6, pcap

pa = pytest.importorskip("pyarrow")

HERE = Path(__file__).parent
CAPTURES = sorted((HERE / "captures").glob("*.pcap*"))
EXTERNAL = sorted(Path("/work/shared/formats_external/pcap").glob("*/*"))


def chosen(union: dict[str, Any] | None) -> Any:
    """The value of the variant a union row holds."""
    return None if union is None else union[union["variant"]]


def transport(frame: dict[str, Any]) -> dict[str, Any] | None:
    """The first layer of a frame (as a table row) that has ports."""
    node: Any = frame
    while isinstance(node, dict):
        if "src_port" in node:
            return node
        node = chosen(node) if "variant" in node else node.get("payload")
    return None


def ports_of(packet: pcap.Packet) -> tuple[int, int] | None:
    layer: Any = packet.frame
    while layer is not None:
        if isinstance(layer, ip.UDP | ip.UDPFragment | ip.TCP):
            return (layer.src_port, layer.dst_port)
        layer = getattr(layer, "payload", None)
        if isinstance(layer, ipv6.IPv6):
            layer = ipv6.upper_layer(layer)
    return None


@pytest.mark.parametrize("path", CAPTURES + EXTERNAL, ids=lambda p: p.name)
def test_every_packet_is_a_row_that_agrees_with_read(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pcap.CutShortWarning)
        table = pcap.read_table(path)
    capture = pcap.read(path)
    assert len(table) == len(capture.packets)
    rows = table.to_pylist()
    for row, packet in zip(rows, capture.packets, strict=True):
        frac = row.get("ts_nsec", None)
        ns = row["ts_sec"] * 10**9 + (frac if frac is not None else row["ts_usec"] * 1000)
        if capture.format != "pcapng":
            assert ns == packet.timestamp_ns
        assert row["captured_length"] == packet.captured_length
        assert row["original_length"] == packet.original_length
        if row["frame"]["variant"] == "Raw":
            continue
        # A frame the table decoded, decoded alone, gives the same layers.
        t = transport(row["frame"])
        want = ports_of(packet)
        if t is not None:
            assert (t["src_port"], t["dst_port"]) == want, path.name


def udp_frame(src_port: int, dst_port: int, payload: bytes) -> bytes:
    """An Ethernet frame of one IPv4 UDP datagram from 10.0.0.1 to 10.0.0.2."""
    return ethernet.Ethernet(
        dst="ff:ff:ff:ff:ff:ff",
        src="02:00:00:00:00:01",
        type=ethernet.EtherType.IPV4,
        payload=ip.IPv4(
            src="10.0.0.1",
            dst="10.0.0.2",
            protocol=17,
            payload=ip.UDP(src_port=src_port, dst_port=dst_port, payload=payload),
        ),
    ).pack()


def test_frames_that_do_not_decode_keep_their_bytes() -> None:
    good = udp_frame(53, 5353, b"x")
    bad = bytearray(good)
    bad[14] = 0x45 + 0x10  # a version the IPv4 declaration refuses: Raw below Ethernet?
    tso = bytearray(good)
    tso[16:18] = b"\0\0"  # total_length 0 (segmentation offload)
    cap = pcap.write([(1, 0, good), (2, 0, bytes(bad)), (3, 0, bytes(tso)), (4, 0, good[:20], 99)])
    table = pcap.read_table(cap)
    variants = [r["frame"]["variant"] for r in table.to_pylist()]
    assert len(table) == 4 and variants[0] == "Ethernet" and variants[3] == "Raw"
    raws = [r["frame"]["Raw"] for r in table.to_pylist()]
    for v, raw, wire in zip(variants, raws, [good, bad, tso, good[:20]], strict=True):
        if v == "Raw":
            assert raw == {"data": bytes(wire)}


def test_cut_files_keep_the_packets_before_the_cut() -> None:
    frame = bytes(60)
    cap = pcap.write([(i, 0, frame) for i in range(5)])
    with pytest.warns(pcap.CutShortWarning, match="inside packet 4"):
        table = pcap.read_table(cap[:-10])
    assert len(table) == 4
    with pytest.raises(bw.DecodeError, match="not a pcap magic"):
        pcap.read_table(b"nope" + cap[4:])


def test_threads_give_the_same_table() -> None:
    frames = [udp_frame(i % 65536, 53, bytes(i % 50)) for i in range(200)]
    # 6000 packets (about 500 KB): enough for two threads to split.
    cap = pcap.write([(i, 0, frames[i % 200]) for i in range(6000)])
    one = pcap.read_table(cap, threads=1)
    two = pcap.read_table(cap, threads=2)
    assert pa.table(one).equals(pa.table(two))


def test_wrong_checksums_keep_the_packet_decoded_as_read_does() -> None:
    frame = bytearray(udp_frame(53, 5353, b"x"))
    good = bytes(frame)
    frame[24:26] = b"\xbe\xef"  # the IPv4 header checksum (offloaded, or corrupt)
    cap = pcap.write([(1, 0, good), (2, 0, bytes(frame))])
    rows = pcap.read_table(cap).to_pylist()
    packets = pcap.read(cap).packets
    assert [r["frame"]["variant"] for r in rows] == ["Ethernet", "Ethernet"]
    heads = [r["frame"]["Ethernet"]["payload"]["IPv4"] for r in rows]
    assert [h["checksum"] for h in heads] == [p.frame.payload.checksum for p in packets]
    assert heads[1]["checksum"] == 0xBEEF
    assert packets[1].checksums["ipv4"] is False
    assert [h["payload"]["UDP"]["dst_port"] for h in heads] == [5353, 5353]
