"""Test-only hook: wraps the registered "bytewright" family in one process.

It records what the family writes and reads (to show which values cross the wire in the
safe format), and can flip one byte of one frame after the family has written it, which
is what tampering in transit looks like to the receiver. The tests install it in the
client process and, with `client.run`, on every worker. Nothing in the library uses it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import bytewright.dask
from dask_shapes import CLASSES
from distributed.protocol.serialize import families, register_serialization_family

events: Counter[tuple[str, str]] = Counter()  # (direction, type name) -> count
recording = False
tamper: dict[str, int] = {}  # type name -> the frame to flip a byte of


def install() -> None:
    """Wrap whatever "bytewright" family is registered now."""
    inner_dumps, inner_loads, _ = families[bytewright.dask.FAMILY]
    if getattr(inner_dumps, "hooked", False):
        return

    def dumps(value: Any) -> tuple[dict[str, Any], list[Any]]:
        header, frames = inner_dumps(value)
        name = type(value).__name__
        if recording:
            events["dumps", name] += 1
        if name in tamper:
            index = tamper[name]
            frame = bytearray(frames[index])
            frame[len(frame) // 2] ^= 0x01
            frames[index] = bytes(frame)
        return header, frames

    def loads(header: dict[str, Any], frames: list[Any]) -> Any:
        value = inner_loads(header, frames)
        if recording:
            events["loads", type(value).__name__] += 1
        return value

    dumps.hooked = True  # type: ignore[attr-defined]
    register_serialization_family(bytewright.dask.FAMILY, dumps, loads)


def register(hmac_key: bytes | None, classes: tuple[type, ...] = CLASSES) -> None:
    """Register the family afresh with these settings, then hook it."""
    bytewright.dask.register(classes=classes, hmac_key=hmac_key)
    install()


def start(flip: dict[str, int] | None = None) -> None:
    """Forget past events, record from now on, and flip bytes of the values named in `flip`."""
    global recording
    events.clear()
    tamper.clear()
    tamper.update(flip or {})
    recording = True


def stop() -> Counter[tuple[str, str]]:
    """Stop recording and tampering; the events recorded since `start`."""
    global recording
    recording = False
    tamper.clear()
    return Counter(events)
