"""The Part C arms: pickle, pysafe-pickle, bytewright.pickle and its reader of pickle bytes."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from benchmarks.arms import Unavailable, unavailable_from
from benchmarks.bench_data import CLASSES

PICKLE = "pickle"
PYSAFE = "pysafe-pickle"
BYTEWRIGHT = "bytewright.pickle"
LOADS_PICKLE = "bytewright loads_pickle"


@dataclass(frozen=True)
class Serializer:
    name: str
    dumps: Callable[[Any], bytes] | None  # None: reads another arm's bytes
    loads: Callable[[bytes], Any]
    lookalike: bool = False  # returns look-alike classes instead of the user's
    reads: str = ""  # whose bytes `loads` reads; "" means its own
    signed_dumps: Callable[[Any, bytes], bytes] | None = None
    signed_loads: Callable[[bytes, bytes], Any] | None = None


def _pickle() -> Serializer:
    return Serializer(PICKLE, partial(pickle.dumps, protocol=5), pickle.loads)


def _pysafe() -> Serializer:
    try:
        import pysafe_pickle as psp
    except ImportError as exc:
        raise unavailable_from(exc) from exc
    return Serializer(
        PYSAFE,
        psp.dumps,
        psp.loads,
        lookalike=True,
        signed_dumps=lambda obj, key: psp.dumps(obj, hmac_key=key),
        signed_loads=None,  # loads takes no key in 1.3.4; signing raises NotImplementedError
    )


def _bytewright_module() -> Any:
    try:
        from bytewright import pickle as bwp

        bwp.dumps  # noqa: B018 - probe the API
        bwp.loads  # noqa: B018
    except (ImportError, AttributeError) as exc:
        raise unavailable_from(exc) from exc
    return bwp


def _bytewright() -> Serializer:
    bwp = _bytewright_module()
    return Serializer(
        BYTEWRIGHT,
        bwp.dumps,
        partial(bwp.loads, classes=CLASSES),
        signed_dumps=lambda obj, key: bwp.dumps(obj, hmac_key=key),
        signed_loads=lambda data, key: bwp.loads(data, classes=CLASSES, hmac_key=key),
    )


def _loads_pickle() -> Serializer:
    bwp = _bytewright_module()
    if not hasattr(bwp, "loads_pickle"):
        raise Unavailable("bytewright.pickle has no loads_pickle yet (issue 6)")
    return Serializer(LOADS_PICKLE, None, partial(bwp.loads_pickle, classes=CLASSES), reads=PICKLE)


FACTORIES: dict[str, Callable[[], Serializer]] = {
    PICKLE: _pickle,
    PYSAFE: _pysafe,
    BYTEWRIGHT: _bytewright,
    LOADS_PICKLE: _loads_pickle,
}


def serializers() -> tuple[dict[str, Serializer], dict[str, str]]:
    """(available arms, {unavailable arm: reason})."""
    ok: dict[str, Serializer] = {}
    missing: dict[str, str] = {}
    for name, factory in FACTORIES.items():
        try:
            ok[name] = factory()
        except Unavailable as exc:
            missing[name] = str(exc)
    return ok, missing
