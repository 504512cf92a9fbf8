"""pcap capture files (libpcap format), both byte orders, micro- and nanosecond magic.

The 4-byte magic selects the byte order and the timestamp resolution; the rest of the file
is a global header and back-to-back records. ``Pcap`` decodes a whole file; ``iter_records``
decodes one record at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import bytewright as bw

__all__ = [
    "MAGIC_BE_NS",
    "MAGIC_BE_US",
    "MAGIC_LE_NS",
    "MAGIC_LE_US",
    "BodyBE",
    "BodyLE",
    "HeaderBE",
    "HeaderLE",
    "Pcap",
    "RecordBE",
    "RecordLE",
    "iter_records",
    "write",
]

# The magic number 0xA1B2C3D4 (microseconds) or 0xA1B23C4D (nanoseconds), as written.
MAGIC_LE_US = b"\xd4\xc3\xb2\xa1"
MAGIC_BE_US = b"\xa1\xb2\xc3\xd4"
MAGIC_LE_NS = b"\x4d\x3c\xb2\xa1"
MAGIC_BE_NS = b"\xa1\xb2\x3c\x4d"
_LITTLE = (MAGIC_LE_US, MAGIC_LE_NS)
_NANO = (MAGIC_LE_NS, MAGIC_BE_NS)


class HeaderLE(bw.Struct, byteorder="little"):
    """The global header after the magic."""

    version_major: bw.U16 = 2
    version_minor: bw.U16 = 4
    thiszone: bw.I32 = 0
    sigfigs: bw.U32 = 0
    snaplen: bw.U32 = 65535
    linktype: bw.U32 = 1


class HeaderBE(HeaderLE, byteorder="big"):
    pass


class RecordLE(bw.Struct, byteorder="little"):
    """One captured packet; ``ts_frac`` is in micro- or nanoseconds (see the magic)."""

    ts_sec: bw.U32
    ts_frac: bw.U32
    incl_len: bw.U32 = bw.derived()
    orig_len: bw.U32
    data: bytes = bw.field(len="incl_len")


class RecordBE(RecordLE, byteorder="big"):
    pass


class BodyLE(bw.Struct, byteorder="little"):
    header: HeaderLE
    records: list[RecordLE] = bw.field(count=bw.REST)


class BodyBE(bw.Struct, byteorder="big"):
    header: HeaderBE
    records: list[RecordBE] = bw.field(count=bw.REST)


class Pcap(bw.Struct):
    """A whole capture file."""

    magic: bytes = bw.field(len=4)
    body: BodyLE | BodyBE = bw.field(
        tag="magic",
        cases={MAGIC_LE_US: BodyLE, MAGIC_LE_NS: BodyLE, MAGIC_BE_US: BodyBE, MAGIC_BE_NS: BodyBE},
    )

    @property
    def nanoseconds(self) -> bool:
        """Whether ``ts_frac`` counts nanoseconds (else microseconds)."""
        return self.magic in _NANO


def iter_records(
    data: bytes | bytearray | memoryview,
) -> Iterator[RecordLE | RecordBE]:
    """Yields the records of a capture one at a time, after checking the magic and header.

    Use ``header_of(data)`` for the global header. A truncated last record raises
    ``bw.DecodeError`` when it is reached.
    """
    magic = bytes(data[:4])
    if magic not in (MAGIC_LE_US, MAGIC_LE_NS, MAGIC_BE_US, MAGIC_BE_NS):
        raise bw.DecodeError(f"not a pcap magic number: {magic!r}", "magic", 0)
    little = magic in _LITTLE
    header: type[HeaderLE] = HeaderLE if little else HeaderBE
    record: type[RecordLE] = RecordLE if little else RecordBE
    _, off = header.unpack_from(data, 4)
    end = len(data)
    while off < end:
        rec, off = record.unpack_from(data, off)
        yield rec


def write(
    records: Iterable[tuple[int, int, bytes] | tuple[int, int, bytes, int]],
    *,
    linktype: int = 1,
    snaplen: int = 65535,
    byteorder: str = "little",
    nanoseconds: bool = False,
) -> bytes:
    """Encodes a capture from ``(ts_sec, ts_frac, data[, orig_len])`` tuples."""
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
