"""``bw.explain`` against ``unpack``: the same values at every node, the same error at the
same path and offset, never an exception of its own; every byte of a decoded message in
exactly one leaf. Over every vocabulary item, the bundled formats and real files."""

from __future__ import annotations

import enum
import ipaddress
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bytewright as bw
import pytest
from bytewright.formats import dns, ethernet, ip, ipv6, msgpack, pcap, png
from explain_samples import Telemetry, tcp_capture, telemetry
from hypothesis import given, settings
from hypothesis import strategies as st

EXTERNAL = Path("/work/shared/formats_external")
CAPTURES = Path(__file__).resolve().parents[1] / "formats" / "captures"


def codec_of(x: Any) -> Any:
    return x if isinstance(x, bw.Codec) else x.__bw__.codec


def same(a: Any, b: Any) -> bool:
    """Equality of decoded values, field by field for Struct instances (a class compiled only
    inside another's codec, as msgpack's Array16 inside Value, has no ``__eq__`` of its own)."""
    if isinstance(a, bw.Struct):
        return type(a) is type(b) and all(
            same(getattr(a, f.name, None), getattr(b, f.name, None))
            for f in type(a).__bw__.fields()
            if not f.spec.is_pad
        )
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b) or (a != a and b != b)  # NaN is itself here


def value_at(root: Any, node: bw.ExplainNode) -> Any:
    """The value ``unpack`` gave at a node's path (attributes or keys, then indexes)."""
    chain = []
    n: bw.ExplainNode | None = node
    while n is not None and n.parent is not None:
        chain.append(n)
        n = n.parent
    v = root
    for step in reversed(chain):
        if isinstance(step.name, int):
            v = v[step.name]
        elif isinstance(v, dict):
            v = v[step.name]
        else:
            v = getattr(v, str(step.name))
    return v


def check_tree(ex: bw.Explained) -> None:
    """What holds of every tree: children inside their parents and in order; for a decoded
    message, every node's value is unpack's and every byte is in one leaf."""
    for node in ex.walk():
        for child in node.children:
            if "rest" in child.marks:  # the bytes after the message: outside it
                assert child.end == len(ex.data) and child.start >= node.start
                continue
            assert child.start >= node.start, child.path
            if node.end is not None and child.end is not None:
                assert child.end <= node.end, child.path
    if not ex.ok:
        assert ex.failed is not None and ex.failed.error is ex.error
        return
    assert ex.end is not None
    covered = [0] * len(ex.data)
    bits: set[int] = set()
    for node in ex.walk():
        assert node.end is not None and node.decoded, node.path
        if not node.padding:
            assert same(value_at(ex.value, node), node.value), node.path
        if node.children:
            continue
        for b in range(node.start, node.end):
            if node.bits is None or b not in bits:
                covered[b] += 1
            if node.bits is not None:
                bits.add(b)
    assert covered[ex.offset : ex.end] == [1] * (ex.end - ex.offset)


def agree(x: Any, data: bytes, offset: int = 0) -> bw.Explained:
    """Explains ``data`` and checks it against ``unpack`` of the same codec."""
    ex = bw.explain(x, data, offset=offset)
    try:
        want = codec_of(x).unpack(data[offset:])
    except bw.DecodeError as e:
        assert not ex.ok, "explain decoded what unpack rejects"
        assert type(ex.error) is type(e)
        assert ex.error is not None and ex.error.path == e.path
        # The same text; offsets count from ``offset`` in unpack(data[offset:]).
        if offset == 0:
            assert str(ex.error) == str(e)
            assert ex.error.offset == e.offset
        if e.__cause__ is not None:
            assert type(ex.error.__cause__) is type(e.__cause__)
    else:
        assert ex.ok, ex.error
        assert same(ex.value, want)
    check_tree(ex)
    return ex


# ---------------------------------------------------------------- the vocabulary


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class Perm(enum.IntFlag):
    R = 4
    W = 2
    X = 1


class Inner(bw.Struct, byteorder="little"):
    a: bw.U16
    b: bw.I8


class Node(bw.Struct):
    value: bw.U8
    n: bw.U8 = bw.derived()
    kids: list[Node] = bw.field(count="n")


class Shape(bw.Struct, registry="kind"):
    kind: bw.U8 = bw.derived()


class Circle(Shape, tag=1):
    r: bw.U16


class Rect(Shape, tag=2):
    w: bw.U8
    h: bw.U8


class OtherShape(Shape, default=True):
    data: bytes = bw.field(len=2)


class Everything(bw.Struct, byteorder="big"):
    magic: bytes = bw.const(b"EV")
    u24: bw.U24
    i64: bw.I64
    f16: bw.F16
    f32: bw.F32
    f64: bw.F64
    flag_byte: bw.Bool
    v: bw.VarInt
    uv: bw.VarUInt
    color: Color = bw.enum(bw.U8)
    perm: Perm = bw.enum(bw.U8)
    addr: ipaddress.IPv4Address = bw.field(type=bw.U32, convert=(ipaddress.IPv4Address, int))
    hi: int = bw.bits(3)
    mid: int = bw.bits(4, signed=True)
    lo: bool = bw.flag()
    _: None = bw.pad(2)
    fixed: bytes = bw.field(len=3)
    n: bw.U8 = bw.derived()
    text: str = bw.field(len="n", encoding="latin-1")
    c: str = bw.field(type=bw.CStr(max_len=20))
    inner: Inner
    count: bw.U8 = bw.derived()
    inners: list[Inner] = bw.field(count="count")
    opt: bw.U16 = bw.field(when="u24 > 10", default=0)
    skipped: bw.U16 = bw.field(when="u24 > 1000", default=7)
    aligned: bw.U32 = bw.field(align=8)
    tagged: Inner | bytes = bw.field(tag="flag_byte", cases={True: Inner}, default_case=bw.Bytes(2))
    size: bw.U8 = bw.derived()
    windowed: list[bw.U8] = bw.field(size="size")
    shapes: list[Shape] = bw.field(count=3)
    name: str = bw.field(type=bw.DnsName(compress=False))
    doc: Any = bw.field(type=bw.types.Msgpack())
    tree: Node
    crc: bw.U32 = bw.checksum("crc32c", over=["u24", "text"])
    rest: bytes = bw.field(len=bw.REST)


def everything() -> Everything:
    return Everything(
        u24=77,
        i64=-(2**40),
        f16=1.5,
        f32=0.25,
        f64=-2.5e100,
        flag_byte=True,
        v=-300,
        uv=300,
        color=Color.GREEN,
        perm=Perm.R | Perm.X,
        addr=ipaddress.IPv4Address("192.0.2.9"),
        hi=5,
        mid=-3,
        lo=True,
        fixed=b"abc",
        text="café",
        c="nul",
        inner=Inner(a=513, b=-2),
        inners=[Inner(a=1, b=2), Inner(a=3, b=4)],
        opt=9,
        aligned=0xDEADBEEF,
        tagged=Inner(a=7, b=7),
        windowed=[1, 2, 3],
        shapes=[Circle(r=10), Rect(w=2, h=3), OtherShape(kind=9, data=b"zz")],
        name="www.example.com.",
        doc={"k": [1, None, b"x"], "f": 1.5},
        tree=Node(
            value=1, kids=[Node(value=2, kids=[]), Node(value=3, kids=[Node(value=4, kids=[])])]
        ),
        rest=b"tail",
    )


def test_every_vocabulary_item() -> None:
    wire = everything().pack()
    ex = agree(Everything, wire)
    assert ex["color"].value is Color.GREEN and ex["color"].kind == "u8"
    assert ex["perm"].value == Perm.R | Perm.X
    assert ex["addr"].value == ipaddress.IPv4Address("192.0.2.9")
    assert ex["_"].padding if ex.find("_") else any(n.padding for n in ex.walk())
    assert ex["skipped"].absent and ex["skipped"].size == 0 and ex["skipped"].value == 7
    assert "conditional" in ex["opt"].marks and not ex["opt"].absent
    assert ex["aligned"].start % 8 == 0
    assert ex["tagged"].type_name == "Inner"
    assert "window" in ex["windowed"].marks and ex["windowed"].notes[0] == "size=size"
    assert [ex[f"shapes[{i}]"].type_name for i in range(3)] == ["Circle", "Rect", "OtherShape"]
    assert ex["shapes[2]"].notes == ("default case: OtherShape",)
    assert ex["name"].kind == "dnsname" and "opaque" in ex["doc"].marks
    assert ex["tree.kids[1].kids[0].value"].value == 4
    assert ex["crc"].checksum and ex["crc"].notes == ("crc32c over u24, text",)
    assert ex["n"].derived and ex["count"].derived and ex["size"].derived
    assert ex["rest"].raw == b"tail"
    assert ex["hi"].bits == 3 and ex["mid"].bits == 4 and ex["lo"].bits == 1
    assert ex["mid"].value == -3
    assert ex["v"].kind == "varint" and ex["uv"].kind == "varuint" and ex["v"].size == 2
    # The dict codec: the same tree, with dicts and plain values.
    ex = agree(bw.compile(Everything), wire)
    assert ex["inner"].value == {"a": 513, "b": -2} and ex["color"].value == 2


def test_every_prefix_and_byte_flip_of_everything() -> None:
    wire = everything().pack()
    rng = random.Random(7)
    for cut in range(len(wire)):
        agree(Everything, wire[:cut])
    for _ in range(300):
        bad = bytearray(wire)
        bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        agree(Everything, bytes(bad))
        agree(bw.compile(Everything), bytes(bad))


def test_a_converter_error_is_the_same_error() -> None:
    wire = bytearray(everything().pack())
    ex = bw.explain(Everything, bytes(wire))
    at = ex["color"].start
    wire[at] = 9  # no such Color: kept as a plain int (unknown="keep")
    ex = agree(Everything, bytes(wire))
    assert ex["color"].value == 9


class Strict(bw.Struct):
    color: Color = bw.enum(bw.U8, unknown="raise")


def test_a_rejected_enum_value_fails_at_its_field() -> None:
    ex = agree(Strict, b"\x05")
    assert ex.failed is not None and ex.failed.path == "color"


def test_offset_and_trailing_bytes() -> None:
    wire = telemetry()
    ex = agree(Telemetry, b"xyz" + wire, offset=3)
    assert ex.root.start == 3 and ex["magic"].start == 3
    ex = agree(Telemetry, wire + b"!!")
    assert ex.rest is not None and ex.rest.raw == b"!!" and ex.failed is ex.rest
    assert ex.error is not None and ex.error.offset == len(wire)


def test_explain_never_raises_for_bad_offsets() -> None:
    ex = bw.explain(Telemetry, telemetry(), offset=10_000)
    assert not ex.ok and isinstance(ex.error, bw.DecodeError)
    assert str(ex.error) == "offset 10000 is past the end of the 49-byte buffer"


def test_only_the_arguments_raise() -> None:
    wire = telemetry()
    for bad in ("TM", 5, [84, 77], None):
        # bytes(5) is five zero bytes: explain takes buffers only, as unpack does.
        with pytest.raises(TypeError, match="expected a bytes-like object"):
            bw.explain(Telemetry, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="offset must be >= 0, got -1"):
        bw.explain(Telemetry, wire, offset=-1)
    with pytest.raises(TypeError):
        bw.explain(Telemetry, wire, offset=1.5)  # type: ignore[arg-type]
    with pytest.raises(bw.SchemaError):
        bw.explain(int, wire)
    # Any buffer: memoryview, bytearray, array.
    import array

    assert bw.explain(Telemetry, memoryview(wire)).ok
    assert bw.explain(Telemetry, bytearray(wire)).ok
    assert bw.explain(Telemetry, array.array("B", wire)).ok


def test_at_finds_the_innermost_node() -> None:
    ex = bw.explain(Telemetry, telemetry())
    for offset in range(len(ex.data)):
        node = ex.at(offset)
        assert node is not None and node.start <= offset < (node.end or 0)
        assert not node.children or all(
            not (c.start <= offset < (c.end or 0)) for c in node.children
        )
    assert ex.at(len(ex.data)) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes(data: bytes) -> None:
    agree(Everything, data)
    agree(Telemetry, data)


# ---------------------------------------------------------------- the bundled formats


def test_png_files() -> None:
    files = sorted((EXTERNAL / "png").glob("*/*.png"))
    if not files:
        pytest.skip("no /work/shared/formats_external/png")
    for path in files[:: max(1, len(files) // 120)]:
        agree(png.Png, path.read_bytes())


def test_png_chunks_marked() -> None:
    data = png.write([png.Chunk(type=b"IEND", data=b"")])
    ex = agree(png.Png, data)
    assert ex["signature"].constant and ex["chunks[0].crc"].checksum


def dnslib_exchanges() -> Iterator[bytes]:
    for path in sorted((EXTERNAL / "dns" / "dnslib").glob("*")):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith((";; QUERY:", ";; RESPONSE:")):
                yield bytes.fromhex(line.split(":", 1)[1].strip())


def test_dns_messages() -> None:
    packets = list(dnslib_exchanges())
    if not packets:
        packets = [dns.Message(id=1, questions=[dns.Question(name="a.b.", type=1)]).pack()]
    for wire in packets:
        ex = agree(dns.Message, wire)
        assert ex.ok
        for n in ex.walk():
            if n.kind == "dnsname":
                assert "opaque" in n.marks and isinstance(n.value, str)
        for cut in (len(wire) // 3, len(wire) - 1):
            agree(dns.Message, wire[:cut])


def test_msgpack_values() -> None:
    import json

    path = EXTERNAL / "msgpack" / "msgpack-test-suite.json"
    if not path.exists():
        pytest.skip("no msgpack test suite")
    suite = json.loads(path.read_text())
    n = 0
    for cases in suite.values():
        for case in cases:
            for hexed in case.get("msgpack", []):
                agree(msgpack.Value, bytes.fromhex(hexed.replace("-", "")))
                n += 1
    assert n > 100


def test_ip_and_ethernet_layers() -> None:
    from scapy.all import ICMP, IP, UDP, Ether, IPv6, Raw

    frames = [
        bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5, dport=53) / Raw(b"q")),
        bytes(Ether() / IP(flags="MF", frag=0) / UDP() / Raw(b"x" * 40)),
        bytes(Ether() / IPv6() / UDP() / Raw(b"v6")),
        bytes(Ether() / IP() / ICMP()),
    ]
    for frame in frames:
        ex = agree(ethernet.Ethernet, frame)
        assert ex.ok
        agree(ip.IPv4, frame[14:]) if frame[12:14] == b"\x08\x00" else agree(ipv6.IPv6, frame[14:])
        for cut in range(0, len(frame), 7):
            agree(ethernet.Ethernet, frame[:cut])


def test_pcap_frames_are_dissected() -> None:
    from bytewright._explain._formats import explain_format

    ex = explain_format("pcap", tcp_capture())
    assert ex.ok
    tcp = ex["body.records[0].data.payload.payload"]
    assert tcp.type_name == "TCP" and ex["body.records[0].data"].type_name == "Ethernet"
    assert ex["body.records[0].data.payload.payload.dst_port"].value == 80
    data = ex["body.records[0].data"]
    assert data.start == 40 and data.children[0].start == 40  # the frame's offsets are the file's
    check_tree_ranges(ex)


def check_tree_ranges(ex: bw.Explained) -> None:
    for node in ex.walk():
        for child in node.children:
            assert child.start >= node.start and (child.end or 0) <= (node.end or len(ex.data))


@pytest.mark.parametrize(
    "path",
    sorted(CAPTURES.glob("*.pcap*")) + sorted((EXTERNAL / "pcap").glob("*/*.pcap"))[:12],
    ids=lambda p: p.name,
)
def test_captures(path: Path) -> None:
    """Real captures: the tree of a pcap file is the Pcap struct's (agreeing with unpack)
    with each frame dissected; a pcapng file's is its blocks (as ``iter_blocks`` reads
    them)."""
    from bytewright._explain._formats import explain_format
    from bytewright.formats import pcapng

    data = path.read_bytes()
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        ex = explain_format("pcapng", data)
        try:
            blocks = pcapng.read_blocks(data)
        except bw.DecodeError as e:
            assert not ex.ok and ex.error is not None and ex.error.path == e.path
            return
        assert ex.ok, ex.error
        assert len(ex["blocks"].children) == len(blocks)
        for node, block in zip(ex["blocks"].children, blocks, strict=True):
            assert same(node.value, block)
    else:
        ex = explain_format("pcap", data)
        try:
            want = pcap.Pcap.__bw__.codec.unpack(data)
        except bw.DecodeError as e:
            assert not ex.ok and ex.error is not None and str(ex.error) == str(e)
            return
        assert ex.ok, ex.error
        assert same(ex.value, want)
        records = ex["body.records"].children
        assert len(records) == len(want.body.records)
    check_tree_ranges(ex)
    assert ex.render(max_depth=4).splitlines()[1].split()[0] == "0"


def test_pcapng_blocks() -> None:
    from bytewright._explain._formats import explain_format

    data = (CAPTURES / "lo.pcapng").read_bytes()
    ex = explain_format("pcapng", data)
    assert ex.ok and ex.end == len(data)
    blocks = ex["blocks"].children
    assert [b.type_name for b in blocks[:2]] == ["BlockLE", "BlockLE"]
    assert ex["blocks[1].body"].type_name == "InterfaceDescriptionLE"
    packets = [b for b in blocks if b["type"].value == 6]
    # Each frame by its interface's link type (lo: Ethernet, any: Linux cooked), as read does.
    want = [type(p.frame).__name__ for p in pcap.read(data).packets]
    assert [b["body.data"].type_name for b in packets] == want
    assert {"Ethernet", "LinuxSLL"} <= set(want)
    # Other blocks' bytes are left alone (an interface statistics block is not a frame).
    stats = [b for b in blocks if b["type"].value == 5]
    assert all(b["body.data"].type_name is None for b in stats)
    # --format pcap takes a pcapng file too, as pcap.read does.
    assert explain_format("pcap", data).render() == ex.render()
    ex = explain_format("pcapng", data[:-5])
    assert not ex.ok and ex.failed is not None and ex.failed.path.startswith("blocks[")
    assert ex.error is not None and ex.error.path.startswith("blocks[126]")


def test_pcapng_frames_by_their_interface() -> None:
    from bytewright._explain._formats import explain_format
    from bytewright.formats import pcapng

    frame = pcap.read(tcp_capture()).packets[0].data  # Ethernet / IPv4 / TCP
    section = pcapng.Section(
        interfaces=[(1, 65535, []), (228, 65535, [])],  # Ethernet, then raw IPv4
        packets=[(0, 1, frame), (1, 2, frame[14:])],
    )
    for order in ("little", "big"):
        section.byteorder = order
        ex = explain_format("pcapng", pcapng.write([section]))
        assert ex.ok
        frames = [n for n in ex.walk() if n.name == "data" and n.parent and n.parent.name == "body"]
        assert [f.type_name for f in frames] == ["Ethernet", "IPv4"]
        assert ex["blocks[4].body.data.payload.dst_port"].value == 80
