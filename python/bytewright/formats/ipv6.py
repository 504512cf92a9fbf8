"""IPv6 (RFC 8200) with its extension headers: hop-by-hop options, routing, fragment and
destination options, then UDP, TCP or ICMPv6 (RFC 4443).

Extension headers form a chain: each has a ``next_header`` and a ``payload`` that is the
next header or the upper-layer segment (as scapy and Wireshark show them), so
``pkt.payload.payload`` is the UDP datagram after a hop-by-hop header. ``upper_layer(pkt)``
walks to the end of the chain.

As for IPv4, ``IPv6.pack()`` computes ``payload_length`` and the UDP, TCP or ICMPv6 checksum
(over the pseudo-header of RFC 8200 section 8.1, with the final destination of a routing
header) when they are None, and ``IPv6.unpack(data)`` verifies them (``verify=False``
accepts wrong ones; ``checksums(pkt)`` says which held). In a fragment (a ``Fragment``
header with ``m`` set or an offset) the payload after a non-first fragment is ``Raw``, and
a first fragment carries ``UDPFragment``, ``TCP`` or ``ICMPv6`` when the header fits.
"""

from __future__ import annotations

import itertools
import socket
from typing import Any

import bytewright as bw
from bytewright.formats.ip import (
    TCP,
    UDP,
    Protocol,
    Raw,
    UDPFragment,
    _inside,
    _with,
    _zeroed,
)

__all__ = [
    "DestinationOptions",
    "Fragment",
    "HopByHop",
    "ICMPv6",
    "IPv6",
    "IPv6Header",
    "Routing",
    "checksums",
    "decode",
    "transport_checksum6",
    "upper_layer",
]


def _v6_decode(b: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET6, b)


def _v6_encode(s: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6, s)


_ADDR6 = (_v6_decode, _v6_encode)


class ICMPv6(bw.Struct, byteorder="big"):
    """An ICMPv6 message: ``body`` is everything after the checksum.

    >>> from bytewright.formats import ip, ipv6
    >>> ping = ipv6.IPv6(next_header=58, src="::1", dst="::1",
    ...                  payload=ipv6.ICMPv6(type=128, code=0, body=b"\\x00\\x01\\x00\\x01"))
    >>> got = ipv6.IPv6.unpack(ping.pack())
    >>> got.payload.type, ipv6.checksums(got)
    (128, {'icmpv6': True})
    """

    type: bw.U8
    code: bw.U8 = 0
    checksum: bw.U16 = None  # type: ignore[assignment]
    body: bytes = bw.field(len=bw.REST, default=b"")

    def pack(self) -> bytes:
        return super().pack() if self.checksum is not None else _with(self, checksum=0).pack()


# The next header's class, by number, following RFC 8200's order of extension headers
# (hop-by-hop first, then destination options, routing, fragment, destination options):
# a header out of that order, and all after it, is Raw. UDP in a first fragment is
# UDPFragment (tag 256 + 17); after a later fragment the tag is -1 (Raw).
_UPPER_CASES: dict[int, Any] = {
    Protocol.UDP: UDP,
    Protocol.TCP: TCP,
    Protocol.ICMPV6: "ICMPv6",
}
_CASES: dict[int, Any] = {
    Protocol.HOPOPT: "HopByHop",
    Protocol.IPV6_ROUTE: "Routing",
    Protocol.IPV6_FRAG: "Fragment",
    Protocol.IPV6_OPTS: "DestinationOptions",
    **_UPPER_CASES,
}
_AFTER_HOP = {k: v for k, v in _CASES.items() if k != Protocol.HOPOPT}
_AFTER_DST = _AFTER_HOP
_AFTER_ROUTING = {k: v for k, v in _AFTER_HOP.items() if k != Protocol.IPV6_ROUTE}
_AFTER_FRAGMENT: dict[int, Any] = {
    Protocol.IPV6_OPTS: "DestinationOptions",
    **_UPPER_CASES,
    256 | Protocol.UDP: UDPFragment,
}
_FRAG_TAG = "-1 if fragment_offset else (273 if m and next_header == 17 else next_header)"


class HopByHop(bw.Struct, byteorder="big"):
    """Hop-by-hop options: ``options`` are the raw TLV bytes (with their padding).

    >>> from bytewright.formats import ip, ipv6
    >>> pkt = ipv6.IPv6(next_header=0, src="::1", dst="::1",
    ...                 payload=ipv6.HopByHop(next_header=59, options=bytes([1, 4, 0, 0, 0, 0]),
    ...                                       payload=ip.Raw(data=b"")))
    >>> ipv6.IPv6.unpack(pkt.pack()).payload.length
    0
    """

    next_header: bw.U8
    length: bw.U8 = bw.derived()
    options: bytes = bw.field(len="length * 8 + 6", default=b"\x01\x04\0\0\0\0")
    payload: Any = bw.field(tag="next_header", cases=_AFTER_HOP, default_case=Raw)


class DestinationOptions(bw.Struct, byteorder="big"):
    """Destination options: ``options`` are the raw TLV bytes (with their padding).

    >>> from bytewright.formats import ip, ipv6
    >>> pkt = ipv6.IPv6(next_header=60, src="::1", dst="::1",
    ...                 payload=ipv6.DestinationOptions(next_header=59,
    ...                                                 options=bytes([1, 4, 0, 0, 0, 0]),
    ...                                                 payload=ip.Raw(data=b"")))
    >>> ipv6.IPv6.unpack(pkt.pack()).payload.options
    b'\\x01\\x04\\x00\\x00\\x00\\x00'
    """

    next_header: bw.U8
    length: bw.U8 = bw.derived()
    options: bytes = bw.field(len="length * 8 + 6", default=b"\x01\x04\0\0\0\0")
    payload: Any = bw.field(tag="next_header", cases=_AFTER_DST, default_case=Raw)


class Routing(bw.Struct, byteorder="big"):
    """A routing header; ``data`` is the type-specific rest (addresses, segment list).

    >>> from bytewright.formats import ip, ipv6
    >>> hdr = ipv6.Routing(next_header=59, routing_type=0, segments_left=0, data=bytes(4),
    ...                    payload=ip.Raw(data=b""))
    >>> pkt = ipv6.IPv6(next_header=43, src="::1", dst="::1", payload=hdr)
    >>> got = ipv6.IPv6.unpack(pkt.pack()).payload
    >>> got.length, got.routing_type
    (0, 0)
    """

    next_header: bw.U8
    length: bw.U8 = bw.derived()
    routing_type: bw.U8
    segments_left: bw.U8
    data: bytes = bw.field(len="length * 8 + 4")
    payload: Any = bw.field(tag="next_header", cases=_AFTER_ROUTING, default_case=Raw)


class Fragment(bw.Struct, byteorder="big"):
    """A fragment header: ``fragment_offset`` in 8-byte units, ``m`` for "more fragments".

    >>> from bytewright.formats import ip, ipv6
    >>> frag = ipv6.Fragment(next_header=17, fragment_offset=0, m=True, identification=7,
    ...                      payload=ip.Raw(data=bytes.fromhex("0001000200100000")))
    >>> pkt = ipv6.IPv6(next_header=44, src="::1", dst="::1", payload=frag)
    >>> got = ipv6.IPv6.unpack(pkt.pack()).payload
    >>> got.m, got.identification, got.payload
    (True, 7, UDPFragment(src_port=1, dst_port=2, length=16, checksum=0, payload=b''))
    """

    next_header: bw.U8
    reserved: bw.U8 = 0
    fragment_offset: int = bw.bits(13, default=0)
    reserved2: int = bw.bits(2, default=0)
    m: bool = bw.flag(default=False)
    identification: bw.U32
    payload: Any = bw.field(tag=_FRAG_TAG, cases=_AFTER_FRAGMENT, default_case=Raw)


class IPv6Header(bw.Struct, byteorder="big"):
    """The fixed IPv6 header alone, every field as on the wire.

    >>> from bytewright.formats import ip, ipv6
    >>> pkt = ipv6.IPv6(next_header=ip.Protocol.UDP, hop_limit=64, src="2001:db8::1",
    ...                 dst="2001:db8::2", payload=ip.UDP(src_port=1, dst_port=2, payload=b"x"))
    >>> wire = pkt.pack()
    >>> head = ipv6.IPv6Header.unpack_from(wire)[0]
    >>> head.payload_length, head.next_header, head.dst
    (9, 17, '2001:db8::2')
    """

    version: int = bw.field(type=bw.Bits(4), const=6, default=6)
    dscp: int = bw.bits(6, default=0)
    ecn: int = bw.bits(2, default=0)
    flow_label: int = bw.bits(20, default=0)
    payload_length: bw.U16
    next_header: bw.U8
    hop_limit: bw.U8 = 64
    src: str = bw.field(type=bw.Bytes(len=16), convert=_ADDR6)
    dst: str = bw.field(type=bw.Bytes(len=16), convert=_ADDR6)


_EXTENSIONS = (HopByHop, Routing, Fragment, DestinationOptions)
_UPPER = (UDP, UDPFragment, TCP, ICMPv6)


class IPv6(bw.Struct, byteorder="big"):
    """An IPv6 packet; ``payload_length`` and the transport checksum are computed on pack.

    >>> from bytewright.formats import ip, ipv6
    >>> pkt = ipv6.IPv6(next_header=ip.Protocol.UDP, hop_limit=64, src="2001:db8::1",
    ...                 dst="2001:db8::2", payload=ip.UDP(src_port=1, dst_port=2, payload=b"x"))
    >>> wire = pkt.pack()
    >>> wire[:8].hex(" ")
    '60 00 00 00 00 09 11 40'
    >>> got = ipv6.IPv6.unpack(wire)
    >>> got.payload_length, got.payload.checksum, got.src
    (9, 11364, '2001:db8::1')
    """

    version: int = bw.field(type=bw.Bits(4), const=6, default=6)
    dscp: int = bw.bits(6, default=0)
    ecn: int = bw.bits(2, default=0)
    flow_label: int = bw.bits(20, default=0)
    payload_length: bw.U16 = bw.derived()
    next_header: bw.U8
    hop_limit: bw.U8 = 64
    src: str = bw.field(type=bw.Bytes(len=16), convert=_ADDR6)
    dst: str = bw.field(type=bw.Bytes(len=16), convert=_ADDR6)
    payload: HopByHop | Routing | Fragment | DestinationOptions | UDP | TCP | ICMPv6 | Raw = (
        bw.field(size="payload_length", tag="next_header", cases=_CASES, default_case=Raw)
    )

    def pack(self, *, verify: bool = True) -> bytes:
        """Packs the packet, computing ``payload_length`` and the transport checksum when
        None; supplied values must agree, except with ``verify=False``. A
        ``payload_length`` of 0 (a jumbogram, or segmentation offload) is kept."""
        chain = _chain(self)
        last = chain[-1]
        if isinstance(last, _UPPER) and not _fragmented(chain):
            seg = bytearray(_pack_upper(last))
            at = {UDP: 6, TCP: 16, ICMPv6: 2}[type(last)]
            proto = _protocol_of(self, chain)
            want = transport_checksum6(self.src, _final_destination(self), proto, _zeroed(seg, at))
            given = last.checksum
            if given is None:
                given = want
            elif given != want and verify and not (given == 0 and isinstance(last, UDP)):
                raise bw.PackError(
                    f"{_path(chain)}.checksum: {given:#06x} is not the "
                    f"{type(last).__name__} checksum {want:#06x} "
                    "(leave it None to compute it; pack(verify=False) writes it as given)",
                    f"{_path(chain)}.checksum",
                )
            chain = _replace_last(self, _with(last, checksum=given))
        body = _pack_chain(chain[0] if chain else self.payload)
        pl = self.payload_length
        if pl is None:
            pl = len(body)
        elif pl != len(body) and pl != 0 and verify:
            raise bw.PackError(
                f"payload_length: {pl} disagrees with the payload's length {len(body)} "
                "(leave it None to compute it; pack(verify=False) writes it as given)",
                "payload_length",
            )
        header = IPv6Header(
            version=self.version,
            dscp=self.dscp,
            ecn=self.ecn,
            flow_label=self.flow_label,
            payload_length=pl,
            next_header=self.next_header,
            hop_limit=self.hop_limit,
            src=self.src,
            dst=self.dst,
        ).pack()
        return header + body

    @classmethod
    def unpack(cls, data: Any, *, verify: bool = True) -> IPv6:
        """Decodes one packet (exactly ``data``) and verifies its UDP, TCP or ICMPv6
        checksum (``verify=False`` accepts a wrong one)."""
        wire = bytes(data)
        try:
            pkt: IPv6 = super().unpack(wire)
        except bw.DecodeError:
            pkt, end = decode(wire, lenient=False)
            if end != len(wire):
                raise bw.DecodeError(
                    f"payload_length: the packet is {end} bytes and the data {len(wire)} "
                    f"(the {len(wire) - end} bytes after it belong to the link layer: decode "
                    "the frame, or use ipv6.decode)",
                    "payload_length",
                    4,
                ) from None
        if verify:
            bad = _check_upper(pkt)
            if bad is not None and not bad[0]:
                _, got, want = bad
                chain = _chain(pkt)
                at = 40 + sum(len(_pack_header_only(x)) for x in chain[:-1])
                offsets: dict[type, int] = {UDP: 6, TCP: 16, ICMPv6: 2}
                at += offsets[type(chain[-1])]
                path = f"{_path(chain)}.checksum"
                raise bw.DecodeError(
                    f"{path}: checksum mismatch: stored {got:#06x}, computed {want:#06x}",
                    path,
                    at,
                )
        return pkt


def _chain(pkt: Any) -> list[Any]:
    """The payloads below ``pkt``: extension headers, then the upper layer (or Raw)."""
    out = []
    cur = pkt.payload
    while True:
        out.append(cur)
        if not isinstance(cur, _EXTENSIONS):
            return out
        cur = cur.payload


def upper_layer(pkt: IPv6) -> Any:
    """The last payload of the extension header chain (UDP, TCP, ICMPv6, or Raw).

    >>> from bytewright.formats import ip, ipv6
    >>> frag = ipv6.Fragment(next_header=17, fragment_offset=0, m=False, identification=7,
    ...                      payload=ip.UDP(src_port=1, dst_port=2, payload=b"x"))
    >>> pkt = ipv6.IPv6(next_header=44, src="::1", dst="::1", payload=frag)
    >>> ipv6.upper_layer(ipv6.IPv6.unpack(pkt.pack()))
    UDP(src_port=1, dst_port=2, length=9, checksum=34775, payload=b'x')
    """
    return _chain(pkt)[-1]


def _path(chain: list[Any]) -> str:
    return ".".join(["payload"] * len(chain))


def _fragmented(chain: list[Any]) -> bool:
    return any(isinstance(x, Fragment) and (x.m or x.fragment_offset) for x in chain)


def _protocol_of(pkt: IPv6, chain: list[Any]) -> int:
    return int(chain[-2].next_header if len(chain) > 1 else pkt.next_header)


def _replace_last(pkt: Any, last: Any) -> list[Any]:
    """A copy of the chain below ``pkt`` whose last element is ``last``."""
    chain = _chain(pkt)
    if len(chain) == 1:
        return [last]
    out = [_with(x) for x in chain[:-1]]
    for a, b in itertools.pairwise(out):
        a.payload = b
    out[-1].payload = last
    return [*out, last]


def _pack_upper(x: Any) -> bytes:
    wire: bytes = x.pack()
    return wire


_HEADERS: dict[type, Any] = {}


def _header_struct(cls: type) -> Any:
    """The extension header ``cls`` without its payload (to pack it on its own)."""
    got = _HEADERS.get(cls)
    if got is None:
        fields = [
            (f.name, f.annotation, f.spec)
            for f in cls.__bw__.fields()  # type: ignore[attr-defined]
            if f.name != "payload"
        ]
        got = _HEADERS[cls] = bw.make_struct(cls.__name__ + "Header", fields, byteorder="big")
    return got


def _pack_header_only(x: Any) -> bytes:
    h = _header_struct(type(x))
    names = [f.name for f in h.__bw__.fields()]
    return bytes(h(**{n: getattr(x, n) for n in names}).pack())


def _pack_chain(top: Any) -> bytes:
    out = bytearray()
    while isinstance(top, _EXTENSIONS):
        out += _pack_header_only(top)
        top = top.payload
    out += top.pack()
    return bytes(out)


def _final_destination(pkt: IPv6) -> str:
    """The destination the pseudo-header uses: the last address of a routing header with
    segments left (types 0 and 2), or the first of a segment routing header (type 4)."""
    for x in _chain(pkt):
        if isinstance(x, Routing) and x.segments_left:
            if x.routing_type in (0, 2) and len(x.data) >= 20:
                return _v6_decode(x.data[-16:])
            if x.routing_type == 4 and len(x.data) >= 20:
                return _v6_decode(x.data[4:20])
    return pkt.dst


class PseudoHeader6(bw.Struct, byteorder="big"):
    """The IPv6 pseudo-header (RFC 8200 section 8.1) and a segment."""

    checksum: bw.U16 = bw.checksum(
        "internet", over=["src", "dst", "length", "zero", "next_header", "segment"]
    )
    src: bytes = bw.field(len=16)
    dst: bytes = bw.field(len=16)
    length: bw.U32 = bw.derived()
    zero: bytes = bw.field(len=3, default=b"\0\0\0")
    next_header: bw.U8
    segment: bytes = bw.field(len="length")


def transport_checksum6(
    src: bytes | str, dst: bytes | str, next_header: int, segment: bytes | bytearray
) -> int:
    """The UDP, TCP or ICMPv6 checksum of ``segment`` (its checksum bytes zeroed) between
    two IPv6 addresses. A UDP checksum that computes to 0 is sent as 0xFFFF.

    >>> from bytewright.formats import ip, ipv6
    >>> seg = ip.UDP(src_port=1, dst_port=2, payload=b"x").pack()
    >>> hex(ipv6.transport_checksum6("2001:db8::1", "2001:db8::2", 17, seg))
    '0x2c64'
    """
    if isinstance(src, str):
        src = _v6_encode(src)
    if isinstance(dst, str):
        dst = _v6_encode(dst)
    wire = PseudoHeader6(
        src=bytes(src), dst=bytes(dst), next_header=next_header, segment=bytes(segment)
    ).pack()
    s = int.from_bytes(wire[:2], "big")
    return 0xFFFF if s == 0 and next_header == Protocol.UDP else s


def _check_upper(pkt: IPv6) -> tuple[bool, int, int] | None:
    """(held, stored, computed) for the upper layer's checksum, or None when it cannot be
    checked."""
    chain = _chain(pkt)
    last = chain[-1]
    if not isinstance(last, UDP | TCP | ICMPv6) or _fragmented(chain):
        return None
    body = _pack_chain(chain[0])
    if pkt.payload_length and pkt.payload_length != len(body):
        return None
    if isinstance(last, UDP) and last.checksum == 0:
        return None
    seg = last.pack()
    at = {UDP: 6, TCP: 16, ICMPv6: 2}[type(last)]
    want = transport_checksum6(
        pkt.src, _final_destination(pkt), _protocol_of(pkt, chain), _zeroed(seg, at)
    )
    return want == last.checksum, last.checksum, want


def checksums(pkt: IPv6) -> dict[str, bool]:
    """Whether the upper layer's checksum holds: ``{"udp" | "tcp" | "icmpv6": ...}``, or
    ``{}`` when it cannot be checked (a fragment, a cut-short packet, a UDP checksum of 0,
    a Raw payload).

    >>> from bytewright.formats import ip, ipv6
    >>> pkt = ipv6.IPv6(next_header=ip.Protocol.UDP, hop_limit=64, src="2001:db8::1",
    ...                 dst="2001:db8::2", payload=ip.UDP(src_port=1, dst_port=2, payload=b"x"))
    >>> wire = pkt.pack()
    >>> ipv6.checksums(ipv6.IPv6.unpack(wire))
    {'udp': True}
    """
    got = _check_upper(pkt)
    if got is None:
        return {}
    return {type(upper_layer(pkt)).__name__.lower(): got[0]}


def decode(data: Any, *, lenient: bool = True) -> tuple[IPv6, int]:
    """Decodes the IPv6 packet at the start of ``data`` as a capture reader must: returns
    ``(packet, end)``, ``end`` being where the packet ends by its ``payload_length``.
    ``payload_length == 0`` with bytes after the header (a jumbogram or segmentation
    offload) runs to the end of ``data``; with ``lenient``, a packet cut short by the
    capture keeps what is there, and a chain that does not decode is ``Raw``.

    >>> from bytewright.formats import ip, ipv6
    >>> pkt = ipv6.IPv6(next_header=ip.Protocol.UDP, hop_limit=64, src="2001:db8::1",
    ...                 dst="2001:db8::2", payload=ip.UDP(src_port=1, dst_port=2, payload=b"x"))
    >>> wire = pkt.pack()
    >>> pkt, end = ipv6.decode(wire + b"pad")
    >>> end == len(wire), pkt.payload.payload
    (True, b'x')
    """
    wire = bytes(data)
    hdr, off = IPv6Header.unpack_from(wire)
    pl = hdr.payload_length
    n = len(wire)
    snapped = False
    if pl == 0 and n > off and hdr.next_header != Protocol.IPV6_NONXT:
        end = n
    elif off + pl > n:
        if not lenient:
            raise bw.DecodeError(
                f"payload_length: the packet is {off + pl} bytes, {n} are present",
                "payload_length",
                4,
            )
        end, snapped = n, True
    else:
        end = off + pl
    seg = wire[off:end]
    cls = _CASES.get(hdr.next_header, Raw)
    if isinstance(cls, str):
        cls = globals()[cls]
    try:
        payload: Any = cls.unpack(seg)
    except bw.DecodeError as e:
        if not (lenient or snapped):
            raise _inside(e, "payload", off) from None
        payload = Raw(data=seg)
    pkt = IPv6(
        version=hdr.version,
        dscp=hdr.dscp,
        ecn=hdr.ecn,
        flow_label=hdr.flow_label,
        payload_length=pl,
        next_header=hdr.next_header,
        hop_limit=hdr.hop_limit,
        src=hdr.src,
        dst=hdr.dst,
        payload=payload,
    )
    return pkt, end
