"""Part D: decode speed of `bytewright.formats` against the reference implementations.

DNS: `dns.Message.unpack` vs `dnslib.DNSRecord.parse` on the same packets; MessagePack:
`formats.msgpack.unpackb` (the core's self-describing node) and `unpackb_declared` (the
declared-schema path) vs the `msgpack` C extension on the same documents. Every arm must decode
to the reference's values before it is timed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.arms import describe
from benchmarks.formats_speed import dns_packets, msgpack_docs
from benchmarks.profiles import Profile
from benchmarks.progress import Reporter
from benchmarks.results import PartResult, Section
from benchmarks.sampling import measure_many
from benchmarks.tables import Table, fmt_ns, fmt_ratio

DNSLIB, BW_DNS = "dnslib", "bytewright.formats.dns"
MSGPACK, BW_MSGPACK, BW_DECLARED = "msgpack (C)", "bytewright msgpack", "bytewright declared"


def _loop(fn: Callable[[Any], Any], items: list[Any]) -> Callable[[], None]:
    def run() -> None:
        for x in items:
            fn(x)

    return run


def _arms() -> tuple[dict[str, Callable[[], None]], dict[str, str], dict[str, int]]:
    """The timed loops, the reason for each arm left out, and the item count per workload."""
    fns: dict[str, Callable[[], None]] = {}
    status: dict[str, str] = {}
    counts: dict[str, int] = {}
    try:
        import dnslib
        from bytewright.formats import dns

        pkts = dns_packets()
        counts["dns"] = len(pkts)
        for p in pkts:
            ours, theirs = dns.Message.unpack(p), dnslib.DNSRecord.parse(p)
            if ours.ancount != len(theirs.rr) or ours.id != theirs.header.id:
                raise AssertionError("DNS decode differs from dnslib")
        fns[DNSLIB] = _loop(dnslib.DNSRecord.parse, pkts)
        fns[BW_DNS] = _loop(dns.Message.unpack, pkts)
    except Exception as exc:
        status[DNSLIB] = status[BW_DNS] = f"unavailable: {describe(exc)}"
    try:
        import msgpack
        from bytewright.formats import msgpack as mp

        docs = msgpack_docs()
        counts["msgpack"] = len(docs)
        for d in docs:
            want = msgpack.unpackb(d, strict_map_key=False)
            if mp.unpackb(d) != want or mp.unpackb_declared(d) != want:
                raise AssertionError("MessagePack decode differs from msgpack")

        def reference(d: bytes) -> Any:
            return msgpack.unpackb(d, strict_map_key=False)

        fns[MSGPACK] = _loop(reference, docs)
        fns[BW_MSGPACK] = _loop(mp.unpackb, docs)
        fns[BW_DECLARED] = _loop(mp.unpackb_declared, docs)
    except Exception as exc:
        status[MSGPACK] = status[BW_MSGPACK] = status[BW_DECLARED] = f"unavailable: {describe(exc)}"
    return fns, status, counts


def run_formats(profile: Profile, results_dir: Path, reporter: Reporter) -> PartResult:
    result = PartResult("formats")
    reporter.start("Part D: real formats", 2)
    reporter.step("checking every arm against its reference")
    fns, status, counts = _arms()
    reporter.advance()
    reporter.step("timing")
    measured = measure_many(fns, profile.sampling) if fns else {}
    reporter.advance()
    reporter.finish()
    table = Table(
        "Decode: bytewright.formats against the reference implementations",
        ["Workload", "Implementation", "µs per item", "÷ reference", "Status"],
        note="Per packet (DNS, mean 112 B) or document (MessagePack, mean 802 B).",
    )
    rows = [("dns", DNSLIB, DNSLIB), ("dns", BW_DNS, DNSLIB)]
    rows += [("msgpack", MSGPACK, MSGPACK), ("msgpack", BW_MSGPACK, MSGPACK)]
    rows += [("msgpack", BW_DECLARED, MSGPACK)]
    for workload, arm, ref in rows:
        ns = measured.get(arm)
        per = ns / counts[workload] if ns is not None else None
        ref_ns = measured.get(ref)
        if per is not None:
            result.metrics[("formats", workload, arm)] = per
        else:
            result.missing[("formats", workload, arm)] = status.get(arm, "not measured")
            result.unavailable.append(f"formats/{arm}: {status.get(arm, 'not measured')}")
        table.add(
            workload,
            arm,
            fmt_ns(per / 1000 if per is not None else None),
            fmt_ratio(ns / ref_ns if ns is not None and ref_ns else None),
            status.get(arm, "ok"),
        )
    result.sections.append(
        Section(
            "Part D: real formats",
            intro="Decode speed of `bytewright.formats` on the same inputs as the reference "
            "implementations (issue 5's performance shape).",
            tables=[table],
        )
    )
    return result
