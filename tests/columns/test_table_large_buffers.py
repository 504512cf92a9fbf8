"""Column buffers of 4 MiB and more are mapped by the extension itself, and a freed one is
kept for reuse (docs/columns.md, "Memory"). Tables decoded again and again, on one thread and
on two, into reused memory are the same tables; a buffer that must start zeroed is zeroed
even when the memory it reuses held another table's values; and a buffer grown in place or
moved keeps its bytes."""

from __future__ import annotations

import subprocess
import sys

import bytewright as bw
import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

ROWS = 600_000  # big-endian, the default byte order; an 8-byte column of this many rows is 4.8 MB: a large block


class Extra(bw.Struct):
    a: bw.U64


class Sample(bw.Struct):
    kind: bw.U8
    value: bw.U64
    extra: Extra | None = bw.field(type=Extra, when="kind == 1", default=None)


def wire(kind: int, seed: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 2**63, ROWS, dtype=np.uint64)
    extras = rng.integers(1, 2**63, ROWS, dtype=np.uint64)
    fields = [("kind", "u1"), ("value", ">u8")] + ([("extra", ">u8")] if kind else [])
    rec = np.empty(ROWS, dtype=np.dtype(fields))
    rec["kind"], rec["value"] = kind, values
    if kind:
        rec["extra"] = extras
    return rec.tobytes(), values, extras


@pytest.fixture(scope="module")
def full() -> tuple[bytes, np.ndarray, np.ndarray]:
    return wire(1, 1)


def test_repeated_decodes_into_reused_memory_agree(full: tuple) -> None:
    data, values, extras = full
    first = Sample.unpack_table(data, threads=1).to_arrow()
    assert np.array_equal(first["value"].to_numpy(), values)
    assert np.array_equal(first["extra"].combine_chunks().field("a").to_numpy(), extras)
    for threads in (2, 1, 2, 3):
        again = Sample.unpack_table(data, threads=threads).to_arrow()
        assert again.equals(first)


def test_a_zeroed_buffer_is_zero_in_reused_memory(full: tuple) -> None:
    data, _, _ = full
    for _ in range(3):  # fill the kept blocks with another table's nonzero values
        Sample.unpack_table(data, threads=2).to_arrow()
    bare, values, _ = wire(0, 2)
    table = Sample.unpack_table(bare).to_arrow()
    extra = table["extra"].combine_chunks()
    assert extra.null_count == ROWS
    assert np.array_equal(table["value"].to_numpy(), values)
    # A column no row reached is a slice of one zeroed block (docs/columns.md, "Memory").
    assert not np.frombuffer(extra.field("a").buffers()[1], dtype=np.uint8)[: ROWS * 8].any()


def test_columns_that_grow_past_their_first_block_keep_their_bytes() -> None:
    # Rows past the first estimate make every column grow (in place or by a move).
    parts = [wire(1, 3)[0], wire(0, 4)[0], wire(1, 5)[0]]
    whole = Sample.unpack_table(b"".join(parts)).to_arrow()
    pieces = [Sample.unpack_table(p).to_arrow() for p in parts]
    assert whole.equals(pa.concat_tables(pieces).combine_chunks())
    assert len(whole) == 3 * ROWS


@pytest.mark.parametrize("rows", [150_000, 300_000])
def test_blocks_of_one_to_four_mib_are_reused_and_rezeroed(rows: int) -> None:
    # Columns of 1-4 MiB (one thread's share of a table) come from the same kept blocks:
    # decoded again and again on 1-3 threads they agree, and a zeroed block reused after
    # another table's values is zero.
    rng = np.random.default_rng(rows)
    values = rng.integers(1, 2**63, rows, dtype=np.uint64)
    rec = np.empty(rows, dtype=np.dtype([("kind", "u1"), ("value", ">u8"), ("extra", ">u8")]))
    rec["kind"], rec["value"], rec["extra"] = 1, values, values[::-1]
    data = rec.tobytes()
    first = Sample.unpack_table(data, threads=1).to_arrow()
    assert np.array_equal(first["value"].to_numpy(), values)
    assert np.array_equal(first["extra"].combine_chunks().field("a").to_numpy(), values[::-1])
    for threads in (2, 3, 1, 2):
        assert Sample.unpack_table(data, threads=threads).to_arrow().equals(first)
    bare = np.empty(rows, dtype=np.dtype([("kind", "u1"), ("value", ">u8")]))
    bare["kind"], bare["value"] = 0, values
    table = Sample.unpack_table(bare.tobytes()).to_arrow()
    extra = table["extra"].combine_chunks()
    assert extra.null_count == rows
    assert not np.frombuffer(extra.field("a").buffers()[1], dtype=np.uint8)[: rows * 8].any()


class Note(bw.Struct):
    id: bw.U32
    size: bw.U16
    text: bytes = bw.field(len="size")


def notes(sizes: list[int]) -> tuple[bytes, list[bytes]]:
    texts = [bytes((i + k) & 0xFF for k in range(n)) for i, n in enumerate(sizes)]
    return b"".join(Note(id=i, text=t).pack() for i, t in enumerate(texts)), texts


@pytest.mark.parametrize("long_first", [True, False])
def test_columns_sized_from_unlike_first_rows_hold_every_row(long_first: bool) -> None:
    # Columns are sized from their first rows (docs/columns.md, "Memory"): rows far longer
    # or far shorter than those still decode, equal on every thread count.
    sizes = [200] * 3000 + [i % 4 for i in range(120_000)]
    if not long_first:
        sizes.reverse()
    data, texts = notes(sizes)
    for threads in (1, 2, 3):
        table = Note.unpack_table(data, threads=threads).to_arrow()
        assert table["id"].to_pylist() == list(range(len(sizes)))
        assert table["text"].to_pylist() == texts


# Run in a fresh interpreter, so that no block kept by an earlier test is reused instead.
MARKING = """
import time
import numpy as np
import bytewright as bw


def lazy_free_kib(addr):
    # KiB of the mapping holding addr marked MADV_FREE and not yet taken back.
    with open("/proc/self/smaps", encoding="ascii") as f:
        inside = False
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == "LazyFree:":
                return int(line.split()[1])
    raise SystemExit("no LazyFree in /proc/self/smaps")


class Wide(bw.Struct):
    v: bw.U64


rows = 500_000  # a 4 MB column: two 2 MiB units of a large block
data = np.arange(rows, dtype=">u8").tobytes()
t = Wide.unpack_table(data)
addr = np.asarray(t["v"]).ctypes.data
del t  # the block is kept for the next table
for _ in range(5):
    assert lazy_free_kib(addr) == 0, "a block just freed was marked"
    t = Wide.unpack_table(data)
    assert np.asarray(t["v"]).ctypes.data == addr, "the kept block was not reused"
    assert np.asarray(t["v"])[-1] == rows - 1
    del t
time.sleep(1.2)
# Half as many rows: the block's first 2 MiB unit is taken, and the second, unused for more
# than a second, is marked (its pages were written: they count as lazily free).
half = Wide.unpack_table(data[: len(data) // 2])
assert np.asarray(half["v"]).ctypes.data == addr
assert lazy_free_kib(addr) >= 1024, "a block unused for a second was not marked"
assert np.array_equal(np.asarray(half["v"]), np.arange(rows // 2, dtype=np.uint64))
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the extension maps large blocks on Linux"
)
def test_a_freed_block_reused_at_once_is_not_marked_free_and_one_left_a_second_is() -> None:
    """A kept block is marked MADV_FREE only after waiting unused (docs/columns.md): decoding
    again and again marks nothing, and a block left a second is marked at the next one."""
    run = subprocess.run([sys.executable, "-c", MARKING], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
