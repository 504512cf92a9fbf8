"""dataclass_transform: mypy sees the generated keyword __init__ of bw.Struct classes."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def run_mypy(path: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("mypy") is None and not (Path(sys.executable).parent / "mypy").exists():
        pytest.skip("mypy is not installed")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir=/dev/null",
            "--show-error-codes",
            "--no-error-summary",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=HERE,
        timeout=300,
    )


def test_typed_example_is_clean():
    r = run_mypy(HERE / "typing_example.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == ""


def test_wrong_calls_are_reported():
    r = run_mypy(HERE / "typing_bad.py")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "typing_bad.py" in ln]
    text = "\n".join(lines)
    assert 'Argument "x" to "Point" has incompatible type "str"' in text, text
    assert 'Unexpected keyword argument "z"' in text, text
    assert "Too many positional arguments" in text, text
    # Nothing else: the errors are the deliberate ones.
    assert len(lines) == 3, text


def test_example_runs():
    ns: dict[str, object] = {"__name__": "typing_example"}
    exec(compile((HERE / "typing_example.py").read_text(), "typing_example.py", "exec"), ns)
    data = ns["build"]()  # type: ignore[operator]
    assert data == b"\x03tri\x00\x02\x01\x00\x02\x00\xff\xff\x00\x00\x00\x3f\x80\x00\x00"
