"""The byte form of a codec (``Codec.to_bytes`` / ``Codec.from_bytes``).

A magic line, then JSON: the schema description and, per struct, its field names and
defaults. Rebuilding compiles the schema natively, without any Python class.
"""

from __future__ import annotations

import json
from typing import Any

MAGIC = b"bytewright-codec/1\n"


def _enc(v: Any, where: str) -> Any:
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, bytes | bytearray):
        return {"$bytes": bytes(v).hex()}
    if isinstance(v, list | tuple):
        return [_enc(x, where) for x in v]
    raise TypeError(f"cannot persist the default {v!r} of {where}: only plain data can be")


def _dec(v: Any) -> Any:
    if isinstance(v, dict):
        return bytes.fromhex(v["$bytes"])
    if isinstance(v, list):
        return [_dec(x) for x in v]
    return v


def dumps(schema: str, structs: list[Any], typed: bool) -> bytes:
    if typed:
        raise TypeError(
            "a typed codec refers to Python classes and cannot be persisted; "
            "persist bw.compile(cls), which works on dicts"
        )
    out = []
    for i, (_cls, names, defaults, *_rest) in enumerate(structs):
        out.append(
            [
                list(names),
                [_enc(d, f"struct {i} field {n!r}") for n, d in zip(names, defaults, strict=True)],
            ]
        )
    doc = {"schema": json.loads(schema), "structs": out}
    return MAGIC + json.dumps(doc, separators=(",", ":")).encode()


def loads(data: bytes) -> tuple[str, list[Any]]:
    data = bytes(data)
    if not data.startswith(MAGIC):
        raise ValueError("not a bytewright codec (bad magic)")
    try:
        doc = json.loads(data[len(MAGIC) :])
        structs = [
            (None, list(names), [_dec(d) for d in defaults], None, None)
            for names, defaults in doc["structs"]
        ]
        return json.dumps(doc["schema"]), structs
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"corrupt bytewright codec: {e}") from None
