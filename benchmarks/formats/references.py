"""The reference decoders: dnslib for DNS, the msgpack C extension for MessagePack."""

from __future__ import annotations

from typing import Any

from benchmarks.harness import need


def decoder() -> Any:
    return need("dnslib").DNSRecord.parse


def msgpack_decoder() -> Any:
    unpackb = need("msgpack").unpackb
    return lambda d: unpackb(d, strict_map_key=False)


ARMS = {"dns": {"dnslib": decoder}, "msgpack": {"msgpack (C)": msgpack_decoder}}
