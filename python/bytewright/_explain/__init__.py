"""``bw.explain``: where every field of a message sits in the bytes, as a tree of nodes.

The tree is built by the same compiled program as ``unpack`` (a sink of the native VM that
records the layout while the codec's own sink builds the values), so it cannot disagree
with ``unpack``: the values are the ones ``unpack`` returns, and a failure is the
``DecodeError`` it raises. Rendering (terminal and HTML) lives in the submodules and loads
on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Literal

    from typing_extensions import Buffer

    from bytewright._native import Codec

__all__ = ["ExplainNode", "Explained", "explain"]


class ExplainNode:
    """One field, list item, padding run or record of an explained message.

    ``start`` and ``end`` are absolute byte offsets (``end`` is None when decoding failed
    inside the node); ``raw`` is its bytes and ``value`` its decoded value, exactly as
    ``unpack`` returns it (``decoded`` is False when decoding did not finish it).
    ``kind`` is the declared kind (``"u16 be"``, ``"bytes"``, ``"list[Chunk]"``);
    ``marks`` says what the schema makes of it (``"derived"``, ``"constant"``,
    ``"checksum"``, ``"padding"``, ``"conditional"``, ``"absent"`` for a condition that did
    not hold, ``"window"``, ``"opaque"``, ``"failed"``, ``"rest"``) and ``notes`` says it in
    words (``"length of data"``, ``"crc32 over type, data"``, ``"case 6: TCP"``).

    >>> import bytewright as bw
    >>> class Point(bw.Struct, byteorder="big"):
    ...     x: bw.U16
    ...     y: bw.U16
    >>> node = bw.explain(Point, b"\\x00\\x01\\x00\\x02")["y"]
    >>> (node.start, node.size, node.kind, node.value, node.raw)
    (2, 2, 'u16 be', 2, b'\\x00\\x02')
    """

    __slots__ = (
        "_bits",
        "_data",
        "children",
        "decoded",
        "end",
        "error",
        "kind",
        "marks",
        "name",
        "notes",
        "parent",
        "path",
        "start",
        "type_name",
        "value",
    )

    name: str | int | None
    path: str
    kind: str
    start: int
    end: int | None
    marks: frozenset[str]
    notes: tuple[str, ...]
    type_name: str | None
    decoded: bool
    value: Any
    parent: ExplainNode | None
    children: list[ExplainNode]
    error: Exception | None
    _bits: tuple[int, int, int, bool] | None
    _data: bytes

    def __init__(
        self,
        name: str | int | None,
        kind: str,
        start: int,
        end: int | None,
        *,
        data: bytes,
        parent: ExplainNode | None = None,
        value: Any = None,
        decoded: bool = True,
        marks: frozenset[str] | tuple[str, ...] = frozenset(),
        notes: tuple[str, ...] = (),
        type_name: str | None = None,
        bits: tuple[int, int, int, bool] | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.start = start
        self.end = end
        self._data = data
        self.parent = parent
        self.value = value
        self.decoded = decoded
        self.marks = frozenset(marks)
        self.notes = tuple(notes)
        self.type_name = type_name
        self._bits = bits
        self.children = []
        self.error = None
        self.path = _join(parent.path if parent is not None else "", name, self.marks)
        if parent is not None:
            parent.children.append(self)

    @property
    def size(self) -> int | None:
        """Bytes covered (None when decoding failed inside the node)."""
        return None if self.end is None else self.end - self.start

    @property
    def raw(self) -> bytes:
        """The node's bytes (up to the end of the data when it did not finish)."""
        end = len(self._data) if self.end is None else self.end
        return self._data[self.start : end]

    @property
    def bits(self) -> int | None:
        """A bit field's width in bits (its bytes are the ones its bits are in), else None."""
        return None if self._bits is None else self._bits[2]

    @property
    def bit_mask(self) -> int | None:
        """A bit field's bits as a mask over ``raw`` read as a number in the field's byte
        order (big-endian unless its struct declares ``bitorder="lsb"``), else None.

        >>> import bytewright as bw
        >>> class Head(bw.Struct):
        ...     version: int = bw.bits(4)
        ...     ihl: int = bw.bits(4)
        >>> bin(bw.explain(Head, b"\\x45")["ihl"].bit_mask or 0)
        '0b1111'
        """
        if self._bits is None:
            return None
        group, shift, width, lsb = self._bits
        mask = ((1 << width) - 1) << shift
        # The node covers the group's bytes that hold the bits: shift the mask to them.
        n = self.size or 0
        if lsb:
            first = shift // 8
            return mask >> (8 * first) & ((1 << (8 * n)) - 1)
        last = group - 1 - shift // 8  # the group's byte holding the lowest bit
        return mask >> (8 * (group - 1 - last)) & ((1 << (8 * n)) - 1)

    @property
    def bit_lsb(self) -> bool:
        """Whether the bit field's group is a little-endian number (``bitorder="lsb"``)."""
        return self._bits is not None and self._bits[3]

    @property
    def derived(self) -> bool:
        """Computed on pack from a later field (a length, count or window size)."""
        return "derived" in self.marks

    @property
    def constant(self) -> bool:
        """Holds a constant the data must match."""
        return "constant" in self.marks

    @property
    def checksum(self) -> bool:
        """Holds a checksum of its struct (verified on unpack unless declared otherwise)."""
        return "checksum" in self.marks

    @property
    def padding(self) -> bool:
        """Padding bytes (declared, or for alignment)."""
        return "padding" in self.marks

    @property
    def absent(self) -> bool:
        """A conditional field whose condition did not hold: no bytes, its default value."""
        return "absent" in self.marks

    @property
    def failed(self) -> bool:
        """Decoding failed at this node (``error`` says why)."""
        return "failed" in self.marks

    def walk(self) -> Iterator[ExplainNode]:
        """This node and every node below it, depth first, in byte order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def __getitem__(self, key: str | int) -> ExplainNode:
        """A child by field name or item index, or a node below by path (``"a.b[2]"``)."""
        if isinstance(key, str) and ("." in key or "[" in key):
            return _find(self, key)
        for c in self.children:
            if c.name == key:
                return c
        raise KeyError(f"{self.path or '(message)'} has no field or item {key!r}")

    def __repr__(self) -> str:
        size = "?" if self.size is None else self.size
        return f"<ExplainNode {self.path or '(message)'} {self.kind} @{self.start}+{size}>"


def _join(parent: str, name: str | int | None, marks: frozenset[str]) -> str:
    if isinstance(name, int):
        return f"{parent}[{name}]"
    if name is None:
        if "rest" in marks:
            name = "(rest)"
        elif "padding" in marks:
            name = "(padding)"
        else:
            return parent
    return f"{parent}.{name}" if parent else name


def _find(node: ExplainNode, path: str) -> ExplainNode:
    want = f"{node.path}.{path}" if node.path and not path.startswith("[") else node.path + path
    want = want.lstrip(".")
    for n in node.walk():
        if n.path == want:
            return n
    raise KeyError(f"no node at {path!r}")


class Explained:
    """The field tree of one message: ``bw.explain``'s result.

    ``root`` is the message's node. When the data decodes, ``ok`` is True and ``value`` is
    what ``unpack`` returns. When it does not, ``error`` is the ``DecodeError`` that
    ``unpack`` raises, ``failed`` the node it names (marked ``"failed"``), ``rest`` one node
    over the bytes not decoded, and ``needed`` (short data only) the further bytes the next
    step of decoding needs, as ``parse`` reports them. (The trees of pickled data that
    ``bytewright.pickle.explain`` gives carry an ``UnpicklingError`` instead.)

    ``render()`` gives the terminal views (``"tree"`` or ``"hex"``), ``to_html()`` the
    browser view; ``find(path)`` or ``explained["path"]`` a node, ``at(offset)`` the
    innermost node holding a byte.

    >>> import bytewright as bw
    >>> class Msg(bw.Struct, byteorder="big"):
    ...     length: bw.U8 = bw.derived()
    ...     text: str = bw.field(len="length")
    >>> ex = bw.explain(Msg, b"\\x05hel")
    >>> (ex.ok, ex.needed, ex.failed.path if ex.failed else None, ex.rest and ex.rest.start)
    (False, 2, 'text', 1)
    >>> print(ex.error)
    text: needs 5 bytes at offset 1, 3 left
    """

    __slots__ = ("data", "end", "error", "failed", "needed", "offset", "rest", "root", "title")

    root: ExplainNode
    data: bytes
    offset: int
    end: int | None
    error: Exception | None
    needed: int | None
    failed: ExplainNode | None
    rest: ExplainNode | None
    title: str

    def __init__(
        self,
        root: ExplainNode,
        data: bytes,
        *,
        offset: int = 0,
        end: int | None = None,
        error: Exception | None = None,
        needed: int | None = None,
        failed: ExplainNode | None = None,
        rest: ExplainNode | None = None,
        title: str = "",
    ) -> None:
        self.root = root
        self.data = data
        self.offset = offset
        self.end = end
        self.error = error
        self.needed = needed
        self.failed = failed
        self.rest = rest
        self.title = title or root.type_name or root.kind
        if failed is not None:
            failed.error = error

    @property
    def ok(self) -> bool:
        """Whether the data decoded (as one whole message)."""
        return self.error is None

    @property
    def value(self) -> Any:
        """The decoded message, as ``unpack`` returns it (None when it did not decode)."""
        return self.root.value if self.ok else None

    def walk(self) -> Iterator[ExplainNode]:
        """Every node, depth first, in byte order."""
        return self.root.walk()

    def find(self, path: str) -> ExplainNode | None:
        """The node at a path as errors write it (``"chunks[1].crc"``; ``""`` is the root)."""
        for n in self.walk():
            if n.path == path:
                return n
        return None

    def __getitem__(self, path: str) -> ExplainNode:
        """The node at ``path``; KeyError if there is none."""
        node = self.find(path)
        if node is None:
            raise KeyError(f"no node at {path!r}")
        return node

    def at(self, offset: int) -> ExplainNode | None:
        """The innermost node holding the byte at ``offset`` (a field for a byte, as the
        hex view's selection does), or None outside the message."""
        best: ExplainNode | None = None
        node: ExplainNode | None = self.root
        while node is not None:
            best = node
            node = next((c for c in node.children if _holds(c, offset)), None)
        if best is self.root and not _holds(self.root, offset):
            return self.rest if self.rest is not None and _holds(self.rest, offset) else None
        return best

    def render(
        self,
        view: Literal["tree", "hex"] = "tree",
        *,
        max_depth: int | None = None,
        path: str | None = None,
        max_items: int = 8,
        width: int = 100,
    ) -> str:
        """The terminal view as plain text: ``"tree"`` (fields with offsets, sizes, kinds
        and values) or ``"hex"`` (a hex dump with each field's path alongside its bytes).

        Lists longer than ``max_items`` show their first and last items and a count of the
        rest; ``max_depth`` cuts the tree below that depth; ``path`` shows one subtree.
        """
        from bytewright._explain import _text

        return _text.render(self, view, max_depth=max_depth, path=path, max_items=max_items)

    def to_html(self, *, title: str | None = None) -> str:
        """One self-contained HTML page (inline CSS and JS, no network): the hex view on the
        left and the collapsible field tree on the right, each highlighting the other."""
        from bytewright._explain import _html

        return _html.page(self, title=title)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        state = "ok" if self.ok else f"failed at {self.failed.path if self.failed else '?'}"
        return f"<Explained {self.title}: {len(self.data)} bytes, {state}>"


def _holds(node: ExplainNode, offset: int) -> bool:
    end = node.end
    if end is None:
        return node.start <= offset and "failed" in node.marks and not node.children
    return node.start <= offset < end


def explain(schema: type[Any] | Codec[Any], data: Buffer, *, offset: int = 0) -> Explained:
    """Decodes one message of ``schema`` (a ``bw.Struct`` class or a ``bw.Codec``) at
    ``offset`` and returns its field tree: where every field sits, its bytes, its value and
    what the schema says about it.

    It never raises for bad data: the tree holds every node decoded up to the failure, the
    ``DecodeError`` that ``unpack`` raises is attached at its path and offset, and the
    bytes not decoded are one node. Bytes after the message are the same error as for
    ``unpack`` (with ``offset``, as for ``unpack(data[offset:])``). Values are those of
    ``unpack`` on the same codec: instances for a Struct class, dicts for ``bw.compile``.
    Only its arguments raise: TypeError for data that is not bytes-like, ValueError for a
    negative ``offset`` (one past the end is a failed tree, as ``unpack_from``'s error).

    >>> import bytewright as bw
    >>> class Chunk(bw.Struct, byteorder="big"):
    ...     length: bw.U32 = bw.derived()
    ...     type: bytes = bw.field(len=4)
    ...     data: bytes = bw.field(len="length")
    >>> ex = bw.explain(Chunk, Chunk(type=b"tEXt", data=b"hi").pack())
    >>> [(n.path, n.start, n.size) for n in ex.root.children]
    [('length', 0, 4), ('type', 4, 4), ('data', 8, 2)]
    >>> ex["length"].derived, ex["length"].notes
    (True, ('length of data',))
    """
    import operator

    from bytewright._native import Codec

    codec: Any
    if isinstance(schema, Codec):
        codec = schema
    else:
        from bytewright.struct import codec_of

        codec = codec_of(schema)
    try:
        # bytes(5) would be five zero bytes: only a buffer is data, as for unpack.
        buf = memoryview(data).tobytes()
    except TypeError:
        raise TypeError(f"expected a bytes-like object, got {type(data).__name__}") from None
    offset = operator.index(offset)
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    return from_native(codec._explain(buf, offset), buf, offset)


def from_native(got: tuple[Any, ...], buf: bytes, offset: int = 0) -> Explained:
    """The ``Explained`` of what ``Codec._explain`` returned for ``buf``."""
    nodes, end, error, needed, failed, rest = got
    made: list[ExplainNode] = []
    for parent, name, kind, start, stop, bits, marks, notes, type_name, has, value in nodes:
        made.append(
            ExplainNode(
                name,
                kind,
                start,
                stop,
                data=buf,
                parent=None if parent is None else made[parent],
                value=value,
                # Padding has no value, but it was read.
                decoded=has or ("padding" in marks and stop is not None),
                marks=marks,
                notes=notes,
                type_name=type_name,
                bits=bits,
            )
        )
    return Explained(
        made[0],
        buf,
        offset=offset,
        end=end,
        error=error,
        needed=needed,
        failed=None if failed is None else made[failed],
        rest=None if rest is None else made[rest],
    )
