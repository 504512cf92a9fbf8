"""Messages of one size on the strided path: every kernel across cache blocks and thread
parts, and pack_table writing straight into its bytes (with and without padding or bit
groups to zero first), byte for byte as per-row `pack`."""

from __future__ import annotations

import random
import struct
from typing import Any

import bytewright as bw
import pytest
from column_oracles import Lab, per_record, table_rows

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")

# More rows than one cache block (2048) and not a multiple of 64, so thread parts and
# blocks end inside a bitmap byte and mid-column.
ROWS = 5_003


class Mixed(bw.Struct, byteorder="big"):
    magic: bytes = bw.const(b"MX")
    ok: bw.Bool
    tag: bytes = bw.field(len=3)
    small: bw.I24
    version: int = bw.bits(4)
    urgent: bool = bw.flag()
    rest: int = bw.bits(3)
    _: None = bw.pad(2)
    level: bw.F32
    inner: Lab


class Aligned(bw.Struct, byteorder="little", align=8):
    kind: bw.U8
    value: bw.U64
    tail: bw.U16


def mixed(i: int) -> Mixed:
    rng = random.Random(i)
    return Mixed(
        ok=bool(i % 3),
        tag=bytes([i % 256, 7, (i * 5) % 256]),
        small=rng.randrange(-(2**23), 2**23),
        version=i % 16,
        urgent=bool(i % 2),
        rest=i % 8,
        level=float(i) / 4,
        inner=Lab(a=i, b=i % 65536, c=(i * 7) % 65536, d=2**63 + i),
    )


def test_every_kernel_decodes_across_blocks_and_threads() -> None:
    wire = b"".join(mixed(i).pack() for i in range(ROWS))
    want = per_record(Mixed, wire)
    for threads in (1, 2, 3):
        t = Mixed.unpack_table(wire, threads=threads)
        assert table_rows(t) == want


def test_a_bad_row_on_the_strided_path_fails_like_per_record_decoding() -> None:
    wire = bytearray(b"".join(mixed(i).pack() for i in range(ROWS)))
    size = len(wire) // ROWS
    wire[size * 4321 + 2] = 2  # row 4321's bool
    for threads in (1, 2, 3):
        with pytest.raises(bw.DecodeError) as e:
            Mixed.unpack_table(bytes(wire), threads=threads)
        assert e.value.path == "[4321].ok"
        assert e.value.offset == size * 4321 + 2


def test_pack_table_is_per_row_pack_with_padding_bits_and_constants() -> None:
    items = [mixed(i) for i in range(ROWS)]
    wire = b"".join(x.pack() for x in items)
    assert Mixed.pack_table(Mixed.unpack_table(wire)) == wire
    aligned = [Aligned(kind=i % 256, value=i * 3, tail=i % 65536) for i in range(ROWS)]
    wire = b"".join(x.pack() for x in aligned)
    cols = {
        "kind": np.array([x.kind for x in aligned], dtype=np.uint8),
        "value": np.array([x.value for x in aligned], dtype=np.uint64),
        "tail": np.array([x.tail for x in aligned], dtype=np.uint16),
    }
    assert Aligned.pack_table(cols) == wire


def test_pack_table_from_numpy_columns_is_struct_pack() -> None:
    rng = random.Random(7)
    rows = [tuple(rng.getrandbits(b) for b in (32, 16, 16, 64)) for _ in range(ROWS)]
    wire = b"".join(struct.pack("<IHHQ", *r) for r in rows)
    cols: dict[str, Any] = {
        k: np.array(c, dtype=t)
        for k, c, t in zip(
            "abcd", zip(*rows, strict=True), ("<u4", "<u2", "<u2", "<u8"), strict=True
        )
    }
    assert Lab.pack_table(cols) == wire
    # Other widths and byte orders take the checked path, to the same bytes.
    other = {**cols, "b": cols["b"].astype(">i8"), "d": pa.array(cols["d"])}
    assert Lab.pack_table(other) == wire
    assert Lab.pack_table({k: v[:0] for k, v in cols.items()}) == b""


WIDTHS = [
    ("u8", bw.U8, "B"),
    ("i8", bw.I8, "b"),
    ("u16", bw.U16, "H"),
    ("i16", bw.I16, "h"),
    ("u32", bw.U32, "I"),
    ("i32", bw.I32, "i"),
    ("u64", bw.U64, "Q"),
    ("i64", bw.I64, "q"),
]


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("rows", [0, 1, 3, 4, 5, 7, 8, 9, 1_003])
def test_pack_table_moves_every_integer_width_in_either_byte_order(order: str, rows: int) -> None:
    # Exact-type columns are copied straight into their slots, a few rows at a time with
    # the rest one by one: every width, both byte orders, and counts around the batch.
    Cls = bw.make_struct(
        "Widths",
        [(n, t) for n, t, _ in WIDTHS],
        byteorder="little" if order == "<" else "big",
    )
    rng = random.Random(rows)
    names, codes = [n for n, _, _ in WIDTHS], "".join(c for _, _, c in WIDTHS)
    values = [
        tuple(
            rng.randrange(-(1 << (8 * struct.calcsize(c) - 1)), 1 << (8 * struct.calcsize(c) - 1))
            if c.islower()
            else rng.getrandbits(8 * struct.calcsize(c))
            for c in codes
        )
        for _ in range(rows)
    ]
    wire = b"".join(struct.pack(order + codes, *v) for v in values)
    cols = {
        n: np.array([v[i] for v in values], dtype=np.dtype(c).newbyteorder("="))
        for i, (n, c) in enumerate(zip(names, codes, strict=True))
    }
    assert Cls.pack_table(cols) == wire
    assert Cls.pack_table(Cls.unpack_table(wire)) == wire


def test_a_bad_value_after_written_columns_is_a_pack_error() -> None:
    cols: dict[str, Any] = {
        "a": np.arange(ROWS, dtype=np.uint32),
        "b": np.zeros(ROWS, dtype=np.uint16),
        "c": np.zeros(ROWS, dtype=np.int64),
        "d": np.zeros(ROWS, dtype=np.uint64),
    }
    cols["c"][3000] = 70_000  # c is a U16: the columns before it are already written
    with pytest.raises(bw.PackError) as e:
        Lab.pack_table(cols)
    assert e.value.path == "[3000].c"
    cols["c"][3000] = -1
    with pytest.raises(bw.PackError) as e:
        Lab.pack_table(cols)
    assert e.value.path == "[3000].c"
    cols["c"][3000] = 5
    want = b"".join(Lab(a=i, b=0, c=5 if i == 3000 else 0, d=0).pack() for i in range(ROWS))
    assert Lab.pack_table(cols) == want
    buf = bytearray(len(want) + 3)
    assert Lab.pack_table_into(buf, 3, cols) == len(buf)
    assert bytes(buf[3:]) == want


def wide(order: str) -> Any:
    """A record of every plain number width in byte order `order`."""

    class Wide(bw.Struct, byteorder=order):
        a: bw.U8
        b: bw.I16
        c: bw.U32
        d: bw.I64
        e: bw.F32
        f: bw.F64

    return Wide


@pytest.mark.parametrize("cls, order", [(wide("big"), ">"), (wide("little"), "<")])
def test_tables_larger_than_the_caches_decode_exactly(cls: Any, order: str) -> None:
    # Columns of 16 MiB and more are written with streaming stores, 16 bytes at a time:
    # a row count that leaves a tail after the last whole unit of every width, on 1 to 3
    # threads, with and without byte swapping.
    kinds = {"a": "u1", "b": "i2", "c": "u4", "d": "i8", "e": "f4", "f": "f8"}
    dtype = np.dtype([(name, order + kind) for name, kind in kinds.items()])
    rows = (17 << 20) // dtype.itemsize + 13
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, rows * dtype.itemsize, dtype=np.uint8).tobytes()
    want = np.frombuffer(raw, dtype)
    for threads in (1, 2, 3):
        t = cls.unpack_table(raw, threads=threads)
        assert len(t) == rows
        for name in dtype.names:
            got = np.asarray(t[name])
            assert got.dtype == want[name].dtype.newbyteorder("=")
            # Compared as bits: the random floats include NaNs.
            assert got.tobytes() == want[name].astype(got.dtype).tobytes(), (threads, name)
