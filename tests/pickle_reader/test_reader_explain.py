"""The tree of standard pickles (``bytewright.pickle.explain`` and ``inspect``): values
built from their opcodes, containers with their items, globals and calls marked, shared
objects with their memo slots; nothing imported or called, malformed input marked."""

from __future__ import annotations

import collections
import datetime
import pickle
import pickletools
import re
from typing import Any

import pytest
from bytewright import pickle as bwp
from bytewright.pickle.__main__ import main

VALUES: list[Any] = [
    [1, "a", None, True, 2.5, b"x", 2**80],
    {"when": datetime.date(2024, 5, 6), "counts": collections.Counter("hello")},
    (1, (2, (3,))),
    {frozenset({1}), 3},
]


def opcodes(data: bytes) -> list[tuple[str, int]]:
    return [(op.name, pos) for op, _, pos in pickletools.genops(data)]


@pytest.mark.parametrize("protocol", range(6))
@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_protocol(value: Any, protocol: int) -> None:
    data = pickle.dumps(value, protocol)
    ex = bwp.explain(data)
    assert ex.ok and ex.end == len(data)
    stream = ex["opcodes"]
    assert stream.children[-1].kind == "STOP" and stream.children[-1].end == len(data)
    # Every opcode's bytes are inside the stream's tree, nodes in byte order.
    for node in ex.walk():
        starts = [c.start for c in node.children]
        assert starts == sorted(starts), node.path
        for c in node.children:
            assert node.start <= c.start and (c.end or 0) <= (node.end or 0), c.path
    leaves = {n.start for n in ex.walk() if not n.children}
    pushes = {pos for name, pos in opcodes(data) if name not in _STRUCTURAL}
    assert pushes <= leaves | {n.start for n in ex.walk()}


_STRUCTURAL = {
    "MARK",
    "PUT",
    "BINPUT",
    "LONG_BINPUT",
    "MEMOIZE",
    "APPEND",
    "APPENDS",
    "SETITEM",
    "SETITEMS",
    "ADDITEMS",
    "TUPLE",
    "TUPLE1",
    "TUPLE2",
    "TUPLE3",
    "LIST",
    "DICT",
    "FROZENSET",
    "REDUCE",
    "BUILD",
    "NEWOBJ",
    "NEWOBJ_EX",
    "STACK_GLOBAL",
    "POP",
    "POP_MARK",
}


def test_globals_calls_and_shared_objects() -> None:
    shared = [1]
    data = pickle.dumps({"d": datetime.date(2024, 1, 2), "a": shared, "b": shared}, 4)
    ex = bwp.explain(data)
    calls = [n for n in ex.walk() if "call" in n.marks]
    assert [c.type_name for c in calls] == ["datetime.date"]
    globals_ = [n for n in ex.walk() if "global" in n.marks]
    assert [g.value for g in globals_] == ["datetime.date"]
    refs = [n for n in ex.walk() if n.kind == "ref"]
    assert len(refs) == 1 and "the same object as the list at offset" in refs[0].notes[0]
    target = int(refs[0].notes[0].rsplit(" ", 1)[1])
    assert any(n.kind == "list" and n.start == target for n in ex.walk())
    # The tree shows what the reference is, not a value the opcodes never built.
    line = next(x for x in ex.render().splitlines() if " ref " in x)
    assert re.search(r" ref +list +\[shared\] memo slot", line), line


def test_exploit_is_shown_not_run(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    exploit = b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x8c\x04true\x85R."
    ex = bwp.explain(exploit)
    assert ex.ok and [n.value for n in ex.walk() if "global" in n.marks] == ["os.system"]
    path = tmp_path / "x.pkl"
    path.write_bytes(exploit)
    assert main(["inspect", str(path)]) == 1
    out = capsys.readouterr().out
    assert "[global]" in out and "os.system" in out and "loads_pickle: rejected" in out


def test_malformed_pickles() -> None:
    data = pickle.dumps(VALUES[1], 4)
    for cut in range(1, len(data) - 1, 3):
        ex = bwp.explain(data[:cut])
        assert not ex.ok and isinstance(ex.error, bwp.UnpicklingError)
        assert ex.failed is not None and ex.failed.failed


def test_html_and_hex(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "v.pkl"
    path.write_bytes(pickle.dumps(VALUES[0], 2))
    page = tmp_path / "v.html"
    assert main(["inspect", str(path), "--view", "hex", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("00000000  80 02")
    assert "loads_pickle: accepted" in out
    assert "<!DOCTYPE html>" in page.read_text()
