"""What a part hands back: tables, plots and the numbers the targets are evaluated from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.tables import Table


@dataclass
class Section:
    """One heading of the report with its text, tables and images."""

    heading: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)  # relative to the report


@dataclass
class PartResult:
    name: str
    sections: list[Section] = field(default_factory=list)
    # Named measurements for the targets, e.g. ("slope", "telemetry", "pack", "struct").
    metrics: dict[tuple[str, ...], float] = field(default_factory=dict)
    # Why a metric is missing, e.g. {("slope", ..., "bytewright"): "unavailable: ..."}.
    missing: dict[tuple[str, ...], str] = field(default_factory=dict)
    # Every arm that failed its correctness gate: "part/workload/arm: reason".
    incorrect: list[str] = field(default_factory=list)
    # Every arm that was not measured at all: "part/arm: reason".
    unavailable: list[str] = field(default_factory=list)
