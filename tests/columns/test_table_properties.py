"""Random schemas and values: tables equal per-record unpack for every thread count and
chunking, pack_table inverts unpack_table, and bad input fails exactly as per-record
decoding fails."""

from __future__ import annotations

import io
from typing import Any

import bytewright as bw
import pytest
from column_oracles import decode_error, per_record, table_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

SCALARS: dict[str, tuple[Any, Any]] = {
    "U8": (bw.U8, st.integers(0, 255)),
    "I16": (bw.I16, st.integers(-(2**15), 2**15 - 1)),
    "U24": (bw.U24, st.integers(0, 2**24 - 1)),
    "I32": (bw.I32, st.integers(-(2**31), 2**31 - 1)),
    "U64": (bw.U64, st.integers(0, 2**64 - 1)),
    "F32": (bw.F32, st.floats(width=32, allow_nan=False)),
    "F64": (bw.F64, st.floats(allow_nan=False)),
    "Bool": (bw.Bool, st.booleans()),
}

KINDS = [*SCALARS, "bytes", "str", "list", "nested", "maybe", "bits", "union", "maybe_struct"]


def build(kinds: list[str], order: str, name: str) -> tuple[type[bw.Struct], Any]:
    """A struct class with one field per kind, and a strategy for its constructor kwargs."""
    fields: list[tuple[Any, ...]] = []
    values: dict[str, Any] = {}
    for i, kind in enumerate(kinds):
        f = f"f{i}"
        if kind in SCALARS:
            typ, strat = SCALARS[kind]
            fields.append((f, typ))
            values[f] = strat
        elif kind == "bytes":
            fields.append((f"{f}_n", bw.U8))
            fields.append((f, bytes, bw.field(len=f"{f}_n")))
            values[f] = st.binary(max_size=20)
        elif kind == "str":
            fields.append((f"{f}_n", bw.U16))
            fields.append((f, str, bw.field(len=f"{f}_n")))
            values[f] = st.text(max_size=10)
        elif kind == "list":
            fields.append((f"{f}_n", bw.U8))
            fields.append((f, list[bw.I16], bw.field(count=f"{f}_n")))
            values[f] = st.lists(st.integers(-(2**15), 2**15 - 1), max_size=6)
        elif kind == "nested":
            inner = bw.make_struct(f"{name}_{f}", [("a", bw.U16), ("b", bw.I8)], byteorder=order)
            fields.append((f, inner))
            values[f] = st.builds(inner, a=st.integers(0, 65535), b=st.integers(-128, 127))
        elif kind == "bits":
            # Bit fields and flags sharing a 3-byte group, between whole-byte fields (after
            # another group, a byte of its own: adjacent groups would make one, and more
            # than five of them one longer than a group may be).
            if i and kinds[i - 1] == "bits":
                fields.append((f"{f}_gap", bw.U8))
                values[f"{f}_gap"] = st.integers(0, 255)
            fields.append((f"{f}_a", int, bw.bits(5)))
            fields.append((f"{f}_b", bool, bw.flag()))
            fields.append((f"{f}_c", int, bw.bits(14)))
            fields.append((f"{f}_d", bool, bw.flag()))
            fields.append((f"{f}_e", int, bw.bits(3, signed=True)))
            values[f"{f}_a"] = st.integers(0, 31)
            values[f"{f}_b"] = st.booleans()
            values[f"{f}_c"] = st.integers(0, 2**14 - 1)
            values[f"{f}_d"] = st.booleans()
            values[f"{f}_e"] = st.integers(-4, 3)
        elif kind == "union":
            # Cases of fixed fields (runs), chosen by a tag; the default keeps the bytes.
            a = bw.make_struct(
                f"{name}_{f}_A",
                [("x", bw.U16), ("on", bool, bw.flag()), ("n", int, bw.bits(7))],
                byteorder=order,
            )
            b = bw.make_struct(f"{name}_{f}_B", [("y", bw.I32), ("z", bw.U8)], byteorder=order)
            raw = bw.make_struct(f"{name}_{f}_Raw", [("data", bytes, bw.field(len=2))])
            fields.append((f"{f}_tag", bw.U8))
            values[f"{f}_tag"] = st.just(0)
            fields.append((f, Any, bw.field(tag=f"{f}_tag", cases={1: a, 2: b}, default_case=raw)))
            values[f] = st.one_of(
                st.builds(a, x=st.integers(0, 65535), on=st.booleans(), n=st.integers(0, 127)),
                st.builds(b, y=st.integers(-(2**31), 2**31 - 1), z=st.integers(0, 255)),
                st.builds(raw, data=st.binary(min_size=2, max_size=2)),
            )
        elif kind == "maybe_struct":
            inner = bw.make_struct(
                f"{name}_{f}_S",
                [("a", bw.U16), ("b", int, bw.bits(4)), ("c", int, bw.bits(4))],
                byteorder=order,
            )
            fields.append((f"{f}_on", bw.U8))
            fields.append((f, inner, bw.field(when=f"{f}_on == 1", default=None)))
            values[f"{f}_on"] = st.sampled_from([0, 1])
            values[f] = st.builds(
                inner, a=st.integers(0, 65535), b=st.integers(0, 15), c=st.integers(0, 15)
            )
        else:  # a conditional field
            fields.append((f"{f}_on", bw.U8))
            fields.append((f, bw.U32, bw.field(when=f"{f}_on == 1", default=None)))
            values[f"{f}_on"] = st.sampled_from([0, 1])
            values[f] = st.integers(0, 2**32 - 1)
    cls = bw.make_struct(name, fields, byteorder=order)

    @st.composite
    def instance(draw: Any) -> Any:
        kw = {k: draw(v) for k, v in values.items()}
        for k in list(kw):
            if k.endswith("_tag"):
                # The tag that selects the drawn case (3: the default).
                case = type(kw[k[:-4]]).__name__
                kw[k] = {"A": 1, "B": 2}.get(case[-1:], 3)
            if k.endswith("_on"):
                fld = k[:-3]
                if kw[k] != 1:
                    kw[fld] = None
        return cls(**kw)

    return cls, instance()


def chosen(v: Any) -> Any:
    """A row with each union column (``variant`` and one child per case) as the value of its
    chosen case, as per-record decoding gives it."""
    if isinstance(v, dict):
        if "variant" in v and v["variant"] in v:
            return chosen(v[v["variant"]])
        return {k: chosen(x) for k, x in v.items()}
    return v


schemas = st.tuples(
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=6),
    st.sampled_from(["big", "little"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, st.data())
def test_tables_equal_per_record_unpack(schema: Any, data: Any) -> None:
    kinds, order = schema
    cls, instance = build(kinds, order, "Rand")
    items = data.draw(st.lists(instance, max_size=40))
    wire = b"".join(x.pack() for x in items)
    want = per_record(cls, wire)
    for threads in (1, 2, 3):
        t = cls.unpack_table(wire, threads=threads)
        assert len(t) == len(items)
        assert [chosen(r) for r in table_rows(t)] == want
    assert cls.pack_table(cls.unpack_table(wire)) == wire
    # iter_tables over random chunk boundaries gives the same rows.
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
    rows = data.draw(st.integers(1, 7))
    got: list[dict[str, Any]] = []
    for part in cls.iter_tables(chunks, rows=rows):
        assert 0 < len(part) <= rows
        got.extend(chosen(r) for r in table_rows(part))
    assert got == want


def test_many_bit_groups_in_a_row_are_spaced() -> None:
    """Six bit groups in a row (the most the schemas above draw) make a valid class: each
    after the first gets a byte of its own, as one group of 144 bits could not be."""
    cls, _ = build(["bits"] * 6, "little", "Groups")
    kwargs: dict[str, Any] = {}
    for i in range(6):
        kwargs |= {f"f{i}_a": i, f"f{i}_b": True, f"f{i}_c": 1000 + i, f"f{i}_d": False}
        kwargs[f"f{i}_e"] = -i % 4 - (4 if i % 2 else 0)
        if i:
            kwargs[f"f{i}_gap"] = 250 + i % 6
    items = [cls(**kwargs)] * 3
    wire = b"".join(x.pack() for x in items)
    assert len(wire) == 3 * (6 * 3 + 5)
    assert [chosen(r) for r in table_rows(cls.unpack_table(wire))] == per_record(cls, wire)


def test_iter_tables_reads_files_and_paths(tmp_path: Any) -> None:
    cls, _ = build(["U8", "str", "list"], "big", "Files")
    items = [cls(f0=i % 256, f1="x" * (i % 9), f2=list(range(i % 5))) for i in range(3000)]
    wire = b"".join(x.pack() for x in items)
    p = tmp_path / "records.bin"
    p.write_bytes(wire)
    want = per_record(cls, wire)
    for source in (p, str(p), io.BytesIO(wire), io.BufferedReader(io.BytesIO(wire)), wire):
        parts = list(cls.iter_tables(source, rows=1000))
        assert [len(x) for x in parts] == [1000, 1000, 1000]
        assert [r for x in parts for r in table_rows(x)] == want


def test_iter_tables_errors_count_rows_and_offsets_in_the_whole_stream() -> None:
    cls, _ = build(["U8", "str"], "big", "Errs")
    items = [cls(f0=1, f1="ab") for _ in range(100)]
    wire = bytearray(b"".join(x.pack() for x in items))
    size = len(items[0].pack())
    wire[size * 57 + 3] = 0xFF  # breaks the UTF-8 of message 57's text
    chunks = [bytes(wire[i : i + 13]) for i in range(0, len(wire), 13)]
    with pytest.raises(bw.DecodeError) as e:
        for _ in cls.iter_tables(chunks, rows=10):
            pass
    assert e.value.path == "[57].f1"
    assert e.value.offset == size * 57 + 3
    # A stream cut inside its last message.
    with pytest.raises(bw.DecodeError) as e:
        for _ in cls.iter_tables([bytes(wire[: size * 10 - 1])], rows=4):
            pass
    assert e.value.path.startswith("[9]")


def test_every_truncation_and_byte_flip_fails_like_per_record_decoding() -> None:
    cls, _ = build(["U8", "str", "nested", "maybe", "list"], "little", "Sweep")
    items = [
        cls(
            f0=i,
            f1="é" * (i % 3),
            f2=cls.__annotations__["f2"](a=i, b=-i),
            f3_on=i % 2,
            f3=(7 if i % 2 else None),
            f4=list(range(i % 4)),
        )
        for i in range(6)
    ]
    wire = b"".join(x.pack() for x in items)
    codec = bw.compile(cls)

    def check(data: bytes) -> None:
        want = decode_error(codec.iter_unpack, data)
        for threads in (1, 2):
            got = decode_error(cls.unpack_table, data, threads=threads)
            assert got == want, (data.hex(), threads)
        got = decode_error(lambda d: list(cls.iter_tables([d], rows=2)), data)
        assert got == want, data.hex()
        if want is None:
            assert table_rows(cls.unpack_table(data)) == codec.iter_unpack(data)

    for n in range(len(wire)):
        check(wire[:n])
    for i in range(len(wire)):
        for bit in (0x01, 0x80, 0xFF):
            flipped = bytearray(wire)
            flipped[i] ^= bit
            check(bytes(flipped))


def test_fixed_records_fail_like_per_record_decoding() -> None:
    class F(bw.Struct):
        magic: bw.U16 = bw.const(0xBEEF)
        ok: bw.Bool
        v: bw.U32

    wire = b"".join(F(ok=bool(i % 2), v=i).pack() for i in range(300))
    codec = bw.compile(F)
    for n in (0, 1, 6, 7, 700, len(wire) - 1):
        data = wire[:n]
        assert decode_error(F.unpack_table, data, threads=3) == decode_error(
            codec.iter_unpack, data
        )
    for i in range(0, len(wire), 5):
        bad = bytearray(wire)
        bad[i] ^= 0x41
        for threads in (1, 2, 3):
            assert decode_error(F.unpack_table, bytes(bad), threads=threads) == decode_error(
                codec.iter_unpack, bytes(bad)
            )


def test_empty_and_count_zero_give_the_full_schema() -> None:
    cls, _ = build(["U8", "str", "nested", "list"], "big", "Empty")
    full = cls.table_schema()
    for t in (cls.unpack_table(b""), cls.unpack_table(b"\x01\x02", count=0)):
        assert len(t) == 0
        assert t.schema == full
        assert pa.table(t).num_rows == 0
        assert pa.schema(t.schema).names == full.names
    assert list(cls.iter_tables([b""])) == []


def test_count_and_offset_select_messages() -> None:
    cls, _ = build(["U8", "str"], "big", "Sel")
    items = [cls(f0=i, f1=str(i)) for i in range(10)]
    packed = [x.pack() for x in items]
    wire = b"".join(packed)
    off = len(packed[0]) + len(packed[1])
    t = cls.unpack_table(wire, offset=off, count=3)
    assert t["f0"].to_pylist() == [2, 3, 4]
    with pytest.raises(bw.DecodeError) as e:
        cls.unpack_table(wire, count=11)
    assert e.value.path.startswith("[10]") and e.value.offset == len(wire)
    with pytest.raises(bw.DecodeError):
        cls.unpack_table(wire, offset=len(wire) + 1)
