"""Explaining the bundled formats whole: captures with every frame dissected, pcapng files
block by block (each section in its own byte order).

A file of these formats is more than one message of one struct: a pcap record's frame is
decoded by the file's link type, a pcapng file is a run of blocks. The trees of the parts
are grafted, at their offsets, under one node for the file.
"""

from __future__ import annotations

from bytewright._explain import Explained, ExplainNode, explain, from_native

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FORMATS", "explain_format", "graft"]

# --format NAME: (module, class) of one message, or a function over the whole file.
FORMATS: dict[str, str] = {
    "pcap": "a pcap (or pcapng) capture, every frame dissected by the link type",
    "pcapng": "a pcapng capture, block by block, every frame dissected",
    "packet": "one packet record (bytewright.formats.pcap.Packet)",
    "png": "a PNG file (bytewright.formats.png.Png)",
    "dns": "a DNS message (bytewright.formats.dns.Message)",
    "msgpack": "one MessagePack value (bytewright.formats.msgpack.Value)",
    "ip": "an IPv4 packet (bytewright.formats.ip.IPv4)",
    "ipv6": "an IPv6 packet (bytewright.formats.ipv6.IPv6)",
    "ethernet": "an Ethernet II frame (bytewright.formats.ethernet.Ethernet)",
    "sll": "a Linux cooked capture frame (bytewright.formats.ethernet.LinuxSLL)",
}


def _struct(name: str) -> Any:
    from bytewright.formats import dns, ethernet, ip, ipv6, msgpack, pcap, png

    return {
        "packet": pcap.Packet,
        "png": png.Png,
        "dns": dns.Message,
        "msgpack": msgpack.Value,
        "ip": ip.IPv4,
        "ipv6": ipv6.IPv6,
        "ethernet": ethernet.Ethernet,
        "sll": ethernet.LinuxSLL,
    }[name]


def explain_format(name: str, data: bytes, *, offset: int = 0) -> Explained:
    """The tree of ``data`` as the bundled format ``name`` (a key of ``FORMATS``)."""
    if name == "pcap":
        # As pcap.read: a pcapng file (its section header block type) is read as one.
        if data[offset : offset + 4] == b"\x0a\x0d\x0d\x0a":
            return _pcapng(data, offset)
        return _pcap(data, offset)
    if name == "pcapng":
        return _pcapng(data, offset)
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r} (one of {', '.join(FORMATS)})")
    return explain(_struct(name), data, offset=offset)


def graft(at: ExplainNode, sub: Explained, shift: int, data: bytes, *, note: bool = True) -> None:
    """Adds the nodes of ``sub`` (an explained part of ``data`` starting at ``shift``) as
    the children of ``at``, at their absolute offsets; a failure inside them is marked
    where it happened, its error kept on the node."""

    def copy(src: ExplainNode, parent: ExplainNode) -> None:
        node = ExplainNode(
            src.name,
            src.kind,
            src.start + shift,
            None if src.end is None else src.end + shift,
            data=data,
            parent=parent,
            value=src.value,
            decoded=src.decoded,
            marks=src.marks,
            notes=src.notes,
            type_name=src.type_name,
            bits=src._bits,
        )
        node.error = src.error
        for c in src.children:
            copy(c, node)

    at.type_name = sub.root.type_name
    if note:
        at.notes = (*at.notes, f"decoded as {sub.root.type_name or sub.root.kind}")
    for c in sub.root.children:
        copy(c, at)
    if sub.error is not None and sub.failed is sub.root:
        at.error = sub.error
        at.marks = at.marks | {"failed"}


def _linktype_struct(linktype: int, frame: bytes) -> Any:
    from bytewright.formats import ethernet, ip, ipv6, pcap

    if linktype in (pcap.LINKTYPE_RAW, 12, 14):
        linktype = pcap.LINKTYPE_IPV6 if frame[:1] and frame[0] >> 4 == 6 else pcap.LINKTYPE_IPV4
    return {
        pcap.LINKTYPE_ETHERNET: ethernet.Ethernet,
        pcap.LINKTYPE_LINUX_SLL: ethernet.LinuxSLL,
        pcap.LINKTYPE_IPV4: ip.IPv4,
        pcap.LINKTYPE_IPV6: ipv6.IPv6,
    }.get(linktype)


def _dissect(node: ExplainNode, linktype: int, data: bytes) -> None:
    """Decodes a frame's bytes (a ``data`` node) by its link type, in place."""
    if node.end is None or not node.decoded:
        return
    frame = data[node.start : node.end]
    cls = _linktype_struct(linktype, frame)
    if cls is None:
        return
    graft(node, explain(cls, frame), node.start, data)


def _pcap(data: bytes, offset: int) -> Explained:
    from bytewright.formats import pcap

    ex = explain(pcap.Pcap, data, offset=offset)
    body = ex.find("body")
    header = ex.find("body.header.linktype")
    records = ex.find("body.records")
    if body is None or header is None or records is None or not header.decoded:
        return ex
    for rec in records.children:
        for c in rec.children:
            if c.name == "data":
                _dissect(c, int(header.value), data)
    return ex


def _pcapng(data: bytes, offset: int) -> Explained:
    """The blocks of a pcapng file under one node, each explained in its section's byte
    order; enhanced and simple packet blocks get their frames dissected by the link type of
    their interface."""
    from bytewright.formats import pcapng

    root = ExplainNode(None, "pcapng", offset, None, data=data, type_name="pcapng")
    blocks = ExplainNode("blocks", "list[Block]", offset, None, data=data, parent=root)
    root.decoded = blocks.decoded = False
    at, index = offset, 0
    cls: Any = None
    linktypes: list[int] = []
    while at < len(data):
        head = data[at : at + 4]
        if head == b"\x0a\x0d\x0d\x0a":
            bom = data[at + 8 : at + 12]
            cls = pcapng.BlockBE if bom == b"\x1a\x2b\x3c\x4d" else pcapng.BlockLE
            linktypes = []
        elif cls is None:
            cls = pcapng.BlockLE  # not a pcapng file: the first block's type shows it
        item = ExplainNode(index, "Block", at, None, data=data, parent=blocks)
        # One block at a time: the bytes after it are the next block, not trailing bytes.
        part = from_native(cls.__bw__.codec._explain(data[at:], 0, False), data[at:])
        graft(item, part, at, data, note=False)
        item.value = part.root.value
        item.decoded = part.error is None
        if part.error is not None:
            failed = _shifted(item, part.failed, at) if part.failed is not None else item
            return Explained(
                root,
                data,
                offset=offset,
                error=_named(part.error, index, at),
                needed=part.needed,
                failed=failed,
                rest=_rest(root, data, failed.start),
                title="pcapng",
            )
        assert part.end is not None
        item.end = part.end + at
        _packets(item, linktypes, data)
        at = item.end
        index += 1
    blocks.end = root.end = at
    blocks.decoded = root.decoded = True
    return Explained(root, data, offset=offset, end=at, title="pcapng")


def _shifted(item: ExplainNode, failed: ExplainNode, shift: int) -> ExplainNode:
    path = failed.path
    for n in item.walk():
        rel = n.path[len(item.path) :].lstrip(".")
        if rel == path and n.start == failed.start + shift:
            return n
    return item


def _named(error: Any, index: int, at: int) -> Any:
    from bytewright.errors import DecodeError

    path = f"blocks[{index}].{error.path}" if error.path else f"blocks[{index}]"
    text = str(error)
    detail = text[len(error.path) + 2 :] if error.path and text.startswith(error.path) else text
    off = None if error.offset is None else error.offset + at
    return DecodeError(f"{path}: {detail}", path, off)


def _rest(root: ExplainNode, data: bytes, start: int) -> ExplainNode | None:
    if start >= len(data):
        return None
    return ExplainNode(
        None, "bytes", start, len(data), data=data, parent=root, marks=("rest",), decoded=False
    )


def _packets(item: ExplainNode, linktypes: list[int], data: bytes) -> None:
    from bytewright.formats import pcapng

    body = next((c for c in item.children if c.name == "body"), None)
    kind = next((c for c in item.children if c.name == "type"), None)
    if body is None or kind is None:
        return
    fields = {c.name: c for c in body.children}
    if kind.value == pcapng.BLOCK_IDB and "linktype" in fields:
        linktypes.append(int(fields["linktype"].value))
        return
    if kind.value not in (pcapng.BLOCK_EPB, pcapng.BLOCK_SPB, pcapng.BLOCK_PB):
        return
    frame = fields.get("data")
    if frame is None:
        return
    iface = fields.get("interface_id")
    i = int(iface.value) if iface is not None and iface.decoded else 0
    if 0 <= i < len(linktypes):
        _dissect(frame, linktypes[i], data)
