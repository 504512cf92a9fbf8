"""Real captures: traffic of a real kernel (tests/formats/captures, made by generate.py in a
private network namespace), made afresh when the machine allows, and the scapy and dpkt
captures of /work/shared. Every packet decodes, re-encodes byte for byte, and agrees field
by field with dpkt (IPv4, UDP, TCP and its options, ICMP, IPv6, Ethernet, VLAN, SLL) and
scapy (IPv6 extension headers, pcapng)."""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import bytewright as bw
import dpkt
import pytest
from bytewright.formats import ethernet, ip, ipv6, pcap
from scapy.layers import inet6
from scapy.utils import RawPcapNgReader

HERE = Path(__file__).parent / "captures"
COMMITTED = sorted(p for p in HERE.iterdir() if p.suffix in (".pcap", ".pcapng"))
EXTERNAL_DIR = Path("/work/shared/formats_external/pcap")
EXTERNAL = sorted(EXTERNAL_DIR.glob("*/*.pcap")) if EXTERNAL_DIR.is_dir() else []


def raw_frames(path: Path) -> list[tuple[int, bytes]]:
    """(linktype, frame bytes) per packet, read by an independent reader."""
    data = path.read_bytes()
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        return [(m.linktype, bytes(d)) for d, m in RawPcapNgReader(str(path))]
    rd = dpkt.pcap.Reader(io.BytesIO(data))
    out = []
    try:
        for _, buf in rd:
            out.append((rd.datalink(), bytes(buf)))
    except dpkt.NeedData:
        pass  # a file cut short: dpkt stops where we do
    return out


def check_ipv4(pkt: ip.IPv4, d: Any) -> None:
    assert (pkt.version, pkt.ihl, pkt.total_length, pkt.identification) == (4, d.hl, d.len, d.id)
    assert (pkt.dscp << 2 | pkt.ecn, pkt.ttl, pkt.protocol, pkt.checksum) == (
        d.tos,
        d.ttl,
        d.p,
        d.sum,
    )
    assert (pkt.df, pkt.mf, pkt.fragment_offset) == (bool(d.df), bool(d.mf), d.offset)
    assert (pkt.src, pkt.dst, pkt.options) == (
        socket.inet_ntoa(d.src),
        socket.inet_ntoa(d.dst),
        d.opts,
    )
    check_transport(pkt.payload, d.data)


def check_transport(seg: Any, t: Any) -> None:
    if isinstance(seg, ip.UDP):
        assert (seg.src_port, seg.dst_port, seg.length, seg.checksum, seg.payload) == (
            t.sport,
            t.dport,
            t.ulen,
            t.sum,
            t.data,
        )
    elif isinstance(seg, ip.UDPFragment):
        assert isinstance(t, dpkt.udp.UDP)
        assert (seg.src_port, seg.dst_port, seg.length, seg.checksum) == (
            t.sport,
            t.dport,
            t.ulen,
            t.sum,
        )
    elif isinstance(seg, ip.TCP):
        assert (seg.src_port, seg.dst_port, seg.seq, seg.ack, seg.data_offset) == (
            t.sport,
            t.dport,
            t.seq,
            t.ack,
            t.off,
        )
        assert (int(seg.flags) & 0xFF, seg.window, seg.checksum, seg.urgent) == (
            t.flags,
            t.win,
            t.sum,
            t.urp,
        )
        assert (seg.options, seg.payload) == (t.opts, t.data)
        ours = [(o.kind, _option_value(o)) for o in seg.decoded_options if o.kind != 0]
        theirs = [(k, v) for k, v in dpkt.tcp.parse_opts(t.opts) if k != 0]
        assert ours == theirs
    elif isinstance(seg, ip.ICMP | ipv6.ICMPv6):
        assert (seg.type, seg.code, seg.checksum) == (t.type, t.code, t.sum)
    else:
        assert isinstance(seg, ip.Raw)
        assert seg.data == bytes(t)


def _option_value(o: Any) -> bytes:
    """An option's value bytes, as dpkt.tcp.parse_opts gives them."""
    wire = ip.TCPOptions(options=[o]).pack()
    return wire[2:] if len(wire) > 1 else b""


def check_ipv6(pkt: ipv6.IPv6, wire: bytes) -> None:
    d = dpkt.ip6.IP6(wire)
    assert (pkt.dscp << 2 | pkt.ecn, pkt.flow_label, pkt.payload_length) == (d.fc, d.flow, d.plen)
    assert (pkt.next_header, pkt.hop_limit) == (d.nxt, d.hlim)
    assert (pkt.src, pkt.dst) == (
        socket.inet_ntop(socket.AF_INET6, d.src),
        socket.inet_ntop(socket.AF_INET6, d.dst),
    )
    # The extension header chain, layer by layer, against scapy.
    layer: Any = inet6.IPv6(wire).payload
    cur: Any = pkt.payload
    while isinstance(cur, ipv6.HopByHop | ipv6.DestinationOptions | ipv6.Routing | ipv6.Fragment):
        assert layer.nh == cur.next_header
        if isinstance(cur, ipv6.Fragment):
            assert isinstance(layer, inet6.IPv6ExtHdrFragment)
            assert (layer.offset, layer.m, layer.id) == (
                cur.fragment_offset,
                cur.m,
                cur.identification,
            )
        else:
            assert layer.len == cur.length
            if isinstance(cur, ipv6.Routing):
                assert (layer.type, layer.segleft) == (cur.routing_type, cur.segments_left)
        layer, cur = layer.payload, cur.payload
    if isinstance(cur, ip.UDP | ip.TCP | ipv6.ICMPv6):
        check_transport(cur, d.data if not d.extension_hdrs else _dpkt_upper(d))


def _dpkt_upper(d: Any) -> Any:
    return d.data


def check_frame(linktype: int, wire: bytes, packet: pcap.Packet) -> None:
    assert packet.data == wire, "re-encodes byte for byte"
    frame = packet.frame
    if isinstance(frame, ethernet.Ethernet):
        d: Any = dpkt.ethernet.Ethernet(wire)
        assert (frame.dst, frame.src) == (d.dst.hex(":"), d.src.hex(":"))
        tags = []
        inner: Any = frame.payload
        while isinstance(inner, ethernet.Dot1Q):
            tags.append((inner.vid, inner.pcp))
            inner = inner.payload
        if tags:
            assert tags == [(t.id, t.pri) for t in d.vlan_tags]
    elif isinstance(frame, ethernet.LinuxSLL):
        d = dpkt.sll.SLL(wire)
        assert (frame.packet_type, frame.arphrd_type, frame.type) == (d.type, d.hrd, d.ethtype)
        inner = frame.payload
    else:
        return
    net, _, off = ethernet.network_layer(frame)
    if isinstance(net, ip.IPv4):
        check_ipv4(net, dpkt.ip.IP(wire[off:]))
    elif isinstance(net, ipv6.IPv6) and net.payload_length:
        check_ipv6(net, wire[off : off + 40 + net.payload_length])


def check_capture(path: Path) -> pcap.Capture:
    cap = pcap.read(path)
    frames = raw_frames(path)
    assert len(cap.packets) == len(frames)
    for (lt, wire), packet in zip(frames, cap.packets, strict=True):
        assert packet.captured_length == len(wire)
        check_frame(lt, wire, packet)
    return cap


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_committed_captures(path: Path) -> None:
    cap = check_capture(path)
    assert cap.cut_short is None and cap.packets


@pytest.mark.skipif(not EXTERNAL, reason="no /work/shared/formats_external/pcap")
@pytest.mark.parametrize("path", EXTERNAL, ids=[p.name for p in EXTERNAL])
def test_external_captures(path: Path) -> None:
    check_capture(path)


def _layers(cap: pcap.Capture) -> list[list[Any]]:
    out = []
    for p in cap.packets:
        chain, cur = [], p.frame
        while cur is not None:
            chain.append(cur)
            cur = getattr(cur, "payload", None)
            if isinstance(cur, bytes):
                break
        out.append(chain)
    return out


def test_lo_pcap_holds_what_the_generator_sent() -> None:
    cap = pcap.read(HERE / "lo.pcap")
    assert cap.format == "pcap" and cap.interfaces[0].units_per_second == 10**9
    chains = _layers(cap)
    v4 = [x for c in chains for x in c if isinstance(x, ip.IPv4)]
    assert any(p.mf and p.fragment_offset == 0 for p in v4), "a first fragment"
    assert any(p.fragment_offset and not p.mf for p in v4), "a last fragment"
    assert any(p.options.startswith(b"\x07") for p in v4), "record route"
    assert any(p.options == b"\x94\x04\x00\x00" for p in v4), "router alert"
    assert {p.ecn for p in v4} >= {2, 3} and any(p.dscp == 46 for p in v4)
    assert any(p.total_length == 0 for p in v4), "offload length"
    udp = [x for c in chains for x in c if isinstance(x, ip.UDP)]
    assert any(u.checksum == 0 and u.payload == b"no checksum" for u in udp)
    icmp = [x for c in chains for x in c if isinstance(x, ip.ICMP)]
    assert {(m.type, m.code) for m in icmp} >= {(3, 3), (8, 0), (0, 0)}
    icmp6 = [x for c in chains for x in c if isinstance(x, ipv6.ICMPv6)]
    assert {(m.type, m.code) for m in icmp6} >= {(1, 4), (128, 0), (129, 0)}
    kinds = {type(x) for c in chains for x in c}
    assert {ipv6.HopByHop, ipv6.DestinationOptions, ipv6.Routing, ipv6.Fragment} <= kinds
    assert ip.UDPFragment in kinds
    syns = [x for c in chains for x in c if isinstance(x, ip.TCP) and x.flags & ip.TCPFlags.SYN]
    assert syns
    for s in syns:
        opts = {type(o) for o in s.decoded_options}
        assert {
            ip.MaximumSegmentSize,
            ip.SackPermitted,
            ip.Timestamps,
            ip.WindowScale,
        } <= opts
    qinq = [
        c
        for c in chains
        if [type(x) for x in c[:3]] == [ethernet.Ethernet, ethernet.Dot1Q, ethernet.Dot1Q]
    ]
    assert qinq and (qinq[0][1].vid, qinq[0][2].vid) == (200, 30)
    padded = [c[0] for c in chains if c[0].trailer.endswith(b"\xde\xad\xbe\xef")]
    assert padded and len(padded[0].pack()) == 64
    # Loopback checksums are offloaded: some are wrong, and packets say so.
    held = [ok for p in cap.packets for ok in p.checksums.values()]
    assert True in held and False in held


def test_pcapng_has_two_interfaces_with_their_own_link_types() -> None:
    cap = pcap.read(HERE / "lo.pcapng")
    assert [(i.linktype, i.name) for i in cap.interfaces] == [(1, "lo"), (113, "any")]
    assert {p.interface for p in cap.packets} == {0, 1}
    assert all(
        isinstance(p.frame, ethernet.Ethernet if p.interface == 0 else ethernet.LinuxSLL)
        for p in cap.packets
    )
    times = [p.timestamp_ns for p in cap.packets]
    for (_, m), t in zip(RawPcapNgReader(str(HERE / "lo.pcapng")), times, strict=True):
        assert t == ((m.tshigh << 32) | m.tslow) * 10**9 // m.tsresol


def test_snapped_segments_keep_what_was_captured() -> None:
    cap = pcap.read(HERE / "bigtcp.pcap")
    cut = [p for p in cap.packets if p.truncated]
    assert cut
    for p in cut:
        net, _, _ = ethernet.network_layer(p.frame)
        assert isinstance(net, ip.IPv4 | ipv6.IPv6)
        assert isinstance(
            ipv6.upper_layer(net) if isinstance(net, ipv6.IPv6) else net.payload, ip.TCP
        )
        assert p.data == p.pack()[22:]
    with pytest.raises(bw.DecodeError) as e:
        pcap.read(HERE / "bigtcp.pcap", verify=True)
    assert e.value.path.startswith("packets[")


def test_reassembly_of_captured_fragments() -> None:
    cap = pcap.read(HERE / "lo.pcap")
    v4 = [(p.time, ethernet.network_layer(p.frame)[0]) for p in cap.packets]
    whole = ip.reassemble([(t, x) for t, x in v4 if isinstance(x, ip.IPv4)])
    big = [x for x in whole if isinstance(x.payload, ip.UDP) and len(x.payload.payload) == 3072]
    assert big and big[0].payload.payload == bytes(range(256)) * 12
    assert not any(x.is_fragment for x in whole)
    pings = [x for x in whole if isinstance(x.payload, ip.ICMP) and len(x.payload.body) == 1404]
    assert len(pings) == 2  # the request and the reply


def test_verify_names_the_packet_and_the_file_offset() -> None:
    data = (HERE / "lo.pcap").read_bytes()
    with pytest.raises(bw.DecodeError) as e:
        pcap.read(data, verify=True)
    err = e.value
    assert err.path.startswith("packets[") and err.path.endswith(".checksum")
    i = int(err.path[len("packets[") : err.path.index("]")])
    cap = pcap.read(data)
    assert False in cap.packets[i].checksums.values()
    assert all(False not in p.checksums.values() for p in cap.packets[:i])
    net = ethernet.network_layer(cap.packets[i].frame)[0]
    stored = ipv6.upper_layer(net).checksum if isinstance(net, ipv6.IPv6) else net.payload.checksum
    assert err.offset is not None and data[err.offset : err.offset + 2] == stored.to_bytes(2, "big")


def _can_capture() -> bool:
    if sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("tcpdump"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_capture(), reason="needs root, unshare -n and tcpdump")
def test_fresh_captures(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(HERE / "generate.py"), str(tmp_path)], check=True, timeout=120
    )
    made = sorted(tmp_path.iterdir())
    assert "lo.pcap" in {p.name for p in made}
    for path in made:
        cap = check_capture(path)
        assert cap.packets
