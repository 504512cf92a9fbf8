"""Checksums and digests: every algorithm against zlib / binascii / hashlib or a reference."""

from __future__ import annotations

import binascii
import hashlib
import struct
import zlib

import bytewright as bw
import pytest
from bytewright.struct import StructMeta
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHECK = b"123456789"


def crc_ref(data: bytes, width: int, poly: int, init: int, refin: bool, refout: bool, xorout: int):
    """Bit-by-bit CRC in the Rocksoft model (as crcmod / the CRC catalogue define it)."""
    top, mask = 1 << (width - 1), (1 << width) - 1
    reg = init
    for byte in data:
        if refin:
            byte = int(f"{byte:08b}"[::-1], 2)
        for i in range(7, -1, -1):
            bit = (byte >> i) & 1
            msb = 1 if reg & top else 0
            reg = (reg << 1) & mask
            if msb ^ bit:
                reg ^= poly
    if refout:
        reg = int(f"{reg:0{width}b}"[::-1], 2)
    return reg ^ xorout


def internet_ref(data: bytes) -> int:
    """RFC 1071: ones' complement of the ones' complement sum of big-endian 16-bit words."""
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


PARAMS = {
    "crc8": (8, 0x07, 0, False, False, 0),
    "crc16-ccitt": (16, 0x1021, 0xFFFF, False, False, 0),
    "crc16-xmodem": (16, 0x1021, 0, False, False, 0),
    "crc16-kermit": (16, 0x1021, 0, True, True, 0),
    "crc16-arc": (16, 0x8005, 0, True, True, 0),
    "crc16-ibm": (16, 0x8005, 0, True, True, 0),
    "crc16-modbus": (16, 0x8005, 0xFFFF, True, True, 0),
    "crc32": (32, 0x04C11DB7, 0xFFFFFFFF, True, True, 0xFFFFFFFF),
    "crc32c": (32, 0x1EDC6F41, 0xFFFFFFFF, True, True, 0xFFFFFFFF),
    "crc64-xz": (64, 0x42F0E1EBA9EA3693, 2**64 - 1, True, True, 2**64 - 1),
}

# The CRC catalogue's check values (CRC of b"123456789").
CATALOGUE = {
    "crc8": 0xF4,
    "crc16-ccitt": 0x29B1,
    "crc16-xmodem": 0x31C3,
    "crc16-kermit": 0x2189,
    "crc16-arc": 0xBB3D,
    "crc16-ibm": 0xBB3D,
    "crc16-modbus": 0x4B37,
    "crc32": 0xCBF43926,
    "crc32c": 0xE3069283,
    "crc64-xz": 0x995DC9BBDF1939FA,
}


def reference(algo: str, data: bytes):
    """An independent implementation of every named algorithm."""
    if algo == "crc32":
        return zlib.crc32(data)
    if algo == "crc16-xmodem":
        return binascii.crc_hqx(data, 0)
    if algo == "crc16-ccitt":
        return binascii.crc_hqx(data, 0xFFFF)
    if algo == "adler32":
        return zlib.adler32(data)
    if algo == "internet":
        return internet_ref(data)
    if algo in ("md5", "sha1", "sha256"):
        return hashlib.new(algo, data).digest()
    return crc_ref(data, *PARAMS[algo])


INT_TYPE = {1: bw.U8, 2: bw.U16, 4: bw.U32, 8: bw.U64}
WIDTH = {"adler32": 4, "internet": 2, "md5": 16, "sha1": 20, "sha256": 32}
WIDTH.update({k: v[0] // 8 for k, v in PARAMS.items()})


def covered_class(algo: str) -> type:
    """``n: U16, data: bytes[n], sum: checksum over data``."""
    ann = {"n": bw.U16, "data": bytes, "sum": bytes if WIDTH[algo] > 8 else INT_TYPE[WIDTH[algo]]}
    ns = {
        "__annotations__": ann,
        "__module__": __name__,
        "__qualname__": "C",
        "data": bw.field(len="n"),
        "sum": bw.checksum(algo, over=["data"]),
    }
    return StructMeta("C", (bw.Struct,), ns)


CLASSES = {a: covered_class(a) for a in bw.CHECKSUMS}


def test_checksums_lists_every_algorithm():
    assert set(bw.CHECKSUMS) == set(PARAMS) | {"adler32", "internet", "md5", "sha1", "sha256"}


@pytest.mark.parametrize("algo", sorted(CATALOGUE))
def test_reference_matches_the_catalogue(algo):
    assert crc_ref(CHECK, *PARAMS[algo]) == CATALOGUE[algo]


@pytest.mark.parametrize("algo", bw.CHECKSUMS)
def test_check_value(algo):
    cls = CLASSES[algo]
    v = cls(data=CHECK)
    wire = v.pack()
    assert v.sum is None  # computed on pack, the instance is not modified
    back = cls.unpack(wire)
    want = CATALOGUE.get(algo, reference(algo, CHECK))
    assert back.sum == want
    if isinstance(want, int):
        assert wire[-WIDTH[algo] :] == want.to_bytes(WIDTH[algo], "big")
    else:
        assert wire[-WIDTH[algo] :] == want


@pytest.mark.parametrize("algo", bw.CHECKSUMS)
@SETTINGS
@given(data=st.binary(max_size=300))
def test_random_data_against_reference(algo, data):
    cls = CLASSES[algo]
    wire = cls(data=data).pack()
    assert wire[: 2 + len(data)] == struct.pack(">H", len(data)) + data
    assert cls.unpack(wire).sum == reference(algo, data)


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 1 << 20])
def test_large_and_boundary_sizes_against_zlib(size):
    data = bytes((i * 131 + 7) & 0xFF for i in range(size))
    for algo in ("crc32", "adler32", "sha256"):
        cls = CLASSES[algo] if size < 65536 else None
        if cls is None:

            class Big(bw.Struct):
                n: bw.U32
                data: bytes = bw.field(len="n")
                sum: bw.U32 = bw.checksum("crc32", over=["data"])

            assert Big.unpack(Big(data=data).pack()).sum == zlib.crc32(data)
            break
        assert cls.unpack(cls(data=data).pack()).sum == reference(algo, data)


@pytest.mark.parametrize("algo", bw.CHECKSUMS)
def test_corruption_is_decode_error_with_path_and_offset(algo):
    cls = CLASSES[algo]
    wire = bytearray(cls(data=b"hello world").pack())
    wire[5] ^= 0x01
    with pytest.raises(bw.DecodeError) as ei:
        cls.unpack(bytes(wire))
    assert ei.value.path == "sum" and ei.value.offset == 2 + 11
    assert "checksum mismatch" in str(ei.value)
    wire = bytearray(cls(data=b"hello world").pack())
    wire[-1] ^= 0x80
    with pytest.raises(bw.DecodeError) as ei:
        bw.compile(cls).unpack(bytes(wire))
    assert ei.value.path == "sum"


class IPv4Header(bw.Struct):
    version_ihl: bw.U8
    tos: bw.U8
    total_length: bw.U16
    ident: bw.U16
    flags_frag: bw.U16
    ttl: bw.U8
    proto: bw.U8
    checksum: bw.U16 = bw.checksum("internet")  # whole struct, own bytes as zero
    src: bytes = bw.field(len=4)
    dst: bytes = bw.field(len=4)


# A header from the Wikipedia article on the IPv4 header checksum.
IP_WIRE = bytes.fromhex("450000730000400040 11b861c0a80001c0a800c7".replace(" ", ""))


def test_whole_struct_checksum_ipv4_header():
    h = IPv4Header(
        version_ihl=0x45,
        tos=0,
        total_length=0x73,
        ident=0,
        flags_frag=0x4000,
        ttl=0x40,
        proto=0x11,
        src=bytes([192, 168, 0, 1]),
        dst=bytes([192, 168, 0, 199]),
    )
    assert h.pack() == IP_WIRE
    assert IPv4Header.unpack(IP_WIRE).checksum == 0xB861
    assert internet_ref(IP_WIRE) == 0  # the RFC 1071 verification property
    zeroed = IP_WIRE[:10] + b"\x00\x00" + IP_WIRE[12:]
    assert internet_ref(zeroed) == 0xB861


def test_whole_struct_crc_at_the_end_and_in_the_middle():
    class Tail(bw.Struct):
        a: bw.U32
        b: bw.U16
        crc: bw.U32 = bw.checksum("crc32")

    wire = Tail(a=1, b=2).pack()
    assert wire[-4:] == struct.pack(">I", zlib.crc32(wire[:-4] + bytes(4)))

    class Middle(bw.Struct, byteorder="little"):
        a: bw.U32
        crc: bw.U32 = bw.checksum("crc32")
        n: bw.U8
        data: bytes = bw.field(len="n")

    wire = Middle(a=7, data=b"xyz").pack()
    assert struct.unpack("<I", wire[4:8])[0] == zlib.crc32(wire[:4] + bytes(4) + wire[8:])
    assert Middle.unpack(wire).crc == zlib.crc32(wire[:4] + bytes(4) + wire[8:])


def test_own_field_in_over_list_counts_as_zero():
    class Own(bw.Struct):
        a: bw.U16
        crc: bw.U16 = bw.checksum("crc16-xmodem", over=["a", "crc"])

    wire = Own(a=0x1234).pack()
    assert wire[2:] == struct.pack(">H", binascii.crc_hqx(b"\x12\x34\x00\x00", 0))


def test_over_list_order_and_nested_struct_bytes():
    class Inner(bw.Struct):
        x: bw.U8
        y: bw.U8

    class Outer(bw.Struct):
        a: bw.U8
        inner: Inner
        b: bw.U8
        crc: bw.U32 = bw.checksum("crc32", over=["b", "inner"])

    wire = Outer(a=1, inner=Inner(x=2, y=3), b=4).pack()
    assert wire[:4] == b"\x01\x02\x03\x04"
    assert wire[4:] == struct.pack(">I", zlib.crc32(b"\x04\x02\x03"))


def test_nested_struct_checksums_verify_independently():
    class Chunk(bw.Struct):
        n: bw.U8
        data: bytes = bw.field(len="n")
        crc: bw.U16 = bw.checksum("crc16-arc", over=["data"])

    class File(bw.Struct):
        count: bw.U8
        chunks: list[Chunk] = bw.field(count="count")
        total: bw.U32 = bw.checksum("crc32")

    f = File(chunks=[Chunk(data=b"ab"), Chunk(data=b"cde")])
    wire = f.pack()
    assert File.unpack(wire).total == zlib.crc32(wire[:-4] + bytes(4))
    bad = bytearray(wire)
    bad[7] ^= 0xFF  # 'c' in the second chunk
    with pytest.raises(bw.DecodeError) as ei:
        File.unpack(bytes(bad))
    assert ei.value.path == "chunks[1].crc"


def test_verify_false_skips_the_check_but_still_computes():
    class Lax(bw.Struct):
        n: bw.U8
        data: bytes = bw.field(len="n")
        crc: bw.U32 = bw.checksum("crc32", over=["data"], verify=False)

    wire = Lax(data=b"abc").pack()
    assert wire[-4:] == struct.pack(">I", zlib.crc32(b"abc"))
    back = Lax.unpack(wire[:-4] + b"\x00\x00\x00\x00")
    assert back.crc == 0 and back.data == b"abc"


def test_supplied_value_is_checked_on_pack():
    cls = CLASSES["crc32"]
    good = zlib.crc32(b"abc")
    assert cls(data=b"abc", sum=good).pack() == cls(data=b"abc").pack()
    with pytest.raises(bw.PackError) as ei:
        cls(data=b"abc", sum=good ^ 1).pack()
    assert ei.value.path == "sum" and "does not match the computed checksum" in str(ei.value)
    # an unpacked value packs back unchanged
    v = cls.unpack(cls(data=b"abc").pack())
    assert v.pack() == cls(data=b"abc").pack()
    sha = CLASSES["sha256"]
    with pytest.raises(bw.PackError) as ei:
        sha(data=b"abc", sum=bytes(32)).pack()
    assert ei.value.path == "sum"


def test_dict_codec_computes_and_verifies():
    codec = bw.compile(CLASSES["md5"])
    wire = codec.pack({"data": b"abc"})
    assert wire == b"\x00\x03abc" + hashlib.md5(b"abc").digest()
    assert codec.unpack(wire) == {"n": 3, "data": b"abc", "sum": hashlib.md5(b"abc").digest()}


@pytest.mark.parametrize(
    ("params", "ann", "check"),
    [
        ((16, 0x8005, 0xFFFF, True, True, 0), bw.U16, 0x4B37),  # MODBUS again
        ((5, 0x05, 0x1F, True, True, 0x1F), bw.U8, 0x19),  # CRC-5/USB
        ((12, 0x80F, 0, False, True, 0), bw.U16, 0xDAF),  # CRC-12/UMTS: refin != refout
        ((24, 0x864CFB, 0xB704CE, False, False, 0), bw.U24, 0x21CF02),  # CRC-24/OPENPGP
        ((32, 0x814141AB, 0, False, False, 0), bw.U32, 0x3010BF7F),  # CRC-32Q
        ((64, 0x42F0E1EBA9EA3693, 0, False, False, 0), bw.U64, 0x6C40DF5F0B497347),  # ECMA
    ],
)
def test_custom_crc_parameters(params, ann, check):
    assert crc_ref(CHECK, *params) == check
    ns = {
        "__annotations__": {"data": bytes, "crc": ann},
        "__module__": __name__,
        "__qualname__": "K",
        "data": bw.field(len=9),
        "crc": bw.checksum(bw.Crc(*params), over=["data"]),
    }
    cls = StructMeta("K", (bw.Struct,), ns)
    assert cls.unpack(cls(data=CHECK).pack()).crc == check


@SETTINGS
@given(
    width=st.integers(1, 64),
    refin=st.booleans(),
    refout=st.booleans(),
    seed=st.integers(0, 2**64 - 1),
    data=st.binary(max_size=64),
)
def test_random_custom_crc_against_reference(width, refin, refout, seed, data):
    mask = (1 << width) - 1
    poly, init, xorout = (seed | 1) & mask, (seed >> 7) & mask, (seed >> 3) & mask
    nbytes = (width + 7) // 8
    ann = {1: bw.U8, 2: bw.U16, 3: bw.U24, 4: bw.U32}.get(nbytes, bw.U64)
    if nbytes in (5, 6, 7):
        return  # no integer type of that width
    ns = {
        "__annotations__": {"n": bw.U8, "data": bytes, "crc": ann},
        "__module__": __name__,
        "__qualname__": "R",
        "data": bw.field(len="n"),
        "crc": bw.checksum(bw.Crc(width, poly, init, refin, refout, xorout), over=["data"]),
    }
    cls = StructMeta("R", (bw.Struct,), ns)
    assert cls.unpack(cls(data=data).pack()).crc == crc_ref(
        data, width, poly, init, refin, refout, xorout
    )


def test_schema_errors():
    with pytest.raises(bw.SchemaError) as ei:
        bw.checksum("crc23")
    assert "did you mean" in str(ei.value)
    with pytest.raises(bw.SchemaError):
        bw.checksum("crc32", over="data")
    with pytest.raises(bw.SchemaError) as ei:

        class WrongWidth(bw.Struct):
            a: bw.U8
            crc: bw.U16 = bw.checksum("crc32")

    assert "32-bit unsigned integer" in str(ei.value)
    with pytest.raises(bw.SchemaError) as ei:

        class Unknown(bw.Struct):
            a: bw.U8
            crc: bw.U32 = bw.checksum("crc32", over=["b"])

    assert "unknown field 'b'" in str(ei.value)
    with pytest.raises(bw.SchemaError) as ei:

        class BadPoly(bw.Struct):
            a: bw.U8
            crc: bw.U8 = bw.checksum(bw.Crc(8, 0x1FF))

    assert "does not fit in 8 bits" in str(ei.value)
    with pytest.raises(bw.SchemaError):

        class DigestAsInt(bw.Struct):
            a: bw.U8
            md: bw.U64 = bw.checksum("md5")


def test_integer_checksum_into_bytes_field_is_rejected():
    # It used to compile, write nothing into the field and then fail every verification.
    with pytest.raises(bw.SchemaError) as ei:

        class AsBytes(bw.Struct):
            a: bw.U32
            crc: bw.Bytes(4) = bw.checksum("crc32")  # type: ignore[valid-type]

    assert "crc: " in str(ei.value) and "32-bit unsigned integer" in str(ei.value)


def test_signed_checksum_field_is_rejected():
    # A signed field read back a negative value that pack then rejected as wrong.
    with pytest.raises(bw.SchemaError) as ei:

        class Signed(bw.Struct):
            a: bw.U32
            crc: bw.I32 = bw.checksum("crc32", over=["a"])

    assert "32-bit unsigned integer" in str(ei.value)


def test_checksums_covering_each_other_are_schema_error():
    with pytest.raises(bw.SchemaError) as ei:

        class Twice(bw.Struct):
            a: bw.U32
            c1: bw.U32 = bw.checksum("crc32")
            c2: bw.U16 = bw.checksum("crc16-arc")

    assert "cover each other" in str(ei.value)
    with pytest.raises(bw.SchemaError):

        class Mutual(bw.Struct):
            c1: bw.U32 = bw.checksum("crc32", over=["c2"])
            c2: bw.U32 = bw.checksum("crc32", over=["c1"])


def test_leading_whole_struct_crc_covers_a_later_digest():
    class Framed(bw.Struct):
        crc: bw.U32 = bw.checksum("crc32")
        n: bw.U8
        data: bytes = bw.field(len="n")
        md: bytes = bw.checksum("md5", over=["data"])

    wire = Framed(data=b"payload").pack()
    assert wire[-16:] == hashlib.md5(b"payload").digest()
    assert wire[:4] == struct.pack(">I", zlib.crc32(bytes(4) + wire[4:]))
    assert Framed.unpack(wire).data == b"payload"


def test_checksum_chain_is_written_in_dependency_order():
    class Chain(bw.Struct):
        whole: bw.U32 = bw.checksum("crc32")
        outer: bw.U16 = bw.checksum("crc16-xmodem", over=["inner", "data"])
        inner: bw.U8 = bw.checksum("crc8", over=["data"])
        data: bytes = bw.field(len=3)

    wire = Chain(data=b"abc").pack()
    inner = crc_ref(b"abc", *PARAMS["crc8"])
    outer = binascii.crc_hqx(bytes([inner]) + b"abc", 0)
    assert wire[4:] == struct.pack(">HB", outer, inner) + b"abc"
    assert wire[:4] == struct.pack(">I", zlib.crc32(bytes(4) + wire[4:]))
    assert Chain.unpack(wire) == Chain(
        whole=zlib.crc32(bytes(4) + wire[4:]), outer=outer, inner=inner, data=b"abc"
    )


def test_checksums_at_offsets_pack_into_and_pack_many():
    class Inner(bw.Struct):
        a: bw.U8
        b: bytes = bw.field(len=3)
        s: bw.U16 = bw.checksum("internet", over=["a", "b"])  # odd split across fields
        crc: bw.U32 = bw.checksum("crc32")

    class Outer(bw.Struct):
        pre: bw.U8
        inner: Inner
        crc: bw.U16 = bw.checksum("crc16-arc")

    inner = Inner(a=1, b=b"\x02\x03\x04")
    w = inner.pack()
    assert w[4:6] == struct.pack(">H", internet_ref(b"\x01\x02\x03\x04"))
    assert w[6:] == struct.pack(">I", zlib.crc32(w[:6] + bytes(4)))
    outer = Outer(pre=9, inner=inner)
    w2 = outer.pack()
    assert w2[1:-2] == w
    assert w2[-2:] == struct.pack(">H", crc_ref(w2[:-2] + bytes(2), *PARAMS["crc16-arc"]))
    buf = bytearray(40)
    end = outer.pack_into(buf, 7)
    assert bytes(buf[7:end]) == w2 and buf[:7] == bytes(7) and buf[end:] == bytes(40 - end)
    assert Outer.unpack_from(bytes(buf), 7)[0].inner.crc == zlib.crc32(w[:6] + bytes(4))
    assert Outer.pack_many([outer, outer]) == w2 * 2
    assert Outer.iter_unpack(w2 * 2)[1] == Outer.unpack(w2)


def split_class(algo: str) -> type:
    """``a`` and ``b`` (lengths from ``na``/``nb``) around a whole-struct and an over= sum."""
    w = WIDTH[algo]
    ann_sum = bytes if w > 8 else INT_TYPE[w]
    ns = {
        "__annotations__": {
            "na": bw.U8,
            "a": bytes,
            "whole": ann_sum,
            "nb": bw.U8,
            "b": bytes,
            "parts": ann_sum,
        },
        "__module__": __name__,
        "__qualname__": "Split",
        "a": bw.field(len="na"),
        "whole": bw.checksum(algo),
        "b": bw.field(len="nb"),
        "parts": bw.checksum(algo, over=["b", "a"]),
    }
    return StructMeta("Split", (bw.Struct,), ns)


SPLIT = {a: split_class(a) for a in bw.CHECKSUMS}


@pytest.mark.parametrize("algo", bw.CHECKSUMS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.binary(max_size=40), b=st.binary(max_size=40))
def test_split_coverage_against_reference(algo, a, b):
    """Data fed in pieces (odd splits included), and the field's own bytes as zeros."""
    cls = SPLIT[algo]
    w = WIDTH[algo]
    wire = cls(a=a, b=b).pack()
    back = cls.unpack(wire)
    assert back.parts == reference(algo, b + a)
    whole_at = 1 + len(a)
    zeroed = wire[:whole_at] + bytes(w) + wire[whole_at + w :]
    assert back.whole == reference(algo, zeroed)
