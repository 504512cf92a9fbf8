"""dpkt: a loop over the capture into one list per column, then a pandas DataFrame."""

from __future__ import annotations

import io
from typing import Any

from benchmarks.columns import data
from benchmarks.columns.arm import ColumnArm
from benchmarks.harness import DirectCall, Incorrect, need

COLUMNS = "ts caplen eth_src eth_dst eth_type ip_version ip_src ip_dst proto sport dport payload"


def frame(buf: bytes) -> Any:
    dpkt, pd = need("dpkt"), need("pandas")
    ethernet, ip6 = dpkt.ethernet.Ethernet, dpkt.ip6.IP6
    cols: dict[str, list[Any]] = {name: [] for name in COLUMNS.split()}
    (ts, caplen, eth_src, eth_dst, eth_type, version, src, dst, proto, sport, dport, payload) = (
        cols.values()
    )
    for t, packet in dpkt.pcap.Reader(io.BytesIO(buf)):
        eth = ethernet(packet)
        ip = eth.data
        l4 = ip.data
        ts.append(t)
        caplen.append(len(packet))
        eth_src.append(eth.src)
        eth_dst.append(eth.dst)
        eth_type.append(eth.type)
        v6 = isinstance(ip, ip6)
        version.append(6 if v6 else 4)
        src.append(ip.src)
        dst.append(ip.dst)
        proto.append(ip.nxt if v6 else ip.p)
        sport.append(l4.sport)
        dport.append(l4.dport)
        payload.append(l4.data)
    return pd.DataFrame(cols)


def capture(cap: data.Capture, conf: dict[str, Any]) -> ColumnArm:
    packets = conf["dpkt_packets"]
    need("dpkt")
    need("pandas")
    head = cap.head(packets)

    def check(df: Any) -> None:
        if (
            df["caplen"].tolist() != cap.lengths[:packets]
            or df["sport"].tolist() != cap.sports[:packets]
        ):
            raise Incorrect("lengths or source ports differ from the capture's")

    return ColumnArm(DirectCall(frame, head), check, min(packets, len(cap.lengths)))


ARMS = {"pcap": {"dpkt loop + pandas DataFrame": capture}}
