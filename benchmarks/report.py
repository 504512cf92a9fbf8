"""The markdown report: `benchmarks/results/latest/report.md`, with its PNGs beside it."""

from __future__ import annotations

import os
from pathlib import Path

from benchmarks.env import load_average
from benchmarks.results import PartResult
from benchmarks.tables import Table
from benchmarks.targets import Outcome, targets_table

SECTION_ENVIRONMENT = "## Environment"
SECTION_TARGETS = "## Targets"
SECTION_ARMS = "## Arms not measured"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> str:
    lines = [f"**{table.title}**", ""]
    lines.append("| " + " | ".join(_cell(c) for c in table.columns) + " |")
    lines.append("|" + "|".join([" --- "] + [" ---: "] * (len(table.columns) - 1)) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    if table.note:
        lines += ["", f"*{table.note}*"]
    return "\n".join(lines) + "\n"


def render(
    *,
    profile: str,
    command: str,
    seconds: float,
    environment: Table,
    parts: list[PartResult],
    outcomes: list[Outcome],
) -> str:
    verdicts = [o.verdict for o in outcomes]
    summary = ", ".join(
        f"{verdicts.count(v)} {v}" for v in ("MET", "MISSED", "NOT MEASURED") if v in verdicts
    )
    out = [
        "# bytewright benchmark report",
        "",
        f"Profile `{profile}`, produced by `{command}` in {seconds:,.0f} s. Targets: {summary}.",
        f"Load average at the end (1/5/15 min): {load_average()} on {os.cpu_count()} cores; "
        "a load above the core count means other work competed with the run (noisy numbers).",
        "Lower times are better. Every arm passed its correctness gate before it was timed;",
        "arms that did not are listed with the reason instead of a number.",
        "",
        SECTION_ENVIRONMENT,
        "",
        markdown_table(environment),
        SECTION_TARGETS,
        "",
        "A missed target is reported as MISSED: it is what the next work will fix.",
        "",
        markdown_table(targets_table(outcomes)),
    ]
    unavailable = [u for p in parts for u in p.unavailable]
    incorrect = [i for p in parts for i in p.incorrect]
    out += [SECTION_ARMS, ""]
    if not unavailable and not incorrect:
        out += ["Every arm was available and correct.", ""]
    for item in sorted(set(unavailable)):
        out.append(f"- unavailable: {item}")
    for item in incorrect:
        out.append(f"- incorrect (not timed): {item}")
    out.append("")
    for part in parts:
        for section in part.sections:
            out += [f"## {section.heading}", ""]
            if section.intro:
                out += [section.intro, ""]
            for image in section.images:
                out += [f"![{image.stem}]({image.as_posix()})", ""]
            for table in section.tables:
                out.append(markdown_table(table))
    return "\n".join(out)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
