"""Part G: fixed costs. Import time in fresh interpreters, and the telemetry schema's build cost.

Import time: every statement below and a bare `python -c pass` run in turn, `runs` times,
each in a new interpreter from a scratch folder. The row is the median wall time of the
statement minus the median of `pass` (interpreter start-up and `site`). A second column
sums the top-level cumulative times of `python -X importtime` (one run), minus those of
`pass`, as a cross-check that excludes process creation.

Every library is measured with its bytecode cache, as `pip install` leaves it: the children run
without `PYTHONDONTWRITEBYTECODE`, and the first (untimed) run of each statement writes the
cache of any source that has none (a develop install of bytewright, for one). Without the cache
an import times the compiler, not the library.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import DirectCall, Incorrect, Sampling, race
from benchmarks.report import Part, Section, Table, Ui, fmt, ratio
from benchmarks.wire import ARMS as WIRE_ARMS
from benchmarks.wire import workloads as w

IMPORTS = {
    "bytewright": "import bytewright",
    "bytewright.pickle": "from bytewright import pickle",
    "rustruct": "import rustruct",
    "construct": "import construct",
    "msgpack": "import msgpack",
    "msgspec": "import msgspec",
}
BASELINE = "pass"
# The children's environment: with bytecode caching (see the module docstring).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TOP_LEVEL = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")  # no indent: top level


def _python(
    statement: str, cwd: str, *options: str
) -> tuple[int, subprocess.CompletedProcess[str]]:
    start = time.perf_counter_ns()
    done = subprocess.run(
        [sys.executable, *options, "-c", statement],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=CHILD_ENV,
    )
    return time.perf_counter_ns() - start, done


def importtime_ms(statement: str, cwd: str) -> float:
    """The sum of top-level cumulative import times, in ms."""
    _, done = _python(statement, cwd, "-X", "importtime")
    return (
        sum(int(m.group(1)) for line in done.stderr.splitlines() if (m := TOP_LEVEL.match(line)))
        / 1e3
    )


def run_imports(runs: int, part: Part, ui: Ui) -> Table:
    table = Table(
        f"Start-up: median wall time of a fresh interpreter over {runs} runs, minus `python -c pass`",
        ["Library", "Statement", "ms", "-X importtime ms", "Status"],
        note="Runs interleaved across libraries, each with its bytecode cache (as pip installs it); "
        "the importtime column is one run, without process creation.",
    )
    with tempfile.TemporaryDirectory() as cwd:
        statuses = {}
        for name, statement in IMPORTS.items():
            _, done = _python(statement, cwd)  # the gate; warms the file and bytecode caches
            last = (done.stderr.strip().splitlines() or ["exit status " + str(done.returncode)])[-1]
            statuses[name] = "ok" if done.returncode == 0 else f"unavailable: {last}"
        ok = {BASELINE: "pass"} | {n: s for n, s in IMPORTS.items() if statuses[n] == "ok"}
        times: dict[str, list[int]] = {name: [] for name in ok}
        for i in range(runs):
            ui.step(f"fresh interpreters, run {i + 1} of {runs}", advance=1)
            for name, statement in ok.items():
                times[name].append(_python(statement, cwd)[0])
        base = statistics.median(times[BASELINE]) / 1e6
        base_importtime = importtime_ms("pass", cwd)
        for name, statement in IMPORTS.items():
            ms = statistics.median(times[name]) / 1e6 - base if name in times else None
            itime = importtime_ms(statement, cwd) - base_importtime if name in times else None
            part.record(f"startup/import/{name}", ms, statuses[name])
            part.arm_status(f"startup/{name}", statuses[name])
            table.add(name, f"`{statement}`", fmt(ms), fmt(itime), statuses[name])
    table.add("(bare interpreter)", "`pass`", f"{base:.1f} (subtracted)", "—", "ok")
    return table


def run_build(sampling: Sampling, part: Part) -> Table:
    reference = w.reference_bytes("telemetry", 1)

    def check(name: str, out: Any) -> None:
        if out != reference:
            raise Incorrect("bytes differ from the reference")

    arms = {name: lambda arm=arm: DirectCall(arm.build) for name, arm in WIRE_ARMS.items()}
    ns, statuses = race(arms, check, sampling)
    table = Table(
        "Build cost: the telemetry schema from nothing, then its first pack",
        ["Implementation", "µs", "÷ bytewright", "Status"],
        note="Includes the first pack of telemetry(1), so lazily compiled schemas pay for it.",
    )
    ours = ns["bytewright"] / 1e3 if "bytewright" in ns else None
    for name in WIRE_ARMS:
        us = ns[name] / 1e3 if name in ns else None
        part.record(f"startup/build/{name}", us, statuses[name])
        table.add(name, fmt(us), ratio(us, ours), statuses[name])
    return table


def run(conf: dict[str, Any], sampling: Sampling, out: Path, ui: Ui) -> Part:
    part = Part("startup")
    ui.start("Part G: start-up and build cost", conf["runs"] + 1)
    imports = run_imports(conf["runs"], part, ui)
    ui.step("build cost", advance=1)
    build = run_build(sampling, part)
    ui.finish()
    intro = __doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else ""
    part.sections.append(Section("Part G: start-up and build cost", intro, [imports, build]))
    return part
