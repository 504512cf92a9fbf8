"""HMAC overhead: dumps and loads of 1, 8 and 64 MB payloads with and without `hmac_key`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from benchmarks.arms import describe
from benchmarks.graphs.serializers import Serializer
from benchmarks.progress import Reporter
from benchmarks.sampling import Sampling, measure_many
from benchmarks.tables import Table

KEY = b"bytewright-benchmark-key-32bytes"


def payload(mb: float) -> bytes:
    return bytes(range(256)) * int(4096 * mb)


def run_hmac_case(
    arms: dict[str, Serializer], sizes_mb: tuple[float, ...], sampling: Sampling, reporter: Reporter
) -> tuple[Table, dict[str, float]]:
    """The table and, per arm, the worst overhead in ms/MB over sizes and directions."""
    table = Table(
        "HMAC overhead (payload: one bytes object)",
        [
            "Library",
            "MB",
            "dumps ms/MB",
            "signed dumps ms/MB",
            "loads ms/MB",
            "verified loads ms/MB",
            "overhead dumps ms/MB",
            "overhead loads ms/MB",
        ],
        note="Overhead = signed minus unsigned time per MB; here 1 MB = 2^20 bytes.",
    )
    worst: dict[str, float] = {}
    for name, arm in arms.items():
        if arm.dumps is None or arm.signed_dumps is None:
            continue
        for mb in sizes_mb:
            reporter.step(f"hmac {name} {mb} MB")
            obj = payload(mb)
            try:
                plain = arm.dumps(obj)
                signed = arm.signed_dumps(obj, KEY)
                if arm.signed_loads is None:
                    raise NotImplementedError("loads takes no hmac_key")
                if arm.signed_loads(signed, KEY) != obj or arm.loads(plain) != obj:
                    raise ValueError("round trip differs")
            except Exception as exc:
                table.add(name, f"{mb:g}", "—", "—", "—", "—", "—", f"unavailable: {describe(exc)}")
                reporter.advance()
                break
            # Signed and unsigned are timed together, rounds interleaved: the overhead is
            # their difference, so both must see the same machine.
            fns: dict[str, Callable[[], object]] = {
                "dumps": partial(arm.dumps, obj),
                "sdumps": partial(arm.signed_dumps, obj, KEY),
                "loads": partial(arm.loads, plain),
                "sloads": partial(arm.signed_loads, signed, KEY),
            }
            ms = {k: ns / 1e6 / mb for k, ns in measure_many(fns, sampling).items()}
            over_d, over_l = ms["sdumps"] - ms["dumps"], ms["sloads"] - ms["loads"]
            worst[name] = max(worst.get(name, float("-inf")), over_d, over_l)
            table.add(
                name,
                f"{mb:g}",
                *[f"{ms[k]:.3f}" for k in ("dumps", "sdumps", "loads", "sloads")],
                f"{over_d:.3f}",
                f"{over_l:.3f}",
            )
            reporter.advance()
    return table, worst
