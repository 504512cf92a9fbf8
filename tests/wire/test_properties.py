"""Hypothesis: random schemas round-trip; random bytes give a value or DecodeError."""

import struct

import bytewright as bw
from conftest import Envelope
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCALARS = [
    (bw.U8, st.integers(0, 2**8 - 1)),
    (bw.U16, st.integers(0, 2**16 - 1)),
    (bw.U24, st.integers(0, 2**24 - 1)),
    (bw.U32, st.integers(0, 2**32 - 1)),
    (bw.U64, st.integers(0, 2**64 - 1)),
    (bw.I8, st.integers(-(2**7), 2**7 - 1)),
    (bw.I16, st.integers(-(2**15), 2**15 - 1)),
    (bw.I24, st.integers(-(2**23), 2**23 - 1)),
    (bw.I32, st.integers(-(2**31), 2**31 - 1)),
    (bw.I64, st.integers(-(2**63), 2**63 - 1)),
    (bw.F64, st.floats(allow_nan=False)),
    (bw.F32, st.floats(width=32, allow_nan=False)),
    (bw.Bool, st.booleans()),
]
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
LATIN = st.text(st.characters(max_codepoint=255), max_size=8)


class Counter:
    n = 0

    @classmethod
    def name(cls, prefix: str) -> str:
        cls.n += 1
        return f"{prefix}{cls.n}"


@st.composite
def field_kinds(draw, depth: int):
    """One or two (name, type, field-spec-or-None, value strategy) entries."""
    kind = draw(
        st.sampled_from(
            ["scalar", "fixed", "varbytes", "str", "cstr", "array", "nested"]
            if depth < 2
            else ["scalar", "fixed", "varbytes", "str"]
        )
    )
    nm = Counter.name("f")
    if kind == "scalar":
        ann, vals = draw(st.sampled_from(SCALARS))
        return [(nm, ann, None, vals)]
    if kind == "fixed":
        n = draw(st.integers(0, 5))
        return [(nm, bytes, bw.field(len=n), st.binary(min_size=n, max_size=n))]
    if kind == "varbytes":
        lt = draw(st.sampled_from([bw.U8, bw.U16, bw.U32]))
        return [
            (nm + "_len", lt, None, None),
            (nm, bytes, bw.field(len=nm + "_len"), st.binary(max_size=12)),
        ]
    if kind == "str":
        enc, vals = draw(st.sampled_from([("utf-8", TEXT), ("latin-1", LATIN)]))
        return [
            (nm + "_len", bw.U16, None, None),
            (nm, str, bw.field(len=nm + "_len", encoding=enc), vals),
        ]
    if kind == "cstr":
        return [
            (
                nm,
                str,
                bw.field(nul_terminated=True, max_len=40),
                st.text(st.characters(min_codepoint=1, max_codepoint=0x7FF), max_size=8),
            )
        ]
    if kind == "array":
        item_ann, item_vals = draw(st.sampled_from(SCALARS))
        return [
            (nm + "_n", bw.U8, None, None),
            (nm, list[item_ann], bw.field(count=nm + "_n"), st.lists(item_vals, max_size=5)),
        ]
    cls, vals = draw(structs(depth + 1))
    if draw(st.booleans()):
        return [(nm, cls, None, vals)]
    return [
        (nm + "_n", bw.U16, None, None),
        (nm, list[cls], bw.field(count=nm + "_n"), st.lists(vals, max_size=3)),
    ]


@st.composite
def structs(draw, depth: int = 0):
    parts = draw(st.lists(field_kinds(depth), min_size=1, max_size=5))
    entries = [e for p in parts for e in p]
    order = draw(st.sampled_from([None, "big", "little"]))
    fields = [(n, a) if spec is None else (n, a, spec) for n, a, spec, _ in entries]
    cls = bw.make_struct(Counter.name("S"), fields, byteorder=order)
    value_strats = {n: v for n, _, _, v in entries if v is not None}
    return cls, st.builds(cls, **value_strats)


@st.composite
def schema_and_value(draw):
    cls, vals = draw(structs())
    return cls, draw(vals)


@SETTINGS
@given(schema_and_value())
def test_random_schema_round_trip(case):
    cls, value = case
    data = value.pack()
    back = cls.unpack(data)
    assert back == value
    assert back.pack() == data
    codec = bw.compile(cls)
    d = codec.unpack(data)
    assert codec.pack(d) == data
    assert len(data) >= codec.min_size
    if codec.static_size is not None:
        assert len(data) == codec.static_size
    buf = bytearray(len(data) + 3)
    assert value.pack_into(buf, 3) == len(buf)
    assert bytes(buf[3:]) == data


class Mixed(bw.Struct, byteorder="little"):
    magic: bytes = bw.const(b"MX")
    kind: bw.U8
    n: bw.U8
    name: str = bw.field(len="n")
    c: bw.U16
    pts: list[bw.I16] = bw.field(count="c")
    extra: bw.U32 = bw.field(when="kind & 1", default=0)
    tail: bytes = bw.field(len=bw.REST, max_len=64)


class Sized(bw.Struct):
    size: bw.U16
    inner: Mixed = bw.field(size="size")
    cs: str = bw.field(nul_terminated=True, max_len=5, encoding="ascii")


SCHEMAS = [Envelope, Mixed, Sized]


@SETTINGS
@given(st.sampled_from(SCHEMAS), st.binary(max_size=120))
def test_random_bytes_value_or_decode_error(cls, data):
    for blob in (data, b"MX" + data, data[:2] + b"MX" + data[2:]):
        try:
            v = cls.unpack(blob)
        except bw.DecodeError:
            pass
        else:
            assert isinstance(v, cls)
        try:
            r = cls.parse(blob)
        except bw.DecodeError:
            continue
        assert isinstance(r, bw.Incomplete) or r[1] <= len(blob)


UI = bw.make_struct("UI", [("u", bw.U64), ("i", bw.I64)], byteorder="little")


@SETTINGS
@given(st.integers(0, 2**64 - 1), st.integers(-(2**63), 2**63 - 1))
def test_u64_i64_match_struct(u, i):
    data = UI(u=u, i=i).pack()
    assert data == struct.pack("<Qq", u, i)
