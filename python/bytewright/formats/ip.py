"""IPv4 (RFC 791), UDP (RFC 768) and TCP (RFC 9293) packets with their checksums.

The IPv4 header checksum is a plain ``bw.checksum("internet")`` over the header fields:
every pack computes it and every unpack verifies it. UDP and TCP checksums also cover a
*pseudo-header* from the IP layer (source, destination, protocol, segment length), so they
are computed where both layers are known:

- ``IPv4.pack()`` packs the whole packet and fills in the UDP or TCP checksum;
- ``IPv4.unpack(data)`` decodes it and verifies the UDP or TCP checksum (``verify=False``
  skips that check; a UDP checksum of 0 means "none" and is not checked);
- ``transport_checksum(src, dst, protocol, segment)`` computes one for a segment alone.

Other entry points (``unpack_from``, ``iter_unpack``, ``bw.compile(IPv4)``) verify the IPv4
header checksum only.
"""

from __future__ import annotations

import enum
import socket
from typing import Any

import bytewright as bw

__all__ = [
    "TCP",
    "UDP",
    "IPv4",
    "Protocol",
    "PseudoHeader",
    "Raw",
    "TCPFlags",
    "transport_checksum",
]


class Protocol(enum.IntEnum):
    TCP = 6
    UDP = 17


class TCPFlags(enum.IntFlag):
    FIN = 0x001
    SYN = 0x002
    RST = 0x004
    PSH = 0x008
    ACK = 0x010
    URG = 0x020
    ECE = 0x040
    CWR = 0x080
    NS = 0x100


class UDP(bw.Struct):
    src_port: bw.U16
    dst_port: bw.U16
    length: bw.U16 = bw.derived()
    checksum: bw.U16 = 0
    payload: bytes = bw.field(len="length - 8")


class TCP(bw.Struct):
    src_port: bw.U16
    dst_port: bw.U16
    seq: bw.U32 = 0
    ack: bw.U32 = 0
    data_offset: int = bw.bits(4, default=None)
    reserved: int = bw.bits(3, default=0)
    flags: TCPFlags = bw.field(type=bw.Bits(9), default=TCPFlags(0))
    window: bw.U16 = 65535
    checksum: bw.U16 = 0
    urgent: bw.U16 = 0
    options: bytes = bw.field(len="data_offset * 4 - 20", default=b"")
    payload: bytes = bw.field(len=bw.REST, default=b"")


class Raw(bw.Struct):
    """The payload of any other protocol."""

    data: bytes = bw.field(len=bw.REST)


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


class IPv4(bw.Struct):
    """An IPv4 packet; ``ihl``, ``total_length`` and every checksum are computed on pack."""

    version: int = bw.bits(4, default=4)
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
    payload: UDP | TCP | Raw = bw.field(
        size="total_length - ihl * 4",
        tag="protocol",
        cases={Protocol.UDP: UDP, Protocol.TCP: TCP},
        default_case=Raw,
    )

    def pack(self) -> bytes:
        """Packs the packet, with the IPv4 header checksum and the UDP or TCP checksum."""
        wire = super().pack()
        at = _transport_checksum_at(wire)
        if at is None:
            return wire
        hdr = (wire[0] & 0x0F) * 4
        total = int.from_bytes(wire[2:4], "big")
        seg = bytearray(wire[hdr:total])
        seg[at : at + 2] = b"\x00\x00"
        s = transport_checksum(wire[12:16], wire[16:20], wire[9], seg)
        out = bytearray(wire)
        out[hdr + at : hdr + at + 2] = s.to_bytes(2, "big")
        return bytes(out)

    @classmethod
    def unpack(cls, data: Any, *, verify: bool = True) -> IPv4:
        """Decodes a packet; verifies the IPv4 header checksum and (with ``verify``) the UDP
        or TCP checksum, raising ``bw.DecodeError`` on a mismatch."""
        pkt: IPv4 = super().unpack(data)
        if verify:
            wire = bytes(data)
            at = _transport_checksum_at(wire)
            if at is not None:
                hdr = pkt.ihl * 4
                seg = bytearray(wire[hdr : pkt.total_length])
                got = int.from_bytes(seg[at : at + 2], "big")
                if not (got == 0 and wire[9] == Protocol.UDP):
                    seg[at : at + 2] = b"\x00\x00"
                    want = transport_checksum(wire[12:16], wire[16:20], wire[9], seg)
                    if want != got:
                        raise bw.DecodeError(
                            f"payload.checksum: checksum mismatch: computed {want:#06x}, "
                            f"the data holds {got:#06x}",
                            "payload.checksum",
                            hdr + at,
                        )
        return pkt


def _transport_checksum_at(wire: bytes) -> int | None:
    """The offset of the UDP/TCP checksum in the segment, or None (other protocols and
    fragments after the first carry none)."""
    if len(wire) < 20 or int.from_bytes(wire[6:8], "big") & 0x1FFF:
        return None
    return {int(Protocol.UDP): 6, int(Protocol.TCP): 16}.get(wire[9])


class PseudoHeader(bw.Struct):
    """The IPv4 pseudo-header and a segment: packing it computes the segment's checksum."""

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
    addresses. A UDP checksum that computes to 0 is sent as 0xFFFF (RFC 768)."""
    if isinstance(src, str):
        src = socket.inet_aton(src)
    if isinstance(dst, str):
        dst = socket.inet_aton(dst)
    wire = PseudoHeader(
        src=bytes(src), dst=bytes(dst), protocol=protocol, segment=bytes(segment)
    ).pack()
    s = int.from_bytes(wire[:2], "big")
    return 0xFFFF if s == 0 and protocol == Protocol.UDP else s
