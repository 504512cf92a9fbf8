"""NumPy: `np.frombuffer` with a structured dtype plus a contiguous copy of each field, and
the structured assembly of records from columns."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import Any

from benchmarks.columns import data
from benchmarks.columns.arm import ColumnArm, same_columns
from benchmarks.harness import DirectCall, Incorrect, need


def _dtype() -> Any:
    return need("numpy").dtype([("a", "<u4"), ("b", "<u2"), ("c", "<u2"), ("d", "<u8")])


def unpack(lab: data.Lab, conf: dict[str, Any]) -> ColumnArm:
    np, dtype = need("numpy"), _dtype()

    def columns(buf: bytes) -> dict[str, Any]:
        records = np.frombuffer(buf, dtype=dtype)
        return {name: records[name].copy() for name in data.LAB_NAMES}

    return ColumnArm(
        DirectCall(columns, lab.data), lambda c: same_columns(c, lab.columns), lab.count
    )


def pack(lab: data.Lab, conf: dict[str, Any]) -> ColumnArm:
    np, dtype = need("numpy"), _dtype()

    def assemble(columns: dict[str, Any]) -> bytes:
        records = np.empty(len(columns["a"]), dtype=dtype)
        for name in data.LAB_NAMES:
            records[name] = columns[name]
        return records.tobytes()

    def check(out: bytes) -> None:
        if out != lab.data:
            raise Incorrect("assembled bytes differ from struct's")

    return ColumnArm(DirectCall(assemble, lab.columns), check, lab.count)


def copy_floor(threads: int) -> Any:
    """The memory floor of a fixed-record decode: the input copied once into a buffer of the
    same size (every byte read once and written once, as the decode reads and writes them),
    split between `threads` threads. NumPy releases the GIL for the copy."""

    def prepare(inp: data.Lab, conf: dict[str, Any]) -> ColumnArm:
        np = need("numpy")
        src = np.frombuffer(inp.data, dtype=np.uint8)
        dst = np.empty_like(src)
        dst[:] = 0  # mapped before timing, as the decode's reused output blocks are
        cut = [len(src) * i // threads for i in range(threads + 1)]
        halves = [(dst[a:b], src[a:b]) for a, b in pairwise(cut)]
        pool = ThreadPoolExecutor(max_workers=threads)
        copyto = np.copyto

        def copy() -> Any:
            if threads == 1:
                copyto(dst, src)
            else:
                for f in [pool.submit(copyto, d, s) for d, s in halves]:
                    f.result()
            return dst

        def check(out: Any) -> None:
            if out.tobytes() != inp.data:
                raise Incorrect("the copy differs from the input")

        return ColumnArm(copy, check, inp.count)

    return prepare


ARMS = {
    "lab unpack": {"numpy frombuffer + column copies": unpack},
    "lab pack": {"numpy structured assembly": pack},
    "threads fixed": {
        "memory floor: one copy, 1 thread (numpy)": copy_floor(1),
        "memory floor: one copy, 2 threads (numpy)": copy_floor(2),
    },
}
