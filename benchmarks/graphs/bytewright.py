"""bytewright.pickle: `dumps`, `Decoder(classes=...).loads` and `loads_pickle` of pickle's bytes."""

from __future__ import annotations

from functools import partial

from benchmarks.bench_data import CLASSES
from benchmarks.graphs.serializer import Serializer
from benchmarks.harness import need

BYTEWRIGHT, LOADS_PICKLE = "bytewright.pickle", "bytewright loads_pickle"


def serializer() -> Serializer:
    bwp = need("bytewright.pickle", "dumps", "loads", "Decoder")
    return Serializer(
        bwp.dumps,
        bwp.Decoder(classes=CLASSES).loads,
        signed_dumps=lambda obj, key: bwp.dumps(obj, hmac_key=key),
        signed_loads=lambda data, key: bwp.loads(data, classes=CLASSES, hmac_key=key),
    )


def loads_pickle() -> Serializer:
    bwp = need("bytewright.pickle", "loads_pickle")
    return Serializer(None, partial(bwp.loads_pickle, classes=CLASSES), reads="pickle")


ARMS = {BYTEWRIGHT: serializer, LOADS_PICKLE: loads_pickle}
