"""PNG plots beside the report (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fits(
    path: Path, title: str, unit: str, panels: dict[str, dict[str, tuple[dict[int, float], Any]]]
) -> None:
    """One log-log panel per operation: {arm: (points, (slope, intercept))}."""
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.6), squeeze=False)
    for ax, (op, series) in zip(axes[0], panels.items(), strict=True):
        lowest, highest = float("inf"), 0.0
        for i, (name, (points, (slope, intercept))) in enumerate(series.items()):
            xs = sorted(points)
            ys = [points[x] / 1000 for x in xs]
            lowest, highest = min(lowest, *ys), max(highest, *ys)
            ax.plot(xs, ys, "o", color=f"C{i % 10}", label=name)
            dense = [xs[0] * (xs[-1] / xs[0]) ** (k / 100) for k in range(101)]
            line = [(intercept + slope * x) / 1000 for x in dense]
            ax.plot(dense, [y if y > 0 else float("nan") for y in line], "-", color=f"C{i % 10}")
        if highest > 0:
            ax.set_ylim(lowest / 2, highest * 2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"{unit}s per message (dots: measured; lines: least-squares fit)")
        ax.set_ylabel("µs per call (lower is better)")
        ax.set_title(f"{title}: {op}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    _save(fig, path)


def bars(path: Path, title: str, xlabel: str, values: dict[str, float]) -> None:
    """Horizontal bars, one per arm."""
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(values) + 1.2))
    ax.barh(list(values), list(values.values()), color="C0")
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    _save(fig, path)


def speedups(path: Path, title: str, xlabel: str, series: dict[str, dict[str, float]]) -> None:
    """Grouped horizontal bars, log scale: {label: {row: speedup}}; right of 1 is faster."""
    rows = list(dict.fromkeys(row for values in series.values() for row in values))
    fig, ax = plt.subplots(figsize=(9, 0.14 * len(rows) * max(1, len(series)) + 1.5))
    height = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        ys = [r + i * height for r in range(len(rows))]
        ax.barh(ys, [values.get(row, float("nan")) for row in rows], height, label=label)
    ax.set_yticks([r + 0.4 - height / 2 for r in range(len(rows))], rows, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path)
