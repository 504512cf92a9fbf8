"""DNS messages (RFC 1035), with name compression.

Names are text with the final dot (``"www.example.com."``; the root is ``"."``), decoded by
the core's DNS name node (``bytewright.types.DnsName``): compression pointers are followed
(only backwards, so loops are impossible; at most 127 labels and 255 bytes). On pack, names in questions, owner names
and the RDATA of CNAME, NS, PTR, MX and SOA are compressed against the names written before
them, as most servers (and dnslib) do; SRV targets are written whole (RFC 2782).

Record data is a tagged union on the record type; a type without its own class decodes to
``Unknown`` with the raw bytes, so every message round-trips.
"""

from __future__ import annotations

import socket
from typing import Annotated

import bytewright as bw
from bytewright.types import DnsName

__all__ = [
    "AAAA",
    "CAA",
    "CNAME",
    "MX",
    "NS",
    "PTR",
    "SOA",
    "SRV",
    "TXT",
    "A",
    "CharString",
    "Message",
    "Name",
    "Question",
    "Record",
    "Type",
    "Unknown",
]

Name = Annotated[str, DnsName(compress=True)]
"""A domain name, compressed on pack."""

PlainName = Annotated[str, DnsName(compress=False)]
"""A domain name never compressed on pack (SRV targets)."""


class Type:
    """Record type numbers.

    >>> from bytewright.formats import dns
    >>> dns.Type.AAAA, dns.Type.MX
    (28, 15)
    """

    A = 1
    NS = 2
    CNAME = 5
    SOA = 6
    PTR = 12
    MX = 15
    TXT = 16
    AAAA = 28
    SRV = 33
    OPT = 41
    CAA = 257


def _v6_decode(b: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET6, b)


def _v6_encode(s: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6, s)


class Question(bw.Struct):
    """One entry of the question section: a name, a record type and a class (1 is IN).

    >>> from bytewright.formats import dns
    >>> dns.Question(name="example.com.", type=dns.Type.A).pack()
    b'\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01'
    """

    name: Name
    type: bw.U16
    qclass: bw.U16 = 1


class A(bw.Struct):
    """The data of an A record: an IPv4 address, as text.

    >>> from bytewright.formats import dns
    >>> dns.A(address="192.0.2.1").pack()
    b'\\xc0\\x00\\x02\\x01'
    >>> dns.A.unpack(b"\\xc0\\x00\\x02\\x01").address
    '192.0.2.1'
    """

    address: str = bw.field(type=bw.Bytes(len=4), convert=(socket.inet_ntoa, socket.inet_aton))


class AAAA(bw.Struct):
    """The data of an AAAA record: an IPv6 address, as text.

    >>> from bytewright.formats import dns
    >>> dns.AAAA(address="2001:db8::1").pack().hex()
    '20010db8000000000000000000000001'
    """

    address: str = bw.field(type=bw.Bytes(len=16), convert=(_v6_decode, _v6_encode))


class CNAME(bw.Struct):
    """The data of a CNAME record: the canonical name the owner name stands for.

    >>> from bytewright.formats import dns
    >>> dns.CNAME.unpack(b"\\x03www\\x07example\\x00").target
    'www.example.'
    """

    target: Name


class NS(bw.Struct):
    """The data of an NS record: a name server of the zone.

    >>> from bytewright.formats import dns
    >>> dns.NS(target="ns1.example.").pack()
    b'\\x03ns1\\x07example\\x00'
    """

    target: Name


class PTR(bw.Struct):
    """The data of a PTR record: the name an address's reverse name points to.

    >>> from bytewright.formats import dns
    >>> dns.PTR(target="host.example.").pack()
    b'\\x04host\\x07example\\x00'
    """

    target: Name


class MX(bw.Struct):
    """The data of an MX record: a mail exchanger and its preference (lowest first).

    >>> from bytewright.formats import dns
    >>> dns.MX(preference=10, exchange="mail.example.").pack()
    b'\\x00\\n\\x04mail\\x07example\\x00'
    """

    preference: bw.U16
    exchange: Name


class SOA(bw.Struct):
    """The data of an SOA record: the zone's primary server, its contact and its timers.

    >>> from bytewright.formats import dns
    >>> soa = dns.SOA(mname="ns.example.", rname="admin.example.", serial=2024010101,
    ...               refresh=7200, retry=900, expire=1209600, minimum=300)
    >>> dns.SOA.unpack(soa.pack()) == soa
    True
    """

    mname: Name
    rname: Name
    serial: bw.U32
    refresh: bw.U32
    retry: bw.U32
    expire: bw.U32
    minimum: bw.U32


class SRV(bw.Struct):
    """The data of an SRV record (RFC 2782): a service's host and port (the target is never
    compressed).

    >>> from bytewright.formats import dns
    >>> dns.SRV(priority=0, weight=5, port=5060, target="sip.example.").pack()
    b'\\x00\\x00\\x00\\x05\\x13\\xc4\\x03sip\\x07example\\x00'
    """

    priority: bw.U16
    weight: bw.U16
    port: bw.U16
    target: PlainName


class CharString(bw.Struct):
    """A length-prefixed string of at most 255 bytes.

    >>> from bytewright.formats import dns
    >>> dns.CharString(data=b"hi").pack()
    b'\\x02hi'
    """

    length: bw.U8 = bw.derived()
    data: bytes = bw.field(len="length")


class TXT(bw.Struct):
    """The data of a TXT record: one or more character strings.

    >>> from bytewright.formats import dns
    >>> dns.TXT(strings=[dns.CharString(data=b"v=spf1 -all")]).pack()
    b'\\x0bv=spf1 -all'
    """

    strings: list[CharString] = bw.field(count=bw.REST)


class CAA(bw.Struct):
    """The data of a CAA record (RFC 8659): which certificate authority may issue for the name.

    >>> from bytewright.formats import dns
    >>> dns.CAA(flags=0, tag="issue", value=b"ca.example").pack()
    b'\\x00\\x05issueca.example'
    """

    flags: bw.U8
    tag_length: bw.U8 = bw.derived()
    tag: str = bw.field(len="tag_length", encoding="ascii")
    value: bytes = bw.field(len=bw.REST)


class Unknown(bw.Struct):
    """Record data of a type without its own class: the raw bytes.

    >>> from bytewright.formats import dns
    >>> rec = dns.Record.unpack(b"\\x00\\x00\\x63\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x02\\xab\\xcd")
    >>> rec.type, rec.rdata
    (99, Unknown(data=b'\\xab\\xcd'))
    """

    data: bytes = bw.field(len=bw.REST)


RData = A | AAAA | CNAME | NS | PTR | MX | SOA | SRV | TXT | CAA | Unknown


class Record(bw.Struct):
    """A resource record; ``rdlength`` is computed on pack.

    >>> from bytewright.formats import dns
    >>> rec = dns.Record(name="example.com.", type=dns.Type.A, ttl=300,
    ...                  rdata=dns.A(address="192.0.2.1"))
    >>> wire = rec.pack()
    >>> wire[-6:]
    b'\\x00\\x04\\xc0\\x00\\x02\\x01'
    >>> dns.Record.unpack(wire).rdata
    A(address='192.0.2.1')
    """

    name: Name
    type: bw.U16
    rclass: bw.U16 = 1
    ttl: bw.U32 = 0
    rdlength: bw.U16 = bw.derived()
    rdata: RData = bw.field(
        size="rdlength",
        tag="type",
        cases={
            Type.A: A,
            Type.AAAA: AAAA,
            Type.CNAME: CNAME,
            Type.NS: NS,
            Type.PTR: PTR,
            Type.MX: MX,
            Type.SOA: SOA,
            Type.SRV: SRV,
            Type.TXT: TXT,
            Type.CAA: CAA,
        },
        default_case=Unknown,
    )


class Message(bw.Struct):
    """A whole DNS message; the four section counts are computed on pack. Sections left
    out are empty tuples (pass lists to build them up).

    >>> from bytewright.formats import dns
    >>> query = dns.Message(id=0x1234, rd=True,
    ...                     questions=[dns.Question(name="example.com.", type=dns.Type.A)])
    >>> wire = query.pack()
    >>> wire.hex()
    '123401000001000000000000076578616d706c6503636f6d0000010001'
    >>> answer = dns.Record(name="example.com.", type=dns.Type.A, rdata=dns.A(address="192.0.2.1"))
    >>> reply = dns.Message(id=0x1234, qr=True, rd=True, ra=True,
    ...                     questions=query.questions, answers=[answer]).pack()
    >>> reply[len(wire):len(wire) + 2]  # the answer's name: a pointer to offset 12
    b'\\xc0\\x0c'
    >>> dns.Message.unpack(reply).answers[0].rdata.address
    '192.0.2.1'
    """

    id: bw.U16
    qr: bool = bw.flag(default=False)
    opcode: int = bw.bits(4, default=0)
    aa: bool = bw.flag(default=False)
    tc: bool = bw.flag(default=False)
    rd: bool = bw.flag(default=False)
    ra: bool = bw.flag(default=False)
    z: bool = bw.flag(default=False)
    ad: bool = bw.flag(default=False)
    cd: bool = bw.flag(default=False)
    rcode: int = bw.bits(4, default=0)
    qdcount: bw.U16 = bw.derived()
    ancount: bw.U16 = bw.derived()
    nscount: bw.U16 = bw.derived()
    arcount: bw.U16 = bw.derived()
    # Empty tuples: immutable defaults shared by every message (unpack gives lists).
    questions: list[Question] = bw.field(count="qdcount", default=())  # type: ignore[arg-type]
    answers: list[Record] = bw.field(count="ancount", default=())  # type: ignore[arg-type]
    authority: list[Record] = bw.field(count="nscount", default=())  # type: ignore[arg-type]
    additional: list[Record] = bw.field(count="arcount", default=())  # type: ignore[arg-type]
