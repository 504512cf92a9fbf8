"""UDP checksum 0, offload lengths, fragmentation and reassembly, IPv6 extension headers,
VLAN tags, TCP options, pcapng and the modified pcap magic, cross-checked with dpkt and
scapy."""

from __future__ import annotations

import io
import random
import socket
import struct

import bytewright as bw
import dpkt
import pytest
from bytewright.formats import ethernet, ip, ipv6, pcap, pcapng
from scapy.layers import inet, inet6, l2
from scapy.utils import RawPcapNgReader

SRC, DST = "192.0.2.1", "198.51.100.2"


def udp(payload: bytes = b"data", **kw: object) -> ip.IPv4:
    return ip.IPv4(
        src=SRC, dst=DST, protocol=17, payload=ip.UDP(src_port=5, dst_port=6, payload=payload, **kw)
    )


def test_udp_checksum_zero_round_trips_and_can_be_chosen() -> None:
    wire = udp(checksum=0).pack()
    assert wire[26:28] == b"\0\0"
    back = ip.IPv4.unpack(wire)
    assert back.payload.checksum == 0 and back.pack() == wire
    assert dpkt.ip.IP(wire).data.sum == 0
    assert ip.checksums(back) == {"ipv4": True}  # "no checksum" is not checked
    computed = udp().pack()
    assert (
        computed[26:28] != b"\0\0"
        and dpkt.ip.IP(computed).data.sum == ip.IPv4.unpack(computed).payload.checksum
    )


def test_offloaded_total_length_zero_like_dpkt() -> None:
    wire = bytearray(udp(b"offloaded segment").pack())
    wire[2:4] = b"\0\0"
    wire[10:12] = ip.internet_checksum(bytes(wire[:10]) + b"\0\0" + bytes(wire[12:20])).to_bytes(
        2, "big"
    )
    pkt = ip.IPv4.unpack(bytes(wire))
    d = dpkt.ip.IP(bytes(wire))
    assert pkt.total_length == 0 == d.len
    assert pkt.payload.payload == d.data.data == b"offloaded segment"
    assert pkt.pack() == bytes(wire)
    frame = b"\x02" * 12 + b"\x08\x00" + bytes(wire)
    assert ethernet.Ethernet.unpack(frame).pack() == frame


def test_offloaded_checksums_are_kept_with_verify_false() -> None:
    wire = bytearray(udp(b"x" * 30).pack())
    wire[26:28] = b"\xab\xcd"  # what a capture of the sender sees with checksum offload
    with pytest.raises(bw.DecodeError):
        ip.IPv4.unpack(bytes(wire))
    pkt = ip.IPv4.unpack(bytes(wire), verify=False)
    assert ip.checksums(pkt) == {"ipv4": True, "udp": False}
    with pytest.raises(bw.PackError):
        pkt.pack()
    assert pkt.pack(verify=False) == bytes(wire)


@pytest.mark.parametrize("seed", range(12))
def test_fragments_match_scapy_and_reassemble(seed: int) -> None:
    rnd = random.Random(seed)
    size = rnd.randint(100, 4000)
    mtu = rnd.choice([68, 300, 576, 1280, 1500])
    opts = rnd.choice([b"", b"\x94\x04\x00\x00", b"\x07\x07\x04" + bytes(4) + b"\x00"])
    pkt = ip.IPv4(
        src=SRC,
        dst=DST,
        identification=rnd.getrandbits(16),
        protocol=17,
        options=opts,
        payload=ip.UDP(src_port=1, dst_port=2, payload=rnd.randbytes(size)),
    )
    ours = [f.pack() for f in ip.fragment(pkt, mtu)]
    theirs = [
        bytes(f)
        for f in inet.fragment(inet.IP(pkt.pack()), fragsize=(mtu - 20 - len(opts)) // 8 * 8)
    ]
    # scapy keeps every option in every fragment, we only the copied ones (RFC 791): where
    # that is the same, the data cut and the fields agree.
    if not opts or opts[0] & 0x80:
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            x, y = dpkt.ip.IP(a), dpkt.ip.IP(b)
            assert (x.id, x.mf, x.offset, x.p, x.opts, bytes(x.data)) == (
                y.id,
                y.mf,
                y.offset,
                y.p,
                y.opts,
                bytes(y.data),
            )
    for a in ours:
        assert len(a) <= mtu and ip.IPv4.unpack(a).pack() == a
    decoded = [ip.IPv4.unpack(a) for a in ours]
    rnd.shuffle(decoded)
    whole = ip.reassemble(decoded)
    assert len(whole) == 1 and whole[0].pack() == pkt.pack()


def _frags(data: bytes, pieces: list[tuple[int, int, bool]], ident: int = 9) -> list[ip.IPv4]:
    return [
        ip.IPv4(
            src=SRC,
            dst=DST,
            identification=ident,
            protocol=253,
            mf=mf,
            fragment_offset=start // 8,
            payload=ip.Raw(data=data[start:end]),
        )
        for start, end, mf in pieces
    ]


def test_reassembly_rules() -> None:
    data = bytes(range(48))
    whole = _frags(data, [(0, 24, True), (24, 48, False)])
    assert [p.payload for p in ip.reassemble(whole)] == [ip.Raw(data=data)]
    # An exact duplicate is ignored.
    dup = _frags(data, [(0, 24, True), (0, 24, True), (24, 48, False)])
    assert len(ip.reassemble(dup)) == 1
    # Any other overlap discards the datagram (RFC 5722), later fragments too.
    overlap = _frags(data, [(0, 24, True), (16, 32, True), (24, 48, False)])
    assert ip.reassemble(overlap) == []
    # Too slow: the first fragment expires.
    timed = [(0.0, whole[0]), (31.0, whole[1])]
    assert ip.reassemble(timed) == []
    assert len(ip.reassemble(timed, timeout=60)) == 1
    # Incomplete at the end; other packets pass through in order.
    plain = udp()
    assert ip.reassemble([plain, whole[1]]) == [plain]


def test_tcp_options_decode_and_agree_with_dpkt() -> None:
    opts = (
        b"\x02\x04\x05\xb4"  # MSS 1460
        + b"\x01\x03\x03\x07"  # NOP, window scale 7
        + b"\x04\x02"  # SACK permitted
        + b"\x08\x0a"
        + struct.pack(">II", 123, 456)  # timestamps
        + b"\x05\x0a"
        + struct.pack(">II", 1, 2)  # SACK, one block
        + b"\xfe\x04\xab\xcd"  # an experimental option
        + b"\x00\x00"  # end of options and padding
    )
    seg = ip.TCP(src_port=1, dst_port=2, options=opts, flags=ip.TCPFlags.SYN)
    got = seg.decoded_options
    assert [type(o) for o in got] == [
        ip.MaximumSegmentSize,
        ip.NoOperation,
        ip.WindowScale,
        ip.SackPermitted,
        ip.Timestamps,
        ip.Sack,
        ip.UnknownOption,
        ip.EndOfOptions,
        ip.EndOfOptions,
    ]
    assert (got[0].mss, got[2].shift, got[4].value, got[4].echo_reply) == (1460, 7, 123, 456)
    assert [(b.left, b.right) for b in got[5].blocks] == [(1, 2)]
    assert ip.TCPOptions(options=got).pack() == opts
    theirs = [(k, v) for k, v in dpkt.tcp.parse_opts(opts) if k > 1]
    assert theirs == [(o.kind, ip.TCPOptions(options=[o]).pack()[2:]) for o in got if o.kind > 1]
    wire = ip.IPv4(src=SRC, dst=DST, protocol=6, payload=seg).pack()
    assert dpkt.ip.IP(wire).data.opts == opts


@pytest.mark.parametrize("seed", range(20))
def test_ipv6_chains_against_scapy(seed: int) -> None:
    rnd = random.Random(seed)
    # RFC 8200's order: hop-by-hop, destination options, routing, destination options.
    layers = [k for k in ("hop", "dst", "rt", "dst") if rnd.random() < 0.5]
    data = rnd.randbytes(rnd.randint(0, 200))
    s: object = inet6.IPv6(
        src="2001:db8::1", dst="2001:db8::2", tc=rnd.getrandbits(8), fl=rnd.getrandbits(20)
    )
    for kind in layers:
        if kind == "hop":
            s = s / inet6.IPv6ExtHdrHopByHop()
        elif kind == "dst":
            s = s / inet6.IPv6ExtHdrDestOpt()
        else:
            s = s / inet6.IPv6ExtHdrRouting(addresses=["2001:db8::9"], segleft=0)
    s = (
        s
        / (
            inet.UDP(sport=7, dport=8)
            if seed % 2
            else inet.TCP(sport=7, dport=8, options=[("MSS", 1220)])
        )
        / data
    )
    wire = bytes(s)
    pkt = ipv6.IPv6.unpack(wire)
    assert pkt.pack() == wire
    assert (pkt.dscp << 2 | pkt.ecn, pkt.flow_label) == (s.tc, s.fl)
    chain = ipv6._chain(pkt)
    assert [type(x).__name__ for x in chain[:-1]] == [
        {"hop": "HopByHop", "dst": "DestinationOptions", "rt": "Routing"}[k] for k in layers
    ]
    up = chain[-1]
    assert isinstance(up, ip.UDP if seed % 2 else ip.TCP) and up.payload == data
    assert ipv6.checksums(pkt) == {type(up).__name__.lower(): True}
    # Built by us from the decoded fields with the checksum and lengths left out.
    rebuilt = ipv6.IPv6(
        dscp=pkt.dscp,
        ecn=pkt.ecn,
        flow_label=pkt.flow_label,
        next_header=pkt.next_header,
        hop_limit=pkt.hop_limit,
        src=pkt.src,
        dst=pkt.dst,
        payload=pkt.payload,
    )
    up.checksum = None
    assert rebuilt.pack() == wire


def test_ipv6_headers_out_of_order_are_raw() -> None:
    s = (
        inet6.IPv6(src="::1", dst="::1")
        / inet6.IPv6ExtHdrDestOpt()
        / inet6.IPv6ExtHdrHopByHop()
        / inet.UDP()
        / b"x"
    )
    wire = bytes(s)
    pkt = ipv6.IPv6.unpack(wire, verify=False)
    assert isinstance(pkt.payload, ipv6.DestinationOptions)
    assert pkt.payload.payload == ip.Raw(data=wire[48:]) and pkt.pack() == wire


def test_ipv6_fragments_against_scapy() -> None:
    s = (
        inet6.IPv6(src="::1", dst="::1")
        / inet6.IPv6ExtHdrFragment(id=77)
        / inet.UDP(sport=1, dport=2)
        / (b"z" * 3000)
    )
    frags = inet6.fragment6(s, 1280)
    decoded = [ipv6.IPv6.unpack(bytes(f)) for f in frags]
    assert isinstance(decoded[0].payload, ipv6.Fragment)
    assert isinstance(decoded[0].payload.payload, ip.UDPFragment)
    assert decoded[0].payload.payload.length == 3008
    assert all(isinstance(d.payload.payload, ip.Raw) for d in decoded[1:])
    assert [d.payload.identification for d in decoded] == [77] * len(frags)
    assert [d.pack() for d in decoded] == [bytes(f) for f in frags]


def test_vlan_tags_against_scapy() -> None:
    s = (
        l2.Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        / l2.Dot1AD(vlan=300, prio=2)
        / l2.Dot1Q(vlan=12, prio=6, dei=1)
        / inet.IP(src=SRC, dst=DST)
        / inet.TCP(sport=80, dport=1234, flags="SA")
    )
    wire = bytes(s)
    f = ethernet.Ethernet.unpack(wire)
    assert (f.type, f.payload.vid, f.payload.pcp) == (0x88A8, 300, 2)
    inner = f.payload.payload
    assert (inner.type, inner.vid, inner.pcp, inner.dei) == (0x0800, 12, 6, True)
    assert isinstance(inner.payload.payload, ip.TCP) and f.pack() == wire
    assert ethernet.checksums(f) == {"ipv4": True, "tcp": True}


NG_SECTIONS = [
    pcapng.Section(
        interfaces=[
            (1, 65535, [(pcapng.OPT_IF_NAME, b"eth0"), (pcapng.OPT_IF_TSRESOL, b"\x09")]),
            (101, 0, [(pcapng.OPT_IF_TSRESOL, b"\x94")]),  # 2^-20 seconds
            (228, 0, []),  # microseconds, the default
        ],
        packets=[
            (0, 1_700_000_000_123_456_789, b"\x02" * 12 + b"\x08\x00" + udp().pack()),
            (1, 1_700_000_000 << 20 | 1 << 19, udp(b"raw ip").pack()),
            (2, 1_700_000_000_250_000, udp(b"ipv4 link type").pack(), 1500),
        ],
        byteorder="little",
    ),
    pcapng.Section(
        interfaces=[(1, 96, [])],
        packets=[(0, 0, b"\x02" * 12 + b"\x08\x00" + udp(b"in a simple block").pack())],
        byteorder="big",
        simple=True,
    ),
]


def test_pcapng_sections_interfaces_and_resolutions() -> None:
    data = pcapng.write(NG_SECTIONS)
    assert b"".join(b.pack() for b in pcapng.read_blocks(data)) == data
    cap = pcap.read(io.BytesIO(data))
    assert cap.format == "pcapng"
    assert [(i.linktype, i.name, i.units_per_second) for i in cap.interfaces] == [
        (1, "eth0", 10**9),
        (101, None, 2**20),
        (228, None, 10**6),
        (1, None, 10**6),
    ]
    p = cap.packets
    assert [x.interface for x in p] == [0, 1, 2, 3]
    assert [x.linktype for x in p] == [1, 228, 228, 1]
    assert p[0].timestamp_ns == 1_700_000_000_123_456_789
    assert p[1].timestamp_ns == 1_700_000_000_500_000_000
    assert p[2].timestamp_ns == 1_700_000_000_250_000_000 and p[2].truncated
    assert p[3].frame.payload.payload.payload == b"in a simple block"
    # scapy reads our first section the same way (it stops at a second section's order).
    first = pcapng.write(NG_SECTIONS[:1])
    theirs = list(RawPcapNgReader(io.BytesIO(first)))
    assert [bytes(d) for d, _ in theirs] == [x.data for x in p[:3]]
    assert [(m.tshigh << 32 | m.tslow) * 10**9 // m.tsresol for _, m in theirs] == [
        x.timestamp_ns for x in p[:3]
    ]


def test_pcapng_big_endian_from_dpkt() -> None:
    buf = io.BytesIO()
    w = dpkt.pcapng.Writer(buf, snaplen=1500, linktype=1)
    frame = b"\x02" * 12 + b"\x08\x00" + udp(b"from dpkt").pack()
    w.writepkt(frame, ts=1_700_000_000.5)
    data = buf.getvalue()
    cap = pcap.read(data)
    assert cap.packets[0].data == frame
    assert cap.packets[0].timestamp_ns == 1_700_000_000_500_000_000


def test_modified_pcap_magic() -> None:
    frame = b"\x02" * 12 + b"\x08\x00" + udp(b"modified").pack()
    for order in "<>":
        data = struct.pack(order + "IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
        data += struct.pack(
            order + "IIIIIHBB", 1_700_000_000, 250, len(frame), len(frame), 3, 0x0800, 4, 0
        )
        data += frame
        f = pcap.Pcap.unpack(data)
        rec = f.body.records[0]
        assert (rec.ifindex, rec.protocol, rec.pkt_type, rec.data) == (3, 0x0800, 4, frame)
        assert f.pack() == data and not f.nanoseconds
        cap = pcap.read(data)
        assert cap.format == "pcap-modified"
        assert cap.packets[0].timestamp_ns == 1_700_000_000_000_250_000
        assert cap.packets[0].frame.payload.payload.payload == b"modified"


def test_packet_record_is_a_plain_struct_tree() -> None:
    frame = b"\x02" * 12 + b"\x08\x00" + udp(b"record").pack()
    cap = pcap.read(pcap.write([(1, 2, frame)]))
    rec = cap.packets[0]
    assert isinstance(rec, bw.Struct)
    wire = rec.pack()
    assert pcap.Packet.unpack(wire) == rec
    assert (
        bw.compile(pcap.Packet).unpack(wire)["frame"]["payload"]["payload"]["payload"] == b"record"
    )
    assert socket.inet_ntoa(bytes(frame[26:30])) == rec.frame.payload.src
