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
    """Record type numbers."""

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
    name: Name
    type: bw.U16
    qclass: bw.U16 = 1


class A(bw.Struct):
    address: str = bw.field(type=bw.Bytes(len=4), convert=(socket.inet_ntoa, socket.inet_aton))


class AAAA(bw.Struct):
    address: str = bw.field(type=bw.Bytes(len=16), convert=(_v6_decode, _v6_encode))


class CNAME(bw.Struct):
    target: Name


class NS(bw.Struct):
    target: Name


class PTR(bw.Struct):
    target: Name


class MX(bw.Struct):
    preference: bw.U16
    exchange: Name


class SOA(bw.Struct):
    mname: Name
    rname: Name
    serial: bw.U32
    refresh: bw.U32
    retry: bw.U32
    expire: bw.U32
    minimum: bw.U32


class SRV(bw.Struct):
    priority: bw.U16
    weight: bw.U16
    port: bw.U16
    target: PlainName


class CharString(bw.Struct):
    """A length-prefixed string of at most 255 bytes."""

    length: bw.U8 = bw.derived()
    data: bytes = bw.field(len="length")


class TXT(bw.Struct):
    strings: list[CharString] = bw.field(count=bw.REST)


class CAA(bw.Struct):
    flags: bw.U8
    tag_length: bw.U8 = bw.derived()
    tag: str = bw.field(len="tag_length", encoding="ascii")
    value: bytes = bw.field(len=bw.REST)


class Unknown(bw.Struct):
    """Record data of a type without its own class: the raw bytes."""

    data: bytes = bw.field(len=bw.REST)


RData = A | AAAA | CNAME | NS | PTR | MX | SOA | SRV | TXT | CAA | Unknown


class Record(bw.Struct):
    """A resource record; ``rdlength`` is computed on pack."""

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
    out are empty tuples (pass lists to build them up)."""

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
