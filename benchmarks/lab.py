"""Part B: bulk records, the `struct` lab: 200,000 `<IHHQ` records packed from tuples."""

# No `from __future__ import annotations`: the bytewright record class is defined inside a
# function, and its annotations must be evaluated eagerly against local names.

import random
import struct
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.arms import Unavailable, describe
from benchmarks.plots import plot_bars
from benchmarks.profiles import Profile
from benchmarks.progress import Reporter
from benchmarks.results import PartResult, Section
from benchmarks.sampling import measure_many
from benchmarks.tables import Table, fmt_ns, fmt_rate, fmt_ratio

FORMAT = "<IHHQ"
RECORD_SIZE = struct.calcsize(FORMAT)  # 16
SEED = 20261001

Record = tuple[int, int, int, int]
Packer = Callable[[list[Record]], Any]

# The arms that use only the standard library: the bulk target compares against the fastest.
STDLIB_ARMS = (
    "struct.pack + join",
    "Struct.pack + join",
    "Struct.pack_into presized bytearray",
    "int.to_bytes x4 + join",
    "int.to_bytes via memoryview",
    "manual shifts into bytearray",
)
BULK_ARM = "bytewright pack_many (bulk)"


def make_records(n: int) -> list[Record]:
    rng = random.Random(SEED)
    return [
        (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(64))
        for _ in range(n)
    ]


def struct_pack_join(items: list[Record]) -> bytes:
    pack = struct.pack
    return b"".join([pack(FORMAT, *t) for t in items])


def struct_obj_pack_join(items: list[Record]) -> bytes:
    pack = struct.Struct(FORMAT).pack
    return b"".join([pack(*t) for t in items])


def struct_pack_into(items: list[Record]) -> bytearray:
    s = struct.Struct(FORMAT)
    pack_into, size = s.pack_into, s.size
    buf = bytearray(size * len(items))
    off = 0
    for t in items:
        pack_into(buf, off, *t)
        off += size
    return buf


def to_bytes_join(items: list[Record]) -> bytes:
    parts: list[bytes] = []
    append = parts.append
    for a, b, c, d in items:
        append(a.to_bytes(4, "little"))
        append(b.to_bytes(2, "little"))
        append(c.to_bytes(2, "little"))
        append(d.to_bytes(8, "little"))
    return b"".join(parts)


def to_bytes_memoryview(items: list[Record]) -> bytearray:
    buf = bytearray(RECORD_SIZE * len(items))
    mv = memoryview(buf)
    off = 0
    for a, b, c, d in items:
        mv[off : off + 4] = a.to_bytes(4, "little")
        mv[off + 4 : off + 6] = b.to_bytes(2, "little")
        mv[off + 6 : off + 8] = c.to_bytes(2, "little")
        mv[off + 8 : off + 16] = d.to_bytes(8, "little")
        off += 16
    mv.release()
    return buf


def manual_shifts(items: list[Record]) -> bytearray:
    buf = bytearray(RECORD_SIZE * len(items))
    o = 0
    for a, b, c, d in items:
        buf[o] = a & 0xFF
        buf[o + 1] = (a >> 8) & 0xFF
        buf[o + 2] = (a >> 16) & 0xFF
        buf[o + 3] = (a >> 24) & 0xFF
        buf[o + 4] = b & 0xFF
        buf[o + 5] = (b >> 8) & 0xFF
        buf[o + 6] = c & 0xFF
        buf[o + 7] = (c >> 8) & 0xFF
        for k in range(8):
            buf[o + 8 + k] = (d >> (8 * k)) & 0xFF
        o += 16
    return buf


def numpy_arm() -> Packer:
    import numpy as np

    dtype = np.dtype([("a", "<u4"), ("b", "<u2"), ("c", "<u2"), ("d", "<u8")])
    return lambda items: np.array(items, dtype=dtype).tobytes()


def bytewright_record() -> Any:
    import bytewright as bw

    class LabRecord(bw.Struct, byteorder="little"):
        a: bw.U32
        b: bw.U16
        c: bw.U16
        d: bw.U64

    return LabRecord


def bytewright_codec_arm() -> Packer:
    import bytewright as bw

    pack = bw.compile(bytewright_record()).pack

    def run(items: list[Record]) -> bytes:
        return b"".join([pack({"a": a, "b": b, "c": c, "d": d}) for a, b, c, d in items])

    return run


def bytewright_typed_arm() -> Packer:
    cls = bytewright_record()

    def run(items: list[Record]) -> bytes:
        return b"".join([cls(a=a, b=b, c=c, d=d).pack() for a, b, c, d in items])

    return run


def bytewright_bulk_arm() -> Packer:
    cls = bytewright_record()
    if not hasattr(cls, "pack_many"):
        raise Unavailable("not available yet: no pack_many (arrives with the wire part 2 issue)")
    return cls.pack_many


def arms() -> list[tuple[str, Callable[[], Packer]]]:
    """(name, factory): a factory raises when its library or API is missing."""
    return [
        ("struct.pack + join", lambda: struct_pack_join),
        ("Struct.pack + join", lambda: struct_obj_pack_join),
        ("Struct.pack_into presized bytearray", lambda: struct_pack_into),
        ("int.to_bytes x4 + join", lambda: to_bytes_join),
        ("int.to_bytes via memoryview", lambda: to_bytes_memoryview),
        ("manual shifts into bytearray", lambda: manual_shifts),
        ("numpy structured array from list", numpy_arm),
        ("bytewright codec.pack per record + join", bytewright_codec_arm),
        ("bytewright Struct.pack per record + join", bytewright_typed_arm),
        (BULK_ARM, bytewright_bulk_arm),
    ]


def run_lab(profile: Profile, results_dir: Path, reporter: Reporter) -> PartResult:
    n = profile.lab_records
    items = make_records(n)
    reference = struct_pack_join(items)
    result = PartResult("lab")
    table = Table(
        f"Bulk records: {n:,} `{FORMAT}` records ({RECORD_SIZE} bytes) from a list of tuples",
        ["Arm", "ns/record", "records/s", "MB/s", "÷ Struct.pack_into", "Status"],
        note="MB = 10^6 bytes, as the lab page. Every arm's output equals struct.pack + join.",
    )
    measured: dict[str, float] = {}
    statuses: dict[str, str] = {}
    fns: dict[str, Callable[[], object]] = {}
    arm_list = arms()
    reporter.start("Part B: bulk records", 2 * len(arm_list))
    for name, factory in arm_list:
        reporter.step(name)
        try:
            packer = factory()
        except Exception as exc:
            statuses[name] = f"unavailable: {describe(exc)}"
            result.unavailable.append(f"lab/{name}: {describe(exc)}")
            result.missing[("lab", name)] = statuses[name]
            reporter.advance()
            continue
        try:
            out = packer(items)
            ok = bytes(out) == reference
            problem = "" if ok else f"{len(out)} bytes differ from struct.pack + join"
        except Exception as exc:
            problem = f"raised {describe(exc)}"
        if problem:
            statuses[name] = f"incorrect: {problem}"
            result.incorrect.append(f"lab/{name}: {problem}")
            result.missing[("lab", name)] = statuses[name]
        else:
            fns[name] = partial(packer, items)
            statuses[name] = "ok"
        reporter.advance()
    # Every correct arm is timed together, rounds interleaved across arms.
    reporter.step("timing every correct arm")
    for name, ns in measure_many(fns, profile.sampling).items():
        measured[name] = ns / n
        result.metrics[("lab", name)] = measured[name]
    reporter.advance(len(arm_list))
    reporter.finish()
    pack_into = measured.get("Struct.pack_into presized bytearray")
    for name, _ in arm_list:
        ns = measured.get(name)
        table.add(
            name,
            fmt_ns(ns),
            fmt_rate(1e9 / ns if ns else None, "rec/s"),
            f"{RECORD_SIZE * 1e3 / ns:,.1f}" if ns else "—",
            fmt_ratio(ns / pack_into if ns and pack_into else None),
            statuses[name],
        )
    section = Section(
        "Part B: bulk records",
        intro="Reproduces the `struct.pack` vs `to_bytes` vs memoryview lab, plus bytewright.",
        tables=[table],
    )
    if measured:
        image = Path("lab-bulk-records.png")
        mbs = {name: RECORD_SIZE * 1e3 / ns for name, ns in measured.items()}
        plot_bars(results_dir / image, "Bulk records: MB/s (higher is better)", "MB/s", mbs)
        section.images.append(image)
    result.sections.append(section)
    return result
