"""Messages the explain tests open: a telemetry frame and a captured TCP packet."""

from __future__ import annotations

import bytewright as bw


class Reading(bw.Struct, byteorder="big"):
    sensor: bw.U8
    flags: int = bw.bits(4)
    unit: int = bw.bits(4)
    value: bw.I32


class Telemetry(bw.Struct, byteorder="big"):
    magic: bytes = bw.const(b"TM")
    version: int = bw.bits(4, default=1)
    priority: int = bw.bits(3, default=0)
    urgent: bool = bw.flag(default=False)
    count: bw.U16 = bw.derived()
    readings: list[Reading] = bw.field(count="count")
    note_len: bw.U8 = bw.derived()
    note: str = bw.field(len="note_len")
    crc: bw.U32 = bw.checksum("crc32")


def telemetry() -> bytes:
    readings = [Reading(sensor=i, flags=i % 3, unit=2, value=1000 * i - 7) for i in range(5)]
    return Telemetry(readings=readings, note="pump 3 ok").pack()


def tcp_capture() -> bytes:
    """A pcap file of one Ethernet/IPv4/TCP packet (built by scapy)."""
    from bytewright.formats import pcap
    from scapy.all import IP, TCP, Ether, Raw

    frame = bytes(
        Ether(dst="aa:bb:cc:dd:ee:ff", src="11:22:33:44:55:66")
        / IP(src="192.0.2.1", dst="192.0.2.80")
        / TCP(sport=40000, dport=80, flags="PA", seq=1000, ack=2000, options=[("MSS", 1460)])
        / Raw(b"GET / HTTP/1.1\r\n\r\n")
    )
    return pcap.write([(1_700_000_000, 250_000, frame)])
