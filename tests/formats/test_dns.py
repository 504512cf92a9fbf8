"""DNS messages, cross-checked field by field with dnslib 0.9.26 in both directions."""

from __future__ import annotations

import ipaddress
import random
import struct

import bytewright as bw
import dnslib
import pytest
from bytewright.formats import dns
from dnslib import AAAA, CAA, CNAME, MX, NS, PTR, QTYPE, RD, RR, SOA, SRV, TXT, A, DNSRecord


def dnslib_packets() -> list[bytes]:
    out = []
    for qtype in ("A", "AAAA", "MX", "TXT", "SRV", "CAA", "ANY", "PTR"):
        out.append(DNSRecord.question("www.example.com", qtype).pack())
    q = DNSRecord.question("example.com", "A")
    r = q.reply()
    r.add_answer(RR("example.com", QTYPE.A, rdata=A("93.184.216.34"), ttl=3600))
    r.add_answer(RR("example.com", QTYPE.A, rdata=A("10.0.0.1"), ttl=1))
    r.add_answer(RR("example.com", QTYPE.AAAA, rdata=AAAA("2606:2800:220:1::248"), ttl=60))
    r.add_answer(RR("example.com", QTYPE.AAAA, rdata=AAAA("::1"), ttl=60))
    r.add_answer(RR("www.example.com", QTYPE.CNAME, rdata=CNAME("example.com"), ttl=300))
    r.add_answer(RR("example.com", QTYPE.MX, rdata=MX("mail.example.com", 10)))
    r.add_answer(RR("example.com", QTYPE.MX, rdata=MX("mx2.other.org", 20)))
    r.add_answer(RR("example.com", QTYPE.TXT, rdata=TXT(["v=spf1 -all", "second", ""])))
    r.add_answer(RR("example.com", QTYPE.TXT, rdata=TXT(b"x" * 255)))
    r.add_answer(RR("_sip._tcp.example.com", QTYPE.SRV, rdata=SRV(10, 60, 5060, "sip.example.com")))
    r.add_answer(RR("example.com", QTYPE.CAA, rdata=CAA(0, "issue", "letsencrypt.org")))
    r.add_answer(RR("example.com", QTYPE.CAA, rdata=CAA(128, "iodef", "mailto:a@example.com")))
    r.add_answer(RR("4.3.2.1.in-addr.arpa", QTYPE.PTR, rdata=PTR("host.example.com")))
    r.add_auth(RR("example.com", QTYPE.NS, rdata=NS("a.iana-servers.net"), ttl=86400))
    r.add_auth(RR("example.com", QTYPE.NS, rdata=NS("b.iana-servers.net"), ttl=86400))
    r.add_auth(
        RR(
            "example.com",
            QTYPE.SOA,
            rdata=SOA("ns.icann.org", "noc.dns.icann.org", (2024010101, 7200, 3600, 1209600, 3600)),
        )
    )
    r.add_ar(RR("a.iana-servers.net", QTYPE.A, rdata=A("199.43.135.53")))
    r.add_ar(RR("weird.example.com", 65280, rdata=RD(b"\x00\x01\x02\xff")))
    out.append(r.pack())
    # Flags and codes.
    h = dnslib.DNSHeader(id=0xBEEF, qr=1, aa=1, tc=1, rd=1, ra=1, rcode=3, opcode=2)
    h.ad = 1
    h.cd = 1
    r2 = DNSRecord(h, q=dnslib.DNSQuestion("nx.example.org", QTYPE.AAAA, 3))
    r2.add_answer(RR("nx.example.org", QTYPE.A, rdata=A("127.0.0.1")))
    out.append(r2.pack())
    # Random responses built from random names.
    rnd = random.Random(7)
    labels = ["a", "bb", "mail", "xn--bcher-kva", "_srv", "c-d", "zz9"]
    for _ in range(20):
        names = [".".join(rnd.choices(labels, k=rnd.randint(1, 5))) for _ in range(4)]
        q = DNSRecord.question(rnd.choice(names), "A")
        q.header.id = rnd.getrandbits(16)
        r = q.reply()
        for _ in range(rnd.randint(0, 8)):
            kind = rnd.randrange(6)
            owner = rnd.choice(names)
            if kind == 0:
                rd = A(".".join(str(rnd.randrange(256)) for _ in range(4)))
                r.add_answer(RR(owner, QTYPE.A, rdata=rd, ttl=rnd.getrandbits(31)))
            elif kind == 1:
                r.add_answer(RR(owner, QTYPE.CNAME, rdata=CNAME(rnd.choice(names))))
            elif kind == 2:
                r.add_answer(RR(owner, QTYPE.MX, rdata=MX(rnd.choice(names), rnd.getrandbits(16))))
            elif kind == 3:
                r.add_auth(RR(owner, QTYPE.NS, rdata=NS(rnd.choice(names))))
            elif kind == 4:
                srv = SRV(rnd.getrandbits(16), rnd.getrandbits(16), 443, rnd.choice(names))
                r.add_ar(RR(owner, QTYPE.SRV, rdata=srv))
            else:
                r.add_ar(RR(owner, 0xFF00 + kind, rdata=RD(rnd.randbytes(rnd.randint(1, 9)))))
        out.append(r.pack())
    return out


PACKETS = dnslib_packets()


def same_record(ours: dns.Record, theirs: RR) -> None:
    assert ours.name == str(theirs.rname)
    assert (ours.type, ours.rclass, ours.ttl) == (theirs.rtype, theirs.rclass, theirs.ttl)
    rd, t = ours.rdata, theirs.rdata
    if isinstance(rd, dns.A):
        assert rd.address == str(t)
    elif isinstance(rd, dns.AAAA):
        assert ipaddress.ip_address(rd.address) == ipaddress.ip_address(str(t))
    elif isinstance(rd, dns.CNAME | dns.NS | dns.PTR):
        assert rd.target == str(t.label)
    elif isinstance(rd, dns.MX):
        assert (rd.preference, rd.exchange) == (t.preference, str(t.label))
    elif isinstance(rd, dns.SOA):
        assert (rd.mname, rd.rname) == (str(t.mname), str(t.rname))
        assert (rd.serial, rd.refresh, rd.retry, rd.expire, rd.minimum) == tuple(t.times)
    elif isinstance(rd, dns.SRV):
        assert (rd.priority, rd.weight, rd.port, rd.target) == (
            t.priority,
            t.weight,
            t.port,
            str(t.target),
        )
    elif isinstance(rd, dns.TXT):
        assert [s.data for s in rd.strings] == list(t.data)
    elif isinstance(rd, dns.CAA):
        assert (rd.flags, rd.tag, rd.value.decode()) == (t.flags, t.tag, t.value)
    else:
        assert isinstance(rd, dns.Unknown)
        assert rd.data == t.data


def same_message(ours: dns.Message, theirs: DNSRecord) -> None:
    h = theirs.header
    assert (ours.id, ours.qr, ours.opcode, ours.rcode) == (h.id, bool(h.qr), h.opcode, h.rcode)
    assert (ours.aa, ours.tc, ours.rd, ours.ra) == (bool(h.aa), bool(h.tc), bool(h.rd), bool(h.ra))
    assert (ours.ad, ours.cd) == (bool(h.ad), bool(h.cd))
    assert (ours.qdcount, ours.ancount, ours.nscount, ours.arcount) == (h.q, h.a, h.auth, h.ar)
    assert len(ours.questions) == len(theirs.questions)
    for q, tq in zip(ours.questions, theirs.questions, strict=True):
        assert (q.name, q.type, q.qclass) == (str(tq.qname), tq.qtype, tq.qclass)
    for mine, their in (
        (ours.answers, theirs.rr),
        (ours.authority, theirs.auth),
        (ours.additional, theirs.ar),
    ):
        assert len(mine) == len(their)
        for a, b in zip(mine, their, strict=True):
            same_record(a, b)


def test_covers_every_required_type() -> None:
    seen = {
        type(r.rdata)
        for p in PACKETS
        for m in [dns.Message.unpack(p)]
        for r in m.answers + m.authority + m.additional
    }
    want = {
        dns.A,
        dns.AAAA,
        dns.CNAME,
        dns.MX,
        dns.NS,
        dns.PTR,
        dns.SOA,
        dns.SRV,
        dns.TXT,
        dns.CAA,
        dns.Unknown,
    }
    assert want <= seen


@pytest.mark.parametrize("wire", PACKETS, ids=range(len(PACKETS)))
def test_dnslib_packets_decode_and_reencode_identically(wire: bytes) -> None:
    ours = dns.Message.unpack(wire)
    same_message(ours, DNSRecord.parse(wire))
    # Same compression choices as dnslib: the bytes come back identical.
    assert ours.pack() == wire
    codec = bw.compile(dns.Message)
    assert codec.pack(codec.unpack(wire)) == wire


@pytest.mark.parametrize("wire", PACKETS, ids=range(len(PACKETS)))
def test_dnslib_parses_what_we_build(wire: bytes) -> None:
    ours = dns.Message.unpack(wire)
    # Rebuild from plain values (no derived counts or lengths given).
    fresh = dns.Message(
        id=ours.id,
        qr=ours.qr,
        opcode=ours.opcode,
        aa=ours.aa,
        tc=ours.tc,
        rd=ours.rd,
        ra=ours.ra,
        ad=ours.ad,
        cd=ours.cd,
        rcode=ours.rcode,
        questions=[dns.Question(name=q.name, type=q.type, qclass=q.qclass) for q in ours.questions],
        answers=[
            dns.Record(name=r.name, type=r.type, ttl=r.ttl, rdata=r.rdata) for r in ours.answers
        ],
        authority=[
            dns.Record(name=r.name, type=r.type, ttl=r.ttl, rdata=r.rdata) for r in ours.authority
        ],
        additional=[
            dns.Record(name=r.name, type=r.type, ttl=r.ttl, rdata=r.rdata) for r in ours.additional
        ],
    )
    packed = fresh.pack()
    same_message(ours, DNSRecord.parse(packed))
    assert packed == wire


def test_compression_and_names() -> None:
    m = dns.Message(
        id=1,
        questions=[dns.Question(name="www.example.com", type=dns.Type.A)],
        answers=[
            dns.Record(
                name="www.example.com.", type=dns.Type.CNAME, rdata=dns.CNAME(target="example.com")
            ),
            dns.Record(name="example.com", type=dns.Type.A, rdata=dns.A(address="1.2.3.4")),
        ],
    )
    wire = m.pack()
    # The question name at 12; the owner names point to it and to its suffix at 16.
    assert wire[12:29] == b"\x03www\x07example\x03com\x00"
    assert wire[33:35] == b"\xc0\x0c"
    assert b"\xc0\x10" in wire[35:]
    back = dns.Message.unpack(wire)
    assert back.answers[0].rdata == dns.CNAME(target="example.com.")
    assert back.answers[1].name == "example.com."
    assert str(DNSRecord.parse(wire).rr[0].rdata) == "example.com."
    root = dns.Message(id=2, questions=[dns.Question(name=".", type=2)]).pack()
    assert root[12:] == b"\x00\x00\x02\x00\x01"
    assert dns.Message.unpack(root).questions[0].name == "."


def test_bad_names_on_pack() -> None:
    for name in ("a..b", "x" * 64 + ".com", ".".join(["abcdefghi"] * 26), "caf\u00e9.fr"):
        with pytest.raises(bw.PackError):
            dns.Message(id=1, questions=[dns.Question(name=name, type=1)]).pack()


HEADER = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0)


def test_pointer_loops_and_forward_pointers() -> None:
    # A pointer to itself, a pointer to a later byte, and two pointers pointing at each other.
    for name in (b"\xc0\x0c", b"\xc0\x0e\x00", b"\x01a\xc0\x0c"):
        with pytest.raises(bw.DecodeError) as e:
            dns.Message.unpack(HEADER + name + b"\x00\x01\x00\x01")
        assert e.value.path == "questions[0].name"
    loop = struct.pack(">HHHHHH", 7, 0x0100, 2, 0, 0, 0)
    loop += b"\xc0\x12\x00\x01\x00\x01" + b"\xc0\x0c\x00\x01\x00\x01"
    with pytest.raises(bw.DecodeError):
        dns.Message.unpack(loop)


def test_label_count_is_bounded() -> None:
    # 200 names, each one label followed by a pointer to the previous: the last is too long.
    body = b"\x01a\x00\x00\x01\x00\x01"
    offs = [12]
    for _ in range(199):
        offs.append(12 + len(body))
        body += b"\x01a" + struct.pack(">H", 0xC000 | offs[-2]) + b"\x00\x01\x00\x01"
    wire = struct.pack(">HHHHHH", 7, 0, 200, 0, 0, 0) + body
    with pytest.raises(bw.DecodeError) as e:
        dns.Message.unpack(wire)
    assert "longer than 255" in str(e.value)
    # 127 labels of one byte fit (255 bytes with the final zero).
    ok = struct.pack(">HHHHHH", 7, 0, 127, 0, 0, 0) + body[: 7 + 126 * 8]
    assert len(dns.Message.unpack(ok).questions[-1].name) == 254


@pytest.mark.parametrize("wire", PACKETS[8:10])
def test_truncations_give_decode_errors(wire: bytes) -> None:
    for cut in range(len(wire)):
        with pytest.raises(bw.DecodeError):
            dns.Message.unpack(wire[:cut])


def test_byte_flips_give_only_decode_errors() -> None:
    rnd = random.Random(3)
    for wire in PACKETS:
        for _ in range(150):
            bad = bytearray(wire)
            for _ in range(rnd.randint(1, 3)):
                bad[rnd.randrange(len(bad))] = rnd.randrange(256)
            try:
                m = dns.Message.unpack(bytes(bad))
            except bw.DecodeError:
                continue
            # Whatever decodes also packs, once the record lengths are left to be derived
            # (names may compress differently from the corrupted input).
            for r in m.answers + m.authority + m.additional:
                r.rdlength = None
            dns.Message.unpack(m.pack())
