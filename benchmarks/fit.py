"""Least-squares fit of ``ns = intercept + slope * size``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    """A fitted cost line: `slope` ns per unit of size, `intercept` ns per call."""

    slope: float
    intercept: float

    def at(self, size: float) -> float:
        return self.intercept + self.slope * size


def fit_line(sizes: Sequence[float], ns: Sequence[float]) -> Line:
    """Ordinary least squares over the (size, ns) points; one point gives a zero intercept."""
    if len(sizes) != len(ns) or not sizes:
        raise ValueError("fit_line needs as many timings as sizes, at least one")
    if len(sizes) == 1:
        return Line(slope=ns[0] / sizes[0], intercept=0.0)
    n = len(sizes)
    mean_x = sum(sizes) / n
    mean_y = sum(ns) / n
    sxx = sum((x - mean_x) ** 2 for x in sizes)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(sizes, ns, strict=True))
    slope = sxy / sxx if sxx else 0.0
    return Line(slope=slope, intercept=mean_y - slope * mean_x)
