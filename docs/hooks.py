"""mkdocs hooks of the documentation site (mkdocs.yml: ``hooks``).

The benchmark plots are made by ``make bench`` in benchmarks/results/latest/ (not
committed: they are one machine's measurements; ``BYTEWRIGHT_BENCH_RESULTS`` names another
run's folder). When a run is there, its plots are added to the site and shown on the
benchmarks page; when none is, the page says how to make them. No number is written into
the docs by hand.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(
    os.environ.get("BYTEWRIGHT_BENCH_RESULTS") or ROOT / "benchmarks" / "results" / "latest"
)
PLOTS = "plots/benchmarks"


def _plots() -> list[Path]:
    return sorted(RESULTS.glob("*.png")) if RESULTS.is_dir() else []


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for png in _plots():
        files.append(File.generated(config, f"{PLOTS}/{png.name}", abs_src_path=str(png)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != "benchmarks.md":
        return markdown
    plots = _plots()
    out = [markdown, "", "## Plots of the last run", ""]
    if not plots:
        out.append(
            "This build of the site found no benchmark run. `make bench` writes the report "
            "and its plots to `benchmarks/results/latest/`; `make docs` after it shows the "
            "plots here."
        )
    for png in plots:
        title = png.stem.replace("-", " ").replace("_", " ")
        out += [f"### {title}", "", f"![{title}]({PLOTS}/{png.name})", ""]
    return "\n".join(out)
