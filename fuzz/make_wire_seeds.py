"""Writes fuzz/seeds_wire/: inputs for the wire_unpack target made from the real captures
in tests/formats/captures and from files the formats write (a schema byte, then data)."""

from __future__ import annotations

import zlib
from pathlib import Path

from bytewright.formats import dns, ethernet, ip, pcap, pcapng, png
from bytewright.formats import msgpack as mp

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "fuzz" / "seeds_wire"
# Indexes of BUNDLED in fuzz_targets/wire_unpack.rs.
PNG, PCAP, PACKET, NG_LE, NG_BE, ETH, SLL, V4, V6, TCPOPT, DNS, MSGPACK = range(12)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    seeds: dict[str, bytes] = {}
    lo = (ROOT / "tests/formats/captures/lo.pcap").read_bytes()
    seeds["pcap_lo"] = bytes([PCAP]) + lo[: 24 + 4000]
    cap = pcap.read(lo)
    picked: dict[str, pcap.Packet] = {}
    for p in cap.packets:
        net, _, _ = ethernet.network_layer(p.frame)
        kind = type(getattr(net, "payload", None)).__name__ + type(p.frame.payload).__name__
        picked.setdefault(kind, p)
    for i, p in enumerate(picked.values()):
        seeds[f"frame{i}"] = bytes([ETH]) + p.data
        seeds[f"record{i}"] = bytes([PACKET]) + p.pack()
        net, _, off = ethernet.network_layer(p.frame)
        if isinstance(net, ip.IPv4):
            seeds[f"ipv4_{i}"] = bytes([V4]) + p.data[off:]
            if isinstance(net.payload, ip.TCP) and net.payload.options:
                seeds[f"tcpopt{i}"] = bytes([TCPOPT]) + net.payload.options
        elif net is not None and type(net).__name__ == "IPv6":
            seeds[f"ipv6_{i}"] = bytes([V6]) + p.data[off:]
    ng = (ROOT / "tests/formats/captures/lo.pcapng").read_bytes()
    blocks = list(pcapng.iter_blocks(ng))
    for j, (off, b) in enumerate(blocks[:4]):
        seeds[f"pcapng{j}"] = bytes([NG_LE]) + ng[off : off + b.length]
    seeds["pcapng_be"] = (
        bytes([NG_BE])
        + pcapng.write(
            [
                pcapng.Section(
                    interfaces=[(1, 0, [(2, b"eth0")])], packets=[(0, 5, b"abc")], byteorder="big"
                )
            ]
        )[:60]
    )
    ihdr = png.IHDR(width=1, height=1, bit_depth=8, color_type=0).pack()
    seeds["png"] = bytes([PNG]) + png.write(
        [
            png.Chunk(type=b"IHDR", data=ihdr),
            png.Chunk(type=b"IDAT", data=zlib.compress(b"\x00\x80")),
            png.Chunk(type=b"IEND", data=b""),
        ]
    )
    msg = dns.Message(id=1, rd=True, questions=[dns.Question(name="example.com", type=dns.Type.MX)])
    seeds["dns"] = bytes([DNS]) + msg.pack()
    seeds["msgpack"] = bytes([MSGPACK]) + mp.packb({"a": [1, 2.5, None, b"x"], "b": -3})
    for name, data in seeds.items():
        (OUT / name).write_bytes(data)


if __name__ == "__main__":
    main()
