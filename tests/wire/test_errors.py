"""Errors: SchemaError suggestions, PackError/DecodeError paths and offsets, limits."""

import bytewright as bw
import pytest
from conftest import Envelope, Frame


def test_hierarchy():
    for cls in (bw.SchemaError, bw.PackError, bw.DecodeError):
        assert issubclass(cls, bw.Error)
        assert issubclass(cls, ValueError)
    assert issubclass(bw.Error, ValueError)


def test_field_option_typo_suggests():
    with pytest.raises(bw.SchemaError, match=r"unknown field option 'lenght'; did you mean 'len'"):
        bw.field(lenght=3)
    with pytest.raises(bw.SchemaError, match="did you mean 'max_count'"):
        bw.field(max_cnt=3)


def test_class_keyword_typo_suggests():
    with pytest.raises(bw.SchemaError, match="did you mean 'byteorder'"):

        class X(bw.Struct, byteordr="big"):  # type: ignore[call-arg]
            a: bw.U8


def test_byteorder_typo_suggests():
    with pytest.raises(bw.SchemaError, match="did you mean 'little'"):

        class X(bw.Struct, byteorder="littel"):
            a: bw.U8

    with pytest.raises(bw.SchemaError, match=r"X2\.a: .*did you mean 'big'"):

        class X2(bw.Struct):
            a: bw.U16 = bw.field(byteorder="bgi")


def test_encoding_typo_suggests():
    with pytest.raises(bw.SchemaError, match="did you mean 'latin-1'"):

        class X(bw.Struct):
            s: str = bw.field(len=2, encoding="latin-2")


def test_unknown_name_in_expression_suggests():
    with pytest.raises(bw.SchemaError) as ei:

        class X(bw.Struct):
            payload_len: bw.U8
            payload: bytes = bw.field(len="payload_lne")

    msg = str(ei.value)
    assert "payload" in msg and "payload_lne" in msg and "payload_len" in msg


def test_later_field_in_expression_is_schema_error():
    with pytest.raises(bw.SchemaError) as ei:

        class X(bw.Struct):
            payload: bytes = bw.field(len="n")
            n: bw.U8

    assert "n" in str(ei.value)


@pytest.mark.parametrize(
    "expr",
    ["n / 2", "n(", "f(n)", "n.x", "[n]"],
)
def test_bad_expression_syntax(expr):
    with pytest.raises(bw.SchemaError) as ei:
        bw.make_struct("X", [("n", bw.U8), ("d", bytes, bw.field(len=expr))])
    assert "X.d" in str(ei.value)


@pytest.mark.parametrize(
    "fields",
    [
        [("a", int)],
        [("a", float)],
        [("a", bytes)],
        [("a", str)],
        [("a", object)],
        [("a", bw.U8 | bw.U16)],
        [("a", bytes, bw.field(len=-1))],
        [("a", bytes, bw.field(len=1.5))],
        [("pack", bw.U8)],
        [("a", str, bw.field(nul_terminated=True))],
        [("a", bw.U8, bw.field(when=3))],
        [("a", bw.U8), ("b", bw.U8, bw.field(tag="a", cases={}))],
    ],
)
def test_schema_errors(fields):
    with pytest.raises(bw.SchemaError):
        bw.make_struct("Bad", fields)


def test_bad_limits():
    with pytest.raises(bw.SchemaError):
        bw.Limits(max_count=-1)
    with pytest.raises(bw.SchemaError):

        class X(bw.Struct, limits=5):  # type: ignore[arg-type]
            a: bw.U8


def test_pack_error_path_in_telemetry():
    from conftest import make_envelope

    env = make_envelope(5)
    env.frame.records[3].payload = "not bytes"
    with pytest.raises(bw.PackError) as ei:
        env.pack()
    assert ei.value.path == "frame.records[3].payload"
    assert str(ei.value).startswith("frame.records[3].payload: ")


def test_missing_required_field_is_pack_error():
    codec = bw.compile(Frame)
    with pytest.raises(bw.PackError) as ei:
        codec.pack({"version": 1})
    assert ei.value.path == "flags"


def test_decode_error_message_format(telemetry):
    # Cut record 3's payload: the example message of the spec.
    env = Envelope.unpack(telemetry)
    rec3_payload_offset = 58 + sum(26 + 12 + i for i in range(3)) + 26
    assert telemetry[rec3_payload_offset - 2 : rec3_payload_offset] == (15).to_bytes(2, "big")
    cut = telemetry[: rec3_payload_offset + 5]
    # Inside a complete window, the truncated field itself is blamed.
    inner = bw.compile(Frame)
    with pytest.raises(bw.DecodeError) as fi:
        inner.unpack(cut[4:])
    assert fi.value.path == "records[3].payload"
    assert fi.value.offset == rec3_payload_offset - 4
    assert str(fi.value) == (
        f"records[3].payload: needs 15 bytes at offset {rec3_payload_offset - 4}, 5 left"
    )
    with pytest.raises(bw.DecodeError) as ei:
        Envelope.unpack(cut)
    e = ei.value
    # The frame window is larger than the input: unpack reports it at the window.
    assert e.path == "frame" and e.offset == 4
    assert str(e) == f"frame: needs 3062 bytes at offset 4, {len(cut) - 4} left"
    assert env.frame.records[3].payload == bytes(15)


def test_decode_error_fixed_example():
    class Rec(bw.Struct):
        n: bw.U16
        payload: bytes = bw.field(len="n")

    class Fr2(bw.Struct):
        pre: bytes = bw.field(len=2033)
        records: list[Rec] = bw.field(count=4)

    class Top2(bw.Struct):
        frame: Fr2

    recs = [Rec(payload=b"")] * 3 + [Rec(payload=bytes(17))]
    data = Top2(frame=Fr2(pre=bytes(2033), records=recs)).pack()
    # frame.records[3].payload starts at 2033 + 3 * 2 + 2 = 2041
    with pytest.raises(bw.DecodeError) as ei:
        Top2.unpack(data[: 2041 + 9])
    assert str(ei.value) == "frame.records[3].payload: needs 17 bytes at offset 2041, 9 left"
    assert ei.value.path == "frame.records[3].payload" and ei.value.offset == 2041


def test_readme_error_example():
    class Header(bw.Struct, byteorder="little"):
        magic: bytes = bw.const(b"BWR1")
        count: bw.U16
        items: list[bw.U32] = bw.field(count="count")

    data = Header(items=[1, 2, 3]).pack()
    with pytest.raises(bw.DecodeError) as ei:
        Header.unpack(data[:-1])
    assert ei.value.path == "items[2]" and ei.value.offset == 14
    assert str(ei.value) == "items[2]: needs 4 bytes at offset 14, 3 left"


def test_trailing_bytes_is_decode_error():
    class S(bw.Struct):
        a: bw.U8

    with pytest.raises(bw.DecodeError) as ei:
        S.unpack(b"\x01\x02")
    assert ei.value.offset == 1
    assert S.unpack_from(b"\x01\x02") == (S(a=1), 1)


class Counted(bw.Struct):
    n: bw.U32
    xs: list[bw.U8] = bw.field(count="n")


class LenD(bw.Struct):
    n: bw.U32
    data: bytes = bw.field(len="n")


def test_huge_count_fails_fast():
    bad = b"\xff\xff\xff\xff\x01\x02"
    with pytest.raises(bw.DecodeError) as ei:
        Counted.unpack(bad)
    assert ei.value.path.startswith("xs")
    with pytest.raises(bw.DecodeError):
        LenD.unpack(bad)
    # Within limits but beyond the input: incomplete, not an allocation.
    assert isinstance(Counted.parse(b"\x00\x10\x00\x00\x01"), bw.Incomplete)


def test_default_limits():
    # 16 Mi items: one more is rejected before reading any item.
    with pytest.raises(bw.DecodeError, match="xs"):
        Counted.unpack((16 * 1024 * 1024 + 1).to_bytes(4, "big"))
    with pytest.raises(bw.DecodeError, match="data"):
        LenD.unpack((64 * 1024 * 1024 + 1).to_bytes(4, "big"))


def test_field_limits():
    class F(bw.Struct):
        n: bw.U8
        xs: list[bw.U8] = bw.field(count="n", max_count=2)

    assert F.unpack(b"\x02\x01\x02").xs == [1, 2]
    with pytest.raises(bw.DecodeError) as ei:
        F.unpack(b"\x03\x01\x02\x03")
    assert ei.value.path == "xs"
    with pytest.raises(bw.PackError):
        F(xs=[1, 2, 3]).pack()


def test_compile_limits():
    codec = bw.compile(Counted, limits=bw.Limits(max_count=3))
    assert codec.unpack(b"\x00\x00\x00\x03abc")["xs"] == [97, 98, 99]
    with pytest.raises(bw.DecodeError):
        codec.unpack(b"\x00\x00\x00\x04abcd")
    codec = bw.compile(LenD, limits=bw.Limits(max_len=2))
    with pytest.raises(bw.DecodeError):
        codec.unpack(b"\x00\x00\x00\x03abc")
    # The class itself keeps the defaults.
    assert Counted.unpack(b"\x00\x00\x00\x04abcd").xs == [97, 98, 99, 100]


def test_class_keyword_limits():
    class K(bw.Struct, limits=bw.Limits(max_len=4)):
        n: bw.U8
        s: str = bw.field(len="n")

    assert K.unpack(b"\x04abcd").s == "abcd"
    with pytest.raises(bw.DecodeError):
        K.unpack(b"\x05abcde")
    with pytest.raises(bw.PackError):
        K(s="abcde").pack()


def test_schema_errors_are_typed():
    import pickle

    with pytest.raises(bw.SchemaError) as ei:

        class X(bw.Struct):
            payload_len: bw.U8
            payload: bytes = bw.field(len="payload_lne")

    e = ei.value  # raised by the Rust compiler
    assert (e.kind, e.path, e.name, e.suggestion) == (
        "unknown_name",
        "X.payload",
        "payload_lne",
        "payload_len",
    )
    back = pickle.loads(pickle.dumps(e))
    assert (back.kind, back.path, back.name, back.suggestion, str(back)) == (
        e.kind,
        e.path,
        e.name,
        e.suggestion,
        str(e),
    )

    with pytest.raises(bw.SchemaError) as ei:
        bw.field(lenght=3)  # type: ignore[call-overload]
    assert (ei.value.kind, ei.value.name, ei.value.suggestion) == (
        "unknown_option",
        "lenght",
        "len",
    )

    with pytest.raises(bw.SchemaError) as ei:

        class Y(bw.Struct, byteorder="littel"):  # type: ignore[call-arg]
            a: bw.U8

    assert (ei.value.kind, ei.value.path, ei.value.suggestion) == ("unknown_value", "Y", "little")

    with pytest.raises(bw.SchemaError) as ei:

        class Z(bw.Struct):
            a: bw.U8
            crc: bw.U32 = bw.checksum("crc32", over=["b"])

    assert (ei.value.kind, ei.value.path, ei.value.name) == ("unknown_field", "Z.crc", "b")

    for bad in (0, 4097, True, "4"):
        with pytest.raises(bw.SchemaError) as ei:

            class A(bw.Struct, align=bad):  # type: ignore[arg-type]
                a: bw.U8

        assert ei.value.kind == "invalid" and ei.value.path == "A"
        assert "between 1 and 4096" in str(ei.value)
        with pytest.raises(bw.SchemaError) as ei:

            class F(bw.Struct):
                a: bw.U8 = bw.field(align=bad)  # type: ignore[arg-type]

        assert ei.value.path == "F.a" and "between 1 and 4096" in str(ei.value)
