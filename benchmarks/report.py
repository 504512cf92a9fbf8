"""What a part hands back, and how it is shown: rich in the terminal, markdown in the report."""

from __future__ import annotations

import io
import math
import os
import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

SECTION_ENVIRONMENT, SECTION_TARGETS, SECTION_ARMS = (
    "## Environment",
    "## Targets",
    "## Arms not measured",
)
PACKAGES = (
    "bytewright construct dataclasses-struct rustruct pysafe-pickle msgspec msgpack dnslib "
    "numpy pyarrow pandas polars dpkt scapy dask distributed rich matplotlib"
).split()


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])


@dataclass
class Section:
    heading: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)  # relative to the report


@dataclass
class Part:
    """A part's sections, its named measurements and why any arm was not measured."""

    name: str
    sections: list[Section] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)  # "wire/slope/telemetry/pack/struct"
    missing: dict[str, str] = field(default_factory=dict)  # metric -> "unavailable: ..."
    incorrect: list[str] = field(default_factory=list)  # "where: why", each failed gate
    unavailable: list[str] = field(default_factory=list)  # "where: why", each missing arm

    def record(self, key: str, value: float | None, why: str = "not measured") -> None:
        if value is None:
            self.missing[key] = why
        else:
            self.metrics[key] = value

    def arm_status(self, where: str, text: str) -> None:
        """File an arm's gate status under incorrect or unavailable (n/a is neither)."""
        if text.startswith("incorrect: "):
            self.incorrect.append(f"{where}: {text.removeprefix('incorrect: ')}")
        elif text.startswith("unavailable: "):
            self.unavailable.append(f"{where}: {text.removeprefix('unavailable: ')}")


def fmt(value: float | None, scale: float = 1.0) -> str:
    """A number with sensible digits (`scale` divides it first: 1e3 turns ns into µs)."""
    if value is None or math.isnan(value):
        return "—"
    v = value / scale
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def ratio(a: float | None, b: float | None) -> str:
    """`a ÷ b` as `1.23x`, or — when either is missing."""
    if a is None or b is None or abs(b) < 1e-12 or math.isnan(a) or math.isnan(b):
        return "—"
    return f"{a / b:.2f}x"


def per_second(ns: float | None) -> str:
    """How many per second, from nanoseconds each: `8.24 M`, `96.1 k` or `512`."""
    if not ns:
        return "—"
    v = 1e9 / ns
    return f"{v / 1e6:,.2f} M" if v >= 1e6 else f"{v / 1e3:,.1f} k" if v >= 1e3 else f"{v:,.0f}"


class Ui:
    """The terminal: one rich progress bar per part and every table as it is produced."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.console = Console(file=io.StringIO()) if quiet else Console()
        if not self.console.is_terminal:
            self.console.width = 160  # a log file: don't squeeze the tables to 80 columns
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[step]}"),
            console=self.console,
            transient=True,
            # No refresh thread: it would wake 10 times a second during the timings and take
            # the GIL or a core from the arm being timed (the threaded arms need both cores).
            # The bar is redrawn between measurements, in step().
            auto_refresh=False,
        )
        self.task = self.progress.add_task("", total=None, step="")

    def start(self, description: str, total: int) -> None:
        self.progress.reset(self.task, description=description, total=total, step="")
        self.progress.start()

    def step(self, label: str, advance: int = 0) -> None:
        """Name the measurement about to run, after counting `advance` finished ones."""
        self.progress.update(self.task, step=label, advance=advance, refresh=True)

    def finish(self) -> None:
        self.progress.stop()

    def table(self, table: Table) -> None:
        rich = RichTable(title=table.title, caption=table.note or None, title_justify="left")
        for i, column in enumerate(table.columns):
            rich.add_column(column, justify="left" if i == 0 else "right", overflow="fold")
        for row in table.rows:
            rich.add_row(*row)
        self.console.print(rich)


def load_average() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _first(path: str, prefix: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return next((line.split(prefix, 1)[1] for line in f if line.startswith(prefix)), "")
    except OSError:
        return ""


def environment(profile: str, started: str) -> Table:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    cpu = _first("/proc/cpuinfo", "model name").strip(": \n") or platform.machine()
    os_name = _first("/etc/os-release", "PRETTY_NAME=").strip('"\n')
    table = Table("Environment", ["Component", "Value"])
    table.add("Date (UTC)", started)
    table.add("CPU", cpu)
    table.add("Cores", f"{os.cpu_count()} logical")
    table.add("Operating system", f"{os_name} ({platform.system()} {platform.release()})")
    table.add("Python", f"{platform.python_implementation()} {sys.version.split()[0]}")
    table.add("Standard-library baselines", "struct, ctypes and pickle of that Python")
    for name in PACKAGES:
        table.add(name, version(name))
    table.add("Profile", profile)
    table.add("Load average at start (1/5/15 min)", load_average())
    return table


def markdown(table: Table) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [f"**{table.title}**", "", "| " + " | ".join(map(cell, table.columns)) + " |"]
    lines.append("|" + "|".join([" --- "] + [" ---: "] * (len(table.columns) - 1)) + "|")
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in table.rows]
    return "\n".join(lines + ([f"\n*{table.note}*"] if table.note else [])) + "\n"


def render(header: str, env: Table, targets: Table, parts: list[Part]) -> str:
    out = [header, "", SECTION_ENVIRONMENT, "", markdown(env), SECTION_TARGETS, ""]
    out += ["A missed target is reported as MISSED: it is what the next work will fix.", ""]
    out += [markdown(targets), SECTION_ARMS, ""]
    unavailable = sorted({u for p in parts for u in p.unavailable})
    incorrect = [i for p in parts for i in p.incorrect]
    if not unavailable and not incorrect:
        out += ["Every arm was available and correct."]
    out += [f"- unavailable: {u}" for u in unavailable]
    out += [f"- incorrect (not timed): {i}" for i in incorrect] + [""]
    for section in (s for p in parts for s in p.sections):
        out += [f"## {section.heading}", ""] + ([section.intro, ""] if section.intro else [])
        out += [f"![{image.stem}]({image.as_posix()})\n" for image in section.images]
        out += [markdown(table) for table in section.tables]
    return "\n".join(out)
