"""Fixed bytes, constants, padding, variable bytes and text, NUL-terminated text."""

import bytewright as bw
import pytest


def test_fixed_bytes():
    class F(bw.Struct):
        a: bytes = bw.field(len=4)
        b: bw.Bytes(2)  # type: ignore[valid-type]

    assert F(a=b"abcd", b=b"xy").pack() == b"abcdxy"
    assert F.unpack(b"abcdxy") == F(a=b"abcd", b=b"xy")
    assert bw.compile(F).static_size == 6
    with pytest.raises(bw.PackError) as ei:
        F(a=b"abc", b=b"xy").pack()
    assert ei.value.path == "a"
    with pytest.raises(bw.PackError):
        F(a=b"abcde", b=b"xy").pack()


def test_bytes_accepts_bytearray():
    class F(bw.Struct):
        a: bytes = bw.field(len=3)

    assert F(a=bytearray(b"abc")).pack() == b"abc"
    assert isinstance(F.unpack(b"abc").a, bytes)


def test_magic_written_and_verified():
    class H(bw.Struct, byteorder="little"):
        magic: bytes = bw.const(b"BWR1")
        version: bw.U16 = bw.const(2)
        n: bw.U8

    data = H(n=7).pack()
    assert data == b"BWR1\x02\x00\x07"
    assert H.unpack(data) == H(n=7)
    assert H.unpack(data).magic == b"BWR1" and H.unpack(data).version == 2
    with pytest.raises(bw.DecodeError) as ei:
        H.unpack(b"BWR2\x02\x00\x07")
    e = ei.value
    assert e.path == "magic" and e.offset == 0
    assert "BWR1" in str(e) and "BWR2" in str(e)
    with pytest.raises(bw.DecodeError) as ei:
        H.unpack(b"BWR1\x03\x00\x07")
    assert ei.value.path == "version" and ei.value.offset == 4
    with pytest.raises(bw.PackError) as pe:
        H(magic=b"XXXX", n=1).pack()
    assert pe.value.path == "magic"


def test_padding():
    class P(bw.Struct):
        a: bw.U8
        _pad: None = bw.pad(3)
        b: bw.U16

    data = P(a=1, b=2).pack()
    assert data == b"\x01\x00\x00\x00\x00\x02"
    assert P.unpack(data) == P(a=1, b=2)
    # Padding is skipped (not verified) on unpack and not a field of the value.
    assert P.unpack(b"\x01\xff\xff\xff\x00\x02") == P(a=1, b=2)
    assert repr(P(a=1, b=2)).endswith("P(a=1, b=2)")
    assert bw.compile(P).unpack(data) == {"a": 1, "b": 2}


def test_bytes_len_from_field_is_derived():
    class V(bw.Struct):
        n: bw.U8
        data: bytes = bw.field(len="n")

    assert V(data=b"hello").pack() == b"\x05hello"
    assert V.unpack(b"\x05hello") == V(n=5, data=b"hello")
    assert V(data=b"").pack() == b"\x00"


def test_bytes_len_expression():
    class V(bw.Struct):
        n: bw.U8
        data: bytes = bw.field(len="n * 2 + 1")

    assert V(n=2, data=b"abcde").pack() == b"\x02abcde"
    assert V(data=b"abcde").pack() == b"\x02abcde"
    assert V.unpack(b"\x02abcde").data == b"abcde"
    with pytest.raises(bw.PackError):
        V(data=b"abcd").pack()  # no integer n gives an even length


def test_bytes_rest():
    class R(bw.Struct):
        kind: bw.U8
        body: bytes = bw.field(len=bw.REST)

    assert R(kind=1, body=b"xyz").pack() == b"\x01xyz"
    assert R.unpack(b"\x01xyz").body == b"xyz"
    assert R.unpack(b"\x01").body == b""
    assert bw.compile(R).static_size is None
    assert bw.compile(R).min_size == 1


@pytest.mark.parametrize(
    "encoding,text",
    [("utf-8", "héllo ✓"), ("ascii", "plain"), ("latin-1", "café\xff")],
)
def test_str_encodings(encoding, text):
    class S(bw.Struct):
        n: bw.U8
        s: str = bw.field(len="n", encoding=encoding)

    raw = text.encode(encoding)
    data = S(s=text).pack()
    assert data == bytes([len(raw)]) + raw
    assert S.unpack(data).s == text
    assert bw.compile(S).unpack(data) == {"n": len(raw), "s": text}


def test_str_type_object_and_fixed_len():
    class S(bw.Struct):
        s: bw.Str(3, "ascii")  # type: ignore[valid-type]

    assert S(s="abc").pack() == b"abc"
    with pytest.raises(bw.PackError):
        S(s="ab").pack()


def test_str_encoding_errors():
    class A(bw.Struct):
        n: bw.U8
        s: str = bw.field(len="n", encoding="ascii")

    with pytest.raises(bw.PackError) as ei:
        A(s="é").pack()
    assert ei.value.path == "s"
    with pytest.raises(bw.PackError) as ei:
        A(n=1, s=5).pack()  # type: ignore[arg-type]
    assert ei.value.path == "s"
    with pytest.raises(bw.DecodeError) as di:
        A.unpack(b"\x01\xe9")
    assert di.value.path == "s" and di.value.offset == 1

    class U(bw.Struct):
        n: bw.U8
        s: str = bw.field(len="n")

    with pytest.raises(bw.DecodeError) as di:
        U.unpack(b"\x02\xc3\x28")
    assert di.value.path == "s"

    class L(bw.Struct):
        n: bw.U8
        s: str = bw.field(len="n", encoding="latin-1")

    with pytest.raises(bw.PackError):
        L(s="€").pack()
    assert L.unpack(bytes([1, 0x80])).s == "\x80"


def test_str_encoding_aliases():
    class S(bw.Struct):
        s: str = bw.field(len=2, encoding="UTF_8")
        t: str = bw.field(len=2, encoding="latin1")

    assert S(s="ab", t="cd").pack() == b"abcd"


def test_cstr():
    class C(bw.Struct):
        name: str = bw.field(nul_terminated=True, max_len=5)
        tail: bw.U8

    assert C(name="abc", tail=9).pack() == b"abc\x00\x09"
    assert C.unpack(b"abc\x00\x09") == C(name="abc", tail=9)
    assert C.unpack(b"\x00\x01").name == ""
    assert C(name="abcde", tail=1).pack() == b"abcde\x00\x01"
    with pytest.raises(bw.PackError) as ei:
        C(name="abcdef", tail=1).pack()
    assert ei.value.path == "name"
    with pytest.raises(bw.PackError):
        C(name="a\x00b", tail=1).pack()
    with pytest.raises(bw.DecodeError) as di:
        C.unpack(b"abcdef\x00\x01")
    assert di.value.path == "name"
    assert isinstance(C.parse(b"abc"), bw.Incomplete)


def test_cstr_type_object():
    class C(bw.Struct):
        name: bw.CStr(8, "latin-1")  # type: ignore[valid-type]

    assert C(name="é").pack() == b"\xe9\x00"
    assert C.unpack(b"\xe9\x00").name == "é"


def test_bytes_max_len_option():
    class M(bw.Struct):
        n: bw.U32
        data: bytes = bw.field(len="n", max_len=4)

    assert M.unpack(b"\x00\x00\x00\x04abcd").data == b"abcd"
    with pytest.raises(bw.DecodeError) as ei:
        M.unpack(b"\x00\x00\x00\x05abcde")
    assert ei.value.path == "data"
    with pytest.raises(bw.PackError):
        M(data=b"abcde").pack()
