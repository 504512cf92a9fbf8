"""pcap capture files (libpcap format): both byte orders, micro- and nanosecond magic,
and the "modified pcap" magic 0xA1B2CD34; and ``read``, which reads pcap and pcapng files
alike into decoded packet records.

The 4-byte magic selects the byte order and the timestamp resolution; the rest of the file
is a global header and back-to-back records. ``Pcap`` decodes a whole file; ``iter_records``
decodes one record at a time.

``read(source)`` detects pcap or pcapng and returns a ``Capture`` whose ``packets`` are
``Packet`` records: the timestamp in nanoseconds, the interface and its link type, both
lengths, and the frame decoded (Ethernet with VLAN tags, Linux cooked capture, or raw IP;
then IPv4 or IPv6; then UDP, TCP or ICMP). A ``Packet`` is a plain ``bw.Struct`` tree.
"""

from __future__ import annotations

import os
import struct
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import bytewright as bw
from bytewright.formats import ethernet, ip, ipv6, pcapng
from bytewright.formats.ethernet import Ethernet, LinuxSLL
from bytewright.formats.ip import IPv4, Raw
from bytewright.formats.ipv6 import IPv6

__all__ = [
    "MAGICS",
    "MAGIC_BE_MODIFIED",
    "MAGIC_BE_NS",
    "MAGIC_BE_US",
    "MAGIC_LE_MODIFIED",
    "MAGIC_LE_NS",
    "MAGIC_LE_US",
    "BodyBE",
    "BodyLE",
    "Capture",
    "CutShort",
    "CutShortWarning",
    "HeaderBE",
    "HeaderLE",
    "Interface",
    "ModifiedBodyBE",
    "ModifiedBodyLE",
    "ModifiedRecordBE",
    "ModifiedRecordLE",
    "Packet",
    "Pcap",
    "RecordBE",
    "RecordLE",
    "iter_records",
    "read",
    "read_table",
    "write",
]

# The magic number 0xA1B2C3D4 (microseconds) or 0xA1B23C4D (nanoseconds), as written.
MAGIC_LE_US = b"\xd4\xc3\xb2\xa1"
MAGIC_BE_US = b"\xa1\xb2\xc3\xd4"
MAGIC_LE_NS = b"\x4d\x3c\xb2\xa1"
MAGIC_BE_NS = b"\xa1\xb2\x3c\x4d"
# Alexey Kuznetsov's "modified pcap" (0xA1B2CD34): microseconds, longer record headers.
MAGIC_LE_MODIFIED = b"\x34\xcd\xb2\xa1"
MAGIC_BE_MODIFIED = b"\xa1\xb2\xcd\x34"
_LITTLE = (MAGIC_LE_US, MAGIC_LE_NS, MAGIC_LE_MODIFIED)
_NANO = (MAGIC_LE_NS, MAGIC_BE_NS)
_MODIFIED = (MAGIC_LE_MODIFIED, MAGIC_BE_MODIFIED)
MAGICS = (MAGIC_LE_US, MAGIC_LE_NS, MAGIC_BE_US, MAGIC_BE_NS, MAGIC_LE_MODIFIED, MAGIC_BE_MODIFIED)


class HeaderLE(bw.Struct, byteorder="little"):
    """The global header after the magic.

    >>> from bytewright.formats import pcap
    >>> pcap.HeaderLE(snaplen=262144).pack().hex(" ")
    '02 00 04 00 00 00 00 00 00 00 00 00 00 00 04 00 01 00 00 00'
    """

    version_major: bw.U16 = 2
    version_minor: bw.U16 = 4
    thiszone: bw.I32 = 0
    sigfigs: bw.U32 = 0
    snaplen: bw.U32 = 65535
    linktype: bw.U32 = 1


class HeaderBE(HeaderLE, byteorder="big"):
    """The global header of a big-endian capture (``HeaderLE``'s fields).

    >>> from bytewright.formats import pcap
    >>> pcap.HeaderBE(snaplen=262144).pack().hex(" ")
    '00 02 00 04 00 00 00 00 00 00 00 00 00 04 00 00 00 00 00 01'
    """


class RecordLE(bw.Struct, byteorder="little"):
    """One captured packet; ``ts_frac`` is in micro- or nanoseconds (see the magic).

    >>> from bytewright.formats import pcap
    >>> pcap.RecordLE(ts_sec=1, ts_frac=2, orig_len=60, data=b"abc").pack().hex(" ")
    '01 00 00 00 02 00 00 00 03 00 00 00 3c 00 00 00 61 62 63'
    """

    ts_sec: bw.U32
    ts_frac: bw.U32
    incl_len: bw.U32 = bw.derived()
    orig_len: bw.U32
    data: bytes = bw.field(len="incl_len")


class RecordBE(RecordLE, byteorder="big"):
    """One captured packet of a big-endian capture (``RecordLE``'s fields).

    >>> from bytewright.formats import pcap
    >>> pcap.RecordBE(ts_sec=1, ts_frac=2, orig_len=60, data=b"abc").pack().hex(" ")
    '00 00 00 01 00 00 00 02 00 00 00 03 00 00 00 3c 61 62 63'
    """


class ModifiedRecordLE(bw.Struct, byteorder="little"):
    """A record of a modified pcap file: the usual fields, then the interface index, the
    protocol and the packet type of the Linux capture.

    >>> from bytewright.formats import pcap
    >>> rec = pcap.ModifiedRecordLE(ts_sec=1, ts_frac=2, orig_len=3, ifindex=2, data=b"abc")
    >>> len(rec.pack()), pcap.ModifiedRecordLE.unpack(rec.pack()).ifindex
    (27, 2)
    """

    ts_sec: bw.U32
    ts_frac: bw.U32
    incl_len: bw.U32 = bw.derived()
    orig_len: bw.U32
    ifindex: bw.U32 = 0
    protocol: bw.U16 = 0
    pkt_type: bw.U8 = 0
    pad: bw.U8 = 0
    data: bytes = bw.field(len="incl_len")


class ModifiedRecordBE(ModifiedRecordLE, byteorder="big"):
    """A record of a big-endian modified pcap file (``ModifiedRecordLE``'s fields).

    >>> from bytewright.formats import pcap
    >>> rec = pcap.ModifiedRecordBE(ts_sec=1, ts_frac=2, orig_len=3, ifindex=2, data=b"abc")
    >>> rec.pack()[16:20]
    b'\\x00\\x00\\x00\\x02'
    """


class ModifiedBodyLE(bw.Struct, byteorder="little"):
    """The header and records of a little-endian modified pcap file (Alexey Kuznetsov's
    format).

    >>> from bytewright.formats import pcap
    >>> rec = pcap.ModifiedRecordLE(ts_sec=1, ts_frac=0, orig_len=1, data=b"x")
    >>> body = pcap.ModifiedBodyLE(header=pcap.HeaderLE(), records=[rec])
    >>> f = pcap.Pcap.unpack(pcap.Pcap(magic=pcap.MAGIC_LE_MODIFIED, body=body).pack())
    >>> type(f.body).__name__, f.body.records[0].data
    ('ModifiedBodyLE', b'x')
    """

    header: HeaderLE
    records: list[ModifiedRecordLE] = bw.field(count=bw.REST)


class ModifiedBodyBE(bw.Struct, byteorder="big"):
    """The header and records of a big-endian modified pcap file.

    >>> from bytewright.formats import pcap
    >>> rec = pcap.ModifiedRecordBE(ts_sec=1, ts_frac=0, orig_len=1, data=b"x")
    >>> body = pcap.ModifiedBodyBE(header=pcap.HeaderBE(), records=[rec])
    >>> f = pcap.Pcap.unpack(pcap.Pcap(magic=pcap.MAGIC_BE_MODIFIED, body=body).pack())
    >>> type(f.body).__name__, f.body.records[0].data
    ('ModifiedBodyBE', b'x')
    """

    header: HeaderBE
    records: list[ModifiedRecordBE] = bw.field(count=bw.REST)


class BodyLE(bw.Struct, byteorder="little"):
    """The header and records of a little-endian capture (what follows the magic).

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> body = pcap.Pcap.unpack(data).body
    >>> type(body).__name__, body.header.linktype, len(body.records)
    ('BodyLE', 1, 1)
    """

    header: HeaderLE
    records: list[RecordLE] = bw.field(count=bw.REST)


class BodyBE(bw.Struct, byteorder="big"):
    """The header and records of a big-endian capture.

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1, 0, b"x")], byteorder="big")
    >>> body = pcap.Pcap.unpack(data).body
    >>> type(body).__name__, body.records[0].data
    ('BodyBE', b'x')
    """

    header: HeaderBE
    records: list[RecordBE] = bw.field(count=bw.REST)


class Pcap(bw.Struct):
    """A whole capture file.

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> f = pcap.Pcap.unpack(data)
    >>> f.magic, f.nanoseconds, f.body.records[0].ts_frac
    (b'\\xd4\\xc3\\xb2\\xa1', False, 250000)
    >>> pcap.Pcap.unpack(b"\\x0a\\x0d\\x0d\\x0a" + data[4:])
    Traceback (most recent call last):
        ...
    bytewright.errors.DecodeError: magic: not a pcap magic number: b'\\n\\r\\r\\n' (expected 0xa1b2c3d4, 0xa1b23c4d or 0xa1b2cd34 in either byte order) (a pcapng file: use pcap.read or pcapng)
    """

    magic: bytes = bw.field(len=4)
    body: BodyLE | BodyBE | ModifiedBodyLE | ModifiedBodyBE = bw.field(
        tag="magic",
        cases={
            MAGIC_LE_US: BodyLE,
            MAGIC_LE_NS: BodyLE,
            MAGIC_BE_US: BodyBE,
            MAGIC_BE_NS: BodyBE,
            MAGIC_LE_MODIFIED: ModifiedBodyLE,
            MAGIC_BE_MODIFIED: ModifiedBodyBE,
        },
    )

    @property
    def nanoseconds(self) -> bool:
        """Whether ``ts_frac`` counts nanoseconds (else microseconds)."""
        return self.magic in _NANO

    @classmethod
    def unpack(cls, data: Any) -> Pcap:
        """Decodes a whole capture file; a foreign magic is a ``bw.DecodeError`` at
        ``magic``, as in ``iter_records``."""
        _check_magic(bytes(data[:4]))
        return super().unpack(data)


def _check_magic(magic: bytes) -> None:
    if magic not in MAGICS:
        hint = " (a pcapng file: use pcap.read or pcapng)" if magic == b"\x0a\x0d\x0d\x0a" else ""
        raise bw.DecodeError(
            f"magic: not a pcap magic number: {magic!r} (expected 0xa1b2c3d4, 0xa1b23c4d or "
            f"0xa1b2cd34 in either byte order){hint}",
            "magic",
            0,
        )


def iter_records(
    data: bytes | bytearray | memoryview,
) -> Iterator[Any]:
    """Yields the records of a capture one at a time, after checking the magic and header
    (``RecordLE``/``RecordBE``, or ``ModifiedRecordLE``/``BE`` for the modified magic).

    A truncated last record raises ``bw.DecodeError`` when it is reached, its path naming
    the record (``records[3].data``).

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> [(r.ts_sec, len(r.data)) for r in pcap.iter_records(data + data[24:])]
    [(1700000000, 14), (1700000000, 14)]
    """
    for _, rec in _records(data):
        yield rec


def _records(data: bytes | bytearray | memoryview) -> Iterator[tuple[int, Any]]:
    """``(offset of the record's data, record)`` pairs."""
    magic = bytes(data[:4])
    _check_magic(magic)
    little = magic in _LITTLE
    header: type[HeaderLE] = HeaderLE if little else HeaderBE
    record: type[Any]
    if magic in _MODIFIED:
        record, head = (ModifiedRecordLE if little else ModifiedRecordBE), 24
    else:
        record, head = (RecordLE if little else RecordBE), 16
    try:
        _, off = header.unpack_from(data, 4)
    except bw.DecodeError as e:
        raise _named(e, "header") from None
    end = len(data)
    i = 0
    while off < end:
        try:
            got = record.parse(data, off)
        except bw.DecodeError as e:
            raise _named(e, f"records[{i}]") from None
        if not got:
            raise CutShort(
                f"records[{i}]: the file ends inside this record ({end - off} bytes of it "
                f"at offset {off}, at least {end - off + got.needed} needed)",
                f"records[{i}]",
                end,
            )
        rec, nxt = got
        yield off + head, rec
        off = nxt
        i += 1


class CutShort(bw.DecodeError):
    """The file ends inside a record or block (a capture that was cut short).

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> pcap.read(data[:-3], verify=True)
    Traceback (most recent call last):
        ...
    bytewright.formats.pcap.CutShort: records[0]: the file ends inside this record (27 bytes of it at offset 24, at least 30 needed)
    """


def _named(e: bw.DecodeError, where: str) -> bw.DecodeError:
    path = f"{where}.{e.path}" if e.path else where
    text = str(e)
    detail = text[len(e.path) + 2 :] if e.path and text.startswith(e.path + ": ") else text
    return bw.DecodeError(f"{path}: {detail}", path, e.offset)


def write(
    records: Iterable[tuple[int, int, bytes] | tuple[int, int, bytes, int]],
    *,
    linktype: int = 1,
    snaplen: int = 65535,
    byteorder: str = "little",
    nanoseconds: bool = False,
) -> bytes:
    """Encodes a capture from ``(ts_sec, ts_frac, data[, orig_len])`` tuples.

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1, 500, b"frame")], linktype=101, nanoseconds=True)
    >>> data[:4] == pcap.MAGIC_LE_NS, len(data)
    (True, 45)
    """
    little = byteorder == "little"
    rec_cls: type[RecordLE] = RecordLE if little else RecordBE
    recs: list[Any] = []
    for r in records:
        sec, frac, payload = r[0], r[1], r[2]
        orig = r[3] if len(r) > 3 else len(payload)
        recs.append(rec_cls(ts_sec=sec, ts_frac=frac, orig_len=orig, data=payload))
    body: BodyLE | BodyBE
    if little:
        magic = MAGIC_LE_NS if nanoseconds else MAGIC_LE_US
        body = BodyLE(header=HeaderLE(snaplen=snaplen, linktype=linktype), records=recs)
    else:
        magic = MAGIC_BE_NS if nanoseconds else MAGIC_BE_US
        body = BodyBE(header=HeaderBE(snaplen=snaplen, linktype=linktype), records=recs)
    return Pcap(magic=magic, body=body).pack()


# ---- reading captures into packet records ----

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
# Raw IP under the numbers some BSDs write.
_RAW_IP = (LINKTYPE_RAW, 12, 14)


class Packet(bw.Struct, byteorder="big"):
    """One captured packet of a pcap or pcapng file: the per-packet record of ``read``.

    ``frame`` is decoded by ``linktype``: ``Ethernet`` (1), ``LinuxSLL`` (113), ``IPv4``
    (228) or ``IPv6`` (229); raw-IP captures (101) are read as 228 or 229 by the version of
    each packet; any other link type, or a frame that does not decode at all, is ``Raw``.
    Its wire form (these fields in order, big-endian) is the record's own, not a file's.

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> packet = pcap.read(data).packets[0]
    >>> packet.timestamp_ns, packet.linktype, packet.truncated, type(packet.frame).__name__
    (1700000000250000000, 1, False, 'Ethernet')
    """

    timestamp_ns: bw.U64
    interface: bw.U32 = 0
    linktype: bw.U16 = LINKTYPE_ETHERNET
    original_length: bw.U32
    captured_length: bw.U32 = bw.derived()
    frame: Ethernet | LinuxSLL | IPv4 | IPv6 | Raw = bw.field(
        size="captured_length",
        tag="linktype",
        cases={
            LINKTYPE_ETHERNET: Ethernet,
            LINKTYPE_LINUX_SLL: LinuxSLL,
            LINKTYPE_IPV4: IPv4,
            LINKTYPE_IPV6: IPv6,
        },
        default_case=Raw,
    )

    @property
    def time(self) -> float:
        """The timestamp in seconds since the epoch."""
        return self.timestamp_ns / 1e9

    @property
    def truncated(self) -> bool:
        """Whether the capture kept less than the packet (its snap length)."""
        n = self.captured_length
        return n is not None and n < self.original_length

    @property
    def data(self) -> bytes:
        """The frame's bytes, as captured."""
        return _frame_bytes(self.frame)

    @property
    def checksums(self) -> dict[str, bool]:
        """Whether each checksum of the frame held: ``{"ipv4": True, "tcp": False}``; a
        checksum that cannot be checked (fragments, packets cut short) is left out."""
        return ethernet.checksums(self.frame)

    def pack(self) -> bytes:
        """The record's own wire form (the frame as captured, checksums as they are)."""
        data = _frame_bytes(self.frame)
        return (
            struct.pack(
                ">QIHII",
                self.timestamp_ns,
                self.interface,
                self.linktype,
                self.original_length,
                len(data),
            )
            + data
        )


def _frame_bytes(frame: Any) -> bytes:
    if isinstance(frame, Ethernet | LinuxSLL | IPv4 | IPv6):
        return frame.pack(verify=False)
    return bytes(frame.pack())


@dataclass
class Interface:
    """A capture interface: its link type, snap length, name (pcapng ``if_name``),
    timestamp units per second (``if_tsresol``) and offset in seconds (``if_tsoffset``).

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> pcap.read(data).interfaces
    [Interface(linktype=1, snaplen=65535, name=None, units_per_second=1000000, offset_seconds=0)]
    """

    linktype: int
    snaplen: int = 0
    name: str | None = None
    units_per_second: int = 1_000_000
    offset_seconds: int = 0


@dataclass
class Capture:
    """A whole capture: ``format`` is ``"pcap"``, ``"pcap-modified"`` or ``"pcapng"``.
    ``cut_short`` is the ``bw.DecodeError`` of a file that ends inside a record or block
    (the packets before it are read, as Wireshark does), else None.

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> cap = pcap.read(data + data[24:-3])  # the second packet cut short
    >>> cap.format, len(cap.packets), str(cap.cut_short)
    ('pcap', 1, 'records[1]: the file ends inside this record (27 bytes of it at offset 54, at least 30 needed)')
    """

    format: str
    interfaces: list[Interface] = field(default_factory=list)
    packets: list[Packet] = field(default_factory=list)
    cut_short: bw.DecodeError | None = None


def _source_bytes(source: Any) -> bytes:
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as f:
            return f.read()
    if hasattr(source, "read"):
        return bytes(source.read())
    return bytes(source)


_STRICT: dict[int, Any] = {
    LINKTYPE_ETHERNET: Ethernet,
    LINKTYPE_LINUX_SLL: LinuxSLL,
    LINKTYPE_IPV4: IPv4,
    LINKTYPE_IPV6: IPv6,
}


def _lenient(linktype: int, data: bytes) -> Any:
    """Whatever part of a frame decodes (see ``ethernet.decode``), never an error."""
    try:
        if linktype == LINKTYPE_ETHERNET:
            return ethernet.decode(data)
        if linktype == LINKTYPE_LINUX_SLL:
            return ethernet.decode_sll(data)
        if linktype == LINKTYPE_IPV4:
            pkt, end = ip.decode(data)
            return pkt if end == len(data) else Raw(data=data)
        if linktype == LINKTYPE_IPV6:
            pkt6, end = ipv6.decode(data)
            return pkt6 if end == len(data) else Raw(data=data)
    except bw.DecodeError:
        pass
    return Raw(data=data)


def _frame(linktype: int, data: bytes, verify: bool, where: str, offset: int) -> tuple[int, Any]:
    if linktype in _RAW_IP and data:
        linktype = {4: LINKTYPE_IPV4, 6: LINKTYPE_IPV6}.get(data[0] >> 4, linktype)
    cls = _STRICT.get(linktype)
    if cls is None:
        return linktype, Raw(data=data)
    if verify:
        try:
            return linktype, cls.unpack(data, verify=True)
        except bw.DecodeError as e:
            raise _named(_offset(e, offset), where) from None
    try:
        return linktype, cls.__bw__.codec.unpack(data)
    except bw.DecodeError:
        return linktype, _lenient(linktype, data)


def _offset(e: bw.DecodeError, offset: int) -> bw.DecodeError:
    return bw.DecodeError(str(e), e.path, offset + (e.offset or 0))


def read(source: Any, *, verify: bool = False) -> Capture:
    """Reads a pcap, modified-pcap or pcapng capture (a path, a file object or bytes) into
    ``Packet`` records, telling the format from the first four bytes.

    By default frames are decoded the way Wireshark shows them and no packet fails: wrong
    checksums are kept (offloaded ones are common in captures of a host's own traffic;
    ``packet.checksums`` tells which held), packets cut short by the snap length keep what
    was captured, ``total_length == 0`` (segmentation offload) runs to the end of the
    frame, and a layer that does not decode is ``Raw``. With ``verify=True`` every frame
    must decode exactly and every checksum hold: the first that does not is a
    ``bw.DecodeError`` whose path names the packet (``packets[7].frame.payload.payload.
    checksum``) and whose offset is in the file. Errors in the file's own structure are
    ``bw.DecodeError``s either way.

    >>> from bytewright.formats import ethernet, ip, pcap
    >>> udp = ip.IPv4(protocol=ip.Protocol.UDP, src="192.0.2.1", dst="192.0.2.2",
    ...               payload=ip.UDP(src_port=5353, dst_port=53, payload=b"hi"))
    >>> frame = ethernet.Ethernet(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01",
    ...                           type=ethernet.EtherType.IPV4, payload=udp).pack()
    >>> cap = pcap.read(pcap.write([(1_700_000_000, 0, frame)]))
    >>> p = cap.packets[0]
    >>> p.frame.payload.payload.dst_port, p.checksums
    (53, {'ipv4': True, 'udp': True})
    """
    data = _source_bytes(source)
    magic = data[:4]
    if magic == b"\x0a\x0d\x0d\x0a":
        return _read_pcapng(data, verify)
    _check_magic(magic)
    header = (HeaderLE if magic in _LITTLE else HeaderBE).unpack(data[4:24])
    scale = 1 if magic in _NANO else 1000
    iface = Interface(
        linktype=header.linktype & 0xFFFF,
        snaplen=header.snaplen,
        units_per_second=10**9 if magic in _NANO else 10**6,
    )
    cap = Capture(format="pcap-modified" if magic in _MODIFIED else "pcap", interfaces=[iface])
    for i, (off, rec) in enumerate(_until_cut(_records(data), cap, verify)):
        lt, frame = _frame(iface.linktype, rec.data, verify, f"packets[{i}].frame", off)
        cap.packets.append(
            Packet(
                timestamp_ns=rec.ts_sec * 10**9 + rec.ts_frac * scale,
                interface=0,
                linktype=lt,
                original_length=rec.orig_len,
                captured_length=len(rec.data),
                frame=frame,
            )
        )
    return cap


def _until_cut(items: Iterator[Any], cap: Capture, verify: bool) -> Iterator[Any]:
    """The items, stopping at a file cut short (unless ``verify``): the error is kept."""
    try:
        yield from items
    except bw.DecodeError as e:
        if verify or not isinstance(e, CutShort | pcapng.CutShort):
            raise
        cap.cut_short = e


def _units(options: list[Any]) -> tuple[int, int, str | None]:
    """(units per second, offset in seconds, name) from an interface's options."""
    units, offset, name = 10**6, 0, None
    order = "little"
    for opt in options:
        order = "big" if isinstance(opt, pcapng.OptionBE) else "little"
        if opt.code == pcapng.OPT_IF_TSRESOL and opt.value:
            r = opt.value[0]
            units = 2 ** (r & 0x7F) if r & 0x80 else 10**r
        elif opt.code == pcapng.OPT_IF_TSOFFSET and len(opt.value) == 8:
            offset = int.from_bytes(opt.value, order, signed=True)  # type: ignore[arg-type]
        elif opt.code == pcapng.OPT_IF_NAME:
            name = opt.value.decode("utf-8", "replace")
    return units, offset, name


def _read_pcapng(data: bytes, verify: bool) -> Capture:
    cap = Capture(format="pcapng")
    section: list[Interface] = []  # interface ids count from each section header
    first = 0
    for off, block in _until_cut(pcapng.iter_blocks(data), cap, verify):
        body = block.body
        if block.type == pcapng.BLOCK_SHB:
            section, first = [], len(cap.interfaces)
        elif block.type == pcapng.BLOCK_IDB:
            units, offset, name = _units(body.options)
            iface = Interface(
                linktype=body.linktype,
                snaplen=body.snaplen,
                name=name,
                units_per_second=units,
                offset_seconds=offset,
            )
            section.append(iface)
            cap.interfaces.append(iface)
        elif block.type in (pcapng.BLOCK_EPB, pcapng.BLOCK_SPB, pcapng.BLOCK_PB):
            i = len(cap.packets)
            if block.type != pcapng.BLOCK_SPB:
                index, ts = body.interface_id, (body.timestamp_high << 32) | body.timestamp_low
                payload, orig, start = body.data, body.original_length, off + 28
            else:
                index, ts, orig, start = 0, None, body.original_length, off + 12
                snap = section[0].snaplen if section else 0
                n = min(orig, len(body.data), snap or orig)
                payload = body.data[:n]
            if index >= len(section):
                raise bw.DecodeError(
                    f"packets[{i}].interface: the section has {len(section)} interfaces, "
                    f"no interface {index}",
                    f"packets[{i}].interface",
                    off + 8,
                )
            iface = section[index]
            ns = 0 if ts is None else ts * 10**9 // iface.units_per_second
            lt, frame = _frame(iface.linktype, payload, verify, f"packets[{i}].frame", start)
            cap.packets.append(
                Packet(
                    timestamp_ns=ns + iface.offset_seconds * 10**9,
                    interface=first + index,
                    linktype=lt,
                    original_length=orig,
                    captured_length=len(payload),
                    frame=frame,
                )
            )
    return cap


# --- Captures as tables ----------------------------------------------------------------

_TABLE_RECORDS: dict[tuple[Any, ...], Any] = {}


def _frame_field(linktype: str | int, raw: bool) -> tuple[Any, Any]:
    """The type and options of a record's ``frame``: decoded by its link type when the
    capture kept the whole packet, its raw bytes when the snap length cut it (or the link
    type is one no declaration covers). With ``raw`` the same union always takes ``Raw``
    (same columns, for frames that do not decode)."""
    # Every link type's case, whatever the file's: tables of any captures share a schema.
    cases = dict(_STRICT)
    tag = "0" if raw else f"(captured_length == original_length) * {linktype}"
    return (
        Any,
        bw.field(size="captured_length", tag=tag, cases=cases, default_case=Raw),
    )


def _record_class(magic: bytes, linktype: int, raw: bool = False) -> Any:
    """The on-disk record of a pcap file with this magic and link type, its data decoded."""
    key = (magic, linktype, raw)
    cls = _TABLE_RECORDS.get(key)
    if cls is None:
        frac = "ts_nsec" if magic in _NANO else "ts_usec"
        fields: list[tuple[Any, ...]] = [
            ("ts_sec", bw.U32),
            (frac, bw.U32),
            ("captured_length", bw.U32, bw.derived()),
            ("original_length", bw.U32),
        ]
        if magic in _MODIFIED:
            fields += [
                ("ifindex", bw.U32),
                ("protocol", bw.U16),
                ("pkt_type", bw.U8),
                ("pad", bw.U8),
            ]
        fields.append(("frame", *_frame_field(linktype, raw)))
        order = "little" if magic in _LITTLE else "big"
        cls = _TABLE_RECORDS[key] = bw.make_struct(
            "PcapPacket", fields, byteorder=order, module=__name__
        )
    return cls


def _pcapng_record_class(raw: bool = False) -> Any:
    """The record ``read_table`` rewrites pcapng packets into (big-endian, nanoseconds)."""
    cls = _TABLE_RECORDS.get(("pcapng", raw))
    if cls is None:
        cls = _TABLE_RECORDS[("pcapng", raw)] = bw.make_struct(
            "PcapngPacket",
            [
                ("interface", bw.U32),
                ("linktype", bw.U16),
                ("ts_sec", bw.U32),
                ("ts_nsec", bw.U32),
                ("captured_length", bw.U32, bw.derived()),
                ("original_length", bw.U32),
                ("frame", *_frame_field("linktype", raw)),
            ],
            byteorder="big",
            module=__name__,
        )
    return cls


def read_table(source: Any, *, threads: int | None = None) -> bw.Table:
    """A capture (pcap, modified pcap or pcapng: a path, a file object or bytes) as a
    ``bw.Table`` with one row per packet, decoded by the columnar core.

    Columns: ``ts_sec`` and ``ts_usec`` or ``ts_nsec`` (the file's resolution; pcapng is
    always nanoseconds), ``captured_length``, ``original_length`` (pcapng adds
    ``interface`` and ``linktype``; modified pcap its extra record fields), and ``frame``:
    the packet decoded by its link type into nested struct columns (Ethernet with its VLAN
    tags, IPv4 or IPv6 with extension headers, TCP, UDP or ICMP, and the payload), each
    layer a tagged union whose ``variant`` names what the packet holds (behind a VLAN tag or
    an IPv6 extension header the next layer is its bytes: docs/columns.md, "Unions nested in
    unions"). As in Wireshark no
    packet fails the table: a packet the snap length cut short, or a frame that does not
    decode (a malformed packet, ``total_length`` 0 from segmentation offload), keeps its
    bytes as ``frame.Raw``. Checksums are not verified here, so a wrong one (offloaded, as
    in captures of a host's own traffic) keeps its packet decoded, as in ``read``;
    ``packet.checksums`` and ``ip.checksums`` check them. A file cut inside a packet keeps the packets before it and warns
    (``CutShortWarning``); a malformed file header is a ``bw.DecodeError``.

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> table = pcap.read_table(data + data[24:])
    >>> table.num_rows, table.column_names[:4]
    (2, ['ts_sec', 'ts_usec', 'captured_length', 'original_length'])
    """
    data = _source_bytes(source)
    magic = data[:4]
    if magic == b"\x0a\x0d\x0d\x0a":
        records = _pcapng_records(data)
        return _lenient_table(
            records, 0, 22, _pcapng_record_class(), _pcapng_record_class(True), threads
        )
    _check_magic(magic)
    header = (HeaderLE if magic in _LITTLE else HeaderBE).unpack(data[4:24])
    lt = header.linktype & 0xFFFF
    head = 24 if magic in _MODIFIED else 16
    return _lenient_table(
        data, 24, head, _record_class(magic, lt), _record_class(magic, lt, True), threads
    )


def _lenient_table(
    data: bytes, offset: int, head: int, cls: Any, raw: Any, threads: int | None
) -> bw.Table:
    """Decodes records from ``offset``; a record whose frame does not decode is decoded
    again with its frame as raw bytes (``raw``: same columns), and decoding goes on."""
    parts: list[bw.Table] = []
    while True:
        try:
            parts.append(
                cls.unpack_table(data, offset=offset, threads=threads, verify_checksums=False)
            )
            break
        except bw.DecodeError as e:
            row = _failed_row(e)
            if row is None:
                raise
            if row:
                good = cls.unpack_table(
                    data, offset=offset, count=row, threads=threads, verify_checksums=False
                )
                parts.append(good)
                offset += row * head + sum(good["captured_length"].to_pylist())
            try:
                one = raw.unpack_table(data, offset=offset, count=1)
            except bw.DecodeError as cut:
                if not cut.path.startswith("[0]"):
                    raise
                # The file ends inside this packet: keep the packets before it.
                warnings.warn(
                    f"the capture is cut short inside packet {len_of(parts)} at offset "
                    f"{offset}: {cut}",
                    CutShortWarning,
                    stacklevel=3,
                )
                break
            parts.append(one)
            offset += head + one["captured_length"][0]
            if offset >= len(data):
                break
    return parts[0] if len(parts) == 1 else bw.Table.concat(parts)


class CutShortWarning(UserWarning):
    """A capture file ends inside a packet: ``read_table`` keeps the packets before it.

    >>> from bytewright.formats import pcap
    >>> data = pcap.write([(1_700_000_000, 250_000, b"\\xff" * 14)])
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     rows = pcap.read_table(data + data[24:-3]).num_rows
    >>> rows, caught[0].category.__name__
    (1, 'CutShortWarning')
    """


def len_of(parts: list[bw.Table]) -> int:
    return sum(len(p) for p in parts)


def _failed_row(e: bw.DecodeError) -> int | None:
    """The row a table decode failed at (its path starts ``[row]``)."""
    if not e.path.startswith("["):
        return None
    end = e.path.find("]")
    return int(e.path[1:end]) if end > 1 else None


def _pcapng_records(data: bytes) -> bytes:
    """The packets of a pcapng capture as back-to-back ``PcapngPacket`` records."""
    out = bytearray()
    section: list[Interface] = []
    first = 0
    count = 0
    for off, block in pcapng.iter_blocks(data):
        body = block.body
        if block.type == pcapng.BLOCK_SHB:
            section, first = [], first + len(section)
        elif block.type == pcapng.BLOCK_IDB:
            units, offset, name = _units(body.options)
            section.append(
                Interface(
                    linktype=body.linktype,
                    snaplen=body.snaplen,
                    name=name,
                    units_per_second=units,
                    offset_seconds=offset,
                )
            )
        elif block.type in (pcapng.BLOCK_EPB, pcapng.BLOCK_SPB, pcapng.BLOCK_PB):
            if block.type == pcapng.BLOCK_SPB:
                index, ts = 0, 0
                snap = section[0].snaplen if section else 0
                payload = body.data[
                    : min(body.original_length, len(body.data), snap or len(body.data))
                ]
            else:
                index = body.interface_id
                ts = (body.timestamp_high << 32) | body.timestamp_low
                payload = body.data
            if index >= len(section):
                raise bw.DecodeError(
                    f"[{count}].interface: the section has {len(section)} interfaces, "
                    f"no interface {index}",
                    f"[{count}].interface",
                    off + 8,
                )
            iface = section[index]
            ns = ts * 10**9 // iface.units_per_second + iface.offset_seconds * 10**9
            out += struct.pack(
                ">IHIIII",
                first + index,
                iface.linktype & 0xFFFF,
                ns // 10**9,
                ns % 10**9,
                len(payload),
                body.original_length,
            )
            out += payload
            count += 1
    return bytes(out)
