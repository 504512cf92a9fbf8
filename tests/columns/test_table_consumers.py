"""pyarrow, polars, pandas, DuckDB and NumPy take a bw.Table (and give tables back to pack_table)."""

from __future__ import annotations

import struct
from typing import Any

import bytewright as bw
import pytest

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")


class Tick(bw.Struct, byteorder="little"):
    ts: bw.U64
    price: bw.F64
    qty: bw.I32
    side: bw.U8
    venue: bytes = bw.field(len=4)


class Trade(bw.Struct):
    id: bw.U32
    sym_len: bw.U8
    sym: str = bw.field(len="sym_len")
    n: bw.U8
    fills: list[bw.U16] = bw.field(count="n")
    has_note: bw.U8
    note: bw.U16 = bw.field(when="has_note == 1", default=None)


def ticks(n: int) -> bytes:
    return b"".join(
        struct.pack("<QdiB4s", 1_700_000_000 + i, 100 + i / 8, i - n // 2, i % 2, b"XNAS")
        for i in range(n)
    )


def trades(n: int) -> bytes:
    return b"".join(
        Trade(
            id=i,
            sym="AB"[: i % 3],
            fills=list(range(i % 4)),
            has_note=i % 2,
            note=i if i % 2 else None,
        ).pack()
        for i in range(n)
    )


def test_pyarrow_takes_the_table_without_copying() -> None:
    t = Tick.unpack_table(ticks(1000))
    at = pa.table(t)
    assert at.num_rows == 1000
    assert at.schema.field("price").type == pa.float64()
    # The Arrow buffer pyarrow sees is the one NumPy sees through the buffer protocol.
    arr = np.asarray(t["ts"])
    assert arr.ctypes.data == at.column("ts").chunks[0].buffers()[1].address
    assert not arr.flags.writeable
    assert (arr == np.arange(1_700_000_000, 1_700_001_000, dtype=np.uint64)).all()
    assert memoryview(t["qty"]).format == "i" and memoryview(t["qty"]).nbytes == 4000
    assert pa.schema(t.schema) == at.schema
    assert t.to_arrow().equals(at)


def test_columns_with_nulls_or_bits_copy_into_numpy() -> None:
    t = Trade.unpack_table(trades(10))
    with pytest.raises(BufferError):
        memoryview(t["note"])
    assert list(np.asarray(t["note"])) == [None, 1, None, 3, None, 5, None, 7, None, 9]
    assert list(np.asarray(t["sym"])) == ["", "A", "AB", "", "A", "AB", "", "A", "AB", ""]
    side = np.asarray(Tick.unpack_table(ticks(4))["side"])
    assert side.dtype == np.uint8 and list(side) == [0, 1, 0, 1]


def test_polars_takes_the_table() -> None:
    pl = pytest.importorskip("polars")
    df = pl.DataFrame(Trade.unpack_table(trades(100)))
    assert df.shape == (100, 7)
    assert df.filter(pl.col("has_note") == 1)["note"].to_list() == list(range(1, 100, 2))
    assert df["fills"].to_list()[3] == [0, 1, 2]
    assert Trade.unpack_table(trades(5)).to_polars().equals(df.head(5))
    # And back: polars frames pack to the same bytes.
    assert Trade.pack_table(df) == trades(100)


def test_duckdb_queries_the_table() -> None:
    duckdb = pytest.importorskip("duckdb")
    t = Trade.unpack_table(trades(100))
    rows = [Trade.unpack(Trade(**r).pack()) for r in t.to_pylist()]
    con = duckdb.connect()
    # The table is found by its variable name, through its Arrow PyCapsule stream.
    got = con.sql("select count(*), sum(id), count(note), sum(note) from t").fetchall()[0]
    notes = [r.note for r in rows if r.note is not None]
    assert got == (100, sum(range(100)), len(notes), sum(notes))
    got = con.sql("select id, sym, fills from t where len(fills) = 3 order by id limit 2")
    assert got.fetchall() == [(3, "", [0, 1, 2]), (7, "A", [0, 1, 2])]
    types = con.sql("select typeof(id), typeof(sym), typeof(fills), typeof(note) from t limit 1")
    assert types.fetchall()[0] == ("UINTEGER", "VARCHAR", "USMALLINT[]", "USMALLINT")
    # Or registered under a name; fixed-size bytes arrive as BLOB.
    con.register("ticks", Tick.unpack_table(ticks(10)))
    assert con.sql("select distinct venue, max(qty) from ticks group by venue").fetchall() == [
        (b"XNAS", 4)
    ]


def test_pandas_takes_the_table() -> None:
    pd = pytest.importorskip("pandas")
    t = Tick.unpack_table(ticks(50))
    df = t.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["ts", "price", "qty", "side", "venue"]
    assert df["qty"].dtype == np.int32 and df["qty"].iloc[0] == -25
    arrow_backed = t.to_pandas(types_mapper=pd.ArrowDtype)
    assert str(arrow_backed["ts"].dtype) == "uint64[pyarrow]"
    assert Tick.pack_table(df) == ticks(50)


def test_to_numpy_and_to_pydict() -> None:
    t = Tick.unpack_table(ticks(3))
    cols = t.to_numpy()
    assert set(cols) == {"ts", "price", "qty", "side", "venue"}
    assert list(cols["venue"]) == [b"XNAS"] * 3
    assert t.to_pydict() == pa.table(t).to_pydict()
    assert t.to_pylist() == pa.table(t).to_pylist()
    assert t["price"][1] == 100.125 and t["price"][-1] == 100.25


def test_threaded_tables_are_chunked_and_equal() -> None:
    data = trades(30_000)
    one = Trade.unpack_table(data, threads=1)
    two = Trade.unpack_table(data, threads=2)
    assert one.num_chunks == 1 and two.num_chunks == 2
    assert pa.table(one).equals(pa.table(two))
    assert np.asarray(two["id"]).tolist() == list(range(30_000))


def test_pack_table_from_mappings() -> None:
    n = 100
    data = ticks(n)
    cols: dict[str, Any] = {
        "ts": np.arange(1_700_000_000, 1_700_000_000 + n, dtype=np.uint64),
        "price": [100 + i / 8 for i in range(n)],
        "qty": pa.array([i - n // 2 for i in range(n)], pa.int32()),
        "side": np.array([i % 2 for i in range(n)], dtype=">u2"),  # any width, any order
        "venue": [b"XNAS"] * n,
    }
    assert Tick.pack_table(cols) == data
    buf = bytearray(len(data) + 4)
    assert Tick.pack_table_into(buf, 4, cols) == len(buf)
    assert bytes(buf[4:]) == data
    # Missing derived columns are computed, missing defaults are filled.
    assert Trade.pack_table({"id": [1], "sym": ["XY"], "fills": [[5, 6]], "has_note": [0]}) == (
        Trade(id=1, sym="XY", fills=[5, 6], has_note=0).pack()
    )


def test_pack_table_errors_name_the_column_and_the_row() -> None:
    with pytest.raises(bw.PackError) as e:
        Tick.pack_table(
            {
                "ts": [1, 2],
                "price": [1.0, 2.0],
                "qty": [1, 2**40],
                "side": [0, 0],
                "venue": [b"XNAS", b"XNAS"],
            }
        )
    assert e.value.path == "[1].qty"
    with pytest.raises(bw.PackError) as e:
        Tick.pack_table(
            pa.table(
                {"ts": pa.array(["x"]), "price": [1.0], "qty": [1], "side": [0], "venue": [b"XNAS"]}
            )
        )
    assert e.value.path == "[0].ts" and "integer" in str(e.value)
    with pytest.raises(bw.PackError) as e:
        Tick.pack_table({"ts": [1], "price": [1.0], "qty": [1], "side": [0], "venue": [b"X"]})
    assert e.value.path == "[0].venue"
    with pytest.raises(ValueError, match="column 'qty' has 1 rows"):
        Tick.pack_table({"ts": [1, 2], "qty": [1]})
    with pytest.raises(bw.PackError, match="unknown column 'nope'"):
        Tick.pack_table({"nope": [1]})
    with pytest.raises(TypeError):
        Tick.pack_table(42)
    with pytest.raises(bw.PackError) as e:
        Tick.pack_table({"ts": [1], "price": [1.0], "qty": [1], "side": [0]})
    assert e.value.path == "[0].venue"
