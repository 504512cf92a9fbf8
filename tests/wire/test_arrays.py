"""Arrays of scalars, structs and bytes; count from constant, field, expression and REST."""

import struct

import bytewright as bw
import pytest


class P(bw.Struct):
    x: bw.I16
    y: bw.I16


def test_constant_count():
    class A(bw.Struct, byteorder="little"):
        xs: list[bw.U32] = bw.field(count=3)

    assert A(xs=[1, 2, 3]).pack() == struct.pack("<3I", 1, 2, 3)
    assert bw.compile(A).static_size == 12
    with pytest.raises(bw.PackError) as ei:
        A(xs=[1, 2]).pack()
    assert ei.value.path == "xs"


def test_array_type_object():
    class A(bw.Struct):
        n: bw.U8
        xs: bw.Array(bw.U16, "n")  # type: ignore[valid-type]
        ys: bw.Array(P, 2)  # type: ignore[valid-type]
        zs: bw.Array(bw.U8)  # type: ignore[valid-type]

    data = A(xs=[1], ys=[P(x=1, y=-1), P(x=2, y=-2)], zs=[7, 8]).pack()
    assert data == b"\x01\x00\x01" + struct.pack(">4h", 1, -1, 2, -2) + b"\x07\x08"
    back = A.unpack(data)
    assert back.ys[1] == P(x=2, y=-2) and back.zs == [7, 8]


def test_struct_array_field_count():
    class A(bw.Struct, byteorder="little"):
        n: bw.U16
        pts: list[P] = bw.field(count="n")

    pts = [P(x=i, y=-i) for i in range(5)]
    data = A(pts=pts).pack()
    assert data == struct.pack("<H", 5) + b"".join(struct.pack("<hh", i, -i) for i in range(5))
    assert A.unpack(data).pts == pts


def test_count_expression():
    class A(bw.Struct):
        rows: bw.U8
        cols: bw.U8
        cells: list[bw.U8] = bw.field(count="rows * cols + 1")

    data = A(rows=2, cols=2, cells=[0, 1, 2, 3, 4]).pack()
    assert data == b"\x02\x02\x00\x01\x02\x03\x04"
    assert A.unpack(data).cells == [0, 1, 2, 3, 4]


def test_rest_count():
    class A(bw.Struct):
        head: bw.U8
        pts: list[P] = bw.field(count=bw.REST)

    data = A(head=1, pts=[P(x=1, y=2)]).pack()
    assert A.unpack(data).pts == [P(x=1, y=2)]
    assert A.unpack(b"\x01").pts == []
    with pytest.raises(bw.DecodeError) as ei:
        A.unpack(data + b"\x00")
    assert ei.value.path.startswith("pts[1]")


def test_array_of_bytes_via_item():
    class A(bw.Struct):
        n: bw.U8
        names: list[bytes] = bw.field(count="n", item=bw.Bytes(2))

    assert A(names=[b"ab", b"cd"]).pack() == b"\x02abcd"
    assert A.unpack(b"\x02abcd").names == [b"ab", b"cd"]


def test_array_of_strings_and_cstrings():
    class A(bw.Struct):
        n: bw.U8
        names: list[str] = bw.field(count="n", item=bw.CStr(10))

    assert A(names=["a", "bc"]).pack() == b"\x02a\x00bc\x00"
    assert A.unpack(b"\x02a\x00bc\x00").names == ["a", "bc"]


def test_array_of_arrays():
    class A(bw.Struct):
        m: list[list[bw.U8]] = bw.field(count=2, item=bw.Array(bw.U8, 2))

    assert A(m=[[1, 2], [3, 4]]).pack() == b"\x01\x02\x03\x04"
    assert A.unpack(b"\x01\x02\x03\x04").m == [[1, 2], [3, 4]]


def test_item_error_path_and_tuple_input():
    class A(bw.Struct):
        n: bw.U8
        xs: list[bw.U8] = bw.field(count="n")

    with pytest.raises(bw.PackError) as ei:
        A(xs=[1, 2, 300]).pack()
    assert ei.value.path == "xs[2]"
    assert A(xs=(1, 2)).pack() == b"\x02\x01\x02"


def test_unpack_returns_lists():
    class A(bw.Struct):
        xs: list[bw.U8] = bw.field(count=2)

    assert type(A.unpack(b"\x01\x02").xs) is list
    assert type(bw.compile(A).unpack(b"\x01\x02")["xs"]) is list


def test_list_without_count_is_schema_error():
    with pytest.raises(bw.SchemaError) as ei:

        class A(bw.Struct):
            xs: list[bw.U8]

    assert "xs" in str(ei.value)
