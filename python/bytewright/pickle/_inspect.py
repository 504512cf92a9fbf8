"""The tree view of pickled data: bytewright.pickle records and standard pickles.

Both give an ``Explained`` (the tree ``bw.explain`` gives for wire messages), so the
terminal and HTML views are the same: every value a node with its offset, size, type and
value; containers with their items as children; shared objects marked with their memo
slot, and every reference to one naming the node it refers to.

Records are walked by their specification (docs/format.md) and then handed to the real
reader (``loads``): a record the reader rejects carries its error, at its offset when the
walk finds the record malformed there. Standard pickles are walked opcode by opcode with
``pickletools`` (nothing is imported or called); ``loads_pickle``'s verdict is reported
beside the tree.
"""

from __future__ import annotations

from bytewright._explain import Explained, ExplainNode

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["explain", "explain_pickle", "explain_record", "is_record"]

MAGIC = b"BW\x01"


def explain(
    data: bytes | bytearray | memoryview, *, classes: Any = None, hmac_key: bytes | None = None
) -> Explained:
    """The tree of pickled data: a bytewright.pickle record stream (``dumps`` output, one
    record or more back to back) or a standard pickle, told apart by the record magic.

    Every value is a node with its offset, size, type and value; containers have their
    items as children; shared objects are marked with their memo slot, and every reference
    names the node it refers to. Nothing in the data is imported or called. A record is
    also handed to ``loads`` (with ``classes`` and ``hmac_key``): a record it rejects is
    marked failed with its error, as are malformed records and pickles.

    >>> from bytewright import pickle as bwp
    >>> ex = bwp.explain(bwp.dumps([1, "a", None]))
    >>> [(n.path, n.kind, n.value) for n in ex["records[0].body"].children]
    [('records[0].body[0]', 'small int', 1), ('records[0].body[1]', 'short str', 'a'), ('records[0].body[2]', 'None', None)]
    """
    buf = bytes(data)
    if is_record(buf):
        return explain_record(buf, classes=classes, hmac_key=hmac_key)
    return explain_pickle(buf)


def is_record(data: bytes) -> bool:
    """Whether ``data`` starts like a bytewright.pickle record."""
    return data[:3] == MAGIC


class _Malformed(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


# ---------------------------------------------------------------- bytewright.pickle records

_ATOMS = {
    0x90: ("None", None),
    0x91: ("False", False),
    0x92: ("True", True),
    0x93: ("Ellipsis", ...),
}
_FIXED = {
    0x94: ("uint8", 1),
    0x95: ("neg8", 1),
    0x96: ("uint16", 2),
    0x97: ("neg16", 2),
    0x98: ("int32", 4),
    0x9A: ("float64", 8),
    0x9B: ("float32", 4),
    0x9C: ("complex", 16),
}
_BLOBS = {0x9D: "str", 0x9E: "str (surrogates)", 0x9F: "bytes", 0xA0: "bytearray"}
_SEQS = {0xA1: "list", 0xA2: "tuple", 0xA4: "set", 0xA5: "frozenset"}
_MAPS = {0xA3: "dict", 0xAB: "OrderedDict", 0xAC: "Counter"}
_STD = {
    1: "datetime.date",
    2: "datetime.time",
    3: "datetime.datetime",
    4: "datetime.timedelta",
    5: "datetime.timezone",
    6: "zoneinfo.ZoneInfo",
    7: "decimal.Decimal",
    8: "fractions.Fraction",
    9: "uuid.UUID",
    10: "pathlib.PurePosixPath",
    11: "pathlib.PureWindowsPath",
    12: "pathlib.PosixPath",
    13: "pathlib.WindowsPath",
    14: "ipaddress.IPv4Address",
    15: "ipaddress.IPv6Address",
    16: "ipaddress.IPv4Network",
    17: "ipaddress.IPv6Network",
    18: "ipaddress.IPv4Interface",
    19: "ipaddress.IPv6Interface",
    20: "out-of-band value",
}


_DERIVED_BASES = {
    1: "dict",
    2: "list",
    3: "set",
    4: "frozenset",
    5: "tuple",
    6: "str",
    7: "bytes",
    8: "int",
    9: "float",
    10: "bytearray",
    11: "complex",
    12: "OrderedDict",
    13: "defaultdict",
    14: "exception",
    15: "deque",
}
_MUTABLE_BASES = {1: 2, 2: 1, 3: 1, 12: 2, 13: 2, 15: 1}  # code -> values per item (pairs: 2)
_FACTORY_VALUE = 0xFF


class _RecordWalk:
    """One record's values as nodes, by the record format's specification."""

    def __init__(self, data: bytes, end: int) -> None:
        self.data = data
        self.end = end
        self.classes: list[tuple[str, list[str]]] = []
        self.slots: list[ExplainNode] = []

    def byte(self, at: int) -> int:
        if at >= self.end:
            raise _Malformed(f"needs 1 byte at offset {at}, 0 left", at)
        return self.data[at]

    def take(self, at: int, n: int) -> bytes:
        if n > self.end - at:
            raise _Malformed(f"needs {n} bytes at offset {at}, {self.end - at} left", at)
        return self.data[at : at + n]

    def varint(self, at: int) -> tuple[int, int]:
        v = shift = 0
        for i in range(10):
            b = self.byte(at + i)
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v, at + i + 1
        raise _Malformed("varint longer than 10 bytes", at)

    def node(self, parent: ExplainNode, name: str | int, kind: str, at: int) -> ExplainNode:
        return ExplainNode(name, kind, at, None, data=self.data, parent=parent, decoded=False)

    def value(self, parent: ExplainNode, name: str | int, at: int, share: int | None = None) -> int:
        """Walks the value at ``at`` into a child of ``parent``; returns where it ends."""
        tag = self.byte(at)
        if tag == 0xA6:  # SHARE: the next value takes the next memo slot
            return self.value(parent, name, at + 1, share=len(self.slots))
        n = self.node(parent, name, "", at)
        if share is not None:
            n.start = at - 1
            n.marks = n.marks | {"shared"}
            n.notes = (*n.notes, f"memo slot {share}")
            self.slots.append(n)
        end = self._body(n, tag, at)
        n.end = end
        return end

    def _set(self, n: ExplainNode, kind: str, value: Any = None, decoded: bool = True) -> None:
        n.kind = kind
        n.value = value
        n.decoded = decoded

    def _body(self, n: ExplainNode, tag: int, at: int) -> int:
        p = at + 1
        if tag < 0x40:
            self._set(n, "small int", tag)
            return p
        if tag < 0x60:
            raw = self.take(p, tag - 0x40)
            self._set(n, "short str", raw.decode("utf-8", "replace"))
            return p + len(raw)
        if tag < 0x90:
            count = tag & 0x0F
            kind = "list" if tag < 0x70 else "tuple" if tag < 0x80 else "dict"
            return self._items(n, f"short {kind}", p, count, kind == "dict")
        if tag in _ATOMS:
            self._set(n, *_ATOMS[tag])
            return p
        if tag in _FIXED:
            kind, width = _FIXED[tag]
            raw = self.take(p, width)
            self._set(n, kind, _fixed(tag, raw))
            return p + width
        if tag == 0x99:
            size, p = self.varint(p)
            raw = self.take(p, size)
            self._set(n, "bigint", int.from_bytes(raw, "little", signed=True))
            return p + size
        if tag in _BLOBS:
            size, p = self.varint(p)
            raw = self.take(p, size)
            value: Any = raw
            if tag in (0x9D, 0x9E):
                value = raw.decode("utf-8", "surrogatepass" if tag == 0x9E else "replace")
            self._set(n, _BLOBS[tag], value)
            return p + size
        if tag in _SEQS or tag in _MAPS:
            count, p = self.varint(p)
            kind = _SEQS.get(tag) or _MAPS[tag]
            return self._items(n, kind, p, count, tag in _MAPS)
        if tag == 0xAD:
            factory = self.byte(p)
            count, p = self.varint(p + 1)
            if factory == _FACTORY_VALUE:
                p = self._items(n, "defaultdict", p, count, True)
                return self.value(n, "default_factory", p)
            n.notes = (*n.notes, f"factory code {factory}")
            return self._items(n, "defaultdict", p, count, True)
        if tag == 0xAE:
            maxlen, p = self.varint(p)
            count, p = self.varint(p)
            if maxlen:
                n.notes = (*n.notes, f"maxlen {maxlen - 1}")
            return self._items(n, "deque", p, count, False)
        if tag == 0xA7:
            slot, p = self.varint(p)
            self._ref(n, slot, at)
            return p
        if tag == 0xA8:
            slot, p = self.varint(p)
            n.kind = "replace"
            n.notes = (*n.notes, f"decoded, then replaced by memo slot {slot}")
            return self.value(n, "discarded", p)
        if tag in (0xA9, 0xAA):
            n.kind = "range" if tag == 0xA9 else "slice"
            for part in ("start", "stop", "step"):
                p = self.value(n, part, p)
            return p
        if tag == 0xAF:
            code, p = self.varint(p)
            n.kind = _STD.get(code, f"std kind {code}")
            return self.value(n, "args", p)
        if tag in (0xB0, 0xB1):
            p, cls, fields = self._class(n, p)
            if tag == 0xB1:
                n.kind = f"enum {cls}"
                return self.value(n, "member", p)
            n.kind = cls
            for f in fields:
                p = self.value(n, f, p)
            return p
        if tag in (0xB2, 0xB5):  # CLASS, DERIVED
            p, cls, _ = self._class(n, p)
            if tag == 0xB2:
                self._set(n, "class", cls)
                return p
            code = self.byte(p)
            base = _DERIVED_BASES.get(code)
            if base is None:
                raise _Malformed(f"DERIVED: unknown builtin base code {code}", p)
            n.kind = f"{cls} ({base} subclass)"
            p += 1
            fcode: int | None = None
            if code == 13:
                fcode = self.byte(p)
                p += 1
                if fcode != _FACTORY_VALUE:
                    n.notes = (*n.notes, f"factory code {fcode}")
            elif code == 15:
                maxlen, p = self.varint(p)
                if maxlen:
                    n.notes = (*n.notes, f"maxlen {maxlen - 1}")
            per_item = _MUTABLE_BASES.get(code)
            if per_item is not None:
                count, p = self.varint(p)
                pairs = per_item == 2
                for i in range(count * 2 if pairs else count):
                    p = self.value(n, ("key" if i % 2 == 0 else "value") if pairs else i, p)
                if fcode == _FACTORY_VALUE:
                    p = self.value(n, "default_factory", p)
            else:
                p = self.value(n, "args" if code == 14 else "value", p)
            return self.value(n, "state", p)
        if tag in (0xB3, 0xB4):  # BUILTIN, EXCEPTION
            size, p = self.varint(p)
            name = self.take(p, size).decode("utf-8", "replace")
            if tag == 0xB3:
                self._set(n, "builtin", name)
                return p + size
            n.kind = f"exception {name}"
            p = self.value(n, "args", p + size)
            return self.value(n, "state", p)
        raise _Malformed(f"reserved tag 0x{tag:02x}", at)

    def _items(self, n: ExplainNode, kind: str, p: int, count: int, pairs: bool) -> int:
        n.kind = kind
        if count > self.end - p:
            raise _Malformed(f"{count} items cannot fit in the {self.end - p} bytes left", p)
        for i in range(count):
            if pairs:
                entry = self.node(n, i, "entry", p)
                p = self.value(entry, "key", p)
                p = self.value(entry, "value", p)
                entry.end = p
            else:
                p = self.value(n, i, p)
        return p

    def _ref(self, n: ExplainNode, slot: int, at: int) -> None:
        n.kind = "ref"
        n.marks = n.marks | {"shared"}
        if slot >= len(self.slots):
            raise _Malformed(f"reference to memo slot {slot}, which is not defined yet", at)
        target = self.slots[slot]
        n.notes = (*n.notes, f"memo slot {slot}: the same object as {target.path or '(root)'}")
        n.value = target.value
        n.decoded = target.decoded
        n.type_name = target.kind

    def _class(self, n: ExplainNode, p: int) -> tuple[int, str, list[str]]:
        start = p
        ref, p = self.varint(p)
        if ref:
            if ref - 1 >= len(self.classes):
                raise _Malformed(f"class reference {ref} to an undefined class", start)
            name, fields = self.classes[ref - 1]
            return p, name, fields
        size, p = self.varint(p)
        name = self.take(p, size).decode("utf-8", "replace")
        p += size
        version, p = self.varint(p)
        count, p = self.varint(p)
        fields = []
        for _ in range(count):
            size, p = self.varint(p)
            fields.append(self.take(p, size).decode("utf-8", "replace"))
            p += size
        self.classes.append((name, fields))
        n.notes = (*n.notes, f"class {name} v{version} defined here ({len(fields)} fields)")
        return p, name, fields


_ORDERED = ("list", "tuple", "short list", "short tuple", "deque")
_MAPPINGS = ("dict", "short dict", "OrderedDict", "Counter", "defaultdict")


def _fill(node: ExplainNode, value: Any) -> None:
    """Gives the containers of a record's tree the values ``loads`` built, walking both
    together (sets, whose iteration order is not the record's, keep their items' values)."""
    node.value = value
    node.decoded = True
    if node.kind in _ORDERED and len(node.children) == len(value):
        for child, item in zip(node.children, value, strict=True):
            _fill(child, item)
    elif node.kind in _MAPPINGS and len(node.children) == len(value):
        for entry, (k, v) in zip(node.children, value.items(), strict=True):
            entry.value = (k, v)
            entry.decoded = True
            key, val = entry.children
            _fill(key, k)
            _fill(val, v)
    elif node.kind == "replace" or node.kind.startswith("enum "):
        pass
    elif node.children and all(isinstance(c.name, str) for c in node.children):
        # An instance: one child per field.
        for child in node.children:
            if hasattr(value, str(child.name)) and node.kind not in _STD.values():
                _fill(child, getattr(value, str(child.name)))


def _fixed(tag: int, raw: bytes) -> Any:
    import struct

    if tag == 0x94:
        return raw[0]
    if tag == 0x95:
        return -1 - raw[0]
    if tag == 0x96:
        return int.from_bytes(raw, "little")
    if tag == 0x97:
        return -1 - int.from_bytes(raw, "little")
    if tag == 0x98:
        return int.from_bytes(raw, "little", signed=True)
    if tag == 0x9A:
        return struct.unpack("<d", raw)[0]
    if tag == 0x9B:
        return struct.unpack("<f", raw)[0]
    return complex(*struct.unpack("<dd", raw))


def explain_record(data: bytes, *, classes: Any = None, hmac_key: bytes | None = None) -> Explained:
    """The tree of a stream of bytewright.pickle records (one or more, back to back)."""
    from bytewright.pickle import loads

    root = ExplainNode(None, "bytewright.pickle", 0, None, data=data, type_name="records")
    records = ExplainNode("records", "list[record]", 0, None, data=data, parent=root)
    at = index = 0
    error: Exception | None = None
    failed: ExplainNode | None = None
    while at < len(data):
        rec = ExplainNode(index, "record", at, None, data=data, parent=records, decoded=False)
        try:
            end = _record(rec, data, at)
        except _Malformed as e:
            error, failed = _fail(rec, e, index)
            break
        raw = data[at:end]
        try:
            rec.value = loads(raw, classes=classes, hmac_key=hmac_key)
            rec.decoded = True
            body = next(c for c in rec.children if c.name == "body")
            _fill(body, rec.value)
        except Exception as e:  # the reader's own verdict (UnpicklingError and its kinds)
            error, failed = _attach(rec, e, index)
            break
        rec.end = at = end
        index += 1
    ok = error is None
    if ok:
        records.end = root.end = at
        records.decoded = root.decoded = True
    rest = None
    if not ok and failed is not None:
        start = failed.start if failed.end is None else failed.end
        last = max((n.end or 0 for n in root.walk()), default=0)
        start = max(start, last) if failed.children else start
        if start < len(data):
            rest = ExplainNode(
                None,
                "bytes",
                start,
                len(data),
                data=data,
                parent=root,
                marks=("rest",),
                decoded=False,
            )
    return Explained(
        root,
        data,
        end=at if ok else None,
        error=error,
        failed=failed,
        rest=rest,
        title="bytewright.pickle",
    )


def _record(rec: ExplainNode, data: bytes, at: int) -> int:
    """Walks one record at ``at``: its header, body and tag; returns its end."""
    walk = _RecordWalk(data, len(data))
    header = ExplainNode("header", "header", at, None, data=data, parent=rec)
    magic = ExplainNode(
        "magic",
        "bytes[2]",
        at,
        at + 2,
        data=data,
        parent=header,
        value=data[at : at + 2],
        marks=("constant",),
        notes=("= b'BW'",),
    )
    if data[at : at + 2] != b"BW":
        raise _Malformed(f"not a bytewright.pickle record: magic {data[at : at + 2]!r}", at)
    version = walk.byte(at + 2)
    ExplainNode(
        "version",
        "u8",
        at + 2,
        at + 3,
        data=data,
        parent=header,
        value=version,
        marks=("constant",),
        notes=("= 1",),
    )
    if version != 1:
        raise _Malformed(f"unsupported version {version}", at + 2)
    flags = walk.byte(at + 3)
    ExplainNode(
        "flags",
        "u8",
        at + 3,
        at + 4,
        data=data,
        parent=header,
        value=flags,
        notes=("signed",) if flags & 1 else (),
    )
    size, body_at = walk.varint(at + 4)
    ExplainNode(
        "body_len",
        "varuint",
        at + 4,
        body_at,
        data=data,
        parent=header,
        value=size,
        marks=("derived",),
        notes=("length of body",),
    )
    header.end = body_at
    del magic
    end = body_at + size
    if end > len(data):
        ExplainNode("body", "value", body_at, None, data=data, parent=rec, decoded=False)
        raise _Malformed(
            f"the body needs {size} bytes at offset {body_at}, {len(data) - body_at} left", body_at
        )
    walk.end = end
    body_end = walk.value(rec, "body", body_at)
    if body_end != end:
        raise _Malformed(f"{end - body_end} bytes after the body's value", body_end)
    if flags & 1:
        if end + 32 > len(data):
            raise _Malformed("the HMAC tag needs 32 bytes", end)
        ExplainNode(
            "tag",
            "bytes[32]",
            end,
            end + 32,
            data=data,
            parent=rec,
            value=data[end : end + 32],
            marks=("checksum",),
            notes=("HMAC-SHA256 of header and body",),
        )
        end += 32
    return end


def _fail(rec: ExplainNode, e: _Malformed, index: int) -> tuple[Exception, ExplainNode]:
    from bytewright.pickle import UnpicklingError

    # The innermost node that did not finish, or the record.
    at = rec
    for n in rec.walk():
        if n.end is None and n.start <= e.offset:
            at = n
    at.marks = at.marks | {"failed"}
    err = UnpicklingError(f"records[{index}] at offset {e.offset}: {e}")
    err.offset = e.offset
    return err, at


def _attach(rec: ExplainNode, e: Exception, index: int) -> tuple[Exception, ExplainNode]:
    rec.marks = rec.marks | {"failed"}
    if not hasattr(e, "offset"):
        e.offset = rec.start  # type: ignore[attr-defined]
    del index
    return e, rec


# ---------------------------------------------------------------- standard pickles

_BUILD_SEQ = {"LIST": "list", "TUPLE": "tuple", "DICT": "dict", "FROZENSET": "frozenset"}
_EMPTY = {"EMPTY_LIST": "list", "EMPTY_DICT": "dict", "EMPTY_SET": "set", "EMPTY_TUPLE": "tuple"}
_CALLS = {
    "REDUCE": "call",
    "NEWOBJ": "new object",
    "NEWOBJ_EX": "new object",
    "BUILD": "set state",
    "OBJ": "object",
    "INST": "instance",
}
_PUTS = {"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"}
_GETS = {"GET", "BINGET", "LONG_BINGET"}


class _Mark:
    def __init__(self, node: ExplainNode) -> None:
        self.node = node


def explain_pickle(data: bytes) -> Explained:
    """The tree of a standard pickle: each value a node built from its opcodes (the
    opcodes that make a container are its children), globals and calls marked, shared
    objects with their memo slots. Nothing is imported or called."""
    import pickletools

    from bytewright.pickle import UnpicklingError

    root = ExplainNode(None, "pickle", 0, None, data=data, type_name="pickle", decoded=False)
    top = ExplainNode("opcodes", "stream", 0, None, data=data, parent=root, decoded=False)
    stack: list[Any] = []
    memo: dict[int, ExplainNode] = {}
    error: Exception | None = None
    failed: ExplainNode | None = None
    end = 0
    ops: list[tuple[Any, Any, int]] = []
    try:
        for op, arg, pos in pickletools.genops(data):
            ops.append((op, arg, pos or 0))  # positions are given for bytes
    except Exception as e:  # pickletools reports malformed input as various errors
        error = UnpicklingError(f"malformed pickle: {type(e).__name__}: {e}")
    for i, (op, arg, pos) in enumerate(ops):
        nxt = ops[i + 1][2] if i + 1 < len(ops) else (pos + 1 if op.name == "STOP" else len(data))
        end = nxt
        name = op.name

        if name in ("PROTO", "FRAME", "STOP"):
            ExplainNode(name.lower(), name, pos, nxt, data=data, parent=top, value=arg)
            continue
        if name == "MARK":
            stack.append(_Mark(ExplainNode(None, "mark", pos, nxt, data=data, decoded=False)))
            continue
        if name in _PUTS:
            slot = len(memo) if name == "MEMOIZE" else int(arg)
            if stack and isinstance(stack[-1], ExplainNode):
                target = stack[-1]
                memo[slot] = target
                target.marks = target.marks | {"shared"}
                target.notes = (*target.notes, f"memo slot {slot}")
            continue
        if name in _GETS:
            got = memo.get(int(arg))
            n = _orphan("ref", pos, nxt, data)
            n.marks = frozenset({"shared"})
            n.notes = (
                f"memo slot {arg}"
                + (f": the same object as {_where(got)}" if got is not None else " (undefined)"),
            )
            n.value = None if got is None else got.value
            n.type_name = None if got is None else got.kind
            stack.append(n)
            continue
        if name in _EMPTY:
            n = _orphan(_EMPTY[name], pos, nxt, data)
            n.value = None
            stack.append(n)
            continue
        if name in ("GLOBAL", "INST"):
            n = _orphan("global", pos, nxt, data, value=str(arg).replace(" ", "."))
            n.marks = frozenset({"global"})
            if name == "INST":
                items = _pop_mark(stack)
                call = _container("instance", items, n.start, nxt, data)
                call.notes = (f"INST {n.value}",)
                stack.append(call)
            else:
                stack.append(n)
            continue
        if name == "STACK_GLOBAL":
            parts = [stack.pop() if stack else None for _ in range(2)][::-1]
            nodes = [p for p in parts if isinstance(p, ExplainNode)]
            label = ".".join(str(p.value) for p in nodes)
            n = _container("global", nodes, nodes[0].start if nodes else pos, nxt, data)
            n.value = label
            n.marks = frozenset({"global"})
            stack.append(n)
            continue
        if name in _BUILD_SEQ:
            items = _pop_mark(stack)
            start = min([pos, *(c.start for c in items)])
            stack.append(_container(_BUILD_SEQ[name], items, start, nxt, data))
            continue
        if name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            k = int(name[-1])
            items = [stack.pop() for _ in range(min(k, len(stack)))][::-1]
            items = [c for c in items if isinstance(c, ExplainNode)]
            start = min([pos, *(c.start for c in items)])
            stack.append(_container("tuple", items, start, nxt, data))
            continue
        if name in ("APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS"):
            items = (
                _pop_mark(stack)
                if name.endswith("S")
                else [stack.pop() for _ in range(2 if name == "SETITEM" else 1)][::-1]
            )
            owner = stack[-1] if stack and isinstance(stack[-1], ExplainNode) else None
            if owner is not None:
                if name.startswith("SETITEM"):
                    # Key, value: one entry each, as a record's dicts show them.
                    for k in range(0, len(items) - 1, 2):
                        entry = _container(
                            "entry", [], items[k].start, items[k + 1].end or nxt, data
                        )
                        _adopt(entry, items[k])
                        _adopt(entry, items[k + 1])
                        items[k].name, items[k + 1].name = "key", "value"
                        _adopt(owner, entry)
                else:
                    for c in items:
                        _adopt(owner, c)
                owner.end = nxt
            continue
        if name in _CALLS:
            arity = {"REDUCE": 2, "NEWOBJ": 2, "NEWOBJ_EX": 3, "BUILD": 2}.get(name)
            items = (
                _pop_mark(stack)
                if arity is None
                else [stack.pop() for _ in range(min(arity, len(stack)))][::-1]
            )
            items = [c for c in items if isinstance(c, ExplainNode)]
            start = min([pos, *(c.start for c in items)])
            n = _container(_CALLS[name], items, start, nxt, data)
            n.notes = (name,)
            if items and "global" in items[0].marks:
                n.type_name = str(items[0].value)
            n.marks = n.marks | {"call"}
            stack.append(n)
            continue
        if name == "POP":
            if stack:
                stack.pop()
            continue
        if name == "POP_MARK":
            _pop_mark(stack)
            continue
        if name == "DUP":
            if stack:
                stack.append(stack[-1])
            continue
        # A value: ints, floats, strings, bytes, None, booleans, PERSID ...
        stack.append(_orphan(name, pos, nxt, data, value=arg))
    for item in stack:
        if isinstance(item, ExplainNode) and item.parent is None:
            _adopt(top, item)
    _sort(top)
    _repath(root)
    top.end = root.end = end
    if error is None:
        top.decoded = root.decoded = True
    else:
        failed = _orphan("malformed", end, None, data)
        failed.parent = None
        _adopt(root, failed)
        failed.marks = frozenset({"failed"})
        failed.decoded = False
        error.offset = end  # type: ignore[attr-defined]
    rest = None
    if error is not None and end < len(data):
        rest = ExplainNode(
            None, "bytes", end, len(data), data=data, parent=root, marks=("rest",), decoded=False
        )
    root.value = None
    return Explained(
        root,
        data,
        end=end if error is None else None,
        error=error,
        failed=failed,
        rest=rest,
        title="pickle",
    )


def _where(node: ExplainNode | None) -> str:
    if node is None:
        return "?"
    return f"the {node.kind} at offset {node.start}"


def _orphan(kind: str, start: int, end: int | None, data: bytes, value: Any = None) -> ExplainNode:
    return ExplainNode(None, kind, start, end, data=data, value=value)


def _adopt(parent: ExplainNode, child: ExplainNode) -> None:
    if child.parent is not None and child in child.parent.children:
        child.parent.children.remove(child)
    child.parent = parent
    child.name = len(parent.children)
    parent.children.append(child)
    parent.start = min(parent.start, child.start)
    _repath(child)


def _repath(node: ExplainNode) -> None:
    from bytewright._explain import _join

    for n in node.walk():
        parent = n.parent
        n.path = _join(parent.path if parent is not None else "", n.name, n.marks)


def _container(kind: str, items: list[Any], start: int, end: int, data: bytes) -> ExplainNode:
    n = _orphan(kind, start, end, data)
    for c in items:
        if isinstance(c, ExplainNode):
            _adopt(n, c)
    return n


def _pop_mark(stack: list[Any]) -> list[ExplainNode]:
    items: list[ExplainNode] = []
    while stack:
        top = stack.pop()
        if isinstance(top, _Mark):
            break
        items.append(top)
    return items[::-1]


def _sort(node: ExplainNode) -> None:
    """Children in byte order, the unnamed ones numbered."""
    node.children.sort(key=lambda c: c.start)
    for i, c in enumerate(node.children):
        if ((isinstance(c.name, int) or c.name is None) and c.kind != "entry") or c.parent is None:
            c.name = i
        elif c.kind == "entry" or isinstance(c.name, int):
            c.name = i
        _sort(c)
