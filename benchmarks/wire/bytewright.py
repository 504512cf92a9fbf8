"""bytewright: `bytewright-codec` (`bw.compile(cls)`, dicts) and `bytewright` (typed `bw.Struct`)."""

# No `from __future__ import annotations`: the classes below are defined inside a function,
# and their annotations must be evaluated eagerly against local names.

import functools
from typing import Any

from benchmarks.harness import Unavailable, describe, need
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case, WireArm


def _bw() -> Any:
    return need(
        "bytewright", "Struct", "compile", "field", "make_struct", "U8", "U16", "U32", "U64"
    )


def telemetry_classes() -> dict[str, Any]:
    """Fresh Record/Frame/Envelope classes: the telemetry schema (the build cost times this)."""
    bw = _bw()
    try:

        class Record(bw.Struct):
            record_id: bw.U32
            kind: bw.U8
            status: bw.U8
            code: bw.U16
            x: bw.I32
            y: bw.I32
            reading: bw.U64
            payload_len: bw.U16
            payload: bytes = bw.field(len="payload_len")

        class Frame(bw.Struct):
            version: bw.U8
            flags: bw.U8
            message_type: bw.U16
            sequence: bw.U32
            timestamp: bw.U64
            session: bytes = bw.field(len=16)
            source_id: bw.U32
            source_len: bw.U8
            source: str = bw.field(len="source_len", encoding="utf-8")
            record_count: bw.U16
            records: list[Record] = bw.field(count="record_count")

        class Envelope(bw.Struct, byteorder="big"):
            frame_size: bw.U32
            frame: Frame = bw.field(size="frame_size")

    except Exception as exc:
        raise Unavailable(describe(exc)) from exc
    return {"Record": Record, "Frame": Frame, "Envelope": Envelope}


def typed_classes() -> dict[str, Any]:
    """The telemetry classes plus Item/Vector (the vector workload's)."""
    bw = _bw()
    try:

        class Item(bw.Struct, byteorder="big"):
            a: bw.U16
            b: bw.U16

        class Vector(bw.Struct, byteorder="big"):
            count: bw.U16
            items: list[Item] = bw.field(count="count")

    except Exception as exc:
        raise Unavailable(describe(exc)) from exc
    return {**telemetry_classes(), "Item": Item, "Vector": Vector}


def typed_held(classes: dict[str, Any], workload: str, size: int) -> Any:
    """The typed object a user holds, built from the workload's mapping (outside timing)."""
    v = w.value(workload, size)
    if workload == "vector":
        return classes["Vector"](items=[classes["Item"](**it) for it in v["items"]])
    f = dict(v["frame"])
    f["records"] = [classes["Record"](**r) for r in f["records"]]
    return classes["Envelope"](frame=classes["Frame"](**f))


CLASSES = functools.cache(typed_classes)  # built once per run; the build cost times it


@functools.cache
def cls(workload: str, size: int) -> Any:
    if workload == "scalars":
        names = w.scalar_names(size)
        return _bw().make_struct(f"Scalars{size}", [(n, _bw().U16) for n in names], byteorder="big")
    return CLASSES()["Vector" if workload == "vector" else "Envelope"]


@functools.cache
def codec(workload: str, size: int) -> Any:
    return _bw().compile(cls(workload, size))


def codec_case(workload: str, size: int) -> Case:
    c = codec(workload, size if workload == "scalars" else 0)
    read = w.reader(workload, size, attributes=False)
    return Case(w.value(workload, size), c.pack, c.unpack, read)


def typed_case(workload: str, size: int) -> Case:
    c = cls(workload, size if workload == "scalars" else 0)
    if workload == "scalars":
        held = c(**w.scalars_value(size))
    else:
        held = typed_held(CLASSES(), workload, size)
    return Case(held, c.pack, c.unpack, w.reader(workload, size, attributes=True))


ARMS = {
    "bytewright-codec": WireArm(
        codec_case,
        lambda: _bw().compile(telemetry_classes()["Envelope"]).pack(w.telemetry_value(1)),
    ),
    "bytewright": WireArm(
        typed_case, lambda: typed_held(telemetry_classes(), "telemetry", 1).pack()
    ),
}
