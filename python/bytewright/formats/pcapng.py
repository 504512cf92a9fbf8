"""pcapng capture files (the format of Wireshark and dumpcap): blocks of a type, a length,
a body and the length again.

Each section starts with a section header block whose byte-order magic sets the byte
order of the section's blocks; interface description blocks give each interface's link
type, snap length and options (the timestamp resolution ``if_tsresol`` among them); enhanced
packet blocks carry packets with their interface and a 64-bit timestamp; simple packet
blocks carry packets of interface 0 without one. Other blocks (name resolution, statistics,
custom) are kept as raw bodies, so every file re-encodes byte for byte.

``read_blocks(data)`` decodes every block; ``write(...)`` builds a file. ``pcap.read(path)``
reads pcapng and pcap files alike into packet records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import bytewright as bw

__all__ = [
    "BLOCK_EPB",
    "BLOCK_IDB",
    "BLOCK_PB",
    "BLOCK_SHB",
    "BLOCK_SPB",
    "BYTE_ORDER_MAGIC",
    "BlockBE",
    "BlockLE",
    "CutShort",
    "EnhancedPacketBE",
    "EnhancedPacketLE",
    "InterfaceDescriptionBE",
    "InterfaceDescriptionLE",
    "OptionBE",
    "OptionLE",
    "PacketBE",
    "PacketLE",
    "RawBody",
    "Section",
    "SectionHeaderBE",
    "SectionHeaderLE",
    "SimplePacketBE",
    "SimplePacketLE",
    "iter_blocks",
    "read_blocks",
    "write",
]

BLOCK_SHB = 0x0A0D0D0A
BLOCK_IDB = 0x00000001
BLOCK_PB = 0x00000002
BLOCK_SPB = 0x00000003
BLOCK_EPB = 0x00000006
BYTE_ORDER_MAGIC = 0x1A2B3C4D

OPT_ENDOFOPT = 0
OPT_IF_NAME = 2
OPT_IF_TSRESOL = 9
OPT_IF_TSOFFSET = 14


class OptionLE(bw.Struct, byteorder="little", align=4):
    """One option: a code, a length and a value padded to 4 bytes (code 0 ends the list).

    >>> from bytewright.formats import pcapng
    >>> pcapng.OptionLE(code=2, value=b"eth0").pack(), pcapng.OptionLE(code=2, value=b"lo").pack()
    (b'\\x02\\x00\\x04\\x00eth0', b'\\x02\\x00\\x02\\x00lo\\x00\\x00')
    """

    code: bw.U16
    length: bw.U16 = bw.derived()
    value: bytes = bw.field(len="length", default=b"")


class OptionBE(OptionLE, byteorder="big", align=4):
    """One option of a big-endian section (``OptionLE``'s fields).

    >>> from bytewright.formats import pcapng
    >>> pcapng.OptionBE(code=2, value=b"lo").pack()
    b'\\x00\\x02\\x00\\x02lo\\x00\\x00'
    """


class SectionHeaderLE(bw.Struct, byteorder="little"):
    """The section header block's body in a little-endian section: the byte-order magic, the
    version and the section's length (-1: not given).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> shb = pcapng.read_blocks(data)[0].body
    >>> hex(shb.byte_order_magic), shb.major, shb.minor, shb.section_length
    ('0x1a2b3c4d', 1, 0, -1)
    """

    byte_order_magic: bw.U32 = bw.const(BYTE_ORDER_MAGIC)
    major: bw.U16 = 1
    minor: bw.U16 = 0
    section_length: bw.I64 = -1
    options: list[OptionLE] = bw.field(count=bw.REST, default=[])


class SectionHeaderBE(bw.Struct, byteorder="big"):
    """The section header block's body in a big-endian section: the byte-order magic, the
    version and the section's length (-1: not given).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")],
    ...                                     byteorder="big")])
    >>> shb = pcapng.read_blocks(data)[0].body
    >>> hex(shb.byte_order_magic), shb.major, shb.minor, shb.section_length
    ('0x1a2b3c4d', 1, 0, -1)
    """

    byte_order_magic: bw.U32 = bw.const(BYTE_ORDER_MAGIC)
    major: bw.U16 = 1
    minor: bw.U16 = 0
    section_length: bw.I64 = -1
    options: list[OptionBE] = bw.field(count=bw.REST, default=[])


class InterfaceDescriptionLE(bw.Struct, byteorder="little"):
    """The interface description block's body in a little-endian section: link type, snap
    length and options (``if_name``, ``if_tsresol`` ...).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> idb = pcapng.read_blocks(data)[1].body
    >>> idb.linktype, idb.snaplen, [(o.code, o.value) for o in idb.options]
    (1, 65535, [(2, b'eth0'), (0, b'')])
    """

    linktype: bw.U16 = 1
    reserved: bw.U16 = 0
    snaplen: bw.U32 = 0
    options: list[OptionLE] = bw.field(count=bw.REST, default=[])


class InterfaceDescriptionBE(bw.Struct, byteorder="big"):
    """The interface description block's body in a big-endian section: link type, snap length
    and options (``if_name``, ``if_tsresol`` ...).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")],
    ...                                     byteorder="big")])
    >>> idb = pcapng.read_blocks(data)[1].body
    >>> idb.linktype, idb.snaplen, [(o.code, o.value) for o in idb.options]
    (1, 65535, [(2, b'eth0'), (0, b'')])
    """

    linktype: bw.U16 = 1
    reserved: bw.U16 = 0
    snaplen: bw.U32 = 0
    options: list[OptionBE] = bw.field(count=bw.REST, default=[])


class EnhancedPacketLE(bw.Struct, byteorder="little"):
    """The enhanced packet block's body in a little-endian section: interface, 64-bit timestamp
    in the interface's units, the captured data and options.

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> epb = pcapng.read_blocks(data)[2].body
    >>> epb.interface_id, (epb.timestamp_high << 32) | epb.timestamp_low, epb.data
    (0, 1700000000000000, b'frame')
    """

    interface_id: bw.U32 = 0
    timestamp_high: bw.U32 = 0
    timestamp_low: bw.U32 = 0
    captured_length: bw.U32 = bw.derived()
    original_length: bw.U32
    data: bytes = bw.field(len="captured_length")
    options: list[OptionLE] = bw.field(count=bw.REST, align=4, default=[])


class EnhancedPacketBE(bw.Struct, byteorder="big"):
    """The enhanced packet block's body in a big-endian section: interface, 64-bit timestamp in
    the interface's units, the captured data and options.

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")],
    ...                                     byteorder="big")])
    >>> epb = pcapng.read_blocks(data)[2].body
    >>> epb.interface_id, (epb.timestamp_high << 32) | epb.timestamp_low, epb.data
    (0, 1700000000000000, b'frame')
    """

    interface_id: bw.U32 = 0
    timestamp_high: bw.U32 = 0
    timestamp_low: bw.U32 = 0
    captured_length: bw.U32 = bw.derived()
    original_length: bw.U32
    data: bytes = bw.field(len="captured_length")
    options: list[OptionBE] = bw.field(count=bw.REST, align=4, default=[])


class PacketLE(bw.Struct, byteorder="little"):
    """The obsolete packet block (type 2), which older writers still produce.

    >>> from bytewright.formats import pcapng
    >>> body = pcapng.PacketLE(original_length=5, data=b"frame")
    >>> block = pcapng.BlockLE(type=pcapng.BLOCK_PB, body=body)
    >>> pcapng.BlockLE.unpack(block.pack()).body.data
    b'frame'
    """

    interface_id: bw.U16 = 0
    drops_count: bw.U16 = 0
    timestamp_high: bw.U32 = 0
    timestamp_low: bw.U32 = 0
    captured_length: bw.U32 = bw.derived()
    original_length: bw.U32
    data: bytes = bw.field(len="captured_length")
    options: list[OptionLE] = bw.field(count=bw.REST, align=4, default=[])


class PacketBE(bw.Struct, byteorder="big"):
    """The obsolete packet block (type 2), which older writers still produce.

    >>> from bytewright.formats import pcapng
    >>> body = pcapng.PacketBE(original_length=5, data=b"frame")
    >>> block = pcapng.BlockBE(type=pcapng.BLOCK_PB, body=body)
    >>> pcapng.BlockBE.unpack(block.pack()).body.data
    b'frame'
    """

    interface_id: bw.U16 = 0
    drops_count: bw.U16 = 0
    timestamp_high: bw.U32 = 0
    timestamp_low: bw.U32 = 0
    captured_length: bw.U32 = bw.derived()
    original_length: bw.U32
    data: bytes = bw.field(len="captured_length")
    options: list[OptionBE] = bw.field(count=bw.REST, align=4, default=[])


class SimplePacketLE(bw.Struct, byteorder="little"):
    """A packet of interface 0; ``data`` includes the padding to 4 bytes (the captured
    length is the smaller of ``original_length`` and the interface's snap length).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     simple=True, packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> spb = pcapng.read_blocks(data)[2].body
    >>> type(spb).__name__, spb.original_length, spb.data
    ('SimplePacketLE', 5, b'frame\\x00\\x00\\x00')
    """

    original_length: bw.U32
    data: bytes = bw.field(len=bw.REST)


class SimplePacketBE(SimplePacketLE, byteorder="big"):
    """A simple packet block's body in a big-endian section (``SimplePacketLE``'s fields).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     simple=True, packets=[(0, 1_700_000_000_000_000, b"frame")],
    ...                                     byteorder="big")])
    >>> spb = pcapng.read_blocks(data)[2].body
    >>> type(spb).__name__, spb.original_length, spb.data
    ('SimplePacketBE', 5, b'frame\\x00\\x00\\x00')
    """


class RawBody(bw.Struct):
    """The body of a block type this module does not decode.

    >>> from bytewright.formats import pcapng
    >>> block = pcapng.BlockLE(type=0x0BAD, body=pcapng.RawBody(data=b"abcd"))
    >>> pcapng.BlockLE.unpack(block.pack()).body
    RawBody(data=b'abcd')
    """

    data: bytes = bw.field(len=bw.REST)


class BlockLE(bw.Struct, byteorder="little"):
    """One block; ``trailing_length`` repeats ``length`` (computed on pack when None).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> block = pcapng.read_blocks(data)[2]
    >>> type(block).__name__, block.type == pcapng.BLOCK_EPB, block.length == block.trailing_length
    ('BlockLE', True, True)
    """

    type: bw.U32
    length: bw.U32 = bw.derived()
    body: Any = bw.field(
        size="length - 12",
        tag="type",
        cases={
            BLOCK_SHB: SectionHeaderLE,
            BLOCK_IDB: InterfaceDescriptionLE,
            BLOCK_EPB: EnhancedPacketLE,
            BLOCK_SPB: SimplePacketLE,
            BLOCK_PB: PacketLE,
        },
        default_case=RawBody,
    )
    trailing_length: bw.U32 = None  # type: ignore[assignment]

    def pack(self) -> bytes:
        return _pack_block(self)


class BlockBE(bw.Struct, byteorder="big"):
    """One block; ``trailing_length`` repeats ``length`` (computed on pack when None).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")],
    ...                                     byteorder="big")])
    >>> block = pcapng.read_blocks(data)[2]
    >>> type(block).__name__, block.type == pcapng.BLOCK_EPB, block.length == block.trailing_length
    ('BlockBE', True, True)
    """

    type: bw.U32
    length: bw.U32 = bw.derived()
    body: Any = bw.field(
        size="length - 12",
        tag="type",
        cases={
            BLOCK_SHB: SectionHeaderBE,
            BLOCK_IDB: InterfaceDescriptionBE,
            BLOCK_EPB: EnhancedPacketBE,
            BLOCK_SPB: SimplePacketBE,
            BLOCK_PB: PacketBE,
        },
        default_case=RawBody,
    )
    trailing_length: bw.U32 = None  # type: ignore[assignment]

    def pack(self) -> bytes:
        return _pack_block(self)


def _pack_block(block: Any) -> bytes:
    codec = type(block).__bw__.codec
    if block.trailing_length is not None:
        return codec.pack(block)  # type: ignore[no-any-return]
    wire = bytearray(
        codec.pack(
            type(block)(type=block.type, length=block.length, body=block.body, trailing_length=0)
        )
    )
    wire[-4:] = wire[4:8]
    return bytes(wire)


class CutShort(bw.DecodeError):
    """The file ends inside a block (a capture that was cut short).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> pcapng.read_blocks(data[:-2])
    Traceback (most recent call last):
        ...
    bytewright.formats.pcapng.CutShort: blocks[2]: the file ends inside this block (38 bytes of it at offset 60, at least 40 needed)
    """


def _order_of(data: bytes, offset: int) -> str:
    bom = bytes(data[offset + 8 : offset + 12])
    if bom == b"\x4d\x3c\x2b\x1a":
        return "little"
    if bom == b"\x1a\x2b\x3c\x4d":
        return "big"
    raise bw.DecodeError(
        f"body.byte_order_magic: {bom!r} is not the pcapng byte-order magic 0x1a2b3c4d "
        "in either byte order",
        "body.byte_order_magic",
        offset + 8,
    )


def iter_blocks(data: bytes | bytearray | memoryview) -> Iterator[tuple[int, BlockLE | BlockBE]]:
    """Yields ``(offset, block)`` for every block, switching byte order at each section
    header. Errors name the block: ``blocks[3].body.captured_length``.

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> [(offset, hex(block.type)) for offset, block in pcapng.iter_blocks(data)]
    [(0, '0xa0d0d0a'), (28, '0x1'), (60, '0x6')]
    """
    buf = bytes(data)
    off = 0
    index = 0
    cls: type[Any] | None = None
    while off < len(buf):
        head = buf[off : off + 4]
        if head == b"\x0a\x0d\x0d\x0a":
            cls = BlockLE if _order_of(buf, off) == "little" else BlockBE
        elif cls is None:
            raise bw.DecodeError(
                f"blocks[0].type: a pcapng file starts with a section header block "
                f"(0x0a0d0d0a), not {head!r}",
                "blocks[0].type",
                0,
            )
        try:
            got = cls.parse(buf, off)
        except bw.DecodeError as e:
            path = f"blocks[{index}].{e.path}" if e.path else f"blocks[{index}]"
            detail = str(e)[len(e.path) + 2 :] if e.path else str(e)
            raise bw.DecodeError(f"{path}: {detail}", path, e.offset) from None
        if not got:
            raise CutShort(
                f"blocks[{index}]: the file ends inside this block ({len(buf) - off} bytes "
                f"of it at offset {off}, at least {len(buf) - off + got.needed} needed)",
                f"blocks[{index}]",
                len(buf),
            )
        block, end = got
        if block.trailing_length != block.length:
            raise bw.DecodeError(
                f"blocks[{index}].trailing_length: {block.trailing_length} differs from the "
                f"block's length {block.length}",
                f"blocks[{index}].trailing_length",
                end - 4,
            )
        if block.length % 4:
            raise bw.DecodeError(
                f"blocks[{index}].length: {block.length} is not a multiple of 4",
                f"blocks[{index}].length",
                off + 4,
            )
        yield off, block
        off = end
        index += 1


def read_blocks(data: bytes | bytearray | memoryview) -> list[BlockLE | BlockBE]:
    """Every block of a pcapng file, in order.

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> [(b.type, b.length) for b in pcapng.read_blocks(data)]
    [(168627466, 28), (1, 32), (6, 40)]
    """
    return [b for _, b in iter_blocks(data)]


@dataclass
class Section:
    """What ``write`` puts in one section: its interfaces (``(linktype, snaplen, options)``
    with options as ``(code, value)`` pairs) and its packets (``(interface, timestamp,
    data[, original_length])``, the timestamp in the interface's units).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> [type(b.body).__name__ for b in pcapng.read_blocks(data)]
    ['SectionHeaderLE', 'InterfaceDescriptionLE', 'EnhancedPacketLE']
    """

    interfaces: list[tuple[int, int, list[tuple[int, bytes]]]] = field(default_factory=list)
    packets: list[tuple[Any, ...]] = field(default_factory=list)
    byteorder: str = "little"
    simple: bool = False


def _options(cls: type[Any], pairs: Iterable[tuple[int, bytes]]) -> list[Any]:
    opts = [cls(code=c, value=v) for c, v in pairs]
    if opts:
        opts.append(cls(code=OPT_ENDOFOPT))
    return opts


def write(sections: Iterable[Section]) -> bytes:
    """Encodes a pcapng file. With ``simple``, the packets of interface 0 go into simple
    packet blocks (no timestamp).

    >>> from bytewright.formats import pcapng
    >>> data = pcapng.write([pcapng.Section(interfaces=[(1, 65535, [(2, b"eth0")])],
    ...                                     packets=[(0, 1_700_000_000_000_000, b"frame")])])
    >>> len(data), data[:4].hex()
    (100, '0a0d0d0a')
    """
    out = bytearray()
    for sec in sections:
        little = sec.byteorder == "little"
        block: type[Any] = BlockLE if little else BlockBE
        opt: type[Any] = OptionLE if little else OptionBE
        shb: type[Any] = SectionHeaderLE if little else SectionHeaderBE
        idb: type[Any] = InterfaceDescriptionLE if little else InterfaceDescriptionBE
        epb: type[Any] = EnhancedPacketLE if little else EnhancedPacketBE
        spb: type[Any] = SimplePacketLE if little else SimplePacketBE
        out += block(type=BLOCK_SHB, body=shb()).pack()
        for linktype, snaplen, options in sec.interfaces:
            body = idb(linktype=linktype, snaplen=snaplen, options=_options(opt, options))
            out += block(type=BLOCK_IDB, body=body).pack()
        for p in sec.packets:
            iface, ts, data = p[0], p[1], bytes(p[2])
            orig = p[3] if len(p) > 3 else len(data)
            if sec.simple and iface == 0:
                padded = data + b"\0" * (-len(data) % 4)
                out += block(type=BLOCK_SPB, body=spb(original_length=orig, data=padded)).pack()
                continue
            body = epb(
                interface_id=iface,
                timestamp_high=ts >> 32,
                timestamp_low=ts & 0xFFFFFFFF,
                original_length=orig,
                data=data,
            )
            out += block(type=BLOCK_EPB, body=body).pack()
    return bytes(out)
