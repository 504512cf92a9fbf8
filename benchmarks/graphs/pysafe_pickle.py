"""pysafe-pickle: returns look-alike dataclasses; its loads takes no HMAC key (1.3.4)."""

from __future__ import annotations

from benchmarks.graphs.serializer import Serializer
from benchmarks.harness import need


def serializer() -> Serializer:
    psp = need("pysafe_pickle")
    return Serializer(
        psp.dumps,
        psp.loads,
        lookalike=True,
        signed_dumps=lambda obj, key: psp.dumps(obj, hmac_key=key),
    )


ARMS = {"pysafe-pickle": serializer}
