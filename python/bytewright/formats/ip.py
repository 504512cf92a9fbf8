"""IPv4 (RFC 791), UDP (RFC 768), TCP (RFC 9293) and ICMP (RFC 792), with their checksums,
fragments and reassembly.

The IPv4 header checksum is a plain ``bw.checksum("internet")`` over the header fields:
``bw.compile(IPv4)`` and every struct that nests an ``IPv4`` compute it on pack and verify it
on unpack. UDP, TCP and ICMP checksums also need the IP layer (the pseudo-header of source,
destination, protocol and length, or the fragment fields), so the packet's own methods
handle them:

- ``IPv4.pack()`` computes ``ihl``, ``total_length`` and every checksum left as ``None``;
  supplied values are checked (``verify=False`` writes them as given, for re-encoding a
  capture as it was). A UDP checksum of 0 means "no checksum" (RFC 768) and is always
  kept; ``total_length == 0`` (TCP segmentation offload) is always kept.
- ``IPv4.unpack(data)`` decodes a packet and verifies every checksum it can
  (``verify=False`` accepts wrong ones; ``checksums(pkt)`` says which held).
- ``transport_checksum(src, dst, protocol, segment)`` computes one for a lone segment.

Fragments (``mf`` set or a ``fragment_offset``) decode too: a non-first fragment's payload is
``Raw``; a first fragment carries the transport header when it fits (``UDPFragment`` for
UDP, whose ``length`` counts the whole datagram; ``TCP``; ``ICMP``) and ``Raw`` otherwise.
``fragment(pkt, mtu)`` splits a packet and ``reassemble(packets)`` joins fragments again.
"""

from __future__ import annotations

import copy
import enum
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import bytewright as bw

__all__ = [
    "ICMP",
    "TCP",
    "UDP",
    "IPv4",
    "IPv4Header",
    "Protocol",
    "PseudoHeader",
    "Raw",
    "TCPFlags",
    "TCPOption",
    "TCPOptions",
    "UDPFragment",
    "checksums",
    "fragment",
    "internet_checksum",
    "reassemble",
    "transport_checksum",
]


class Protocol(enum.IntEnum):
    """IANA protocol numbers (IPv4 ``protocol``, IPv6 ``next_header``).

    >>> from bytewright.formats import ip
    >>> ip.Protocol(6), int(ip.Protocol.UDP)
    (<Protocol.TCP: 6>, 17)
    """

    HOPOPT = 0
    ICMP = 1
    TCP = 6
    UDP = 17
    IPV6 = 41
    IPV6_ROUTE = 43
    IPV6_FRAG = 44
    ICMPV6 = 58
    IPV6_NONXT = 59
    IPV6_OPTS = 60


class TCPFlags(enum.IntFlag):
    """The TCP header's flag bits (FIN, SYN, RST, PSH, ACK, URG, ECE, CWR, NS).

    >>> from bytewright.formats import ip
    >>> ip.TCPFlags.SYN | ip.TCPFlags.ACK
    <TCPFlags.SYN|ACK: 18>
    >>> int(ip.TCPFlags.PSH | ip.TCPFlags.ACK)
    24
    """

    FIN = 0x001
    SYN = 0x002
    RST = 0x004
    PSH = 0x008
    ACK = 0x010
    URG = 0x020
    ECE = 0x040
    CWR = 0x080
    NS = 0x100


class UDP(bw.Struct, byteorder="big"):
    """A UDP datagram. ``checksum`` is computed by the IP packet's ``pack`` when left as None;
    0 means "no checksum" and is kept (packed alone, None is written as 0).

    >>> from bytewright.formats import ip
    >>> pkt = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> wire = pkt.pack()
    >>> ip.IPv4.unpack(wire).payload
    UDP(src_port=5353, dst_port=53, length=10, checksum=65102, payload=b'hi')
    """

    src_port: bw.U16
    dst_port: bw.U16
    length: bw.U16 = bw.derived()
    checksum: bw.U16 = None  # type: ignore[assignment]
    payload: bytes = bw.field(len="length - 8", default=b"")

    def pack(self) -> bytes:
        return super().pack() if self.checksum is not None else _with(self, checksum=0).pack()


class UDPFragment(bw.Struct, byteorder="big"):
    """The UDP header and the start of the datagram, in a first fragment: ``length`` counts
    the whole datagram, ``payload`` holds what this fragment carries.

    >>> from bytewright.formats import ip
    >>> pkt = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=bytes(40)))
    >>> wire = pkt.pack()
    >>> first, second = ip.fragment(pkt, mtu=44)
    >>> ip.IPv4.unpack(first.pack()).payload
    UDPFragment(src_port=5353, dst_port=53, length=48, checksum=26220, payload=b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00')
    """

    src_port: bw.U16
    dst_port: bw.U16
    length: bw.U16
    checksum: bw.U16 = None  # type: ignore[assignment]
    payload: bytes = bw.field(len=bw.REST, default=b"")

    def pack(self) -> bytes:
        return super().pack() if self.checksum is not None else _with(self, checksum=0).pack()


class TCP(bw.Struct, byteorder="big"):
    """A TCP segment. ``options`` are the raw option bytes (``decoded_options`` reads them);
    ``checksum`` is computed by the IP packet's ``pack`` when left as None.

    >>> from bytewright.formats import ip
    >>> mss = ip.TCPOptions(options=[ip.MaximumSegmentSize(mss=1460)]).pack()
    >>> seg = ip.TCP(src_port=40000, dst_port=80, seq=1, flags=ip.TCPFlags.SYN, window=64240,
    ...              options=mss)
    >>> pkt = ip.IPv4(ttl=64, protocol=ip.Protocol.TCP, src="192.0.2.1", dst="192.0.2.80",
    ...               payload=seg)
    >>> wire = pkt.pack()
    >>> got = ip.IPv4.unpack(wire).payload
    >>> got.flags, got.data_offset, got.decoded_options
    (<TCPFlags.SYN: 2>, 6, [MaximumSegmentSize(kind=2, length=4, mss=1460)])
    """

    src_port: bw.U16
    dst_port: bw.U16
    seq: bw.U32 = 0
    ack: bw.U32 = 0
    data_offset: int = bw.bits(4, default=None)
    reserved: int = bw.bits(3, default=0)
    flags: TCPFlags = bw.field(type=bw.Bits(9), default=TCPFlags(0))
    window: bw.U16 = 65535
    checksum: bw.U16 = None  # type: ignore[assignment]
    urgent: bw.U16 = 0
    options: bytes = bw.field(len="data_offset * 4 - 20", default=b"")
    payload: bytes = bw.field(len=bw.REST, default=b"")

    def pack(self) -> bytes:
        return super().pack() if self.checksum is not None else _with(self, checksum=0).pack()

    @property
    def decoded_options(self) -> list[TCPOption]:
        """The options, decoded (``bw.DecodeError`` if they are malformed)."""
        return TCPOptions.unpack(self.options).options


class ICMP(bw.Struct, byteorder="big"):
    """An ICMP message: ``body`` is everything after the checksum (for echo, the identifier
    and sequence number, then the data; for errors, 4 bytes, then the offending packet's
    header and first 8 bytes of payload).

    >>> from bytewright.formats import ip
    >>> ping = ip.IPv4(protocol=ip.Protocol.ICMP, src="192.0.2.1", dst="192.0.2.2",
    ...                payload=ip.ICMP(type=8, code=0, body=b"\\x00\\x01\\x00\\x01ping"))
    >>> got = ip.IPv4.unpack(ping.pack()).payload
    >>> got.type, got.checksum, ip.checksums(ip.IPv4.unpack(ping.pack()))
    (8, 6445, {'ipv4': True, 'icmp': True})
    """

    type: bw.U8
    code: bw.U8 = 0
    checksum: bw.U16 = None  # type: ignore[assignment]
    body: bytes = bw.field(len=bw.REST, default=b"")

    def pack(self) -> bytes:
        if self.checksum is not None:
            return super().pack()
        wire = bytearray(_with(self, checksum=0).pack())
        wire[2:4] = internet_checksum(wire).to_bytes(2, "big")
        return bytes(wire)


class Raw(bw.Struct):
    """The payload of any other protocol, or of a fragment.

    >>> from bytewright.formats import ip
    >>> pkt = ip.IPv4(protocol=47, src="192.0.2.1", dst="192.0.2.2", payload=ip.Raw(data=b"gre?"))
    >>> ip.IPv4.unpack(pkt.pack()).payload
    Raw(data=b'gre?')
    """

    data: bytes = bw.field(len=bw.REST)

    def pack(self) -> bytes:
        return bytes(self.data)


# ---- TCP options (RFC 9293, RFC 7323 window scale and timestamps, RFC 2018 SACK) ----


class TCPOption(bw.Struct, registry="kind"):
    """One TCP option; the variants below are chosen by ``kind``.

    >>> from bytewright.formats import ip
    >>> ip.TCPOptions.unpack(b"\\x02\\x04\\x05\\xb4\\x01\\x00").options
    [MaximumSegmentSize(kind=2, length=4, mss=1460), NoOperation(kind=1), EndOfOptions(kind=0)]
    """

    kind: bw.U8


class EndOfOptions(TCPOption, tag=0):
    pass


class NoOperation(TCPOption, tag=1):
    pass


class MaximumSegmentSize(TCPOption, tag=2):
    length: bw.U8 = 4
    mss: bw.U16


class WindowScale(TCPOption, tag=3):
    length: bw.U8 = 3
    shift: bw.U8


class SackPermitted(TCPOption, tag=4):
    length: bw.U8 = 2


class SackBlock(bw.Struct, byteorder="big"):
    left: bw.U32
    right: bw.U32


class Sack(TCPOption, tag=5):
    length: bw.U8 = bw.derived()
    blocks: list[SackBlock] = bw.field(size="length - 2")


class Timestamps(TCPOption, tag=8):
    length: bw.U8 = 10
    value: bw.U32
    echo_reply: bw.U32


class UnknownOption(TCPOption, default=True):
    length: bw.U8 = bw.derived()
    data: bytes = bw.field(len="length - 2")


class TCPOptions(bw.Struct, byteorder="big"):
    """The option bytes of a TCP header as a list (every padding byte is an EndOfOptions).

    >>> from bytewright.formats import ip
    >>> raw = ip.TCPOptions(options=[ip.MaximumSegmentSize(mss=1460), ip.NoOperation()]).pack()
    >>> raw
    b'\\x02\\x04\\x05\\xb4\\x01'
    >>> [type(o).__name__ for o in ip.TCPOptions.unpack(raw).options]
    ['MaximumSegmentSize', 'NoOperation']
    """

    options: list[TCPOption] = bw.field(count=bw.REST)


# ---- IPv4 ----

# The payload's tag: the protocol; 256 + 17 for UDP in a first fragment (UDPFragment, whose
# length counts the whole datagram); -1 (Raw) in later fragments.
_TAG = "-1 if fragment_offset else (273 if mf and protocol == 17 else protocol)"
_CASES: dict[int, Any] = {
    Protocol.UDP: UDP,
    Protocol.TCP: TCP,
    Protocol.ICMP: ICMP,
    256 | Protocol.UDP: UDPFragment,
}

_HEADER = [
    "version",
    "ihl",
    "dscp",
    "ecn",
    "total_length",
    "identification",
    "reserved",
    "df",
    "mf",
    "fragment_offset",
    "ttl",
    "protocol",
    "checksum",
    "src",
    "dst",
    "options",
]
_ADDR = (socket.inet_ntoa, socket.inet_aton)


class IPv4Header(bw.Struct, byteorder="big"):
    """The IPv4 header alone, every field as it is on the wire (nothing computed but
    ``ihl``): what ``IPv4`` packs and decodes leniently through.

    >>> from bytewright.formats import ip
    >>> pkt = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> wire = pkt.pack()
    >>> head = ip.IPv4Header.unpack_from(wire)[0]
    >>> head.ihl, head.total_length, head.src
    (5, 30, '192.0.2.1')
    """

    version: int = bw.field(type=bw.Bits(4), const=4, default=4)
    ihl: int = bw.bits(4, default=None)
    dscp: int = bw.bits(6, default=0)
    ecn: int = bw.bits(2, default=0)
    total_length: bw.U16
    identification: bw.U16 = 0
    reserved: bool = bw.flag(default=False)
    df: bool = bw.flag(default=False)
    mf: bool = bw.flag(default=False)
    fragment_offset: int = bw.bits(13, default=0)
    ttl: bw.U8 = 64
    protocol: bw.U8
    checksum: bw.U16 = 0
    src: str = bw.field(type=bw.Bytes(len=4), convert=_ADDR)
    dst: str = bw.field(type=bw.Bytes(len=4), convert=_ADDR)
    options: bytes = bw.field(len="ihl * 4 - 20", default=b"")


class IPv4(bw.Struct, byteorder="big"):
    """An IPv4 packet; ``ihl``, ``total_length`` and every checksum are computed on pack.

    >>> from bytewright.formats import ip
    >>> pkt = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> wire = pkt.pack()
    >>> wire.hex(" ")
    '45 00 00 1e 00 01 00 00 40 11 f6 ca c0 00 02 01 c0 00 02 02 14 e9 00 35 00 0a fe 4e 68 69'
    >>> got = ip.IPv4.unpack(wire)
    >>> got.total_length, got.checksum, got.payload.checksum
    (30, 63178, 65102)
    >>> ip.IPv4.unpack(wire[:-1])
    Traceback (most recent call last):
        ...
    bytewright.errors.DecodeError: total_length: the packet is 30 bytes, 29 are present
    """

    version: int = bw.field(type=bw.Bits(4), const=4, default=4)
    ihl: int = bw.bits(4, default=None)
    dscp: int = bw.bits(6, default=0)
    ecn: int = bw.bits(2, default=0)
    total_length: bw.U16 = bw.derived()
    identification: bw.U16 = 0
    reserved: bool = bw.flag(default=False)
    df: bool = bw.flag(default=False)
    mf: bool = bw.flag(default=False)
    fragment_offset: int = bw.bits(13, default=0)
    ttl: bw.U8 = 64
    protocol: bw.U8
    checksum: bw.U16 = bw.checksum("internet", over=_HEADER)
    src: str = bw.field(type=bw.Bytes(len=4), convert=_ADDR)
    dst: str = bw.field(type=bw.Bytes(len=4), convert=_ADDR)
    options: bytes = bw.field(len="ihl * 4 - 20", default=b"")
    payload: UDP | UDPFragment | TCP | ICMP | Raw = bw.field(
        size="total_length - ihl * 4", tag=_TAG, cases=_CASES, default_case=Raw
    )

    @property
    def is_fragment(self) -> bool:
        """Whether this packet is a fragment of a larger datagram."""
        return bool(self.mf or self.fragment_offset)

    def pack(self, *, verify: bool = True) -> bytes:
        """Packs the packet, computing ``ihl``, ``total_length`` and every checksum left as
        None. A supplied value that disagrees is a ``bw.PackError``, except with
        ``verify=False``, which writes it as given (a captured packet with offloaded
        checksums, or cut short by the capture's snap length, re-encodes as it was)."""
        want_cls = _segment_class(self.protocol, self.mf, self.fragment_offset)
        if not isinstance(self.payload, want_cls | Raw):
            raise bw.PackError(
                f"payload: the protocol {self.protocol} selects {want_cls.__name__} here "
                f"(or Raw), but the payload is a {type(self.payload).__name__}",
                "payload",
            )
        seg = bytearray(_segment_bytes(self.payload))
        real = 20 + len(self.options) + len(seg)
        tl = self.total_length
        if tl is None:
            tl = real
        elif tl != real and tl != 0 and verify:
            raise bw.PackError(
                f"total_length: {tl} disagrees with the packet's length {real} "
                "(leave it None to compute it; pack(verify=False) writes it as given)",
                "total_length",
            )
        at = _checksum_at(self.protocol, self.is_fragment, self.payload)
        if at is not None:
            given = _checksum_of(self.payload)
            if self.protocol == Protocol.ICMP:
                seg[at : at + 2] = b"\0\0"
                want = internet_checksum(seg)
            else:
                want = transport_checksum(self.src, self.dst, self.protocol, _zeroed(seg, at))
            if given is None:
                seg[at : at + 2] = want.to_bytes(2, "big")
            elif given != want and verify and not (given == 0 and self.protocol == Protocol.UDP):
                name = type(self.payload).__name__
                raise bw.PackError(
                    f"payload.checksum: {given:#06x} is not the {name} checksum {want:#06x} "
                    "(leave it None to compute it; pack(verify=False) writes it as given)",
                    "payload.checksum",
                )
            else:
                seg[at : at + 2] = given.to_bytes(2, "big")
        header = bytearray(_header_of(self, tl, 0).pack())
        want = internet_checksum(header)
        if self.checksum is None:
            header[10:12] = want.to_bytes(2, "big")
        elif self.checksum != want and verify:
            raise bw.PackError(
                f"checksum: {self.checksum:#06x} is not the header checksum {want:#06x} "
                "(leave it None to compute it; pack(verify=False) writes it as given)",
                "checksum",
            )
        else:
            header[10:12] = self.checksum.to_bytes(2, "big")
        return bytes(header + seg)

    @classmethod
    def unpack(cls, data: Any, *, verify: bool = True) -> IPv4:
        """Decodes one packet (exactly ``data``), verifying the header checksum and the UDP,
        TCP or ICMP checksum; ``verify=False`` accepts wrong checksums (captures of
        offloaded traffic). ``total_length == 0`` (TCP segmentation offload) takes the
        payload from the rest of ``data``, as dpkt and Wireshark do."""
        wire = bytes(data)
        try:
            pkt: IPv4 = super().unpack(wire)
        except bw.DecodeError:
            pkt, end = decode(wire, verify=verify, lenient=False)
            if end != len(wire):
                raise bw.DecodeError(
                    f"total_length: the packet is {end} bytes and the data {len(wire)} "
                    f"(the {len(wire) - end} bytes after it belong to the link layer: decode "
                    "the frame, or use ip.decode)",
                    "total_length",
                    2,
                ) from None
        if verify:
            _verify_transport(pkt, wire)
        return pkt


def _with(obj: Any, **changes: Any) -> Any:
    out = copy.copy(obj)
    for k, v in changes.items():
        setattr(out, k, v)
    return out


def _zeroed(seg: bytes | bytearray, at: int) -> bytes:
    out = bytearray(seg)
    out[at : at + 2] = b"\0\0"
    return bytes(out)


def _segment_bytes(payload: Any) -> bytes:
    wire: bytes = payload.pack()
    return wire


def _checksum_of(segment: Any) -> int | None:
    """The checksum a UDP, TCP or ICMP segment holds (None: left to compute)."""
    value: int | None = segment.checksum
    return value


def _checksum_at(protocol: int, is_fragment: bool, payload: Any) -> int | None:
    """Where the transport checksum sits in the segment, when it can be computed (not in a
    fragment: it covers the whole datagram)."""
    if is_fragment:
        return None
    if isinstance(payload, UDP) and protocol == Protocol.UDP:
        return 6
    if isinstance(payload, TCP) and protocol == Protocol.TCP:
        return 16
    if isinstance(payload, ICMP) and protocol == Protocol.ICMP:
        return 2
    return None


def _header_of(pkt: IPv4, total_length: int, checksum: int) -> IPv4Header:
    return IPv4Header(
        version=pkt.version,
        ihl=pkt.ihl,
        dscp=pkt.dscp,
        ecn=pkt.ecn,
        total_length=total_length,
        identification=pkt.identification,
        reserved=pkt.reserved,
        df=pkt.df,
        mf=pkt.mf,
        fragment_offset=pkt.fragment_offset,
        ttl=pkt.ttl,
        protocol=pkt.protocol,
        checksum=checksum,
        src=pkt.src,
        dst=pkt.dst,
        options=pkt.options,
    )


def _segment_class(protocol: int, mf: bool, offset: int) -> type[bw.Struct]:
    if offset:
        return Raw
    tag = 273 if mf and protocol == Protocol.UDP else protocol
    return _CASES.get(tag, Raw)  # type: ignore[no-any-return]


def decode(data: Any, *, verify: bool = False, lenient: bool = True) -> tuple[IPv4, int]:
    """Decodes the IPv4 packet at the start of ``data`` the way a capture reader must:
    returns ``(packet, end)``, where ``end`` is where the packet ends by its
    ``total_length`` (bytes after it are the link layer's trailer).

    - ``total_length == 0`` (TCP segmentation offload): the packet runs to the end of
      ``data`` (as dpkt and Wireshark do);
    - a first fragment whose transport header does not fit has a ``Raw`` payload;
    - with ``lenient`` (the default), a packet cut short by the capture's snap length keeps
      what is there, and a transport header that does not decode is ``Raw``.

    Raises ``bw.DecodeError`` when not even the IPv4 header decodes (or, with ``verify``,
    when the header checksum is wrong). Transport checksums are not checked here."""
    wire = bytes(data)
    hdr, off = IPv4Header.unpack_from(wire)
    tl = hdr.total_length
    n = len(wire)
    snapped = False
    if tl == 0:
        end = n
    elif tl < off:
        raise bw.DecodeError(
            f"total_length: {tl} is less than the header length {off}", "total_length", 2
        )
    elif tl > n:
        if not lenient:
            raise bw.DecodeError(
                f"total_length: the packet is {tl} bytes, {n} are present", "total_length", 2
            )
        end, snapped = n, True
    else:
        end = tl
    if verify:
        want = internet_checksum(_zeroed(wire[:off], 10))
        if want != hdr.checksum:
            raise bw.DecodeError(
                f"checksum: checksum mismatch: stored {hdr.checksum:#06x}, computed {want:#06x}",
                "checksum",
                10,
            )
    seg = wire[off:end]
    seg_cls = _segment_class(hdr.protocol, hdr.mf, hdr.fragment_offset)
    try:
        payload: Any = seg_cls.unpack(seg)
    except bw.DecodeError as e:
        if not (lenient or snapped or hdr.mf):
            raise _inside(e, "payload", off) from None
        payload = Raw(data=seg)
    pkt = IPv4(
        version=hdr.version,
        ihl=hdr.ihl,
        dscp=hdr.dscp,
        ecn=hdr.ecn,
        total_length=tl,
        identification=hdr.identification,
        reserved=hdr.reserved,
        df=hdr.df,
        mf=hdr.mf,
        fragment_offset=hdr.fragment_offset,
        ttl=hdr.ttl,
        protocol=hdr.protocol,
        checksum=hdr.checksum,
        src=hdr.src,
        dst=hdr.dst,
        options=hdr.options,
        payload=payload,
    )
    return pkt, end


def _inside(e: bw.DecodeError, path: str, offset: int) -> bw.DecodeError:
    """``e``, raised by a layer decoded alone, as seen from the layer ``path`` up at
    ``offset``."""
    full = ".".join(p for p in (path, e.path) if p)
    text = str(e)
    detail = text[len(e.path) + 2 :] if e.path and text.startswith(e.path + ": ") else text
    return bw.DecodeError(f"{full}: {detail}", full, offset + (e.offset or 0))


def checksums(pkt: IPv4) -> dict[str, bool]:
    """Whether each checksum of a decoded packet holds: ``{"ipv4": ..., "udp" | "tcp" |
    "icmp": ...}``. A checksum that cannot be checked is left out: the transport checksum
    of a fragment, of a packet cut short by the capture, and a UDP checksum of 0 (none).

    >>> from bytewright.formats import ip
    >>> pkt = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> wire = pkt.pack()
    >>> ip.checksums(ip.IPv4.unpack(wire))
    {'ipv4': True, 'udp': True}
    >>> bad = bytearray(wire)
    >>> bad[-1] ^= 1
    >>> ip.checksums(ip.IPv4.unpack(bytes(bad), verify=False))
    {'ipv4': True, 'udp': False}
    """
    header = _header_of(pkt, pkt.total_length, 0).pack()
    out = {"ipv4": internet_checksum(header) == pkt.checksum}
    seg = _segment_bytes(pkt.payload)
    tl = pkt.total_length
    if tl and tl != len(header) + len(seg):
        return out  # cut short: the segment is incomplete
    at = _checksum_at(pkt.protocol, pkt.is_fragment, pkt.payload)
    if at is None:
        return out
    got = _checksum_of(pkt.payload)
    name = type(pkt.payload).__name__.lower()
    if pkt.protocol == Protocol.UDP and got == 0:
        return out
    if pkt.protocol == Protocol.ICMP:
        want = internet_checksum(_zeroed(seg, at))
    else:
        want = transport_checksum(pkt.src, pkt.dst, pkt.protocol, _zeroed(seg, at))
    out[name] = want == got
    return out


def _verify_transport(pkt: IPv4, wire: bytes) -> None:
    """Raises ``bw.DecodeError`` at the transport checksum when it is wrong."""
    ok = checksums(pkt)
    name = type(pkt.payload).__name__.lower()
    if ok.get(name, True):
        return
    hdr = pkt.ihl * 4
    at = _checksum_at(pkt.protocol, pkt.is_fragment, pkt.payload)
    assert at is not None
    seg = wire[hdr : pkt.total_length or len(wire)]
    if pkt.protocol == Protocol.ICMP:
        want = internet_checksum(_zeroed(seg, at))
    else:
        want = transport_checksum(pkt.src, pkt.dst, pkt.protocol, _zeroed(seg, at))
    got = _checksum_of(pkt.payload)
    raise bw.DecodeError(
        f"payload.checksum: checksum mismatch: stored {got:#06x}, computed {want:#06x}",
        "payload.checksum",
        hdr + at,
    )


# ---- checksums ----


class _Sum(bw.Struct):
    checksum: bw.U16 = bw.checksum("internet", over=["data"])
    data: bytes = bw.field(len=bw.REST)


def internet_checksum(data: bytes | bytearray) -> int:
    """The Internet checksum (RFC 1071) of ``data``.

    >>> from bytewright.formats import ip
    >>> hex(ip.internet_checksum(bytes.fromhex("4500001e000100004011 0000 c0000201c0000202")))
    '0xf6ca'
    """
    return int.from_bytes(_Sum(data=bytes(data)).pack()[:2], "big")


class PseudoHeader(bw.Struct, byteorder="big"):
    """The IPv4 pseudo-header and a segment: packing it computes the segment's checksum.

    >>> from bytewright.formats import ip
    >>> seg = ip.UDP(src_port=5353, dst_port=53, payload=b"hi").pack()
    >>> ph = ip.PseudoHeader(src=bytes([192, 0, 2, 1]), dst=bytes([192, 0, 2, 2]), protocol=17,
    ...                      segment=seg)
    >>> ph.pack()[:2] == ip.transport_checksum("192.0.2.1", "192.0.2.2", 17, seg).to_bytes(2, "big")
    True
    """

    checksum: bw.U16 = bw.checksum(
        "internet", over=["src", "dst", "zero", "protocol", "length", "segment"]
    )
    src: bytes = bw.field(len=4)
    dst: bytes = bw.field(len=4)
    zero: bw.U8 = 0
    protocol: bw.U8
    length: bw.U16 = bw.derived()
    segment: bytes = bw.field(len="length")


def transport_checksum(
    src: bytes | str, dst: bytes | str, protocol: int, segment: bytes | bytearray
) -> int:
    """The UDP or TCP checksum of ``segment`` (its checksum bytes zeroed) between two IPv4
    addresses. A UDP checksum that computes to 0 is sent as 0xFFFF (RFC 768).

    >>> from bytewright.formats import ip
    >>> seg = ip.UDP(src_port=5353, dst_port=53, payload=b"hi").pack()
    >>> hex(ip.transport_checksum("192.0.2.1", "192.0.2.2", ip.Protocol.UDP, seg))
    '0xfe4e'
    """
    if isinstance(src, str):
        src = socket.inet_aton(src)
    if isinstance(dst, str):
        dst = socket.inet_aton(dst)
    wire = PseudoHeader(
        src=bytes(src), dst=bytes(dst), protocol=protocol, segment=bytes(segment)
    ).pack()
    s = int.from_bytes(wire[:2], "big")
    return 0xFFFF if s == 0 and protocol == Protocol.UDP else s


# ---- fragmentation and reassembly ----


def _copied_options(options: bytes) -> bytes:
    """The options a later fragment carries: those with the "copied" bit (RFC 791 3.1),
    padded to a multiple of 4 bytes."""
    out = bytearray()
    i = 0
    while i < len(options):
        kind = options[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(options) or options[i + 1] < 2:
            break
        n = options[i + 1]
        if kind & 0x80:
            out += options[i : i + n]
        i += n
    out += b"\0" * (-len(out) % 4)
    return bytes(out)


def fragment(pkt: IPv4, mtu: int) -> list[IPv4]:
    """Splits a packet into fragments of at most ``mtu`` bytes each (RFC 791 section 3.2):
    payloads cut at multiples of 8 bytes, the first fragment keeps every option, later ones
    only the copied ones. The transport checksum is computed over the whole datagram first.
    A packet that fits (or has ``df`` set) is returned alone.

    >>> from bytewright.formats import ip
    >>> pkt = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=bytes(100)))
    >>> wire = pkt.pack()
    >>> parts = ip.fragment(pkt, mtu=68)
    >>> [(p.fragment_offset * 8, p.mf, len(p.pack())) for p in parts]
    [(0, True, 68), (48, True, 68), (96, False, 32)]
    >>> ip.reassemble(parts)[0] == ip.IPv4.unpack(wire)
    True
    """
    whole = IPv4.unpack(pkt.pack())
    data = _segment_bytes(whole.payload)
    if 20 + len(whole.options) + len(data) <= mtu:
        return [whole]
    if whole.df:
        raise bw.PackError(f"the packet is larger than the MTU {mtu} and has df set", "df")
    out = []
    pos = 0
    base = whole.fragment_offset * 8
    first = True
    while pos < len(data):
        options = whole.options if first else _copied_options(whole.options)
        room = (mtu - 20 - len(options)) // 8 * 8
        if room <= 0:
            raise bw.PackError(f"an MTU of {mtu} leaves no room for a fragment's data", "")
        piece = data[pos : pos + room]
        last = pos + len(piece) >= len(data)
        out.append(
            _with(
                whole,
                ihl=None,
                total_length=None,
                checksum=None,
                options=options,
                mf=whole.mf or not last,
                fragment_offset=(base + pos) // 8,
                payload=Raw(data=piece),
            )
        )
        pos += len(piece)
        first = False
    return out


@dataclass
class _Datagram:
    first_seen: float
    pieces: dict[int, bytes]
    first: IPv4 | None = None
    total: int | None = None
    broken: bool = False


def reassemble(
    packets: Iterable[IPv4 | tuple[float, IPv4]], *, timeout: float = 30.0
) -> list[IPv4]:
    """Reassembles IPv4 fragments; other packets pass through in order.

    ``packets`` are ``IPv4`` packets or ``(timestamp, packet)`` pairs (seconds; without
    timestamps no datagram expires). Fragments belong together when their source,
    destination, protocol and identification agree (RFC 791). A datagram is returned, with
    its payload decoded, when its fragments cover it from offset 0 to the fragment without
    ``mf``; its header is the first fragment's. The rules:

    - **Overlaps** (RFC 5722, which Linux applies to IPv4 as well): a fragment identical in
      offset and bytes to one already held is a duplicate and is ignored; any other overlap
      discards the whole datagram, and later fragments of it are dropped too.
    - **Timeout**: a datagram not complete within ``timeout`` seconds of its first fragment
      (Linux's ``ipfrag_time`` default, 30 s; RFC 791 suggests 15 s) is discarded.
    - Datagrams still incomplete at the end are discarded.

    >>> from bytewright.formats import ip
    >>> pkt = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=bytes(100)))
    >>> wire = pkt.pack()
    >>> a, b = ip.fragment(pkt, mtu=100)
    >>> [p.payload.payload == bytes(100) for p in ip.reassemble([b, a])]
    [True]
    """
    out: list[IPv4] = []
    held: dict[tuple[str, str, int, int], _Datagram] = {}
    for item in packets:
        ts, pkt = item if isinstance(item, tuple) else (None, item)
        if ts is not None:
            for key in [k for k, d in held.items() if ts - d.first_seen > timeout]:
                del held[key]
        if not pkt.is_fragment:
            out.append(pkt)
            continue
        key = (pkt.src, pkt.dst, pkt.protocol, pkt.identification)
        dg = held.get(key)
        if dg is None:
            dg = held[key] = _Datagram(first_seen=ts if ts is not None else 0.0, pieces={})
        if dg.broken:
            continue
        start = pkt.fragment_offset * 8
        data = _segment_bytes(pkt.payload)
        end = start + len(data)
        if pkt.mf and len(data) % 8:
            dg.broken = True  # only the last fragment may end off an 8-byte boundary
            continue
        if dg.pieces.get(start) == data:
            continue  # an exact duplicate
        if any(s < end and start < s + len(d) for s, d in dg.pieces.items()):
            dg.broken = True
            dg.pieces.clear()
            continue
        if not pkt.mf:
            if dg.total is not None and dg.total != end:
                dg.broken = True
                continue
            dg.total = end
        if (dg.total is not None and end > dg.total) or end > 65535 - 20:
            dg.broken = True
            continue
        dg.pieces[start] = data
        if start == 0:
            dg.first = pkt
        if dg.total is None or dg.first is None:
            continue
        if sum(len(d) for d in dg.pieces.values()) != dg.total:
            continue
        body = b"".join(dg.pieces[s] for s in sorted(dg.pieces))
        first = dg.first
        del held[key]
        seg_cls = _segment_class(first.protocol, False, 0)
        try:
            payload: Any = seg_cls.unpack(body)
        except bw.DecodeError:
            payload = Raw(data=body)
        out.append(
            _with(
                first,
                ihl=None,
                total_length=None,
                checksum=None,
                mf=False,
                fragment_offset=0,
                payload=payload,
            )
        )
    return out
