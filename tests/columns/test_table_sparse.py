"""Union variants and conditional structs hold values only for the rows that reach them:
tables of nested unions, unions in lists and conditional structs and fixed-size lists give
every row exactly what decoding that message alone gives, for every thread count and
chunking, and pack back to the same bytes."""

from __future__ import annotations

from typing import Any

import bytewright as bw
import pytest
from column_oracles import table_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")


class Leaf(bw.Struct, byteorder="big"):
    a: bw.U16
    b: bw.I8


class Pair(bw.Struct, byteorder="big"):
    x: bw.U8
    body: Any = bw.field(tag="x", cases={1: Leaf, 2: bw.U32}, default_case=bw.Bytes(len=1))


class Inner(bw.Struct, byteorder="big"):
    k: bw.U8
    u: Any = bw.field(tag="k", cases={1: Pair, 2: Leaf}, default_case=bw.Bytes(len=2))
    n: bw.U8 = bw.derived()
    items: list[Pair] = bw.field(count="n")


class Top(bw.Struct, byteorder="big"):
    on: bw.U8
    opt: Inner = bw.field(when="on == 1", default=None)
    fl_on: bw.U8
    fixed: list[Leaf] = bw.field(count=2, when="fl_on == 1", default=None)
    t: bw.U8
    top: Any = bw.field(tag="t", cases={1: Inner, 2: Leaf}, default_case=bw.Bytes(len=1))
    tail: bw.U16


leaves = st.builds(Leaf, a=st.integers(0, 65535), b=st.integers(-128, 127))


@st.composite
def pairs(draw: Any) -> Pair:
    x = draw(st.sampled_from([1, 2, 7]))
    body = {1: leaves, 2: st.integers(0, 2**32 - 1), 7: st.binary(min_size=1, max_size=1)}[x]
    return Pair(x=x, body=draw(body))


@st.composite
def inners(draw: Any) -> Inner:
    k = draw(st.sampled_from([1, 2, 9]))
    u = {1: pairs(), 2: leaves, 9: st.binary(min_size=2, max_size=2)}[k]
    return Inner(k=k, u=draw(u), items=draw(st.lists(pairs(), max_size=3)))


@st.composite
def tops(draw: Any) -> Top:
    on, fl_on = draw(st.sampled_from([0, 1])), draw(st.sampled_from([0, 1]))
    t = draw(st.sampled_from([1, 2, 5]))
    top = {1: inners(), 2: leaves, 5: st.binary(min_size=1, max_size=1)}[t]
    return Top(
        on=on,
        opt=draw(inners()) if on == 1 else None,
        fl_on=fl_on,
        fixed=draw(st.lists(leaves, min_size=2, max_size=2)) if fl_on == 1 else None,
        t=t,
        top=draw(top),
        tail=draw(st.integers(0, 65535)),
    )


def alone(wire: bytes) -> list[dict[str, Any]]:
    """Each message's row, from a table of that message alone."""
    out: list[dict[str, Any]] = []
    pos = 0
    while pos < len(wire):
        _, end = Top.unpack_from(wire, pos)
        out.extend(table_rows(Top.unpack_table(wire[pos:end])))
        pos = end
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tops(), max_size=30), st.data())
def test_sparse_columns_place_every_value_in_its_row(items: list[Top], data: Any) -> None:
    wire = b"".join(x.pack() for x in items)
    want = alone(wire)
    assert len(want) == len(items)
    t = Top.unpack_table(wire)
    assert table_rows(t) == want
    assert Top.pack_table(t) == wire
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
    rows = data.draw(st.integers(1, 5))
    got: list[dict[str, Any]] = []
    for part in Top.iter_tables(chunks, rows=rows):
        got.extend(table_rows(part))
    assert got == want


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tops(), min_size=1, max_size=20))
def test_sparse_columns_agree_across_threads(items: list[Top]) -> None:
    one = b"".join(x.pack() for x in items)
    # Large enough (over 64 KiB per thread) for the threads to split it.
    wire = one * (300_000 // len(one) + 1)
    want = pa.table(Top.unpack_table(wire, threads=1))
    for threads in (2, 3):
        assert pa.table(Top.unpack_table(wire, threads=threads)).equals(want)
    head = want.slice(0, len(items)).to_pylist()
    assert head == alone(one)


def test_absent_variants_and_fields_are_null_all_the_way_down() -> None:
    rows = [
        Top(
            on=0,
            fl_on=1,
            fixed=[Leaf(a=1, b=-1), Leaf(a=2, b=-2)],
            t=2,
            top=Leaf(a=3, b=3),
            tail=9,
        ),
        Top(
            on=1,
            opt=Inner(k=1, u=Pair(x=2, body=7), items=[Pair(x=1, body=Leaf(a=4, b=4))]),
            fl_on=0,
            t=5,
            top=b"z",
            tail=8,
        ),
    ]
    t = pa.table(Top.unpack_table(b"".join(r.pack() for r in rows)))
    opt = t.column("opt").combine_chunks()
    assert opt.is_null().to_pylist() == [True, False]
    u = opt.field("u")
    assert u.is_null().to_pylist() == [True, False]
    assert u.field("Pair").is_null().to_pylist() == [True, False]
    assert u.field("Pair").field("body").field("2").to_pylist() == [None, 7]
    assert u.field("Leaf").is_null().to_pylist() == [True, True]
    fixed = t.column("fixed").combine_chunks()
    assert fixed.is_null().to_pylist() == [False, True]
    assert fixed.values.field("a").to_pylist() == [1, 2, None, None]
    top = t.column("top").combine_chunks()
    assert top.field("variant").to_pylist() == ["Leaf", "default"]
    assert top.field("Inner").field("items").to_pylist() == [None, None]
    assert top.field("default").to_pylist() == [None, b"z"]
    assert t.column("tail").to_pylist() == [9, 8]
