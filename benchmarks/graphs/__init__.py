"""Part C: object graphs, as on pysafe-pickle's page: 16 shapes, HMAC overhead, threads."""

from __future__ import annotations

import functools
import time
from multiprocessing.pool import ThreadPool
from pathlib import Path
from typing import Any

from benchmarks import plots
from benchmarks.bench_data import shapes
from benchmarks.graphs import bytewright, msgspec, pickle, pysafe_pickle
from benchmarks.graphs.bytewright import BYTEWRIGHT, LOADS_PICKLE
from benchmarks.graphs.serializer import Serializer, same
from benchmarks.harness import DirectCall, Sampling, describe, measure, status
from benchmarks.report import Part, Section, Table, Ui, fmt, ratio

FACTORIES = {**pickle.ARMS, **pysafe_pickle.ARMS, **bytewright.ARMS, **msgspec.ARMS}
PICKLE, PYSAFE, MSGSPEC = "pickle", "pysafe-pickle", "msgspec"
HMAC_KEY = b"bytewright-benchmark-key-32bytes"
THREAD_ARMS = (PICKLE, PYSAFE, BYTEWRIGHT)  # the thread case's arms (a minute each, under load)
THREAD_DUMPS_ARMS = (PICKLE, BYTEWRIGHT)
BYTES_1MB, RECORDS_1MB = "Bytes (1 MB)", "List of Records (~1 MB)"
RETURNED = "returned to the caller"
THREAD_RESULTS = ("used in the worker", RETURNED)  # the second for the bytes payload only


def _in_worker(fn: Any, job: Any) -> None:
    """Call `fn` and drop its result on the worker thread."""
    fn(job)


def serializers() -> tuple[dict[str, Serializer], dict[str, str]]:
    """(available arms, {arm: "unavailable: why"})."""
    arms, missing = {}, {}
    for name, factory in FACTORIES.items():
        try:
            arms[name] = factory()
        except Exception as exc:
            missing[name] = status(exc)
    return arms, missing


def gate_shape(
    value: Any, arms: dict[str, Serializer]
) -> tuple[dict[str, DirectCall], dict[str, str], dict[str, bytes]]:
    """Every arm's dumps, then its loads of the payload it reads and the round trip."""
    calls: dict[str, DirectCall] = {}
    statuses: dict[str, str] = {}
    payloads: dict[str, bytes] = {}
    for name, arm in arms.items():
        try:
            loads = arm.loads_for(value) if arm.loads_for else arm.loads
        except Exception as exc:
            statuses[name] = status(exc)
            continue
        try:
            if arm.dumps is not None:
                payloads[name] = arm.dumps(value)
        except Exception as exc:
            statuses[name] = f"incorrect: dumps raised {describe(exc)}"
            continue
        source = arm.reads or name
        if source not in payloads:
            statuses[name] = f"incorrect: no {source} payload to read"
            continue
        try:
            if not same(value, loads(payloads[source]), lookalike=arm.lookalike):
                statuses[name] = "incorrect: round trip differs from the original"
                continue
        except Exception as exc:
            statuses[name] = f"incorrect: loads raised {describe(exc)}"
            continue
        statuses[name] = "ok"
        if arm.dumps is not None:
            calls[f"dumps/{name}"] = DirectCall(arm.dumps, value)
        calls[f"loads/{name}"] = DirectCall(loads, payloads[source])
    if PICKLE in payloads:  # a floor for any serializer whose result holds the payload's data
        calls["copy_floor"] = DirectCall(bytes, memoryview(payloads[PICKLE]))
    return calls, statuses, payloads


def run_hmac(
    arms: dict[str, Serializer], sizes_mb: list[float], sampling: Sampling, part: Part
) -> Table:
    table = Table(
        "HMAC overhead (payload: one bytes object)",
        [
            "Library",
            "MB",
            *[
                f"{op} ms/MB"
                for op in (
                    "dumps",
                    "signed dumps",
                    "loads",
                    "verified loads",
                    "overhead dumps",
                    "overhead loads",
                )
            ],
        ],
        note="Overhead = signed minus unsigned time per MB; here 1 MB = 2^20 bytes.",
    )
    for name, arm in arms.items():
        if arm.dumps is None or arm.signed_dumps is None:
            part.record(f"graphs/hmac/{name}", None, "n/a: no signed dumps")
            continue
        worst = float("-inf")
        for mb in sizes_mb:
            obj = bytes(range(256)) * int(4096 * mb)
            try:
                plain, signed = arm.dumps(obj), arm.signed_dumps(obj, HMAC_KEY)
                if arm.signed_loads is None:
                    raise NotImplementedError("loads takes no hmac_key")
                if arm.signed_loads(signed, HMAC_KEY) != obj or arm.loads(plain) != obj:
                    raise ValueError("round trip differs")
            except Exception as exc:
                table.add(name, f"{mb:g}", *["—"] * 5, f"unavailable: {describe(exc)}")
                part.record(f"graphs/hmac/{name}", None, f"unavailable: {describe(exc)}")
                break
            # Signed and unsigned are timed together: the overhead is their difference.
            calls = {
                "dumps": DirectCall(arm.dumps, obj),
                "sdumps": DirectCall(arm.signed_dumps, obj, HMAC_KEY),
                "loads": DirectCall(arm.loads, plain),
                "sloads": DirectCall(arm.signed_loads, signed, HMAC_KEY),
            }
            ms = {k: ns / 1e6 / mb for k, ns in measure(calls, sampling).items()}
            over_d, over_l = ms["sdumps"] - ms["dumps"], ms["sloads"] - ms["loads"]
            worst = max(worst, over_d, over_l)
            table.add(
                name, f"{mb:g}", *[f"{ms[k]:.3f}" for k in calls], f"{over_d:.3f}", f"{over_l:.3f}"
            )
        else:
            part.record(f"graphs/hmac/{name}", worst)
    return table


def run_threads(
    arms: dict[str, Serializer],
    threads: list[int],
    calls: dict[str, int],
    ui: Ui,
    rounds: int,
    part: Part,
) -> Table:
    records = [
        {"id": i, "name": f"user{i}", "score": i * 1.5, "active": i % 2 == 0, "tags": ["a", "b"]}
        for i in range(23_500)
    ]
    payloads = {BYTES_1MB: bytes(range(256)) * 4096, RECORDS_1MB: records}
    table = Table(
        "Thread case: calls on a ~1 MB payload split across threads "
        f"({calls[BYTES_1MB]} of the bytes, {calls[RECORDS_1MB]} of the records)",
        [
            "Call",
            "Payload",
            "Library",
            "Result",
            *[f"{n} thread{'s' * (n > 1)} ms/call" for n in threads],
            "Best speedup",
        ],
        note=f"Wall time per call, best of {rounds} runs after a warm-up run. Only work done "
        "without the GIL (copying, hashing, validating) can use a second core; walking Python "
        "objects cannot. `used in the worker`: each worker thread drops its result, as a "
        "thread that handles its own messages does. `returned to the caller`: the results go "
        "back to the main thread, which frees them; with glibc's malloc a 1 MB block freed "
        "by another thread than the one that took it shrinks that thread's heap, and the next "
        "block pays its page faults again, whatever the library.",
    )

    def once(pool: ThreadPool, fn: Any, jobs: list[Any]) -> int:
        start = time.perf_counter_ns()
        for _ in pool.imap_unordered(fn, jobs):
            pass
        return time.perf_counter_ns() - start

    for op, op_arms in (("loads", THREAD_ARMS), ("dumps", THREAD_DUMPS_ARMS)):
        for label, value in payloads.items():
            for name, arm in arms.items():
                if name not in op_arms or arm.dumps is None:
                    continue
                try:
                    data = arm.dumps(value)
                    arm.loads(data)
                except Exception as exc:
                    why = f"unavailable: {describe(exc)}"
                    table.add(op, label, name, "—", *["—" for _ in threads], why)
                    continue
                call, job = (arm.loads, data) if op == "loads" else (arm.dumps, value)
                for where in THREAD_RESULTS if label == BYTES_1MB else THREAD_RESULTS[:1]:
                    fn = call if where == RETURNED else functools.partial(_in_worker, call)
                    key = f"graphs/threads/{op}/{label}/{name}" + (
                        "/returned" if where == RETURNED else ""
                    )
                    per_call = []
                    for n in threads:
                        ui.step(f"threads {op} {label} {name} {where} x{n}", advance=1)
                        jobs = [job] * calls[label]
                        with ThreadPool(n) as pool:
                            once(pool, fn, jobs)
                            best = min(once(pool, fn, jobs) for _ in range(rounds))
                        per_call.append(best / len(jobs) / 1e6)
                        part.record(f"{key}/x{n}", per_call[-1])
                    table.add(
                        op,
                        label,
                        name,
                        where,
                        *[f"{ms:.3f}" for ms in per_call],
                        ratio(per_call[0], min(per_call)),
                    )
    return table


def run(conf: dict[str, Any], sampling: Sampling, out: Path, ui: Ui) -> Part:
    part = Part("graphs")
    arms, missing = serializers()
    for name, why in missing.items():
        part.arm_status(f"graphs/{name}", why)
    names = list(FACTORIES)
    data = shapes()
    # loads and dumps; each arm's bytes payload twice (both results), its records once
    thread_steps = 3 * (len(THREAD_ARMS) + len(THREAD_DUMPS_ARMS)) * len(conf["threads"])
    ui.start("Part C: object graphs", len(data) + thread_steps)
    ns: dict[str, dict[str, float]] = {}
    statuses: dict[str, dict[str, str]] = {}
    sizes: dict[str, dict[str, int]] = {}
    for shape, value in data.items():
        ui.step(shape, advance=1)
        calls, statuses[shape], payloads = gate_shape(value, arms)
        ns[shape] = measure(calls, sampling)  # every correct arm together, rounds interleaved
        sizes[shape] = {n: len(p) for n, p in payloads.items() if statuses[shape].get(n) == "ok"}
        part.record(f"graphs/copy_floor/{shape}", ns[shape].get("copy_floor"))
        for name in names:
            why = statuses[shape].get(name) or missing[name]
            if why.startswith("incorrect"):
                part.arm_status(f"graphs/{shape}/{name}", why)
            for op in ("dumps", "loads"):
                part.record(f"graphs/{op}/{shape}/{name}", ns[shape].get(f"{op}/{name}"), why)
            part.record(f"graphs/size/{shape}/{name}", sizes[shape].get(name), why)

    def time_table(op: str) -> Table:
        table = Table(
            f"{op}: µs per call (best of {sampling.rounds})",
            [
                "Data shape",
                *names,
                "one copy of pickle's payload",
                "pickle ÷ bytewright",
                "pysafe ÷ bytewright",
                "pickle ÷ pysafe",
                "msgspec ÷ bytewright",
            ],
            note="Ratios are time ÷ time: above 1 means the right-hand library is faster. "
            "`one copy of pickle's payload` is `bytes(memoryview(payload))`, a floor for any "
            "serializer whose result holds the payload's data."
            + (f" `{LOADS_PICKLE}` reads pickle's own bytes." if op == "loads" else ""),
        )
        for shape, t in ns.items():

            def get(name: str, t: dict[str, float] = t) -> float | None:
                return t.get(f"{op}/{name}")

            def cell(name: str, shape: str = shape) -> str:
                if get(name) is not None:
                    return fmt(get(name), 1e3)
                if op == "dumps" and name == LOADS_PICKLE:
                    return "—"  # it reads pickle's payload: no dumps of its own
                return statuses[shape].get(name) or missing[name]

            table.add(
                shape,
                *map(cell, names),
                fmt(t.get("copy_floor"), 1e3),
                ratio(get(PICKLE), get(BYTEWRIGHT)),
                ratio(get(PYSAFE), get(BYTEWRIGHT)),
                ratio(get(PICKLE), get(PYSAFE)),
                ratio(get(MSGSPEC), get(BYTEWRIGHT)),
            )
        return table

    size_table = Table(
        "Payload size in bytes",
        [
            "Data shape",
            PICKLE,
            PYSAFE,
            BYTEWRIGHT,
            MSGSPEC,
            "pysafe ÷ pickle",
            "bytewright ÷ pickle",
            "bytewright ÷ msgspec",
        ],
    )
    for shape, s in sizes.items():
        size_table.add(
            shape,
            *[f"{s[n]:,}" if n in s else "—" for n in (PICKLE, PYSAFE, BYTEWRIGHT, MSGSPEC)],
            ratio(s.get(PYSAFE), s.get(PICKLE)),
            ratio(s.get(BYTEWRIGHT), s.get(PICKLE)),
            ratio(s.get(BYTEWRIGHT), s.get(MSGSPEC)),
        )
    hmac = run_hmac(arms, conf["hmac_mb"], sampling, part)
    threads = run_threads(
        arms,
        conf["threads"],
        {BYTES_1MB: conf["thread_bytes_calls"], RECORDS_1MB: conf["thread_calls"]},
        ui,
        conf["thread_rounds"],
        part,
    )
    ui.finish()
    section = Section(
        "Part C: object graphs",
        "The 16 shapes of the pysafe-pickle performance page; pickle uses protocol 5. Every "
        "arm's round trip was checked (same types and values; pysafe-pickle's look-alike "
        "dataclasses are accepted for it) before timing. msgspec is `n/a` where MessagePack "
        "cannot express a shape (shared references, cycles, sets, tuples). Options are bound "
        "once where a library offers it: msgspec's `Decoder(type=...)`, bytewright's "
        "`Decoder(classes=...)`.",
        [time_table("dumps"), time_table("loads"), size_table, hmac, threads],
    )
    speedups = {
        f"{name} {op}": {
            shape: t[f"{op}/{PICKLE}"] / t[f"{op}/{name}"]
            for shape, t in ns.items()
            if f"{op}/{PICKLE}" in t and f"{op}/{name}" in t
        }
        for op in ("dumps", "loads")
        for name in (PYSAFE, BYTEWRIGHT, LOADS_PICKLE, MSGSPEC)
        if not (op == "dumps" and name == LOADS_PICKLE)
    }
    if speedups := {label: v for label, v in speedups.items() if v}:
        image = Path("graphs-speedup.png")
        xlabel = "speedup over pickle (time of pickle ÷ time; right of 1 is faster)"
        plots.speedups(out / image, "Object graphs: speedup over pickle", xlabel, speedups)
        section.images.append(image)
    part.sections.append(section)
    return part
