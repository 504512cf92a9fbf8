"""Core behaviours the formats rely on, pinned by the bugs they exposed."""

from __future__ import annotations

import bytewright as bw
import dpkt


class Header(bw.Struct):
    version: int = bw.bits(4)
    ihl: int = bw.bits(4)
    tos: bw.U8
    length: bw.U16
    checksum: bw.U16 = bw.checksum("internet", over=["version", "ihl", "tos", "length", "checksum"])


def test_checksum_over_bit_fields_covers_their_bytes_once() -> None:
    wire = Header(version=4, ihl=5, tos=0x12, length=0x3456).pack()
    assert wire[:4] == b"\x45\x12\x34\x56"
    assert int.from_bytes(wire[4:], "big") == dpkt.in_cksum(wire[:4])
    assert Header.unpack(wire).checksum == dpkt.in_cksum(wire[:4])
