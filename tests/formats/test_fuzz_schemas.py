"""The schemas the wire_unpack fuzz target compiles are those of today's declarations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_committed_fuzz_schemas_are_up_to_date() -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / "schemas" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
