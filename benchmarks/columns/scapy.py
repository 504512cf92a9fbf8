"""scapy: `rdpcap`, a list of dissected packets (on a slice of the capture)."""

from __future__ import annotations

import io
from typing import Any

from benchmarks.columns import data
from benchmarks.columns.arm import ColumnArm
from benchmarks.harness import DirectCall, Incorrect, need


def capture(cap: data.Capture, conf: dict[str, Any]) -> ColumnArm:
    packets = conf["scapy_packets"]
    scapy = need("scapy.all")
    head = cap.head(packets)

    def read(buf: bytes) -> Any:
        return scapy.rdpcap(io.BytesIO(buf))

    def check(got: Any) -> None:
        ports = [(p[scapy.TCP] if scapy.TCP in p else p[scapy.UDP]).sport for p in got]
        if ports != cap.sports[:packets]:
            raise Incorrect("source ports differ from the capture's")

    return ColumnArm(DirectCall(read, head), check, min(packets, len(cap.lengths)))


ARMS = {"pcap": {"scapy rdpcap": capture}}
