"""`_native.pyi` matches the compiled module (mypy's stubtest)."""

from __future__ import annotations

import subprocess
import sys


def test_native_stub_matches_runtime() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "bytewright._native"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
