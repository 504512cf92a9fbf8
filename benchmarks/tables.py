"""A table as data, rendered both to the terminal (rich) and to the markdown report."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])


def fmt_ns(ns: float | None) -> str:
    """Nanoseconds with a sensible number of digits."""
    if ns is None or math.isnan(ns):
        return "—"
    if abs(ns) >= 100:
        return f"{ns:,.0f}"
    if abs(ns) >= 10:
        return f"{ns:.1f}"
    return f"{ns:.2f}"


def fmt_us(ns: float | None) -> str:
    return "—" if ns is None else fmt_ns(ns / 1000.0)


def fmt_ratio(ratio: float | None) -> str:
    if ratio is None or math.isnan(ratio) or math.isinf(ratio):
        return "—"
    return f"{ratio:.2f}x"


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None when either side is missing or the divisor is ~0."""
    if numerator is None or denominator is None or abs(denominator) < 1e-12:
        return None
    return numerator / denominator


def fmt_rate(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if value >= 1e6:
        return f"{value / 1e6:,.2f} M{unit}"
    if value >= 1e3:
        return f"{value / 1e3:,.1f} k{unit}"
    return f"{value:,.1f} {unit}"
