"""Part B: the `struct` lab, 200,000 `<IHHQ` records packed from a list of tuples."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from benchmarks import plots
from benchmarks.bulk import bytewright, numpy, stdlib
from benchmarks.harness import DirectCall, Incorrect, Sampling, race
from benchmarks.report import Part, Section, Table, Ui, fmt, per_second, ratio

ARMS = {**stdlib.ARMS, **numpy.ARMS, **bytewright.ARMS}
SEED, SIZE = 20261001, 16


def run(conf: dict[str, Any], sampling: Sampling, out: Path, ui: Ui) -> Part:
    n = conf["records"]
    rng = random.Random(SEED)
    items = [tuple(rng.getrandbits(bits) for bits in (32, 16, 16, 64)) for _ in range(n)]
    reference = stdlib.struct_pack_join(items)  # type: ignore[arg-type]

    def check(name: str, out: Any) -> None:
        if bytes(out) != reference:
            raise Incorrect(f"{len(out)} bytes differ from struct.pack + join")

    ui.start("Part B: bulk records", 1)
    ui.step("gating and timing every arm")
    arms = {name: lambda f=factory: DirectCall(f(), items) for name, factory in ARMS.items()}
    ns, statuses = race(arms, check, sampling)
    ui.finish()
    part = Part("bulk")
    table = Table(
        f"Bulk records: {n:,} `{stdlib.FORMAT}` records ({SIZE} bytes) from a list of tuples",
        ["Arm", "ns/record", "records/s", "MB/s", "÷ Struct.pack_into", "Status"],
        note="MB = 10^6 bytes, as the lab page. Every arm's output equals struct.pack + join.",
    )
    per = {name: t / n for name, t in ns.items()}
    pack_into = per.get("Struct.pack_into presized bytearray")
    for name in ARMS:
        p = per.get(name)
        part.record(f"bulk/{name}", p, statuses[name])
        part.arm_status(f"bulk/{name}", statuses[name])
        table.add(
            name,
            fmt(p),
            per_second(p),
            f"{SIZE * 1e3 / p:,.1f}" if p else "—",
            ratio(p, pack_into),
            statuses[name],
        )
    section = Section(
        "Part B: bulk records",
        "The `struct.pack` vs `to_bytes` vs memoryview lab, plus bytewright.",
        [table],
    )
    if per:
        image = Path("bulk-records.png")
        mbs = {name: SIZE * 1e3 / p for name, p in per.items()}
        plots.bars(out / image, "Bulk records: MB/s (higher is better)", "MB/s", mbs)
        section.images.append(image)
    part.sections.append(section)
    return part
