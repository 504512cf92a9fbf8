"""IPv4, UDP and TCP, cross-checked with dpkt in both directions."""

from __future__ import annotations

import random
import socket

import bytewright as bw
import dpkt
import pytest
from bytewright.formats import ip


def random_packets(seed: int, n: int) -> list[ip.IPv4]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        payload = rnd.randbytes(rnd.choice([0, 1, 2, 7, 100, 1001]))
        options = rnd.randbytes(4 * rnd.randint(0, 10))
        common = {
            "src": socket.inet_ntoa(rnd.randbytes(4)),
            "dst": socket.inet_ntoa(rnd.randbytes(4)),
            "identification": rnd.getrandbits(16),
            "ttl": rnd.randint(1, 255),
            "dscp": rnd.getrandbits(6),
            "df": rnd.random() < 0.5,
            "options": options,
        }
        if rnd.random() < 0.5:
            seg: ip.UDP | ip.TCP = ip.UDP(
                src_port=rnd.getrandbits(16), dst_port=rnd.getrandbits(16), payload=payload
            )
            out.append(ip.IPv4(protocol=17, payload=seg, **common))
        else:
            seg = ip.TCP(
                src_port=rnd.getrandbits(16),
                dst_port=rnd.getrandbits(16),
                seq=rnd.getrandbits(32),
                ack=rnd.getrandbits(32),
                flags=ip.TCPFlags(rnd.getrandbits(9)),
                window=rnd.getrandbits(16),
                urgent=rnd.getrandbits(16),
                options=rnd.randbytes(4 * rnd.randint(0, 10)),
                payload=payload,
            )
            out.append(ip.IPv4(protocol=6, payload=seg, **common))
    return out


PACKETS = random_packets(5, 60)


@pytest.mark.parametrize("pkt", PACKETS, ids=range(len(PACKETS)))
def test_dpkt_parses_ours_field_by_field(pkt: ip.IPv4) -> None:
    wire = pkt.pack()
    d = dpkt.ip.IP(wire)
    assert (d.v, d.hl, d.len, d.id, d.ttl, d.p) == (
        4,
        5 + len(pkt.options) // 4,
        len(wire),
        pkt.identification,
        pkt.ttl,
        pkt.protocol,
    )
    assert d.tos == pkt.dscp << 2 and bool(d.df) == pkt.df
    assert (socket.inet_ntoa(d.src), socket.inet_ntoa(d.dst)) == (pkt.src, pkt.dst)
    assert d.opts == pkt.options
    seg = pkt.payload
    t = d.data
    assert (t.sport, t.dport, t.data) == (seg.src_port, seg.dst_port, seg.payload)
    if isinstance(seg, ip.TCP):
        assert (t.seq, t.ack, t.flags, t.win, t.urp, t.opts) == (
            seg.seq,
            seg.ack,
            int(seg.flags),
            seg.window,
            seg.urgent,
            seg.options,
        )
    else:
        assert t.ulen == 8 + len(seg.payload)
    # dpkt recomputes both checksums when they are zero: it must agree with ours.
    ours_ip, ours_t = d.sum, t.sum
    d.sum = 0
    t.sum = 0
    assert bytes(d) == wire
    assert (d.sum, t.sum) == (ours_ip, ours_t)


@pytest.mark.parametrize("seed", range(30))
def test_we_parse_dpkt_field_by_field(seed: int) -> None:
    rnd = random.Random(seed)
    payload = rnd.randbytes(rnd.randint(0, 300))
    if seed % 2:
        t = dpkt.udp.UDP(sport=rnd.getrandbits(16), dport=53, data=payload)
        t.ulen = 8 + len(payload)
        proto = 17
    else:
        t = dpkt.tcp.TCP(
            sport=rnd.getrandbits(16),
            dport=443,
            seq=rnd.getrandbits(32),
            ack=rnd.getrandbits(32),
            flags=rnd.getrandbits(8),
            win=rnd.getrandbits(16),
            opts=b"\x02\x04\x05\xb4\x01\x01\x04\x02",
            data=payload,
        )
        t.off = 7
        proto = 6
    d = dpkt.ip.IP(
        src=rnd.randbytes(4), dst=rnd.randbytes(4), p=proto, ttl=rnd.randint(1, 255), data=t
    )
    d.id = rnd.getrandbits(16)
    d.len = 20 + len(bytes(t))
    wire = bytes(d)
    pkt = ip.IPv4.unpack(wire)
    assert (pkt.total_length, pkt.identification, pkt.ttl, pkt.protocol) == (
        d.len,
        d.id,
        d.ttl,
        proto,
    )
    assert (pkt.src, pkt.dst) == (socket.inet_ntoa(d.src), socket.inet_ntoa(d.dst))
    assert pkt.checksum == d.sum and pkt.payload.checksum == d.data.sum
    assert (pkt.payload.src_port, pkt.payload.dst_port, pkt.payload.payload) == (
        t.sport,
        t.dport,
        payload,
    )
    if proto == 6:
        assert isinstance(pkt.payload, ip.TCP)
        assert (pkt.payload.seq, pkt.payload.ack, pkt.payload.window) == (t.seq, t.ack, t.win)
        assert int(pkt.payload.flags) == t.flags and pkt.payload.options == t.opts
    assert pkt.pack() == wire


def test_transport_checksum_api() -> None:
    pkt = PACKETS[0]
    wire = pkt.pack()
    hdr = (wire[0] & 15) * 4
    seg = bytearray(wire[hdr:])
    at = 6 if pkt.protocol == 17 else 16
    want = int.from_bytes(seg[at : at + 2], "big")
    seg[at : at + 2] = b"\0\0"
    assert ip.transport_checksum(pkt.src, pkt.dst, pkt.protocol, seg) == want


def test_header_corruption_is_caught() -> None:
    wire = bytearray(PACKETS[1].pack())
    wire[8] ^= 0x01  # ttl
    with pytest.raises(bw.DecodeError) as e:
        ip.IPv4.unpack(bytes(wire))
    assert e.value.path == "checksum"


def test_payload_corruption_is_caught_unless_verify_false() -> None:
    for pkt in PACKETS[:10]:
        if not pkt.payload.payload:
            continue
        wire = bytearray(pkt.pack())
        wire[-1] ^= 0x10
        with pytest.raises(bw.DecodeError) as e:
            ip.IPv4.unpack(bytes(wire))
        assert e.value.path == "payload.checksum"
        assert ip.IPv4.unpack(bytes(wire), verify=False).payload.payload[-1] == wire[-1]


def test_udp_checksum_zero_means_none() -> None:
    d = dpkt.ip.IP(src=b"\1\2\3\4", dst=b"\5\6\7\10", p=17, data=dpkt.udp.UDP(sport=1, dport=2))
    d.data.ulen = 8
    d.len = 28
    wire = bytearray(bytes(d))
    wire[26:28] = b"\0\0"
    assert ip.IPv4.unpack(bytes(wire)).payload.checksum == 0


def test_other_protocols_are_raw() -> None:
    pkt = ip.IPv4(src="1.1.1.1", dst="2.2.2.2", protocol=47, payload=ip.Raw(data=b"\x00\x00gre"))
    wire = pkt.pack()
    assert dpkt.ip.IP(wire).p == 47
    assert ip.IPv4.unpack(wire) == ip.IPv4.unpack(wire)
    assert ip.IPv4.unpack(wire).payload == ip.Raw(data=b"\x00\x00gre")


def test_malformed_packets_give_decode_errors() -> None:
    wire = PACKETS[2].pack()
    for cut in range(len(wire)):
        with pytest.raises(bw.DecodeError):
            ip.IPv4.unpack(wire[:cut])
    rnd = random.Random(1)
    for _ in range(300):
        bad = bytearray(wire)
        bad[rnd.randrange(len(bad))] ^= 1 << rnd.randrange(8)
        try:
            ip.IPv4.unpack(bytes(bad))
        except bw.DecodeError:
            pass
