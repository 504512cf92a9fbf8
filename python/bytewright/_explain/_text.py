"""The terminal views of an explained message: the field tree and the annotated hex dump.

Each view is a list of lines, each line a list of ``(text, style)`` pieces: joined as plain
text for pipes and files, or styled by ``rich`` on a terminal (``_cli``). Styles are rich
style names; the plain text never depends on them.
"""

from __future__ import annotations

from bytewright._explain import Explained, ExplainNode

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    Piece: TypeAlias = tuple[str, str]
    Line: TypeAlias = list[Piece]

__all__ = ["hex_lines", "render", "tree_lines"]

# Leaf colors of the hex view, cycled in byte order.
PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_cyan", "bright_magenta")
FAIL = "bold red"
DIM = "dim"
# Marks shown as tags before a node's notes.
_TAGS = (
    "derived",
    "constant",
    "checksum",
    "conditional",
    "absent",
    "window",
    "padding",
    "shared",
    "global",
    "call",
)


def short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bit_pattern(node: ExplainNode) -> str:
    """A bit field's bytes as bits, its own shown and the others as dots: ``.... 0101``."""
    mask = node.bit_mask
    raw = node.raw
    if mask is None or not raw:
        return ""
    n = int.from_bytes(raw, "little" if node.bit_lsb else "big")
    width = 8 * len(raw)
    out = []
    for i in range(width - 1, -1, -1):
        out.append(str(n >> i & 1) if mask >> i & 1 else ".")
        if i and i % 4 == 0:
            out.append(" ")
    return "".join(out)


def show_value(node: ExplainNode, limit: int = 60) -> str:
    """A node's value in a few characters: leaves by value, structs by name, lists by count."""
    if node.absent:
        return f"absent, {short(repr(node.value), limit)}"
    if "rest" in node.marks:
        size = node.size or 0
        return f"{size} bytes not decoded: {short(repr(node.raw), limit)}"
    if not node.decoded:
        return "…" if node.failed else ""
    if node.kind == "ref" and node.value is None and node.type_name not in (None, "NONE"):
        # A standard pickle's reference to a container (built by opcodes, so no value).
        return node.type_name or ""
    if node.children and isinstance(node.value, str | int | float | bytes):
        return _scalar(node.value, limit)  # a value with parts (a pickle's global)
    items = [c for c in node.children if isinstance(c.name, int)]
    if (node.children and len(items) == len(node.children)) or node.kind.startswith("list["):
        n = len(node.value) if _sized(node.value) else len(items)
        return "1 item" if n == 1 else f"{n} items"
    if node.children:
        # The struct a union chose (a plain struct's name is its kind already).
        return node.type_name if node.type_name and node.type_name != node.kind else ""
    value = node.value
    text = _scalar(value, limit)
    if node.bits is not None:
        return f"{bit_pattern(node)} = {text}"
    return text


def _sized(v: Any) -> bool:
    return isinstance(v, list | tuple | dict)


def _scalar(value: Any, limit: int) -> str:
    import enum

    if isinstance(value, enum.Flag) and isinstance(value, int):
        return f"{value.name} ({int(value)})" if value.name else str(int(value))
    if isinstance(value, enum.Enum):
        return f"{value.name} ({value.value!r})"
    if isinstance(value, bytes | bytearray | memoryview):
        b = bytes(value)
        text = short(repr(b), limit)
        return text if len(b) <= 16 else f"{text} ({len(b)} bytes)"
    return short(repr(value), limit)


def annotation(node: ExplainNode) -> str:
    """The marks and notes of a node: ``[derived] length of data``."""
    # A checksum is derived too (pack computes it): the one tag says so.
    skip = {"padding", "derived"} if node.checksum else {"padding"}
    tags = [t for t in _TAGS if t in node.marks and t not in skip]
    parts = [f"[{', '.join(tags)}]"] if tags else []
    parts.extend(node.notes)
    return " ".join(parts)


def _style(node: ExplainNode) -> str:
    if node.failed or "rest" in node.marks:
        return FAIL
    if node.padding or node.absent:
        return DIM
    return ""


def _label(node: ExplainNode) -> str:
    if node.parent is None:
        return node.type_name or node.kind
    if isinstance(node.name, int):
        return f"[{node.name}]"
    if node.name is None:
        return "(rest)" if "rest" in node.marks else "(padding)"
    return node.name


def _visible(node: ExplainNode, max_items: int) -> list[ExplainNode | tuple[int, int, int]]:
    """The children to show: a long list keeps its first and last items, and a count of the
    others (``(count, first offset, last end)``) in their place."""
    kids = node.children
    items = [c for c in kids if isinstance(c.name, int)]
    if len(items) <= max_items or len(items) != len(kids):
        return list(kids)
    head = max(max_items - 2, 1)
    hidden = kids[head:-1]
    return [
        *kids[:head],
        (len(hidden), hidden[0].start, hidden[-1].end or hidden[-1].start),
        kids[-1],
    ]


def tree_lines(
    ex: Explained,
    *,
    max_depth: int | None = None,
    path: str | None = None,
    max_items: int = 8,
) -> list[Line]:
    """The field tree: offset, size, the field's name in the tree, its kind, value, notes."""
    top = ex.root if path is None else ex[path]
    rows: list[tuple[str, ExplainNode | None, str]] = []  # (tree prefix + label, node, text)

    def visit(node: ExplainNode, prefix: str, tail: str, depth: int) -> None:
        rows.append((prefix + _label(node), node, ""))
        if max_depth is not None and depth >= max_depth and node.children:
            rows.append((tail + "   ", None, f"… {len(node.children)} more below (--max-depth)"))
            return
        shown = _visible(node, max_items)
        for i, child in enumerate(shown):
            last = i == len(shown) - 1
            branch, cont = ("└─ ", "   ") if last else ("├─ ", "│  ")
            if isinstance(child, tuple):
                count, first, end = child
                rows.append((tail + branch, None, f"… {count} more items (bytes {first}..{end})"))
                continue
            visit(child, tail + branch, tail + cont, depth + 1)

    visit(top, "", "", 0)
    width = min(max(len(r[0]) for r in rows), 44)
    kinds = [n.kind for _, n, _ in rows if n is not None]
    kind_w = min(max(map(len, kinds), default=4), 22)
    lines: list[Line] = []
    head = f"{'offset':>8} {'size':>6}  {'field':<{width}}  {'kind':<{kind_w}}  value"
    lines.append([(head, DIM)])
    for label, node, text in rows:
        if node is None:
            lines.append([(f"{'':>8} {'':>6}  ", ""), (label, DIM), (text, DIM)])
            continue
        size = "?" if node.size is None else str(node.size)
        if node.bits is not None:
            size = f"{node.bits}b"
        style = _style(node)
        line: Line = [
            (f"{node.start:>8} {size:>6}  ", DIM),
            (f"{short(label, width):<{width}}", style or "bold"),
            (f"  {short(node.kind, kind_w):<{kind_w}}  ", DIM),
            (show_value(node), style),
        ]
        note = annotation(node)
        if note:
            line.append(("  " + note, "italic dim"))
        if node.error is not None:
            line.append((f"  ✗ {node.error}", FAIL))
        lines.append(line)
    lines.extend(_failure_lines(ex))
    return lines


def _failure_lines(ex: Explained) -> list[Line]:
    if ex.error is None:
        return []
    offset = getattr(ex.error, "offset", None)
    where = f" at offset {offset}" if offset is not None else ""
    out: list[Line] = [[(f"✗ {type(ex.error).__name__}{where}: {ex.error}", FAIL)]]
    if ex.needed is not None:
        out.append([(f"  short data: {ex.needed} more bytes needed to go on", FAIL)])
    return out


def _leaves(top: ExplainNode, max_depth: int | None) -> list[ExplainNode]:
    """The nodes whose bytes the hex view colors: leaves, or nodes at the depth cut."""
    out: list[ExplainNode] = []
    base = top.path.count(".") + top.path.count("[")

    def visit(node: ExplainNode) -> None:
        depth = node.path.count(".") + node.path.count("[") - base
        if not node.children or (max_depth is not None and depth >= max_depth):
            if (node.size or 0) > 0 or (node.end is None and node.failed):
                out.append(node)
            return
        for c in node.children:
            visit(c)

    visit(top)
    return out


def hex_lines(
    ex: Explained,
    *,
    max_depth: int | None = None,
    path: str | None = None,
    per_line: int = 16,
) -> list[Line]:
    """An annotated hex dump: offset, bytes, ASCII, then the fields that start on the line
    (each field's bytes in its own color; bytes not decoded in red)."""
    top = ex.root if path is None else ex[path]
    data = ex.data
    leaves = _leaves(top, max_depth)
    if top is ex.root and ex.rest is not None and ex.rest not in leaves:
        leaves.append(ex.rest)
    start = top.start
    end = len(data) if top.end is None or top is ex.root else top.end
    if top is ex.root:
        start = min(start, ex.offset)
    owner: dict[int, tuple[int, ExplainNode]] = {}
    for i, leaf in enumerate(leaves):
        stop = leaf.end if leaf.end is not None else len(data)
        for b in range(leaf.start, stop):
            owner.setdefault(b, (i, leaf))
    starts: dict[int, list[ExplainNode]] = {}
    for leaf in leaves:
        starts.setdefault(leaf.start - (leaf.start - start) % per_line, []).append(leaf)
    lines: list[Line] = []
    row = start - (start - start) % per_line
    while row < end or (row == end == start):
        line: Line = [(f"{row:08x}  ", DIM)]
        text: Line = []
        for b in range(row, row + per_line):
            sep = "  " if b - row == per_line // 2 - 1 else " "
            if b >= end or b < start or b >= len(data):
                line.append(("  " + sep, ""))
                text.append((" ", ""))
                continue
            style = _byte_style(owner.get(b))
            line.append((f"{data[b]:02x}", style))
            line.append((sep, ""))
            ch = chr(data[b]) if 0x20 <= data[b] < 0x7F else "."
            text.append((ch, style))
        line.append(("|", DIM))
        line.extend(text)
        line.append(("|", DIM))
        here = starts.get(row, [])
        notes = [_hex_note(n) for n in here]
        if notes:
            line.append(("  ", ""))
            line.append(notes[0])
        lines.append(line)
        pad = " " * (10 + per_line * 3 + 1 + per_line + 4)
        for note in notes[1:]:
            lines.append([(pad, ""), note])
        row += per_line
        if row >= end:
            break
    lines.extend(_failure_lines(ex))
    return lines


def _byte_style(own: tuple[int, ExplainNode] | None) -> str:
    if own is None:
        return DIM
    i, node = own
    if node.failed or "rest" in node.marks:
        return FAIL
    if node.padding:
        return DIM
    return PALETTE[i % len(PALETTE)]


def _hex_note(node: ExplainNode) -> Piece:
    size = "?" if node.size is None else node.size
    value = show_value(node, 40)
    text = f"{node.path or '(message)'} @{node.start}+{size}"
    if value:
        text += f" = {value}"
    return (text, _style(node) or "")


def render(
    ex: Explained,
    view: str = "tree",
    *,
    max_depth: int | None = None,
    path: str | None = None,
    max_items: int = 8,
) -> str:
    """One of the views as plain text."""
    if view == "tree":
        lines = tree_lines(ex, max_depth=max_depth, path=path, max_items=max_items)
    elif view == "hex":
        lines = hex_lines(ex, max_depth=max_depth, path=path)
    else:
        raise ValueError(f"view must be 'tree' or 'hex', got {view!r}")
    return "\n".join("".join(t for t, _ in line).rstrip() for line in lines)
