"""rustruct as a black box: `rustruct-core` (compile/Codec, dicts) and `rustruct` (typed)."""

# No `from __future__ import annotations`: the classes below are defined inside functions,
# and their annotations must be evaluated eagerly against local names.

import functools
import types
from typing import Any

from benchmarks.harness import need
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case, WireArm

# ---- rustruct-core: the documented `(name, kind, opts)` schema form ------------------------

RECORD = (
    *(
        (name, kind, {})
        for name, kind in zip(w.RECORD_FIELDS, "u32 u8 u8 u16 i32 i32 u64".split(), strict=True)
    ),
    ("payload_len", "u16", {}),
    ("payload", "bytes", {"len": ("ref", "payload_len")}),
)
FRAME = (
    *(
        (name, kind, {})
        for name, kind in zip(w.FRAME_FIELDS, "u8 u8 u16 u32 u64".split(), strict=True)
    ),
    ("session", "raw", {"len": 16}),
    ("source_id", "u32", {}),
    ("source_len", "u8", {}),
    ("source", "str", {"len": ("ref", "source_len"), "encoding": "utf-8"}),
    ("record_count", "u16", {}),
    (
        "records",
        "array",
        {"elem": ("struct", {"fields": RECORD}), "count": ("ref", "record_count")},
    ),
)
TELEMETRY = [
    ("frame_size", "u32", {}),
    ("frame", "struct", {"size": ("ref", "frame_size"), "fields": FRAME}),
]
ITEM = ("struct", {"fields": (("a", "u16", {}), ("b", "u16", {}))})
VECTOR = [("count", "u16", {}), ("items", "array", {"elem": ITEM, "count": ("ref", "count")})]


def core_codec(workload: str, size: int) -> Any:
    rs = need("rustruct")
    if workload == "scalars":
        return rs.compile([(name, "u16", {}) for name in w.scalar_names(size)], byteorder="big")
    return rs.compile(VECTOR if workload == "vector" else TELEMETRY, byteorder="big")


_CODECS = functools.cache(core_codec)


def core_case(workload: str, size: int) -> Case:
    codec = _CODECS(workload, size if workload == "scalars" else 0)
    read = w.reader(workload, size, attributes=False)
    return Case(w.value(workload, size), codec.pack, codec.unpack, read)


# ---- rustruct: typed Struct classes ---------------------------------------------------------


def telemetry_classes() -> dict[str, Any]:
    """Fresh Record/Frame/Envelope classes: the telemetry schema (the build cost times this)."""
    rs = need("rustruct")
    U8, U16, U32, U64, I32 = rs.U8, rs.U16, rs.U32, rs.U64, rs.I32

    class Record(rs.Struct, byteorder="big"):
        record_id: U32
        kind: U8
        status: U8
        code: U16
        x: I32
        y: I32
        reading: U64
        payload_len: U16
        payload: bytes = rs.slice(len="payload_len")

    class Frame(rs.Struct, byteorder="big"):
        version: U8
        flags: U8
        message_type: U16
        sequence: U32
        timestamp: U64
        session: bytes = rs.raw(16)
        source_id: U32
        source_len: U8
        source: str = rs.string(len="source_len", encoding="utf-8")
        record_count: U16
        records: list = rs.array(Record, count="record_count")

    class Envelope(rs.Struct, byteorder="big"):
        frame_size: U32
        frame: Frame = rs.sized(Frame, size="frame_size")

    return {"Record": Record, "Frame": Frame, "Envelope": Envelope}


def typed_classes() -> dict[str, Any]:
    """The telemetry classes plus Item/Vector (the vector workload's)."""
    rs = need("rustruct")
    U16 = rs.U16

    class Item(rs.Struct, byteorder="big"):
        a: U16
        b: U16

    class Vector(rs.Struct, byteorder="big"):
        count: U16
        items: list = rs.array(Item, count="count")

    return {**telemetry_classes(), "Item": Item, "Vector": Vector}


def typed_held(classes: dict[str, Any], workload: str, size: int) -> Any:
    """The typed object a user holds, built from the workload's mapping (outside timing)."""
    v = w.value(workload, size)
    if workload == "vector":
        return classes["Vector"](items=[classes["Item"](**it) for it in v["items"]])
    f = dict(v["frame"])
    f["records"] = [classes["Record"](**r) for r in f["records"]]
    return classes["Envelope"](frame=classes["Frame"](**f))


_CLASSES = functools.cache(typed_classes)


def typed_case(workload: str, size: int) -> Case:
    read = w.reader(workload, size, attributes=True)
    if workload == "scalars":
        annotations = {name: need("rustruct").U16 for name in w.scalar_names(size)}
        cls = types.new_class(
            f"Scalars{size}",
            (need("rustruct").Struct,),
            {"byteorder": "big"},
            lambda ns: ns.update({"__annotations__": annotations}),
        )
        return Case(cls(**w.scalars_value(size)), cls.pack, cls.unpack, read)
    cls = _CLASSES()["Vector" if workload == "vector" else "Envelope"]
    return Case(typed_held(_CLASSES(), workload, size), cls.pack, cls.unpack, read)


ARMS = {
    "rustruct-core": WireArm(
        core_case, lambda: core_codec("telemetry", 1).pack(w.telemetry_value(1))
    ),
    "rustruct": WireArm(typed_case, lambda: typed_held(telemetry_classes(), "telemetry", 1).pack()),
}
