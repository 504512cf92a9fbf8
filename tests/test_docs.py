"""Every ```python block of the README and docs/ runs, in order, per file, and type-checks."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_doc_examples_run(path: Path) -> None:
    blocks = BLOCK.findall(path.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": f"doc_{path.stem}"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{path.name}[block {i}]", "exec", dont_inherit=True), namespace)


def test_doc_examples_type_check(tmp_path: Path) -> None:
    """``mypy --strict`` over every doc's examples, one module per doc (blocks share it, as
    when they run), in one mypy run. A later example may rebind a name to another type."""
    if shutil.which("mypy") is None and not (Path(sys.executable).parent / "mypy").exists():
        pytest.skip("mypy is not installed")
    for path in DOCS:
        blocks = BLOCK.findall(path.read_text(encoding="utf-8"))
        text = "".join(f"# {path.name}, block {i}\n{code}" for i, code in enumerate(blocks))
        (tmp_path / f"doc_{path.stem}.py").write_text(text, encoding="utf-8")
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
