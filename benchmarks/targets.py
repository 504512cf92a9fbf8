"""Evaluates `targets.toml` against the metrics of one run: MET, MISSED or NOT MEASURED.

A target compares `measure` (or `measure ÷ over`) with `at_most` or `at_least`. A list of
measures means "the fastest of them". A `{shape}` placeholder makes the target hold on every
shape found among the metrics; the worst shape is reported and shapes marked `n/a` are
skipped. `floor` names a floor per shape (a one-copy floor unless `floor_name` says
otherwise; a list of them means the largest): with `below_floor = "explain"` a miss where
even the floor could not meet the target says so (on a single ratio too: `measure` over the
floor instead of over `over`); with `"exclude"` such shapes do not count.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.report import Part, Table

TARGETS = Path(__file__).with_name("targets.toml")
MET, MISSED, NOT_MEASURED = "MET", "MISSED", "NOT MEASURED"


@dataclass(frozen=True)
class Outcome:
    target: str
    measured: str
    verdict: str


class _Run:
    def __init__(self, parts: list[Part]) -> None:
        self.values = {k: v for p in parts for k, v in p.metrics.items()}
        self.missing = {k: v for p in parts for k, v in p.missing.items()}
        self.ran = {p.name for p in parts}

    def why(self, key: str) -> str:
        return f"{key.rsplit('/', 1)[-1]}: {self.missing.get(key, 'not measured')}"

    def shapes(self, pattern: str) -> list[str]:
        regex = re.compile(re.escape(pattern).replace(r"\{shape\}", "(.+?)") + "$")
        found = (m.group(1) for k in [*self.values, *self.missing] if (m := regex.match(k)))
        return list(dict.fromkeys(found))


def _num(x: float) -> str:
    """Three decimals below 10 (0.050 ms, not 0.1), one above."""
    return f"{x:,.3f}" if abs(x) < 10 else f"{x:,.1f}"


def _passes(t: dict[str, Any], r: float) -> bool:
    return r <= t["at_most"] if "at_most" in t else r >= t["at_least"]


def _single(t: dict[str, Any], run: _Run) -> Outcome:
    unit = t.get("unit", "ns")
    measures = t["measure"] if isinstance(t["measure"], list) else [t["measure"]]
    known = {k: run.values[k] for k in measures if k in run.values}
    if not known:
        return Outcome(t["text"], run.why(measures[0]), NOT_MEASURED)
    fastest = min(known, key=known.__getitem__)
    a = known[fastest]
    named = f"{fastest.rsplit('/', 1)[-1]}: " if len(measures) > 1 else ""
    if "over" not in t:
        text = f"{_num(a)} {unit}"
        return Outcome(t["text"], named + text, MET if _passes(t, a) else MISSED)
    b = run.values.get(t["over"])
    if b is None:
        return Outcome(t["text"], run.why(t["over"]), NOT_MEASURED)
    if a <= 0 or b <= 0:
        return Outcome(t["text"], f"not resolvable ({a:.3g} / {b:.3g} {unit})", NOT_MEASURED)
    text = f"{named}{a / b:.2f}x ({_num(a)} / {_num(b)} {unit})"
    if _passes(t, a / b):
        return Outcome(t["text"], text, MET)
    floor = max((run.values.get(f, 0.0) for f in _listed(t.get("floor", []))), default=0.0)
    if t.get("below_floor") == "explain" and floor > 0 and not _passes(t, a / floor):
        text += f"; below the {_floor_name(t)}: even at the floor at most {a / floor:.2f}x"
    return Outcome(t["text"], text, MISSED)


def _every_shape(t: dict[str, Any], run: _Run) -> Outcome:
    ratios: list[tuple[float, str]] = []
    unmeasured, excluded, bounds = [], [], {}
    for shape in run.shapes(t["measure"]):
        num, den = (t[k].replace("{shape}", shape) for k in ("measure", "over"))
        a, b = run.values.get(num), run.values.get(den)
        if a is None or b is None or b <= 0:
            gone = num if a is None else den
            if not run.missing.get(gone, "").startswith("n/a"):
                unmeasured.append(f"{run.why(gone)} ({shape})")
            continue
        floors = t.get("floor", [])
        floor = max(
            (run.values.get(f.replace("{shape}", shape), 0.0) for f in _listed(floors)),
            default=0.0,
        )
        bounds[shape] = a / floor if floor > 0 else None
        if t.get("below_floor") == "exclude" and bounds[shape] and not _passes(t, bounds[shape]):
            excluded.append(shape)
        else:
            ratios.append((a / b, shape))
    if not ratios:
        return Outcome(t["text"], unmeasured[0] if unmeasured else "nothing measured", NOT_MEASURED)
    r, shape = min(ratios) if "at_least" in t else max(ratios)
    text = f"worst {r:.2f}x ({shape})"
    if excluded:
        text += f"; below the {_floor_name(t)}, not counted: {', '.join(excluded)}"
    if not _passes(t, r):
        misses = [s for x, s in sorted(ratios) if not _passes(t, x)]
        if t.get("below_floor") == "explain" and all(
            bounds.get(s) and not _passes(t, bounds[s]) for s in misses
        ):
            text += (
                f"; every miss is below the {_floor_name(t)} (the baseline's time over the "
                "floor): " + ", ".join(f"{s} at most {bounds[s]:.2f}x" for s in misses)
            )
        return Outcome(t["text"], text, MISSED)
    if unmeasured:
        return Outcome(t["text"], f"{text}; {len(unmeasured)} shapes unmeasured", NOT_MEASURED)
    return Outcome(t["text"], text, MET)


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def _floor_name(t: dict[str, Any]) -> str:
    return str(t.get("floor_name", "one-copy floor"))


def evaluate(parts: list[Part], path: Path = TARGETS) -> list[Outcome]:
    run = _Run(parts)
    outcomes = []
    for t in tomllib.loads(path.read_text(encoding="utf-8"))["target"]:
        first = t["measure"][0] if isinstance(t["measure"], list) else t["measure"]
        part = first.split("/", 1)[0]
        if part not in run.ran:
            outcomes.append(Outcome(t["text"], f"part `{part}` not run", NOT_MEASURED))
        elif "{shape}" in first:
            outcomes.append(_every_shape(t, run))
        else:
            outcomes.append(_single(t, run))
    return outcomes


def table(outcomes: list[Outcome]) -> Table:
    t = Table(
        "Targets",
        ["Target", "Measured", "Verdict"],
        note="Ratios of times (or of fitted slopes in Part A) from this run only.",
    )
    for o in outcomes:
        t.add(o.target, o.measured, o.verdict)
    return t
