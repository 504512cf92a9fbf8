"""Every vocabulary item becomes the column docs/columns.md says, holding what per-record
unpack gives (read back through pyarrow)."""

from __future__ import annotations

import enum
import struct
from typing import Any

import bytewright as bw
import pytest
from column_oracles import per_record, table_rows

pa = pytest.importorskip("pyarrow")


def roundtrip(cls: Any, values: list[Any], threads: int = 1) -> tuple[bw.Table, bytes]:
    wire = b"".join(cls(**v).pack() if isinstance(v, dict) else v.pack() for v in values)
    t = cls.unpack_table(wire, threads=threads)
    assert cls.pack_table(t) == wire
    assert cls.pack_table(pa.table(t)) == wire
    return t, wire


def test_scalars_keep_width_and_signedness() -> None:
    class S(bw.Struct, byteorder="little"):
        u8: bw.U8
        u16: bw.U16
        u24: bw.U24
        u32: bw.U32
        u64: bw.U64
        i8: bw.I8
        i16: bw.I16
        i24: bw.I24
        i32: bw.I32
        i64: bw.I64
        f16: bw.F16
        f32: bw.F32
        f64: bw.F64
        ok: bw.Bool

    vals = [
        S(
            u8=255,
            u16=65535,
            u24=2**24 - 1,
            u32=2**32 - 1,
            u64=2**64 - 1,
            i8=-128,
            i16=-(2**15),
            i24=-(2**23),
            i32=-(2**31),
            i64=-(2**63),
            f16=1.5,
            f32=0.25,
            f64=-1e300,
            ok=True,
        ),
        S(
            u8=0,
            u16=1,
            u24=2,
            u32=3,
            u64=4,
            i8=5,
            i16=6,
            i24=7,
            i32=8,
            i64=9,
            f16=-0.0,
            f32=3.5,
            f64=float("inf"),
            ok=False,
        ),
    ]
    t, wire = roundtrip(S, vals)
    types = pa.table(t).schema
    assert [str(types.field(n).type) for n in types.names] == [
        "uint8",
        "uint16",
        "uint32",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "int32",
        "int32",
        "int64",
        "halffloat",
        "float",
        "double",
        "bool",
    ]
    assert table_rows(t) == per_record(S, wire)


def test_bit_fields_flags_and_varints_become_the_smallest_ints() -> None:
    class Flags(enum.IntFlag):
        A = 1
        B = 2

    class B(bw.Struct):
        hi: int = bw.bits(3)
        neg: int = bw.bits(5, signed=True)
        f: bool = bw.flag()
        wide: int = bw.bits(15)
        big: int = bw.bits(40)
        v: int = bw.field(type=bw.VarUInt)
        z: int = bw.field(type=bw.VarInt)
        fl: Flags = bw.enum(bw.U8)

    vals = [
        B(hi=5, neg=-3, f=True, wide=12345, big=2**40 - 1, v=300, z=-5, fl=Flags.A | Flags.B),
        B(hi=0, neg=15, f=False, wide=0, big=7, v=0, z=2**40, fl=Flags(0)),
    ]
    t, wire = roundtrip(B, vals)
    schema = pa.table(t).schema
    assert str(schema.field("hi").type) == "uint8"
    assert str(schema.field("neg").type) == "int8"
    assert str(schema.field("f").type) == "bool"
    assert str(schema.field("wide").type) == "uint16"
    assert str(schema.field("big").type) == "uint64"
    assert str(schema.field("v").type) == "uint64"
    assert str(schema.field("z").type) == "int64"
    assert str(schema.field("fl").type) == "uint8"
    assert table_rows(t) == per_record(B, wire)


def test_bytes_text_and_cstrings() -> None:
    class T(bw.Struct):
        fixed: bytes = bw.field(len=3)
        n: bw.U8
        var: bytes = bw.field(len="n")
        m: bw.U8
        text: str = bw.field(len="m")
        k: bw.U8
        latin: str = bw.field(len="k", encoding="latin-1")
        c: str = bw.field(nul_terminated=True, max_len=20, encoding="ascii")

    vals = [
        T(fixed=b"abc", var=b"\x00\xff", text="héllo ✓", latin="ÿé", c="zz"),
        T(fixed=b"\x00\x00\x00", var=b"", text="", latin="", c=""),
    ]
    t, wire = roundtrip(T, vals)
    schema = pa.table(t).schema
    assert str(schema.field("fixed").type) == "fixed_size_binary[3]"
    assert str(schema.field("var").type) == "binary"
    assert str(schema.field("text").type) == "string"
    assert str(schema.field("latin").type) == "string"
    assert str(schema.field("c").type) == "string"
    assert table_rows(t) == per_record(T, wire)


def test_nested_structs_arrays_and_fixed_count_lists() -> None:
    class P(bw.Struct):
        x: bw.I16
        y: bw.I16

    class N(bw.Struct):
        p: P
        pts_n: bw.U8
        pts: list[P] = bw.field(count="pts_n")
        three: list[bw.U8] = bw.field(count=3)
        grid_n: bw.U8
        grid: list[list[bw.U16]] = bw.field(count="grid_n", item=bw.Array(bw.U16, count=2))

    vals = [
        N(
            p=P(x=1, y=-1),
            pts=[P(x=i, y=-i) for i in range(4)],
            three=[1, 2, 3],
            grid=[[1, 2], [3, 4]],
        ),
        N(p=P(x=0, y=0), pts=[], three=[0, 0, 9], grid=[]),
    ]
    t, wire = roundtrip(N, vals)
    schema = pa.table(t).schema
    assert str(schema.field("p").type) == "struct<x: int16 not null, y: int16 not null>"
    assert str(schema.field("pts").type).startswith("list<item: struct<")
    assert str(schema.field("three").type) == "fixed_size_list<item: uint8 not null>[3]"
    assert str(schema.field("grid").type).startswith("list<item: fixed_size_list<")
    assert table_rows(t) == per_record(N, wire)


def test_conditional_fields_are_nullable() -> None:
    class C(bw.Struct):
        kind: bw.U8
        extra: bw.U32 = bw.field(when="kind == 1", default=None)
        inner_n: bw.U8 = bw.field(when="kind == 2", default=None)

    vals = [C(kind=1, extra=7), C(kind=2, inner_n=3), C(kind=0)]
    t, wire = roundtrip(C, vals)
    schema = pa.table(t).schema
    assert schema.field("extra").nullable and not schema.field("kind").nullable
    rows = table_rows(t)
    assert [r["extra"] for r in rows] == [7, None, None]
    assert rows == per_record(C, wire)


def union_oracle(
    record: dict[str, Any], field: str, variant: str, names: list[str]
) -> dict[str, Any]:
    """A per-record dict with its union field in the table's form: the variant's name plus
    one entry per variant, only the chosen one set."""
    out = dict(record)
    v = out[field]
    out[field] = {"variant": variant, **{n: (v if n == variant else None) for n in names}}
    return out


def test_tagged_unions_become_a_struct_of_variants() -> None:
    class A(bw.Struct):
        a: bw.U16

    class U(bw.Struct):
        tag: bw.U8
        body: Any = bw.field(
            tag="tag", cases={1: A, 2: bw.U32, 3: bw.Bytes(len=2)}, default_case=bw.Bytes(len=1)
        )

    vals = [U(tag=1, body=A(a=5)), U(tag=2, body=70000), U(tag=3, body=b"hi"), U(tag=9, body=b"x")]
    t, wire = roundtrip(U, vals)
    body = pa.table(t).schema.field("body").type
    assert [body.field(i).name for i in range(body.num_fields)] == [
        "variant",
        "A",
        "2",
        "3",
        "default",
    ]
    assert str(body.field(0).type) == "dictionary<values=string, indices=int8, ordered=0>"
    names = ["A", "2", "3", "default"]
    want = [
        union_oracle(r, "body", v, names)
        for r, v in zip(per_record(U, wire), ["A", "2", "3", "default"], strict=True)
    ]
    assert table_rows(t) == want


def test_registries_become_a_struct_of_variants() -> None:
    class Shape(bw.Struct, registry="kind"):
        kind: bw.U8

    class Circle(Shape, tag=1):
        r: bw.U16

    class Rect(Shape, tag=2):
        w: bw.U16
        h: bw.U16

    class Scene(bw.Struct):
        n: bw.U8
        shapes: list[Shape] = bw.field(count="n")

    vals = [Scene(shapes=[Circle(r=3), Rect(w=1, h=2), Circle(r=9)]), Scene(shapes=[])]
    t, _ = roundtrip(Scene, vals)
    rows = table_rows(t)
    first = rows[0]["shapes"]
    assert [s["variant"] for s in first] == ["Circle", "Rect", "Circle"]
    assert first[1]["Rect"] == {"kind": 2, "w": 1, "h": 2} and first[1]["Circle"] is None
    # A registry base as the table's root: the columns are the variant and the variants.
    wire2 = Circle(r=1).pack() + Rect(w=2, h=3).pack()
    t2 = Shape.unpack_table(wire2)
    assert t2.column_names == ["variant", "Circle", "Rect"]
    assert t2["variant"].to_pylist() == ["Circle", "Rect"]


def test_recursive_types_are_their_wire_bytes() -> None:
    class Node(bw.Struct):
        value: bw.U8
        n: bw.U8
        kids: list[Node] = bw.field(count="n")

    leaf = Node(value=2, kids=[])
    tree = Node(value=1, kids=[leaf, Node(value=3, kids=[leaf])])
    t, _ = roundtrip(Node, [tree, leaf])
    schema = pa.table(t).schema
    assert str(schema.field("kids").type) == "list<item: binary not null>"
    kids = t["kids"].to_pylist()
    assert kids[0] == [leaf.pack(), Node(value=3, kids=[leaf]).pack()]
    assert [Node.unpack(k) for k in kids[0]] == tree.kids


def test_self_describing_and_dns_name_kinds() -> None:
    class K(bw.Struct):
        meta: Any = bw.field(type=bw.types.Msgpack())
        name: str = bw.field(type=bw.DnsName())

    vals = [K(meta={"a": [1, 2.5, None]}, name="www.example.com."), K(meta=7, name=".")]
    t, _ = roundtrip(K, vals)
    schema = pa.table(t).schema
    assert str(schema.field("meta").type) == "binary"
    assert str(schema.field("name").type) == "string"
    import msgpack  # type: ignore[import-untyped]

    assert [msgpack.unpackb(m) for m in t["meta"].to_pylist()] == [{"a": [1, 2.5, None]}, 7]
    assert t["name"].to_pylist() == ["www.example.com.", "."]


def test_derived_constant_padding_alignment_and_checksums() -> None:
    class D(bw.Struct, byteorder="big"):
        magic: bw.U16 = bw.const(0xCAFE)
        _pad: None = bw.pad(2)
        length: bw.U16 = bw.derived()
        body: bytes = bw.field(len="length")
        tail: bw.U32 = bw.field(align=4, default=0)
        crc: bw.U32 = bw.checksum("crc32")

    vals = [D(body=b"abc", tail=1), D(body=b"", tail=2)]
    t, wire = roundtrip(D, vals)
    assert t.column_names == ["magic", "length", "body", "tail", "crc"]
    rows = table_rows(t)
    assert [r["length"] for r in rows] == [3, 0]
    assert rows == per_record(D, wire)


def test_windows_and_the_readme_envelope() -> None:
    class R(bw.Struct):
        n: bw.U8
        payload: bytes = bw.field(len="n")

    class F(bw.Struct):
        count: bw.U16
        records: list[R] = bw.field(count="count")

    class E(bw.Struct, byteorder="big"):
        size: bw.U32
        frame: F = bw.field(size="size")

    vals = [E(frame=F(records=[R(payload=bytes(i)) for i in range(k)])) for k in range(6)]
    t, wire = roundtrip(E, vals)
    assert table_rows(t) == per_record(E, wire)


def test_fixed_records_match_struct_and_numpy() -> None:
    np = pytest.importorskip("numpy")

    class L(bw.Struct, byteorder="little"):
        a: bw.U32
        b: bw.U16
        c: bw.I16
        d: bw.U64

    n = 5000
    wire = b"".join(struct.pack("<IHhQ", i, i % 65536, -(i % 30000), i * 7) for i in range(n))
    t = L.unpack_table(wire, threads=2)
    dt = np.dtype([("a", "<u4"), ("b", "<u2"), ("c", "<i2"), ("d", "<u8")])
    ref = np.frombuffer(wire, dtype=dt)
    for name in "abcd":
        col = np.asarray(t[name])
        assert col.dtype == ref[name].dtype and (col == ref[name]).all()
    assert L.pack_table({n: ref[n] for n in "abcd"}) == wire


def test_enum_names_on_request_everywhere_they_nest() -> None:
    class Color(enum.IntEnum):
        RED = 1
        BLUE = 2

    class Mode(enum.IntFlag):
        A = 1
        B = 2

    class Pixel(bw.Struct):
        color: Color = bw.enum(bw.U8)
        mode: Mode = bw.enum(bw.U8)

    class Image(bw.Struct):
        first: Pixel
        n: bw.U8 = bw.derived()
        pixels: list[Pixel] = bw.field(count="n")
        flag: bw.U8
        extra: Color = bw.enum(bw.U8, when="flag == 1", default=None)

    imgs = [
        Image(
            first=Pixel(color=Color.RED, mode=Mode.A),
            pixels=[Pixel(color=2, mode=3)],
            flag=1,
            extra=Color.BLUE,
        ),
        Image(first=Pixel(color=9, mode=4), pixels=[], flag=0),
    ]
    wire = b"".join(x.pack() for x in imgs)
    named = Image.unpack_table(wire, enum_names=True)
    rows = table_rows(named)
    assert rows[0]["first"] == {"color": "RED", "mode": "A"}
    assert rows[0]["pixels"] == [{"color": "BLUE", "mode": "A|B"}]
    assert rows[1]["first"] == {"color": "9", "mode": "4"}
    assert [r["extra"] for r in rows] == ["BLUE", None]
    assert (
        str(pa.table(named).schema.field("extra").type)
        == "dictionary<values=string, indices=int32, ordered=0>"
    )
    chunks = [wire[:3], wire[3:]]
    assert [
        r for t in Image.iter_tables(chunks, rows=1, enum_names=True) for r in table_rows(t)
    ] == rows
    plain = table_rows(Image.unpack_table(wire))
    assert plain[0]["first"] == {"color": 1, "mode": 1}
