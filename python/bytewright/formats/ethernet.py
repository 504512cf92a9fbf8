"""Ethernet II frames with 802.1Q / 802.1ad (QinQ) VLAN tags, and Linux "cooked" capture
headers (SLL), carrying IPv4, IPv6 or raw bytes.

A VLAN tag is a layer of its own (``Dot1Q``), as in scapy and Wireshark: a QinQ frame is
``Ethernet(type=0x88a8, payload=Dot1Q(type=0x8100, payload=Dot1Q(type=0x0800,
payload=IPv4(...))))``. Bytes after the network packet (Ethernet padding to 60 bytes, a
frame check sequence, any trailer) are kept apart in ``trailer``, as Wireshark shows them,
so they never make a frame fail and re-encode as they were.

``Ethernet.pack(verify=...)`` and ``Ethernet.unpack(data, verify=...)`` pass ``verify`` to
the IP layer (see ``ip.IPv4``); ``decode(data)`` is the lenient decoder of capture readers
and ``checksums(frame)`` says which checksums of a frame held.
"""

from __future__ import annotations

import enum
from typing import Any

import bytewright as bw
from bytewright.formats import ip, ipv6
from bytewright.formats.ip import IPv4, Raw, _inside
from bytewright.formats.ipv6 import IPv6

__all__ = [
    "Dot1Q",
    "EtherType",
    "Ethernet",
    "LinuxSLL",
    "checksums",
    "decode",
    "decode_sll",
    "network_layer",
]


class EtherType(enum.IntEnum):
    """EtherType values: the protocol of an Ethernet frame's payload (and VLAN tag types).

    >>> from bytewright.formats import ethernet
    >>> ethernet.EtherType(0x86DD), int(ethernet.EtherType.VLAN)
    (<EtherType.IPV6: 34525>, 33024)
    """

    IPV4 = 0x0800
    ARP = 0x0806
    VLAN = 0x8100
    IPV6 = 0x86DD
    QINQ = 0x88A8
    VLAN_9100 = 0x9100


_VLAN_TYPES = (EtherType.VLAN, EtherType.QINQ, EtherType.VLAN_9100)


def _mac_decode(b: bytes) -> str:
    return b.hex(":")


def _mac_encode(s: str) -> bytes:
    out = bytes.fromhex(s.replace(":", "").replace("-", ""))
    if len(out) != 6:
        raise ValueError(f"a MAC address has 6 bytes, {s!r} has {len(out)}")
    return out


_MAC = (_mac_decode, _mac_encode)

# Every VLAN tag type selects Dot1Q (one case, so the schema describes it once).
_TAG = "33024 if type == 34984 or type == 37120 else type"
_CASES: dict[int, Any] = {
    EtherType.IPV4: IPv4,
    EtherType.IPV6: IPv6,
    EtherType.VLAN: "Dot1Q",
}


class Dot1Q(bw.Struct, byteorder="big"):
    """An 802.1Q (or 802.1ad) VLAN tag and what follows it.

    >>> from bytewright.formats import ethernet, ip
    >>> udp = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> frame = ethernet.Ethernet(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01",
    ...                           type=ethernet.EtherType.VLAN,
    ...                           payload=ethernet.Dot1Q(vid=42, type=ethernet.EtherType.IPV4,
    ...                                                  payload=udp)).pack()
    >>> tag = ethernet.Ethernet.unpack(frame).payload
    >>> tag.vid, tag.payload.payload.dst_port
    (42, 53)
    """

    pcp: int = bw.bits(3, default=0)
    dei: bool = bw.flag(default=False)
    vid: int = bw.bits(12)
    type: bw.U16
    payload: Dot1Q | IPv4 | IPv6 | Raw = bw.field(tag=_TAG, cases=_CASES, default_case=Raw)

    def pack(self, *, verify: bool = True) -> bytes:
        head = _Dot1QHeader(pcp=self.pcp, dei=self.dei, vid=self.vid, type=self.type).pack()
        return head + _pack(self.payload, verify)


class _Dot1QHeader(bw.Struct, byteorder="big"):
    pcp: int = bw.bits(3, default=0)
    dei: bool = bw.flag(default=False)
    vid: int = bw.bits(12)
    type: bw.U16


class Ethernet(bw.Struct, byteorder="big"):
    """An Ethernet II frame (without preamble; with its FCS, if captured, in ``trailer``).

    >>> from bytewright.formats import ethernet, ip
    >>> udp = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> frame = ethernet.Ethernet(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01",
    ...                           type=ethernet.EtherType.IPV4, payload=udp).pack()
    >>> frame[:14].hex(" ")
    'ff ff ff ff ff ff 02 00 00 00 00 01 08 00'
    >>> got = ethernet.Ethernet.unpack(frame)
    >>> got.src, got.payload.src, got.payload.payload.payload
    ('02:00:00:00:00:01', '192.0.2.1', b'hi')
    """

    dst: str = bw.field(type=bw.Bytes(len=6), convert=_MAC)
    src: str = bw.field(type=bw.Bytes(len=6), convert=_MAC)
    type: bw.U16
    payload: Dot1Q | IPv4 | IPv6 | Raw = bw.field(tag=_TAG, cases=_CASES, default_case=Raw)
    trailer: bytes = bw.field(len=bw.REST, default=b"")

    def pack(self, *, verify: bool = True) -> bytes:
        """Packs the frame; ``verify`` is passed to the IP layer (``ip.IPv4.pack``)."""
        head = _EthernetHeader(dst=self.dst, src=self.src, type=self.type).pack()
        return head + _pack(self.payload, verify) + bytes(self.trailer)

    @classmethod
    def unpack(cls, data: Any, *, verify: bool = True) -> Ethernet:
        """Decodes a frame and verifies every checksum of its IP layer (``verify=False``
        accepts wrong ones). A truncated or malformed packet is a ``bw.DecodeError``; use
        ``decode`` to read whatever a capture holds."""
        wire = bytes(data)
        try:
            frame: Ethernet = super().unpack(wire)
        except bw.DecodeError:
            frame = decode(wire, verify=verify, lenient=False)
        if verify:
            _verify(frame)
        return frame


class _EthernetHeader(bw.Struct, byteorder="big"):
    dst: str = bw.field(type=bw.Bytes(len=6), convert=_MAC)
    src: str = bw.field(type=bw.Bytes(len=6), convert=_MAC)
    type: bw.U16


class LinuxSLL(bw.Struct, byteorder="big"):
    """The Linux cooked-capture header (LINKTYPE_LINUX_SLL, what ``tcpdump -i any``
    writes) and the packet, with any trailing bytes in ``trailer``.

    >>> from bytewright.formats import ethernet, ip
    >>> pkt = ip.IPv4(protocol=ip.Protocol.UDP, src="192.0.2.1", dst="192.0.2.2",
    ...               payload=ip.UDP(src_port=1, dst_port=2, payload=b""))
    >>> cooked = ethernet.LinuxSLL(packet_type=0, type=ethernet.EtherType.IPV4, payload=pkt).pack()
    >>> cooked[:16].hex(" ")
    '00 00 00 01 00 06 00 00 00 00 00 00 00 00 08 00'
    >>> ethernet.decode_sll(cooked).payload.payload.dst_port
    2
    """

    packet_type: bw.U16
    arphrd_type: bw.U16 = 1
    address_length: bw.U16 = 6
    address: bytes = bw.field(len=8, default=bytes(8))
    type: bw.U16
    payload: Dot1Q | IPv4 | IPv6 | Raw = bw.field(tag=_TAG, cases=_CASES, default_case=Raw)
    trailer: bytes = bw.field(len=bw.REST, default=b"")

    def pack(self, *, verify: bool = True) -> bytes:
        head = _SLLHeader(
            packet_type=self.packet_type,
            arphrd_type=self.arphrd_type,
            address_length=self.address_length,
            address=self.address,
            type=self.type,
        ).pack()
        return head + _pack(self.payload, verify) + bytes(self.trailer)


class _SLLHeader(bw.Struct, byteorder="big"):
    packet_type: bw.U16
    arphrd_type: bw.U16
    address_length: bw.U16
    address: bytes = bw.field(len=8)
    type: bw.U16


def _pack(layer: Any, verify: bool) -> bytes:
    if isinstance(layer, IPv4 | IPv6 | Dot1Q):
        return layer.pack(verify=verify)
    return bytes(layer.pack())


def _network(type_: int, data: bytes, verify: bool, lenient: bool) -> tuple[Any, int]:
    """The payload of an EtherType and where it ends in ``data``."""
    if type_ in _VLAN_TYPES:
        if len(data) < 4:
            if not lenient:
                raise bw.DecodeError(
                    f"payload: a VLAN tag needs 4 bytes, {len(data)} left", "payload", 0
                )
            return Raw(data=data), len(data)
        tag = _Dot1QHeader.unpack(data[:4])
        try:
            inner, end = _network(tag.type, data[4:], verify, lenient)
        except bw.DecodeError as e:
            raise _inside(e, "payload", 4) from None
        return (
            Dot1Q(pcp=tag.pcp, dei=tag.dei, vid=tag.vid, type=tag.type, payload=inner),
            4 + end,
        )
    try:
        if type_ == EtherType.IPV4:
            return ip.decode(data, verify=verify, lenient=lenient)
        if type_ == EtherType.IPV6:
            return ipv6.decode(data, lenient=lenient)
    except bw.DecodeError as e:
        if not lenient:
            raise _inside(e, "payload", 0) from None
    return Raw(data=data), len(data)


def decode(data: Any, *, verify: bool = False, lenient: bool = True) -> Ethernet:
    """Decodes a captured frame as Wireshark would: VLAN tags, then IPv4 or IPv6 through
    their lenient decoders (``ip.decode``, ``ipv6.decode``: offloaded lengths, packets cut
    short by the snap length), anything else ``Raw``; bytes after the packet go to
    ``trailer``. Only a frame shorter than its 14-byte header is a ``bw.DecodeError``.

    >>> from bytewright.formats import ethernet, ip
    >>> udp = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> frame = ethernet.Ethernet(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01",
    ...                           type=ethernet.EtherType.IPV4, payload=udp).pack()
    >>> pkt = ethernet.decode(frame[:40]).payload  # cut short by the snap length: still read
    >>> pkt.total_length, pkt.payload
    (30, Raw(data=b'\\x14\\xe9\\x005\\x00\\n'))
    >>> ethernet.decode(bytes(12) + b"\\x08\\x06" + b"arp").payload  # not IP: Raw
    Raw(data=b'arp')
    >>> ethernet.decode(frame[:10])
    Traceback (most recent call last):
        ...
    bytewright.errors.DecodeError: src: needs 6 bytes at offset 6, 4 left
    """
    wire = bytes(data)
    head, off = _EthernetHeader.unpack_from(wire)
    try:
        payload, end = _network(head.type, wire[off:], verify, lenient)
    except bw.DecodeError as e:
        raise _inside(e, "", off) from None
    return Ethernet(
        dst=head.dst, src=head.src, type=head.type, payload=payload, trailer=wire[off + end :]
    )


def decode_sll(data: Any, *, verify: bool = False, lenient: bool = True) -> LinuxSLL:
    """``decode`` for Linux cooked-capture frames.

    >>> from bytewright.formats import ethernet
    >>> frame = ethernet.decode_sll(bytes(14) + b"\\x08\\x06" + b"arp")
    >>> frame.type, frame.payload
    (2054, Raw(data=b'arp'))
    """
    wire = bytes(data)
    head, off = _SLLHeader.unpack_from(wire)
    try:
        payload, end = _network(head.type, wire[off:], verify, lenient)
    except bw.DecodeError as e:
        raise _inside(e, "", off) from None
    return LinuxSLL(
        packet_type=head.packet_type,
        arphrd_type=head.arphrd_type,
        address_length=head.address_length,
        address=head.address,
        type=head.type,
        payload=payload,
        trailer=wire[off + end :],
    )


def network_layer(frame: Any) -> tuple[Any, str, int]:
    """The IPv4, IPv6 or Raw packet inside a frame (through any VLAN tags), its field path
    and its offset in the frame.

    >>> from bytewright.formats import ethernet, ip
    >>> udp = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> frame = ethernet.Ethernet(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01",
    ...                           type=ethernet.EtherType.IPV4, payload=udp).pack()
    >>> pkt, path, offset = ethernet.network_layer(ethernet.decode(frame))
    >>> type(pkt).__name__, path, offset
    ('IPv4', 'payload', 14)
    """
    path, off = "", 0
    if isinstance(frame, Ethernet | LinuxSLL):
        off = 14 if isinstance(frame, Ethernet) else 16
        path, frame = "payload", frame.payload
    while isinstance(frame, Dot1Q):
        path, off, frame = f"{path}.payload".lstrip("."), off + 4, frame.payload
    return frame, path, off


def checksums(frame: Any) -> dict[str, bool]:
    """Whether each checksum of a frame's IP layer holds (see ``ip.checksums``).

    >>> from bytewright.formats import ethernet, ip
    >>> udp = ip.IPv4(identification=1, ttl=64, protocol=ip.Protocol.UDP, src="192.0.2.1",
    ...               dst="192.0.2.2", payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> frame = ethernet.Ethernet(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01",
    ...                           type=ethernet.EtherType.IPV4, payload=udp).pack()
    >>> ethernet.checksums(ethernet.decode(frame))
    {'ipv4': True, 'udp': True}
    >>> bad = bytearray(frame)
    >>> bad[-1] ^= 1
    >>> ethernet.checksums(ethernet.decode(bytes(bad)))
    {'ipv4': True, 'udp': False}
    """
    pkt, _, _ = network_layer(frame)
    if isinstance(pkt, IPv4):
        return ip.checksums(pkt)
    if isinstance(pkt, IPv6):
        return ipv6.checksums(pkt)
    return {}


def _verify(frame: Any) -> None:
    """Raises ``bw.DecodeError`` (with the frame's path and offset) at a wrong checksum."""
    pkt, path, off = network_layer(frame)
    if not isinstance(pkt, IPv4 | IPv6):
        return
    wire = pkt.pack(verify=False)
    try:
        type(pkt).unpack(wire, verify=True)
    except bw.DecodeError as e:
        full = f"{path}.{e.path}" if path else e.path
        detail = str(e).split(": ", 1)[1] if ": " in str(e) else str(e)
        raise bw.DecodeError(f"{full}: {detail}", full, off + (e.offset or 0)) from None
