"""The tree of bytewright.pickle records (``bytewright.pickle.explain`` and ``inspect``):
every value at its offset, shared objects and references, classes, signed records, and
malformed records failing where the reader fails."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import io
import random
import uuid
from typing import Any

import pytest
from bytewright import pickle as bwp
from bytewright.pickle.__main__ import main


@dataclasses.dataclass
class Point:
    x: int
    y: float


def values() -> list[Any]:
    shared = [1, 2]
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    return [
        None,
        [1, "a", None],
        {"when": datetime.date(2024, 5, 6), "counts": collections.Counter("hello")},
        {"a": shared, "b": shared},
        (1, -1, 300, -70000, 2**70, 1.5, 0.1, 2j, b"b", bytearray(b"ba"), "é" * 40),
        {frozenset({1, 2}), (1, 2)},
        [Point(1, 2.5), Point(3, 4.5)],
        collections.OrderedDict(a=1),
        collections.defaultdict(list, a=[1]),
        collections.deque([1, 2], maxlen=5),
        range(1, 10, 2),
        decimal.Decimal("1.25"),
        uuid.UUID(int=5),
        cyclic,
        ...,
    ]


def leaves_cover(ex: Any) -> None:
    """Children inside their parents; every byte of a record in at most one leaf."""
    seen: set[int] = set()
    for node in ex.walk():
        for c in node.children:
            if "rest" in c.marks:
                continue
            assert c.start >= node.start and (c.end or 0) <= (node.end or len(ex.data)), c.path
        if not node.children and node.end is not None:
            span = set(range(node.start, node.end))
            assert not span & seen, node.path
            seen |= span


@pytest.mark.parametrize("value", values(), ids=lambda v: type(v).__name__)
def test_records_show_every_value(value: Any) -> None:
    data = bwp.dumps(value)
    ex = bwp.explain(data, classes=[Point])
    assert ex.ok, ex.error
    assert ex.end == len(data)
    leaves_cover(ex)
    record = ex["records[0]"]
    assert record.start == 0 and record.end == len(data)
    if value is not None and not (isinstance(value, list) and value and value[0] is value):
        assert record.value == value
    header = ex["records[0].header"]
    assert [c.name for c in header.children] == ["magic", "version", "flags", "body_len"]
    assert ex["records[0].header.body_len"].value == len(data) - ex["records[0].body"].start


def test_shared_references_name_their_target() -> None:
    shared = [1, 2]
    ex = bwp.explain(bwp.dumps({"a": shared, "b": shared}))
    first = ex["records[0].body[0].value"]
    ref = ex["records[0].body[1].value"]
    slot = next(int(n.split()[-1]) for n in first.notes if n.startswith("memo slot"))
    assert "shared" in first.marks
    assert ref.kind == "ref"
    assert ref.notes == (f"memo slot {slot}: the same object as {first.path}",)
    assert ref.size == 2 and ref.raw == bytes([0xA7, slot])
    assert ref.value == first.value == [1, 2]
    assert first.notes == (f"memo slot {slot}",)  # the count is the value column's
    line = next(x for x in ex.render().splitlines() if "short list" in x and "[shared]" in x)
    assert line.count("2 items") == 1, line


def test_classes_and_streams() -> None:
    data = bwp.dumps(Point(1, 2.5)) + bwp.dumps([Point(3, 4.5)])
    ex = bwp.explain(data, classes=[Point])
    assert ex.ok and len(ex["records"].children) == 2
    obj = ex["records[0].body"]
    assert obj.kind.endswith("Point") and [c.name for c in obj.children] == ["x", "y"]
    assert any("defined here" in n for n in obj.notes)
    # Without the class, the reader refuses the record: the tree stops there.
    ex = bwp.explain(data)
    assert not ex.ok and ex.failed is not None and ex.failed.path == "records[0]"
    assert isinstance(ex.error, bwp.UnpicklingError)


def test_signed_records() -> None:
    data = bwp.dumps([1], hmac_key=b"k")
    ex = bwp.explain(data, hmac_key=b"k")
    assert ex.ok and ex["records[0].tag"].size == 32 and ex["records[0].tag"].checksum
    ex = bwp.explain(data)
    assert not ex.ok and isinstance(ex.error, bwp.IntegrityError)


def test_malformed_records_never_raise() -> None:
    rng = random.Random(3)
    base = bwp.dumps(values()[2])
    for cut in range(1, len(base)):
        ex = bwp.explain(base[:cut])
        assert not ex.ok and isinstance(ex.error, bwp.UnpicklingError), cut
        assert ex.failed is not None
        with pytest.raises(bwp.UnpicklingError):
            bwp.loads(base[:cut])
    for _ in range(300):
        bad = bytearray(base)
        bad[rng.randrange(3, len(bad))] ^= 1 << rng.randrange(8)
        ex = bwp.explain(bytes(bad))
        try:
            bwp.loads(bytes(bad))
        except bwp.UnpicklingError:
            assert not ex.ok
        else:
            assert ex.ok


def test_inspect_command(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "v.bw"
    path.write_bytes(bwp.dumps({"a": [1, 2]}))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "bytewright.pickle" in out and "body_len" in out and "short list" in out
    assert main(["inspect", str(path), "--view", "hex"]) == 0
    assert "records[0].header.magic @0+2 = b'BW'" in capsys.readouterr().out
    page = tmp_path / "v.html"
    assert main(["inspect", str(path), "--html", str(page)]) == 0
    assert "records[0].body" in page.read_text()
    path.write_bytes(bwp.dumps({"a": [1, 2]})[:-2])
    assert main(["inspect", str(path)]) == 1
    assert "✗ UnpicklingError" in capsys.readouterr().out


def test_file_api_still_reads_what_inspect_reads() -> None:
    f = io.BytesIO()
    bwp.dump([1], f)
    ex = bwp.explain(f.getvalue())
    assert ex.ok and ex["records[0]"].value == [1]
