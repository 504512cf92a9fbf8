"""Part F: decode speed of `bytewright.formats` against the reference implementations.

Every arm must decode every input to the reference's values before it is timed.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from benchmarks.formats import bytewright, data, references
from benchmarks.harness import DirectCall, Incorrect, Sampling, race, status
from benchmarks.report import Part, Section, Table, Ui, fmt, ratio

INPUTS = {"dns": data.dns_packets, "msgpack": data.msgpack_docs}
REFERENCE = {"dns": "dnslib", "msgpack": "msgpack (C)"}


def summary(workload: str, decoded: Any) -> Any:
    """What must agree with the reference: DNS id and answer count, or the whole value."""
    if workload != "dns":
        return decoded
    if hasattr(decoded, "header"):  # dnslib
        return decoded.header.id, len(decoded.rr)
    return decoded.id, decoded.ancount


def loop(decode: Any, items: list[bytes]) -> None:
    for x in items:
        decode(x)


def compare(workload: str, sampling: Sampling) -> tuple[dict[str, float], dict[str, str]]:
    """(ns per item, status) of every arm of one workload."""
    arms = {**references.ARMS[workload], **bytewright.ARMS[workload]}
    try:
        items = INPUTS[workload]()
        decode = arms[REFERENCE[workload]]()
        want = [summary(workload, decode(x)) for x in items]
    except Exception as exc:
        return {}, {name: status(exc) for name in arms}

    def prepare(name: str) -> DirectCall:
        decode = arms[name]()
        if [summary(workload, decode(x)) for x in items] != want:
            raise Incorrect(f"decode differs from {REFERENCE[workload]}")
        return DirectCall(loop, decode, items)

    arm_calls = {name: functools.partial(prepare, name) for name in arms}
    ns, statuses = race(arm_calls, lambda name, result: None, sampling)
    return {name: t / len(items) for name, t in ns.items()}, statuses


def run(conf: dict[str, Any], sampling: Sampling, out: Path, ui: Ui) -> Part:
    part = Part("formats")
    table = Table(
        "Decode: bytewright.formats against the reference implementations",
        ["Workload", "Implementation", "µs per item", "÷ reference", "Status"],
        note="Per packet (DNS, mean 112 B) or document (MessagePack, mean 802 B).",
    )
    ui.start("Part F: real formats", len(INPUTS))
    for workload in INPUTS:
        ui.step(workload, advance=1)
        per, statuses = compare(workload, sampling)
        for name, why in statuses.items():
            part.record(f"formats/{workload}/{name}", per.get(name), why)
            part.arm_status(f"formats/{name}", why)
            reference = per.get(REFERENCE[workload])
            table.add(workload, name, fmt(per.get(name), 1e3), ratio(per.get(name), reference), why)
    ui.finish()
    intro = "Decode speed of `bytewright.formats` on the same inputs as the reference decoders."
    part.sections.append(Section("Part F: real formats", intro, [table]))
    return part
