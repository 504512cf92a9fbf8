"""The telemetry Record at module level, so Dask's worker processes can import it."""

# No `from __future__ import annotations`: bytewright reads the annotations at class creation.

import bytewright as bw


class Record(bw.Struct, byteorder="big"):
    record_id: bw.U32
    kind: bw.U8
    status: bw.U8
    code: bw.U16
    x: bw.I32
    y: bw.I32
    reading: bw.U64
    payload_len: bw.U16
    payload: bytes = bw.field(len="payload_len")
