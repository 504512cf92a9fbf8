"""The targets of issues 3 and 4, evaluated from ratios measured side by side in one run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.bench_data import shapes
from benchmarks.graphs.serializers import BYTEWRIGHT, LOADS_PICKLE, PICKLE, PYSAFE
from benchmarks.lab import BULK_ARM, STDLIB_ARMS
from benchmarks.results import PartResult
from benchmarks.tables import Table

MET, MISSED, NOT_MEASURED = "MET", "MISSED", "NOT MEASURED"
Key = tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    target: str
    measured: str
    verdict: str


class Metrics:
    """All parts' measurements, with the reason any one of them is missing."""

    def __init__(self, parts: list[PartResult]) -> None:
        self.values: dict[Key, float] = {}
        self.missing: dict[Key, str] = {}
        self.ran = {p.name for p in parts}
        for part in parts:
            self.values.update(part.metrics)
            self.missing.update(part.missing)

    def get(self, key: Key) -> float | None:
        return self.values.get(key)

    def why(self, key: Key) -> str:
        return f"{key[-1]}: {self.missing.get(key, 'not measured')}"


def _ratio_target(
    m: Metrics, part: str, label: str, num: Key, den: Key, op: str, limit: float
) -> Outcome:
    """num/den compared with `limit` (`op` is "<=" or ">=")."""
    if part not in m.ran:
        return Outcome(label, f"part `{part}` not run", NOT_MEASURED)
    a, b = m.get(num), m.get(den)
    if a is None or b is None:
        return Outcome(label, m.why(num if a is None else den), NOT_MEASURED)
    if b <= 0 or a <= 0:
        return Outcome(label, f"slope not resolvable ({a:.3g} / {b:.3g} ns)", NOT_MEASURED)
    r = a / b
    ok = r <= limit if op == "<=" else r >= limit
    return Outcome(label, f"{r:.2f}x ({a:,.1f} / {b:,.1f} ns)", MET if ok else MISSED)


def _wire(m: Metrics) -> list[Outcome]:
    out: list[Outcome] = []

    def slope(workload: str, op: str, impl: str) -> Key:
        return ("slope", workload, op, impl)

    bwc, rsc = "bytewright-codec", "rustruct-core"
    for op, limit in (("unpack", 0.5), ("pack", 0.7)):
        out.append(
            _ratio_target(
                m,
                "wire",
                f"telemetry {op}: bytewright-codec slope ≤ {limit}x rustruct-core",
                slope("telemetry", op, bwc),
                slope("telemetry", op, rsc),
                "<=",
                limit,
            )
        )
    for op, limit, words in (
        ("unpack", 0.5, "≤ 0.5x struct"),
        ("pack", 1.0, "no slower than struct"),
    ):
        out.append(
            _ratio_target(
                m,
                "wire",
                f"telemetry {op}: bytewright-codec slope {words}",
                slope("telemetry", op, bwc),
                slope("telemetry", op, "struct"),
                "<=",
                limit,
            )
        )
    for workload in ("scalars", "vector"):
        for op in ("pack", "unpack"):
            out.append(
                _ratio_target(
                    m,
                    "wire",
                    f"{workload} {op}: bytewright-codec slope ≤ 0.5x rustruct-core",
                    slope(workload, op, bwc),
                    slope(workload, op, rsc),
                    "<=",
                    0.5,
                )
            )
    for workload in ("scalars", "vector", "telemetry"):
        for op in ("pack", "unpack"):
            out.append(
                _ratio_target(
                    m,
                    "wire",
                    f"{workload} {op}: typed bytewright slope within 1.3x of bytewright-codec",
                    slope(workload, op, "bytewright"),
                    slope(workload, op, bwc),
                    "<=",
                    1.3,
                )
            )
    for op in ("pack", "unpack"):
        out.append(
            _ratio_target(
                m,
                "wire",
                f"telemetry {op}: construct slope ≥ 30x bytewright-codec's",
                slope("telemetry", op, "construct"),
                slope("telemetry", op, bwc),
                ">=",
                30.0,
            )
        )
    return out


def _lab(m: Metrics) -> list[Outcome]:
    label = "bulk records: bytewright bulk pack ≥ 3x faster than the fastest stdlib arm"
    stdlib = {a: m.get(("lab", a)) for a in STDLIB_ARMS if m.get(("lab", a)) is not None}
    if "lab" not in m.ran or not stdlib:
        return [Outcome(label, "part `lab` not run", NOT_MEASURED)]
    fastest = min(stdlib, key=lambda a: stdlib[a] or 0.0)
    return [_ratio_target(m, "lab", label, ("lab", fastest), ("lab", BULK_ARM), ">=", 3.0)]


def _every_shape(
    m: Metrics, label: str, key: Callable[[str], tuple[Key, Key]], op: str, limit: float
) -> Outcome:
    """A ratio target that must hold on every shape; reports the worst shape."""
    if "pickle" not in m.ran:
        return Outcome(label, "part `pickle` not run", NOT_MEASURED)
    ratios: list[tuple[float, str]] = []
    unmeasured = []
    for shape in shapes():
        num, den = key(shape)
        a, b = m.get(num), m.get(den)
        if a is None or b is None or b <= 0:
            unmeasured.append(m.why(num if a is None else den) + f" ({shape})")
        else:
            ratios.append((a / b, shape))
    if not ratios:
        return Outcome(label, unmeasured[0] if unmeasured else "nothing measured", NOT_MEASURED)
    r, shape = min(ratios) if op == ">=" else max(ratios)
    ok = r >= limit if op == ">=" else r <= limit
    text = f"worst {r:.2f}x ({shape})"
    if not ok:
        return Outcome(label, text + _floor_note(m, key, ratios, op, limit), MISSED)
    if unmeasured:
        return Outcome(label, f"{text}; {len(unmeasured)} shapes unmeasured", NOT_MEASURED)
    return Outcome(label, text, MET)


def _floor_note(
    m: Metrics,
    key: Callable[[str], tuple[Key, Key]],
    ratios: list[tuple[float, str]],
    op: str,
    limit: float,
) -> str:
    """For a speed target against pickle: the missed shapes where even one copy of the
    payload is too slow to meet it (pickle's time / the copy's time < the target)."""
    if op != ">=":
        return ""
    notes = []
    for r, shape in sorted(ratios):
        if r >= limit:
            break
        num, _ = key(shape)
        floor = m.get(("copy_floor", shape))
        pickle_ns = m.get(num)
        if num[-1] != PICKLE or floor is None or pickle_ns is None or floor <= 0:
            return ""
        bound = pickle_ns / floor
        if bound >= limit:
            return ""  # some missed shape is not bounded by the copy
        notes.append(f"{shape} at most {bound:.2f}x")
    if not notes:
        return ""
    return (
        "; every miss is below the one-copy floor (pickle's time over one copy of its "
        "payload): " + ", ".join(notes)
    )


def _pickle(m: Metrics) -> list[Outcome]:
    out = [
        _every_shape(
            m,
            "dumps: bytewright.pickle ≥ 1.5x faster than pickle on every shape",
            lambda s: (("dumps", s, PICKLE), ("dumps", s, BYTEWRIGHT)),
            ">=",
            1.5,
        ),
        _every_shape(
            m,
            "dumps: bytewright.pickle faster than pysafe-pickle on every shape",
            lambda s: (("dumps", s, PYSAFE), ("dumps", s, BYTEWRIGHT)),
            ">=",
            1.0,
        ),
        _every_shape(
            m,
            "loads: bytewright.pickle ≥ 1.2x faster than pickle on every shape",
            lambda s: (("loads", s, PICKLE), ("loads", s, BYTEWRIGHT)),
            ">=",
            1.2,
        ),
        _every_shape(
            m,
            "loads_pickle (issue 6): no slower than pickle.loads on every shape",
            lambda s: (("loads", s, PICKLE), ("loads", s, LOADS_PICKLE)),
            ">=",
            1.0,
        ),
        _every_shape(
            m,
            "payload: bytewright.pickle ≤ 1.1x pickle's size on every shape",
            lambda s: (("size", s, BYTEWRIGHT), ("size", s, PICKLE)),
            "<=",
            1.1,
        ),
    ]
    label = "HMAC overhead ≤ 1 ms per MB (worst of dumps and loads, all sizes)"
    ms = m.get(("hmac", BYTEWRIGHT))
    if "pickle" not in m.ran:
        out.append(Outcome(label, "part `pickle` not run", NOT_MEASURED))
    elif ms is None:
        out.append(Outcome(label, m.why(("hmac", BYTEWRIGHT)), NOT_MEASURED))
    else:
        out.append(Outcome(label, f"{ms:.3f} ms/MB", MET if ms <= 1.0 else MISSED))
    return out


def _formats(m: Metrics) -> list[Outcome]:
    from benchmarks.formats_part import BW_DNS, BW_MSGPACK, DNSLIB, MSGPACK

    dns_label = "DNS decode: bytewright ≥ 5x faster than dnslib"
    mp_label = "MessagePack decode: bytewright within 3x of the msgpack C package"
    if "formats" not in m.ran:
        return [
            Outcome(dns_label, "part `formats` not run", NOT_MEASURED),
            Outcome(mp_label, "part `formats` not run", NOT_MEASURED),
        ]
    return [
        _ratio_target(
            m,
            "formats",
            dns_label,
            ("formats", "dns", DNSLIB),
            ("formats", "dns", BW_DNS),
            ">=",
            5.0,
        ),
        _ratio_target(
            m,
            "formats",
            mp_label,
            ("formats", "msgpack", BW_MSGPACK),
            ("formats", "msgpack", MSGPACK),
            "<=",
            3.0,
        ),
    ]


def evaluate(parts: list[PartResult]) -> list[Outcome]:
    m = Metrics(parts)
    return _wire(m) + _lab(m) + _pickle(m) + _formats(m)


def targets_table(outcomes: list[Outcome]) -> Table:
    table = Table(
        "Targets (issue 4; issues 3 and 6 for object graphs; issue 5 for formats)",
        ["Target", "Measured", "Verdict"],
        note="Ratios of fitted slopes (Part A) or of times (Parts B, C, D), from this run only.",
    )
    for o in outcomes:
        table.add(o.target, o.measured, o.verdict)
    return table
