"""bytewright.formats: `dns.Message.unpack`, and `msgpack.unpackb` and `unpackb_declared`."""

from __future__ import annotations

from typing import Any

from benchmarks.harness import need


def dns() -> Any:
    return need("bytewright.formats.dns", "Message.unpack").Message.unpack


ARMS = {
    "dns": {"bytewright.formats.dns": dns},
    "msgpack": {
        "bytewright msgpack": lambda: need("bytewright.formats.msgpack", "unpackb").unpackb,
        "bytewright declared": lambda: (
            need("bytewright.formats.msgpack", "unpackb_declared").unpackb_declared
        ),
    },
}
