"""Peak memory of one `unpack_table` call on the threads workloads, each in a fresh process.

The child builds the input, imports everything, and reads its resident size; then it resets
the kernel's peak (writing 5 to /proc/self/clear_refs resets VmHWM, Linux 4.0 and later),
decodes once, and reads the peak. The growth of the peak over the resident size before the
call is what the call took beyond its input (which the caller holds anyway); the output is
the table's buffers as pyarrow counts them. A fresh process, because the extension keeps
freed large blocks for reuse (docs/columns.md, "Memory"): in a process that decoded before,
the call would reuse pages already counted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.report import Part, Table

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20
# The "small constant" of docs/columns.md: allocations are rounded up to whole 2 MiB huge
# pages, so each large column buffer of each thread may hold up to one page more than its
# values; a table of these workloads has at most 10 such buffers per thread.
SLACK_MIB = 2 * 10

CHILD = """
import gc, json, sys
sys.path.insert(0, sys.argv[1])
from benchmarks.columns import data
import pyarrow as pa

workload, threads, mib = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if workload == "fixed":
    from benchmarks.bulk.bytewright import record_class
    cls, buf = record_class(), data.lab(65536, repeat=max(1, mib * 2**20 // (16 * 65536))).data
else:
    from benchmarks.wire.bytewright import CLASSES
    cls, buf = CLASSES()["Record"], data.records(mib * 2**20).data
cls.unpack_table(buf[: 4096 - 4096 % 16] if workload == "fixed" else b"", threads=1)

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)

gc.collect()
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
table = cls.unpack_table(buf, threads=threads)
peak = status("VmHWM")
output = pa.table(table).get_total_buffer_size()
print(json.dumps({"input": len(buf), "output": output, "over": peak - before}))
"""


def measure(workload: str, threads: int, mib: int) -> dict[str, Any] | str:
    """The child's numbers, or why there are none."""
    if not sys.platform.startswith("linux"):
        return "n/a: needs Linux's /proc/self/clear_refs"
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), workload, str(threads), str(mib)],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return f"unavailable: {last}"
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def table(conf: dict[str, Any], part: Part) -> Table:
    mib = conf["threads_mib"]
    out = Table(
        f"Peak memory of one call on {mib} MiB, each in a fresh process",
        ["Workload", "threads", "input MiB", "output MiB", "peak over input MiB", "bound MiB"],
        note=(
            "Peak over input: the growth of the process's peak resident size (VmHWM) during "
            "the call, over its resident size before it (input included). Bound: the output "
            f"plus {SLACK_MIB} MiB (up to one 2 MiB huge page per column buffer and thread)."
        ),
    )
    for workload in ("fixed", "variable"):
        for threads in (1, 2):
            key = f"columns/peak/{workload} threads={threads}"
            got = measure(workload, threads, mib)
            if isinstance(got, str):
                part.record(f"{key}/over", None, got)
                part.record(f"{key}/bound", None, got)
                out.add(workload, threads, "—", "—", "—", got)
                continue
            over, output = got["over"] / MIB, got["output"] / MIB
            part.record(f"{key}/over", over)
            part.record(f"{key}/bound", output + SLACK_MIB)
            out.add(
                workload,
                threads,
                f"{got['input'] / MIB:.1f}",
                f"{output:.1f}",
                f"{over:.1f}",
                f"{output + SLACK_MIB:.1f}",
            )
    return out
