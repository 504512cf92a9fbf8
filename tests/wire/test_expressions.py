"""Expressions: every operator with Python semantics, evaluated over the full u64 range."""

import bytewright as bw
import pytest

A_VALUES = [0, 1, 7, 200, 2**63, 2**64 - 1]
B_VALUES = [1, 3, 5, 2**32]


def python_value(expr: str, a: int, b: int, c: int) -> int:
    return int(eval(expr, {}, {"a": a, "b": b, "c": c}))


EXPRS = [
    "a + b",
    "a - b",
    "b - a",
    "a * b",
    "a // b",
    "a % b",
    "c // b",
    "c % b",
    "-c // b",
    "c // -b",
    "c % -b",
    "a << 2",
    "a >> 3",
    "a & b",
    "a | b",
    "a ^ b",
    "~a",
    "-a",
    "a == b",
    "a != b",
    "a < b",
    "a <= b",
    "a > b",
    "a >= b",
    "a and b",
    "a or b",
    "not a",
    "c and a",
    "c or b",
    "1 < b < 4",
    "a if c < 0 else b",
    "(a >> 60) + (b % 7) * 3",
]


@pytest.mark.parametrize("expr", EXPRS)
def test_operator_semantics(expr):
    # p is present exactly when expr evaluates natively to the Python value; q never is.
    for a in A_VALUES:
        for b in B_VALUES:
            for c in (-17, 0, 17):
                want = python_value(expr, a, b, c)
                if not -(2**127) <= want < 2**127:
                    continue
                cls = bw.make_struct(
                    "E",
                    [
                        ("a", bw.U64),
                        ("b", bw.U64),
                        ("c", bw.I64),
                        ("p", bw.U8, bw.field(when=f"({expr}) == ({want})", default=None)),
                        ("q", bw.U8, bw.field(when=f"({expr}) != ({want})", default=None)),
                    ],
                )
                data = cls(a=a, b=b, c=c, p=1, q=2).pack()
                head = (
                    a.to_bytes(8, "big") + b.to_bytes(8, "big") + c.to_bytes(8, "big", signed=True)
                )
                assert data == head + b"\x01", (expr, a, b, c, want)
                back = cls.unpack(data)
                assert back.p == 1 and back.q is None


def test_u64_max_in_length_expression():
    class Big(bw.Struct):
        big: bw.U64
        n: bw.U8
        data: bytes = bw.field(len="big - 18446744073709551615 + n")

    v = Big(big=2**64 - 1, n=3, data=b"abc")
    data = v.pack()
    assert data == b"\xff" * 8 + b"\x03abc"
    assert Big.unpack(data).data == b"abc"
    # n is derived: big is known before it.
    assert "n" in Big.__bw__.derived
    assert Big(big=2**64 - 1, data=b"abc").pack() == data


def test_u64_max_in_condition():
    class Big(bw.Struct):
        big: bw.U64
        x: bw.U8 = bw.field(when="big > 9223372036854775807", default=None)

    assert Big(big=2**64 - 1, x=5).pack() == b"\xff" * 8 + b"\x05"
    assert Big.unpack(b"\xff" * 8 + b"\x05").x == 5
    assert Big.unpack(b"\x7f" + b"\xff" * 7).x is None


def test_division_by_zero_is_error():
    class Z(bw.Struct):
        d: bw.U8
        data: bytes = bw.field(len="10 // d")

    with pytest.raises(bw.DecodeError) as ei:
        Z.unpack(b"\x00")
    assert ei.value.path == "data"
    assert Z.unpack(b"\x05ab").data == b"ab"


def test_negative_length_is_error():
    class N(bw.Struct):
        n: bw.U8
        data: bytes = bw.field(len="n - 10")

    with pytest.raises(bw.DecodeError) as ei:
        N.unpack(b"\x05")
    assert ei.value.path == "data"


def test_overflowing_shift_is_error_not_crash():
    class S(bw.Struct):
        n: bw.U8
        data: bytes = bw.field(len="1 << n")

    assert S.unpack(b"\x02abcd").data == b"abcd"
    with pytest.raises(bw.DecodeError):
        S.unpack(b"\xff")


def test_enclosing_struct_reference():
    class Item(bw.Struct):
        data: bytes = bw.field(len="item_len")

    class Box(bw.Struct):
        item_len: bw.U8
        count: bw.U8
        items: list[Item] = bw.field(count="count")

    data = Box(item_len=2, items=[Item(data=b"ab"), Item(data=b"cd")]).pack()
    assert data == b"\x02\x02abcd"
    assert Box.unpack(data).items[1].data == b"cd"
    with pytest.raises(bw.PackError):
        Box(item_len=2, items=[Item(data=b"abc")]).pack()
    # Alone, Item cannot know item_len: using it so is the schema error.
    with pytest.raises(bw.SchemaError, match="unknown field 'item_len'"):
        Item(data=b"ab").pack()


def test_typo_in_expression_is_still_immediate():
    with pytest.raises(bw.SchemaError, match="did you mean 'data_len'"):

        class Item(bw.Struct):
            data_len: bw.U8
            data: bytes = bw.field(len="data_lem")


def test_bytes_comparison_in_when():
    class M(bw.Struct):
        kind: bytes = bw.field(len=2)
        x: bw.U8 = bw.field(when="kind == b'XY'", default=None)

    assert M(kind=b"XY", x=1).pack() == b"XY\x01"
    assert M(kind=b"ZZ", x=1).pack() == b"ZZ"
    assert M.unpack(b"ZZ").x is None
