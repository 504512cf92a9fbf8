"""rustruct 0.2.0 as a black box: `rustruct-core` (compile/Codec, dicts) and `rustruct` (typed)."""

# No `from __future__ import annotations`: the schema classes below are defined inside
# functions, and their annotations must be evaluated eagerly against local names.

import types
from typing import Any

from benchmarks.arms import unavailable_from
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case


def _rustruct() -> Any:
    try:
        import rustruct
    except ImportError as exc:
        raise unavailable_from(exc) from exc
    return rustruct


# ---- rustruct-core: the documented `(name, kind, opts)` schema form ------------------------

_RECORD_FIELDS = (
    ("record_id", "u32", {}),
    ("kind", "u8", {}),
    ("status", "u8", {}),
    ("code", "u16", {}),
    ("x", "i32", {}),
    ("y", "i32", {}),
    ("reading", "u64", {}),
    ("payload_len", "u16", {}),
    ("payload", "bytes", {"len": ("ref", "payload_len")}),
)
_FRAME_FIELDS = (
    ("version", "u8", {}),
    ("flags", "u8", {}),
    ("message_type", "u16", {}),
    ("sequence", "u32", {}),
    ("timestamp", "u64", {}),
    ("session", "raw", {"len": 16}),
    ("source_id", "u32", {}),
    ("source_len", "u8", {}),
    ("source", "str", {"len": ("ref", "source_len"), "encoding": "utf-8"}),
    ("record_count", "u16", {}),
    (
        "records",
        "array",
        {"elem": ("struct", {"fields": _RECORD_FIELDS}), "count": ("ref", "record_count")},
    ),
)
TELEMETRY_FIELDS = [
    ("frame_size", "u32", {}),
    ("frame", "struct", {"size": ("ref", "frame_size"), "fields": _FRAME_FIELDS}),
]
VECTOR_FIELDS = [
    ("count", "u16", {}),
    (
        "items",
        "array",
        {
            "elem": ("struct", {"fields": (("a", "u16", {}), ("b", "u16", {}))}),
            "count": ("ref", "count"),
        },
    ),
]


def core_codec(workload: str, size: int) -> Any:
    rs = _rustruct()
    if workload == "scalars":
        return rs.compile([(name, "u16", {}) for name in w.scalar_names(size)], byteorder="big")
    fields = VECTOR_FIELDS if workload == "vector" else TELEMETRY_FIELDS
    return rs.compile(fields, byteorder="big")


class RustructCoreImpl:
    name = "rustruct-core"

    def __init__(self) -> None:
        self._codecs: dict[str, Any] = {}

    def case(self, workload: str, size: int) -> Case:
        key = f"{workload}{size}" if workload == "scalars" else workload
        if key not in self._codecs:
            self._codecs[key] = core_codec(workload, size)
        codec = self._codecs[key]
        held = w.value(workload, size)
        return Case(held, codec.pack, codec.unpack, w.reader(workload, size, attributes=False))

    def build_telemetry(self) -> bytes:
        return core_codec("telemetry", 1).pack(w.telemetry_value(1))


# ---- rustruct: typed Struct classes ---------------------------------------------------------


def typed_classes() -> dict[str, Any]:
    """Fresh Record/Frame/Envelope/Item/Vector classes (built inside a call: build cost)."""
    rs = _rustruct()
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

    class Item(rs.Struct, byteorder="big"):
        a: U16
        b: U16

    class Vector(rs.Struct, byteorder="big"):
        count: U16
        items: list = rs.array(Item, count="count")

    return {"Record": Record, "Frame": Frame, "Envelope": Envelope, "Item": Item, "Vector": Vector}


def typed_scalars(n: int) -> Any:
    rs = _rustruct()
    annotations = {name: rs.U16 for name in w.scalar_names(n)}
    return types.new_class(
        f"Scalars{n}",
        (rs.Struct,),
        {"byteorder": "big"},
        lambda ns: ns.update({"__annotations__": annotations}),
    )


def typed_held(classes: dict[str, Any], workload: str, size: int) -> Any:
    """The typed object a user holds, built from the workload's mapping (outside timing)."""
    v = w.value(workload, size)
    if workload == "vector":
        return classes["Vector"](items=[classes["Item"](**it) for it in v["items"]])
    f = dict(v["frame"])
    f["records"] = [classes["Record"](**r) for r in f["records"]]
    return classes["Envelope"](frame=classes["Frame"](**f))


class RustructTypedImpl:
    name = "rustruct"

    def __init__(self) -> None:
        self._classes: dict[str, Any] | None = None

    def case(self, workload: str, size: int) -> Case:
        read = w.reader(workload, size, attributes=True)
        if workload == "scalars":
            cls = typed_scalars(size)
            held = cls(**w.scalars_value(size))
            return Case(held, cls.pack, cls.unpack, read)
        if self._classes is None:
            self._classes = typed_classes()
        cls = self._classes["Vector" if workload == "vector" else "Envelope"]
        return Case(typed_held(self._classes, workload, size), cls.pack, cls.unpack, read)

    def build_telemetry(self) -> bytes:
        return typed_held(typed_classes(), "telemetry", 1).pack()
