"""Writes the schema JSON of each bundled format for the wire_unpack fuzz target.

    python fuzz/schemas/generate.py          # rewrite fuzz/schemas/*.json
    python fuzz/schemas/generate.py --check  # exit 1 if a committed file is stale

The JSON is what ``bw.compile(cls)`` hands to the Rust core, so the fuzz target runs the very
programs the Python declarations compile to. tests/formats/test_fuzz_schemas.py checks the
committed files are up to date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import bytewright as bw
from bytewright.formats import dns, ethernet, ip, ipv6, pcap, pcapng, png

HERE = Path(__file__).parent


class Document(bw.Struct):
    """One self-describing MessagePack value (the node ``msgpack.unpackb`` runs)."""

    value: Any = bw.field(type=bw.types.Msgpack())


FORMATS: dict[str, type[bw.Struct]] = {
    "png": png.Png,
    "pcap": pcap.Pcap,
    "pcap_packet": pcap.Packet,
    "pcapng_le": pcapng.BlockLE,
    "pcapng_be": pcapng.BlockBE,
    "ethernet": ethernet.Ethernet,
    "linux_sll": ethernet.LinuxSLL,
    "ipv4": ip.IPv4,
    "ipv6": ipv6.IPv6,
    "tcp_options": ip.TCPOptions,
    "dns": dns.Message,
    "msgpack": Document,
}


def render(cls: type[bw.Struct]) -> str:
    text = bw.compile(cls).schema
    return json.dumps(json.loads(text), separators=(",", ":"), sort_keys=True) + "\n"


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for name, cls in FORMATS.items():
        path = HERE / f"{name}.json"
        text = render(cls)
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print("stale:", ", ".join(stale), "(run python fuzz/schemas/generate.py)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
