"""PNG plots of the measured points and fitted lines (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.fit import Line


def plot_fits(
    path: Path,
    title: str,
    unit: str,
    panels: dict[str, dict[str, tuple[dict[int, float], Line]]],
) -> Path:
    """One panel per operation: measured points per implementation and the fitted line.

    `panels` maps an operation name to {implementation: (points, line)}.
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.6), squeeze=False)
    for ax, (op, series) in zip(axes[0], panels.items(), strict=True):
        lowest, highest = float("inf"), 0.0
        for i, (name, (points, line)) in enumerate(series.items()):
            xs = sorted(points)
            ys = [points[x] / 1000 for x in xs]
            lowest, highest = min(lowest, *ys), max(highest, *ys)
            color = f"C{i % 10}"
            ax.plot(xs, ys, "o", color=color, label=name)
            # The fitted line, sampled geometrically; where it dips below zero it is not drawn.
            dense = [xs[0] * (xs[-1] / xs[0]) ** (k / 100) for k in range(101)]
            fitted = [line.at(x) / 1000 if line.at(x) > 0 else float("nan") for x in dense]
            ax.plot(dense, fitted, "-", color=color, alpha=0.8)
        if highest > 0:
            ax.set_ylim(lowest / 2, highest * 2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"{unit}s per message")
        ax.set_ylabel("µs per call (lower is better)")
        ax.text(
            0.01,
            -0.16,
            "dots: measured; lines: least-squares fit",
            transform=ax.transAxes,
            fontsize=7,
        )
        ax.set_title(f"{title}: {op}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_bars(path: Path, title: str, xlabel: str, values: dict[str, float]) -> Path:
    """A horizontal bar chart, e.g. MB/s per arm of the bulk-records lab."""
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(values) + 1.2))
    names = list(values)
    ax.barh(names, [values[n] for n in names], color="C0")
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_speedups(path: Path, title: str, series: dict[str, dict[str, float]]) -> Path:
    """Grouped horizontal bars of speedups (above 1 = faster than the baseline), log scale.

    `series` maps a label (e.g. "bytewright dumps") to {row name: speedup}.
    """
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
    ax.set_xlabel("speedup over pickle (time of pickle ÷ time; right of 1 is faster)")
    ax.set_title(title)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
