"""bytewright: `bytewright-codec` (`bw.compile(cls)`, dicts) and `bytewright` (typed `bw.Struct`).

Written against the API of the foundation issue; whatever is missing makes the arm
"unavailable" with the reason, never a crash.
"""

# No `from __future__ import annotations`: the schema classes below are defined inside
# functions, and their annotations must be evaluated eagerly against local names.

from typing import Any

from benchmarks.arms import unavailable_from
from benchmarks.wire import workloads as w
from benchmarks.wire.workloads import Case


def _bytewright() -> Any:
    try:
        import bytewright as bw

        for name in ("Struct", "compile", "field", "make_struct", "U8", "U16", "U32", "U64"):
            getattr(bw, name)
    except (ImportError, AttributeError) as exc:
        raise unavailable_from(exc) from exc
    return bw


def typed_classes() -> dict[str, Any]:
    """Fresh classes, exactly as in the foundation issue's example, plus Item/Vector."""
    bw = _bytewright()
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

        class Item(bw.Struct, byteorder="big"):
            a: bw.U16
            b: bw.U16

        class Vector(bw.Struct, byteorder="big"):
            count: bw.U16
            items: list[Item] = bw.field(count="count")

    except Exception as exc:
        raise unavailable_from(exc) from exc
    return {"Record": Record, "Frame": Frame, "Envelope": Envelope, "Item": Item, "Vector": Vector}


def scalars_class(n: int) -> Any:
    bw = _bytewright()
    try:
        return bw.make_struct(
            f"Scalars{n}", [(name, bw.U16) for name in w.scalar_names(n)], byteorder="big"
        )
    except Exception as exc:
        raise unavailable_from(exc) from exc


def compile_codec(cls: Any) -> Any:
    bw = _bytewright()
    try:
        return bw.compile(cls)
    except Exception as exc:
        raise unavailable_from(exc) from exc


def typed_held(classes: dict[str, Any], workload: str, size: int) -> Any:
    """The typed object a user holds, built from the workload's mapping (outside timing)."""
    v = w.value(workload, size)
    if workload == "vector":
        return classes["Vector"](items=[classes["Item"](**it) for it in v["items"]])
    f = dict(v["frame"])
    f["records"] = [classes["Record"](**r) for r in f["records"]]
    return classes["Envelope"](frame=classes["Frame"](**f))


class _Classes:
    """Classes and codecs built once per run (their construction is timed in build cost)."""

    def __init__(self) -> None:
        self._typed: dict[str, Any] | None = None
        self._scalars: dict[int, Any] = {}
        self._codecs: dict[str, Any] = {}

    def typed(self) -> dict[str, Any]:
        if self._typed is None:
            self._typed = typed_classes()
        return self._typed

    def cls(self, workload: str, size: int) -> Any:
        if workload == "scalars":
            if size not in self._scalars:
                self._scalars[size] = scalars_class(size)
            return self._scalars[size]
        return self.typed()["Vector" if workload == "vector" else "Envelope"]

    def codec(self, workload: str, size: int) -> Any:
        key = f"{workload}{size}" if workload == "scalars" else workload
        if key not in self._codecs:
            self._codecs[key] = compile_codec(self.cls(workload, size))
        return self._codecs[key]


_SHARED = _Classes()


class BytewrightCodecImpl:
    name = "bytewright-codec"

    def case(self, workload: str, size: int) -> Case:
        codec = _SHARED.codec(workload, size)
        held = w.value(workload, size)
        return Case(held, codec.pack, codec.unpack, w.reader(workload, size, attributes=False))

    def build_telemetry(self) -> bytes:
        return compile_codec(typed_classes()["Envelope"]).pack(w.telemetry_value(1))


class BytewrightTypedImpl:
    name = "bytewright"

    def case(self, workload: str, size: int) -> Case:
        cls = _SHARED.cls(workload, size)
        read = w.reader(workload, size, attributes=True)
        if workload == "scalars":
            held = cls(**w.scalars_value(size))
        else:
            held = typed_held(_SHARED.typed(), workload, size)
        return Case(held, cls.pack, cls.unpack, read)

    def build_telemetry(self) -> bytes:
        return typed_held(typed_classes(), "telemetry", 1).pack()
