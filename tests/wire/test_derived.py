"""Derived length, count and size fields: computed when omitted, verified when supplied."""

import bytewright as bw
import pytest


class Msg(bw.Struct):
    n: bw.U8
    payload: bytes = bw.field(len="n")
    count: bw.U16
    items: list[bw.U16] = bw.field(count="count")


def test_omitted_is_computed():
    data = Msg(payload=b"ab", items=[1, 2, 3]).pack()
    assert data == b"\x02ab\x00\x03\x00\x01\x00\x02\x00\x03"
    back = Msg.unpack(data)
    assert back.n == 2 and back.count == 3


def test_supplied_correct_is_accepted():
    assert Msg(n=2, payload=b"ab", count=1, items=[5]).pack() == b"\x02ab\x00\x01\x00\x05"


def test_supplied_wrong_is_pack_error():
    with pytest.raises(bw.PackError) as ei:
        Msg(n=3, payload=b"ab", items=[]).pack()
    assert ei.value.path in ("n", "payload")
    with pytest.raises(bw.PackError) as ei:
        Msg(payload=b"", count=2, items=[1]).pack()
    assert ei.value.path in ("count", "items")


def test_dict_codec_omits_derived():
    codec = bw.compile(Msg)
    assert codec.pack({"payload": b"ab", "items": [1]}) == b"\x02ab\x00\x01\x00\x01"
    assert codec.pack({"n": None, "payload": b"ab", "count": None, "items": [1]}) == (
        b"\x02ab\x00\x01\x00\x01"
    )
    with pytest.raises(bw.PackError):
        codec.pack({"n": 9, "payload": b"ab", "items": [1]})


def test_range_check():
    class Small(bw.Struct):
        n: bw.U8
        payload: bytes = bw.field(len="n")

    assert len(Small(payload=bytes(255)).pack()) == 256
    with pytest.raises(bw.PackError) as ei:
        Small(payload=bytes(300)).pack()
    assert ei.value.path in ("n", "payload")
    assert "300" in str(ei.value)


def test_non_invertible_supplied_and_verified():
    class Image(bw.Struct):
        width: bw.U16
        height: bw.U16
        pixels: list[bw.U8] = bw.field(count="width * height")

    img = Image(width=3, height=2, pixels=list(range(6)))
    data = img.pack()
    assert data == b"\x00\x03\x00\x02" + bytes(range(6))
    assert Image.unpack(data) == img
    with pytest.raises(bw.PackError) as ei:
        Image(width=3, height=3, pixels=list(range(6))).pack()
    assert ei.value.path in ("pixels", "width", "height")
    with pytest.raises(TypeError):
        Image(pixels=[1, 2])  # type: ignore[call-arg]  # width/height cannot be derived
    with pytest.raises(bw.PackError) as ei:
        bw.compile(Image).pack({"pixels": [1, 2]})
    assert ei.value.path == "width"


def test_linear_expression_derived():
    class Ip(bw.Struct):
        hdr_len: bw.U8
        body: bytes = bw.field(len="hdr_len * 4 - 20")

    data = Ip(body=bytes(8)).pack()
    assert data == bytes([7]) + bytes(8)
    assert Ip.unpack(data).hdr_len == 7
    with pytest.raises(bw.PackError):
        Ip(body=bytes(7)).pack()  # (7 + 20) is not a multiple of 4
    assert Ip(hdr_len=7, body=bytes(8)).pack() == data
    with pytest.raises(bw.PackError):
        Ip(hdr_len=8, body=bytes(8)).pack()


@pytest.mark.parametrize(
    "expr,n,length",
    [
        ("n + 3", 2, 5),
        ("n - 1", 6, 5),
        ("3 + n", 2, 5),
        ("n // 2", 10, 5),
        ("2 * n", 3, 6),
        ("n << 1", 3, 6),
    ],
)
def test_invertible_forms(expr, n, length):
    cls = bw.make_struct("T", [("n", bw.U8), ("data", bytes, bw.field(len=expr))], byteorder="big")
    data = cls(n=n, data=bytes(length)).pack()
    assert data == bytes([n]) + bytes(length)
    assert cls.unpack(data).data == bytes(length)
    # Omitted n: either derived to a consistent value, or a PackError -- never wrong bytes.
    codec = bw.compile(cls)
    try:
        derived = codec.pack({"data": bytes(length)})
    except bw.PackError:
        assert "n" not in cls.__bw__.derived
        return
    assert "n" in cls.__bw__.derived
    assert cls.unpack(derived).data == bytes(length)
    assert cls(data=bytes(length)).pack() == derived


def test_derived_count_of_struct_array_and_nested_derived():
    class Item(bw.Struct):
        n: bw.U8
        b: bytes = bw.field(len="n")

    class Box(bw.Struct):
        count: bw.U8
        items: list[Item] = bw.field(count="count")

    data = Box(items=[Item(b=b"x"), Item(b=b"yz")]).pack()
    assert data == b"\x02\x01x\x02yz"
    back = Box.unpack(data)
    assert back.items[1].n == 2


def test_field_used_twice_must_agree():
    class Two(bw.Struct):
        n: bw.U8
        a: bytes = bw.field(len="n")
        b: bytes = bw.field(len="n")

    assert Two(a=b"xy", b=b"zw").pack() == b"\x02xyzw"
    with pytest.raises(bw.PackError):
        Two(a=b"xy", b=b"z").pack()


def test_derived_marker():
    class D(bw.Struct):
        n: bw.U8 = bw.derived()
        data: bytes = bw.field(len="n")

    assert D(data=b"q").pack() == b"\x01q"
    assert D.unpack(b"\x01q") == D(data=b"q")


def test_derived_fields_ignored_by_eq():
    assert Msg(payload=b"a", items=[]) == Msg.unpack(Msg(payload=b"a", items=[]).pack())
