"""bytewright: per-record `codec.pack` and typed `pack`, and the bulk `pack_many`."""

# No `from __future__ import annotations`: the record class is defined inside a function.

from typing import Any

from benchmarks.harness import need

BULK = "bytewright pack_many (bulk)"


def record_class() -> Any:
    bw = need("bytewright", "Struct", "U16", "U32", "U64")

    class LabRecord(bw.Struct, byteorder="little"):
        a: bw.U32
        b: bw.U16
        c: bw.U16
        d: bw.U64

    return LabRecord


def codec_packer() -> Any:
    pack = need("bytewright", "compile").compile(record_class()).pack
    return lambda items: b"".join([pack({"a": a, "b": b, "c": c, "d": d}) for a, b, c, d in items])


def typed_packer() -> Any:
    cls = record_class()
    return lambda items: b"".join([cls(a=a, b=b, c=c, d=d).pack() for a, b, c, d in items])


def bulk_packer() -> Any:
    need("bytewright", "Struct.pack_many")
    return record_class().pack_many


ARMS = {
    "bytewright codec.pack per record + join": codec_packer,
    "bytewright Struct.pack per record + join": typed_packer,
    BULK: bulk_packer,
}
