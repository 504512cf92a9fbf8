"""Every ```python block of the README and docs/ (subfolders too) runs, in order, per file,
and type-checks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _name(path: Path) -> str:
    """``docs/reference/cli.md`` -> ``reference_cli``: unique per page, a module name too."""
    rel = path.relative_to(ROOT / "docs") if path.parent != ROOT else Path(path.name)
    return "_".join(rel.with_suffix("").parts)


@pytest.mark.parametrize("path", DOCS, ids=_name)
def test_doc_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Examples make their folders with ``tempfile``: under this test's own folder, which
    # pytest prunes, and not left behind in the system's temporary directory.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    blocks = BLOCK.findall(path.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": f"doc_{_name(path)}"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{_name(path)}[block {i}]", "exec", dont_inherit=True), namespace)


def test_doc_examples_type_check(tmp_path: Path) -> None:
    """``mypy --strict`` over every doc's examples, one module per doc (blocks share it, as
    when they run), in one mypy run. A later example may rebind a name to another type."""
    if shutil.which("mypy") is None and not (Path(sys.executable).parent / "mypy").exists():
        pytest.skip("mypy is not installed")
    for path in DOCS:
        blocks = BLOCK.findall(path.read_text(encoding="utf-8"))
        text = "".join(f"# {path.name}, block {i}\n{code}" for i, code in enumerate(blocks))
        (tmp_path / f"doc_{_name(path)}.py").write_text(text, encoding="utf-8")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--allow-redefinition-new",
            "--local-partial-types",
            "--no-incremental",
            "--cache-dir=/dev/null",
            "--show-error-codes",
            f"--config-file={ROOT / 'pyproject.toml'}",
            ".",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_benchmark_plots_join_the_site(tmp_path: Path) -> None:
    """``mkdocs build --strict`` with a benchmark run's plots (docs/hooks.py): they are on
    the benchmarks page and in the site (``make test``'s own build has none: its page says
    how to make them)."""
    if shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists():
        pytest.skip("mkdocs is not installed")
    import zlib

    from bytewright.formats import png

    run = tmp_path / "run"
    run.mkdir()
    pixel = png.IHDR(width=1, height=1, bit_depth=8, color_type=0).pack()
    image = png.write(
        [
            png.Chunk(type=b"IHDR", data=pixel),
            png.Chunk(type=b"IDAT", data=zlib.compress(b"\x00\x80")),
            png.Chunk(type=b"IEND", data=b""),
        ]
    )
    (run / "wire_unpack-throughput.png").write_bytes(image)
    site = tmp_path / "site"
    env = dict(os.environ, BYTEWRIGHT_BENCH_RESULTS=str(run), NO_MKDOCS_2_WARNING="1")
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir"]
    done = subprocess.run(
        [*build, str(site)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    page = (site / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert (site / "plots" / "benchmarks" / "wire_unpack-throughput.png").read_bytes() == image
    assert 'src="../plots/benchmarks/wire_unpack-throughput.png"' in page
    assert "wire unpack throughput" in page and "found no benchmark run" not in page
