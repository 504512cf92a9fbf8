"""Unions nested in unions (an IPv6 extension-header chain) would lay out every order of
their cases as columns; the layout keeps them as columns down to the deepest nesting that
fits its budget, and stores deeper ones as their wire bytes."""

from __future__ import annotations

from typing import Any

import bytewright as bw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

# A column-count bound the layout keeps (crates/columns/src/layout.rs: MAX_NODES).
BUDGET = 1024
HEADERS = ("H1", "H2", "H3", "H4", "H5")


class End(bw.Struct):
    marker: bw.U8


def _cases(own: str) -> dict[int, Any]:
    """Every header but `own` may follow (as IPv6 extension headers follow each other)."""
    return {0: End, **{i + 1: h for i, h in enumerate(HEADERS) if h != own}}


class H1(bw.Struct, byteorder="big"):
    next: bw.U8
    value: bw.U16
    payload: Any = bw.field(tag="next", cases=_cases("H1"))


class H2(bw.Struct, byteorder="big"):
    next: bw.U8
    value: bw.U16
    payload: Any = bw.field(tag="next", cases=_cases("H2"))


class H3(bw.Struct, byteorder="big"):
    next: bw.U8
    value: bw.U16
    payload: Any = bw.field(tag="next", cases=_cases("H3"))


class H4(bw.Struct, byteorder="big"):
    next: bw.U8
    value: bw.U16
    payload: Any = bw.field(tag="next", cases=_cases("H4"))


class H5(bw.Struct, byteorder="big"):
    next: bw.U8
    value: bw.U16
    payload: Any = bw.field(tag="next", cases=_cases("H5"))


class Packet(bw.Struct, byteorder="big"):
    first: bw.U8
    payload: Any = bw.field(tag="first", cases=_cases(""))


CLASSES = {"H1": H1, "H2": H2, "H3": H3, "H4": H4, "H5": H5}


def chain(order: list[str], marker: int) -> Packet:
    """A packet whose headers come in `order`, then End."""
    inner: Any = End(marker=marker)
    for k, name in reversed(list(enumerate(order))):
        nxt = HEADERS.index(order[k + 1]) + 1 if k + 1 < len(order) else 0
        inner = CLASSES[name](next=nxt, value=100 * k + len(order), payload=inner)
    return Packet(first=HEADERS.index(order[0]) + 1 if order else 0, payload=inner)


def fields(t: pa.DataType) -> int:
    """Every field of a type, nested ones included."""
    if pa.types.is_struct(t):
        return sum(1 + fields(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return 1 + fields(t.value_type)
    return 0


ORDERS = [[], ["H1"], ["H2", "H1"], ["H1", "H2", "H3"], ["H5", "H4", "H3", "H2", "H1"]]


def test_the_layout_fits_its_budget() -> None:
    schema = Packet.unpack_table(chain(["H1"], 1).pack()).to_arrow().schema
    assert sum(1 + fields(f.type) for f in schema) <= BUDGET


def test_deep_unions_hold_their_wire_bytes_and_shallow_ones_their_columns() -> None:
    packets = [chain(order, i) for i, order in enumerate(ORDERS)]
    wire = b"".join(p.pack() for p in packets)
    rows = Packet.unpack_table(wire).to_pylist()
    cut_depths = set()
    for row, packet in zip(rows, packets, strict=True):
        wire_one = packet.pack()
        node: Any = row["payload"]
        value: Any = packet.payload
        at = 1  # after `first`
        depth = 0
        while isinstance(node, dict):
            name = node["variant"]
            assert name == type(value).__name__
            node = node[name]
            if name == "End":
                assert node == {"marker": value.marker}
                break
            assert (node["next"], node["value"]) == (value.next, value.value)
            node, value, at, depth = node["payload"], value.payload, at + 3, depth + 1
        else:
            # Cut here: the union's value as its own wire bytes.
            assert node == wire_one[at:]
            cut_depths.add(depth)
    # The long chain is cut, at one depth for every row; the short ones are columns.
    assert len(cut_depths) == 1 and 1 <= min(cut_depths) < 5


def test_a_table_with_cut_unions_packs_back_byte_for_byte() -> None:
    wire = b"".join(chain(order, i).pack() for i, order in enumerate(ORDERS))
    assert Packet.pack_table(Packet.unpack_table(wire)) == wire


# Unions in every position a column can be: nested in a union, conditional, in a
# fixed-size list and in a variable list. A row fills only the columns of the variants it
# holds; the others get their nulls in bulk later, and the table must be the same.


class Leaf(bw.Struct):
    x: bw.U16


class Pair(bw.Struct):
    a: bw.U8
    b: bw.I32


class Inner(bw.Struct):
    kind: bw.U8
    body: Any = bw.field(tag="kind", cases={1: Leaf, 2: Pair, 3: bw.U32})


class Row(bw.Struct):
    kind: bw.U8
    body: Any = bw.field(tag="kind", cases={1: Leaf, 2: Inner})
    has: bw.U8
    maybe: Inner | None = bw.field(type=Inner, when="has == 1", default=None)
    fixed: list[Inner] = bw.field(count=2)
    n: bw.U8 = bw.derived()
    items: list[Inner] = bw.field(count="n")


INNER_NAMES = {1: "Leaf", 2: "Pair", 3: "3"}


def inner_form(v: Inner) -> dict[str, Any]:
    body = v.body if v.kind == 3 else {f: getattr(v.body, f) for f in type(v.body).__annotations__}
    chosen = INNER_NAMES[v.kind]
    return {
        "kind": v.kind,
        "body": {
            "variant": chosen,
            **{n: body if n == chosen else None for n in INNER_NAMES.values()},
        },
    }


def row_form(r: Row) -> dict[str, Any]:
    if r.kind == 1:
        body = {"variant": "Leaf", "Leaf": {"x": r.body.x}, "Inner": None}
    else:
        body = {"variant": "Inner", "Leaf": None, "Inner": inner_form(r.body)}
    return {
        "kind": r.kind,
        "body": body,
        "has": r.has,
        "maybe": inner_form(r.maybe) if r.maybe is not None else None,
        "fixed": [inner_form(v) for v in r.fixed],
        "n": len(r.items),
        "items": [inner_form(v) for v in r.items],
    }


inners = st.one_of(
    st.builds(lambda x: Inner(kind=1, body=Leaf(x=x)), st.integers(0, 65535)),
    st.builds(
        lambda a, b: Inner(kind=2, body=Pair(a=a, b=b)),
        st.integers(0, 255),
        st.integers(-(2**31), 2**31 - 1),
    ),
    st.builds(lambda u: Inner(kind=3, body=u), st.integers(0, 2**32 - 1)),
)
rows_st = st.builds(
    lambda leaf, body, maybe, fixed, items: Row(
        kind=1 if leaf is not None else 2,
        body=Leaf(x=leaf) if leaf is not None else body,
        has=int(maybe is not None),
        maybe=maybe,
        fixed=fixed,
        items=items,
    ),
    st.one_of(st.none(), st.integers(0, 65535)),
    inners,
    st.one_of(st.none(), inners),
    st.lists(inners, min_size=2, max_size=2),
    st.lists(inners, max_size=4),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rows_st, max_size=12))
def test_unions_anywhere_give_the_per_row_table(rows: list[Row]) -> None:
    wire = b"".join(r.pack() for r in rows)
    t = Row.unpack_table(wire)
    assert len(t) == len(rows)
    assert pa.table(t).to_pylist() == [row_form(r) for r in rows]
    assert Row.pack_table(t) == wire
