"""The error messages real traffic and real files exposed: each names its path and offset.

The last four tests pin messages that the wire core itself produces."""

from __future__ import annotations

import struct

import bytewright as bw
import pytest
from bytewright.formats import ethernet, ip, pcap, pcapng, png
from bytewright.formats import msgpack as mp

UDP_PKT = ip.IPv4(
    src="192.0.2.1",
    dst="198.51.100.2",
    identification=7,
    protocol=17,
    payload=ip.UDP(src_port=1000, dst_port=2000, payload=bytes(range(40))),
)


def test_fragments_decode_instead_of_failing_at_the_transport_header() -> None:
    parts = ip.fragment(UDP_PKT, 44)  # 24 bytes of data per fragment
    assert len(parts) == 2
    first = ip.IPv4.unpack(parts[0].pack())
    assert first.mf and isinstance(first.payload, ip.UDPFragment)
    assert first.payload.length == 48 and len(first.payload.payload) == 16
    later = ip.IPv4.unpack(parts[1].pack())
    assert later.fragment_offset == 3 and later.payload == ip.Raw(data=bytes(range(16, 40)))


def test_a_first_fragment_too_short_for_its_header_is_raw() -> None:
    tiny = ip.IPv4(
        src="192.0.2.1", dst="192.0.2.2", protocol=6, mf=True, payload=ip.Raw(data=b"\x01" * 8)
    )
    back = ip.IPv4.unpack(tiny.pack())
    assert back.payload == ip.Raw(data=b"\x01" * 8) and back.mf


def test_building_a_fragment_with_a_raw_payload() -> None:
    frag = ip.IPv4(
        src="192.0.2.1",
        dst="192.0.2.2",
        protocol=17,
        fragment_offset=100,
        payload=ip.Raw(data=b"tail"),
    )
    assert ip.IPv4.unpack(frag.pack()) == ip.IPv4.unpack(frag.pack())
    with pytest.raises(bw.PackError) as e:
        ip.IPv4(
            src="1.1.1.1", dst="2.2.2.2", protocol=6, payload=ip.UDP(src_port=1, dst_port=2)
        ).pack()
    assert e.value.path == "payload" and "selects TCP" in str(e.value)


def test_ethernet_padding_is_a_trailer_not_an_error() -> None:
    frame = ethernet.Ethernet(
        dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01", type=0x0800, payload=UDP_PKT
    ).pack()
    padded = frame + bytes(10) + b"\x12\x34\x56\x78"
    got = ethernet.Ethernet.unpack(padded)
    assert got.trailer == bytes(10) + b"\x12\x34\x56\x78" and got.pack() == padded
    assert got.payload == ip.IPv4.unpack(frame[14:])


def test_ipv4_unpack_names_the_bytes_after_total_length() -> None:
    wire = UDP_PKT.pack()
    with pytest.raises(bw.DecodeError) as e:
        ip.IPv4.unpack(wire + b"\0\0\0")
    assert (e.value.path, e.value.offset) == ("total_length", 2)
    assert str(e.value).startswith(
        "total_length: the packet is 68 bytes and the data 71 (the 3 bytes after it belong "
        "to the link layer"
    )
    pkt, end = ip.decode(wire + b"\0\0\0")
    assert end == 68 and pkt.pack() == wire


def test_a_cut_short_packet_names_total_length() -> None:
    wire = UDP_PKT.pack()
    with pytest.raises(bw.DecodeError) as e:
        ip.IPv4.unpack(wire[:-5])
    assert (e.value.path, e.value.offset) == ("total_length", 2)
    assert str(e.value) == "total_length: the packet is 68 bytes, 63 are present"


def test_transport_checksum_error_path_and_offset() -> None:
    wire = bytearray(UDP_PKT.pack())
    wire[-1] ^= 1
    with pytest.raises(bw.DecodeError) as e:
        ip.IPv4.unpack(bytes(wire))
    assert (e.value.path, e.value.offset) == ("payload.checksum", 26)
    assert str(e.value).startswith("payload.checksum: checksum mismatch: stored 0x")
    frame = b"\x02" * 12 + b"\x81\x00\x00\x05\x08\x00" + bytes(wire)
    with pytest.raises(bw.DecodeError) as e:
        ethernet.Ethernet.unpack(frame)
    assert (e.value.path, e.value.offset) == ("payload.payload.payload.checksum", 44)


def test_stale_values_on_pack_name_their_field() -> None:
    pkt = ip.IPv4.unpack(UDP_PKT.pack())
    pkt.ttl = 1
    with pytest.raises(bw.PackError) as e:
        pkt.pack()
    assert e.value.path == "checksum" and "is not the header checksum" in str(e.value)
    pkt.checksum = None
    pkt.total_length = 99
    with pytest.raises(bw.PackError) as e:
        pkt.pack()
    assert e.value.path == "total_length" and "disagrees with the packet's length 68" in str(
        e.value
    )
    assert len(pkt.pack(verify=False)) == 68


def test_foreign_pcap_magic_is_the_same_error_everywhere() -> None:
    data = b"\x00\x01\x02\x03" + bytes(20)
    for call in (pcap.Pcap.unpack, lambda d: list(pcap.iter_records(d)), pcap.read):
        with pytest.raises(bw.DecodeError) as e:
            call(data)
        assert (e.value.path, e.value.offset) == ("magic", 0)
        assert str(e.value).startswith("magic: not a pcap magic number: b'\\x00\\x01\\x02\\x03'")


def test_pcapng_given_to_pcap_unpack_says_so() -> None:
    data = pcapng.write([pcapng.Section(interfaces=[(1, 0, [])])])
    with pytest.raises(bw.DecodeError) as e:
        pcap.Pcap.unpack(data)
    assert e.value.path == "magic" and "a pcapng file: use pcap.read" in str(e.value)
    assert pcap.read(data).format == "pcapng"


def test_pcap_record_errors_name_the_record() -> None:
    data = pcap.write([(1, 2, b"abc"), (3, 4, b"defg")], linktype=147)
    bad = data[:-2]
    with pytest.raises(pcap.CutShort) as e:
        list(pcap.iter_records(bad))
    assert (e.value.path, e.value.offset) == ("records[1]", len(bad))
    assert "the file ends inside this record" in str(e.value)
    cap = pcap.read(bad)
    assert len(cap.packets) == 1 and cap.cut_short is not None
    with pytest.raises(pcap.CutShort):
        pcap.read(bad, verify=True)


def test_pcapng_block_errors_name_the_block() -> None:
    data = bytearray(
        pcapng.write([pcapng.Section(interfaces=[(1, 0, [])], packets=[(0, 1, b"abcd")])])
    )
    data[-4:] = struct.pack("<I", 99)  # the trailing length of the packet block
    with pytest.raises(bw.DecodeError) as e:
        pcapng.read_blocks(bytes(data))
    assert (e.value.path, e.value.offset) == ("blocks[2].trailing_length", len(data) - 4)
    assert str(e.value) == "blocks[2].trailing_length: 99 differs from the block's length 36"
    wrong_iface = pcapng.write([pcapng.Section(interfaces=[(1, 0, [])], packets=[(3, 1, b"x")])])
    with pytest.raises(bw.DecodeError) as e:
        pcap.read(wrong_iface)
    assert e.value.path == "packets[0].interface"
    assert str(e.value) == "packets[0].interface: the section has 1 interfaces, no interface 3"


def test_png_read_takes_limits() -> None:
    data = png.write([png.Chunk(type=b"IHDR", data=bytes(13)), png.Chunk(type=b"IEND", data=b"")])
    assert png.read(data, limits=bw.Limits(max_len=13)) == png.read(data)
    with pytest.raises(bw.DecodeError) as e:
        png.read(data, limits=bw.Limits(max_len=12))
    assert (e.value.path, e.value.offset) == ("chunks[0].data", 16)
    assert str(e.value) == "chunks[0].data: the length 13 exceeds the limit 12"


# ---- messages of the wire core (fixed there; these flip when it is) ----


def test_msgpack_depth_error_is_short_and_names_the_limit() -> None:
    with pytest.raises(bw.DecodeError) as e:
        mp.unpackb(b"\x91" * 200 + b"\xc0")
    text = str(e.value)
    assert e.value.offset == 100
    assert "100" in text and "101" not in text
    assert len(text) < 200 and text.count("[0]") <= 3


def test_msgpack_unsupported_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="object"):
        mp.packb(object())


def test_truncated_png_with_a_huge_length_reports_the_truncation() -> None:
    data = png.write([png.Chunk(type=b"IHDR", data=bytes(13))])
    bad = data[:8] + struct.pack(">I", 0x7FFFFFFF) + data[12:]
    with pytest.raises(bw.DecodeError) as e:
        png.read(bad)
    assert (e.value.path, e.value.offset) == ("chunks[0].data", 16)
    text = str(e.value)
    # The truncation comes first; the limit is why it is an error rather than "incomplete".
    assert text.startswith("chunks[0].data: the length 2147483647 runs past the end of the input")
    assert "needs 2147483647 bytes at offset 16" in text


def test_trailing_bytes_error_names_where_the_message_ends() -> None:
    wire = ip.IPv4Header(src="1.1.1.1", dst="2.2.2.2", protocol=1, total_length=20).pack()
    with pytest.raises(bw.DecodeError) as e:
        ip.IPv4Header.unpack(wire + b"xyz")
    # No field holds the extra bytes: the message names the message type and where it ends.
    assert e.value.offset == 20 and e.value.path == ""
    assert str(e.value).startswith(
        "3 trailing bytes after the IPv4Header message ends at offset 20"
    )
