"""Part D: columns. Declared formats straight into Arrow and NumPy columns, and back.

Each workload times every arm on the same generated input; results are per record or per
packet, since the slowest baselines (dpkt, scapy) decode a slice of the capture.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.columns import bytewright, data, dpkt, numpy, peak, rustruct, scapy, struct
from benchmarks.columns.arm import ColumnArm
from benchmarks.harness import Sampling, race
from benchmarks.report import Part, Section, Table, Ui, fmt, per_second, ratio

LIBRARIES = (bytewright, numpy, struct, rustruct, dpkt, scapy)
OURS = {
    "lab unpack": "bytewright unpack_table",
    "lab pack": "bytewright pack_table",
    "telemetry": "bytewright unpack_table + to_arrow",
    "pcap": "bytewright formats.pcap.read_table",
    "threads fixed": "bytewright threads=1",
    "threads variable": "bytewright threads=1",
}
# Each workload's input, made from the profile (the lab records serve two workloads).
INPUTS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "lab unpack": lambda c: data.lab(c["records"]),
    "telemetry": lambda c: data.envelopes(c["telemetry"]),
    "pcap": lambda c: data.capture(c["packets"]),
    "threads fixed": lambda c: data.lab(
        65536, repeat=max(1, c["threads_mib"] * 2**20 // (16 * 65536))
    ),
    "threads variable": lambda c: data.records(c["threads_mib"] * 2**20),
}
TITLES = {
    "lab unpack": "{n:,} `<IHHQ` records to one column per field",
    "lab pack": "{n:,} `<IHHQ` records packed from four NumPy columns",
    "telemetry": "{n:,} telemetry envelopes (variable size, nested) to a pyarrow Table",
    "pcap": "a synthetic pcap of {n:,} packets (TCP/UDP over IPv4/IPv6) to a table",
    "threads fixed": "{mib} MiB of fixed `<IHHQ` records, 1 thread against 2",
    "threads variable": "{mib} MiB of variable telemetry records, 1 thread against 2",
}


def compare(workload: str, inp: Any, conf: dict[str, Any], sampling: Sampling, part: Part) -> Table:
    """Gate and time every arm of one workload; record per-item times."""
    factories = {n: f for lib in LIBRARIES for n, f in lib.ARMS.get(workload, {}).items()}
    arms: dict[str, ColumnArm] = {}

    def prepare(name: str) -> Callable[[], object]:
        arms[name] = factories[name](inp, conf)
        return arms[name].call

    ns, statuses = race(
        {name: functools.partial(prepare, name) for name in factories},
        lambda name, result: arms[name].check(result),
        sampling,
    )
    per = {name: t / arms[name].items for name, t in ns.items()}
    title = TITLES[workload].format(n=inp.count, mib=conf["threads_mib"])
    ours = OURS[workload]
    table = Table(
        title[0].upper() + title[1:],
        ["Arm", "items per call", "ns per item", "items/s", f"÷ {ours}", "Status"],
        note="Ratios above 1.00x: the arm takes longer than bytewright per item.",
    )
    for name in factories:
        p = per.get(name)
        part.record(f"columns/{workload}/{name}", p, statuses[name])
        part.arm_status(f"columns/{workload}/{name}", statuses[name])
        items = f"{arms[name].items:,}" if name in arms else "—"
        table.add(name, items, fmt(p), per_second(p), ratio(p, per.get(ours)), statuses[name])
    return table


def run(conf: dict[str, Any], sampling: Sampling, out: Path, ui: Ui) -> Part:
    part = Part("columns")
    tables = []
    ui.start("Part D: columns", len(OURS))
    inputs: dict[str, Any] = {}
    for workload in OURS:
        ui.step(f"{workload}: generating the input, gating and timing every arm", advance=1)
        source = "lab unpack" if workload == "lab pack" else workload
        inputs[source] = inputs.get(source) or INPUTS[source](conf)
        tables.append(compare(workload, inputs[source], conf, sampling, part))
    del inputs
    ui.step("threads: peak memory of one call, in fresh processes", advance=0)
    tables.append(peak.table(conf, part))
    ui.finish()
    intro = (
        "Every arm's output was checked against the generated input before timing: equal "
        "columns (NumPy), equal rows (pyarrow), identical bytes (pack), or the captured "
        "lengths and source ports of every packet (pcap). dpkt and scapy decode a slice of "
        "the capture (items per call); every time is per record or packet."
    )
    part.sections.append(Section("Part D: columns", intro, tables))
    return part
