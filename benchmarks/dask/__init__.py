"""Part E: Dask. `bytewright.dask.read_records` on a LocalCluster, and the serialization family.

Reading: generated files of back-to-back telemetry Records, read into one DataFrame by
`read_records(...)` computed on a `distributed.LocalCluster` (worker processes, one thread
each, loopback) with 1 and with 2 workers, and by a single-process `struct` loop into
pandas on a slice of the files. Times are per MiB of input. What planning with `scan=True`
costs: `Codec.scan_messages` against `Codec.unpack_table` on the same bytes.

Serialization: `distributed.protocol.serialize`/`deserialize` of Part C's 16 shapes with
the `bytewright` family against Dask's default `pickle` family, no cluster.
"""

from __future__ import annotations

import hmac
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bench_data import shapes
from benchmarks.columns.data import records
from benchmarks.dask import bytewright, pickle, struct
from benchmarks.graphs.serializer import same
from benchmarks.harness import (
    DirectCall,
    Incorrect,
    Sampling,
    Unavailable,
    gate,
    measure,
    need,
    race,
    status,
)
from benchmarks.report import Part, Section, Table, Ui, fmt, ratio

FAMILIES = {**pickle.ARMS, **bytewright.ARMS}
PICKLE, OURS, UNSIGNED = (
    "distributed pickle family",
    "bytewright family",
    "bytewright family, no key",
)
TWO, ONE = "read_records, 2 workers", "read_records, 1 worker"
COMPUTE_TWO, COMPUTE_ONE = "read_records .compute(), 2 workers", "read_records .compute(), 1 worker"
LOOP = "struct loop + pandas"
SCAN, DECODE = "Codec.scan_messages", "Codec.unpack_table"
OPS = ("serialize", "deserialize")


def copy_frames(frames: list[Any]) -> list[bytes]:
    """One copy of every frame: what a family that copies its payload once must pay."""
    return [bytes(memoryview(frame)) for frame in frames]


def frame_bytes(frames: list[Any]) -> int:
    return sum(memoryview(frame).nbytes for frame in frames)


# HMAC-SHA256 is timed on one buffer this large, so its per-call cost does not count.
HMAC_BUFFER = 16 << 20


def hmac_per_byte(sampling: Sampling) -> float:
    """Nanoseconds per byte of HMAC-SHA256 (OpenSSL's, through `hmac.digest`) on a large
    buffer: what a family that authenticates its payload pays per byte, at least."""
    data = bytes(HMAC_BUFFER)
    ns = measure({"hmac": DirectCall(hmac.digest, bytewright.HMAC_KEY, data, "sha256")}, sampling)
    return ns["hmac"] / len(data)


def run_families(sampling: Sampling, part: Part) -> Table:
    protocol = need("distributed.protocol")
    families, statuses = {}, {}
    for name, factory in FAMILIES.items():
        try:
            families[name], statuses[name] = factory(), "ok"
        except Exception as exc:
            statuses[name] = status(exc)
    per_byte = hmac_per_byte(sampling)
    part.record("dask/hmac_ns_per_byte", per_byte)
    table = Table(
        "Serialization families: µs per call of `serialize` / `deserialize` (no cluster)",
        [
            "Data shape",
            *[f"{op} {n}" for op in OPS for n in FAMILIES],
            "pickle frames, bytes",
            "one-copy floor",
            "signing floor",
            *[f"{op} pickle ÷ {arm}" for arm in ("bytewright", "no key") for op in OPS],
        ],
        note="Above 1.00x: the bytewright family is faster. The one-copy floor is one copy of "
        "the pickle family's frames: shapes where pickle beats it (zero-copy buffers) do not "
        "count against either bytewright family. The signing floor is the size of those "
        f"frames times the cost of HMAC-SHA256 per byte on a {HMAC_BUFFER >> 20} MiB buffer "
        f"({per_byte:.2f} ns/byte here, without any per-call cost): the signed family hashes "
        "every byte it writes or reads and the pickle family authenticates nothing, so "
        "shapes where pickle beats the signing floor do not count against the signed family; "
        "the family without a key keeps the one-copy floor.",
    )
    for shape, value in shapes().items():
        calls: dict[str, Any] = {}
        cells: dict[str, str] = {}
        size = None
        for name, family in families.items():

            def roundtrip(header_frames: Any, value: Any = value) -> None:
                if not same(value, protocol.deserialize(*header_frames)):
                    raise Incorrect("round trip differs from the original")

            call, cells[name] = gate(
                lambda f=family, v=value: DirectCall(protocol.serialize, v, serializers=[f]),
                roundtrip,
            )
            if call is not None:
                header, frames = call()
                calls[f"serialize/{name}"] = call
                calls[f"deserialize/{name}"] = DirectCall(protocol.deserialize, header, frames)
                if name == PICKLE:
                    calls["copy_floor"] = DirectCall(copy_frames, frames)
                    size = frame_bytes(frames)
        ns = measure(calls, sampling)
        sign_floor = None if size is None else size * per_byte
        part.record(f"dask/copy_floor/{shape}", ns.get("copy_floor"))
        part.record(f"dask/sign_floor/{shape}", sign_floor)
        for name in FAMILIES:
            why = cells.get(name) or statuses[name]
            part.arm_status(
                f"dask/{shape}/{name}" if why.startswith("incorrect") else f"dask/{name}", why
            )
            for op in OPS:
                part.record(f"dask/{op}/{shape}/{name}", ns.get(f"{op}/{name}"), why)
        table.add(
            shape,
            *[
                fmt(ns[k], 1e3) if (k := f"{op}/{n}") in ns else (cells.get(n) or statuses[n])
                for op in OPS
                for n in FAMILIES
            ],
            "—" if size is None else f"{size:,}",
            fmt(ns.get("copy_floor"), 1e3),
            fmt(sign_floor, 1e3),
            *[
                ratio(ns.get(f"{op}/{PICKLE}"), ns.get(f"{op}/{arm}"))
                for arm in (OURS, UNSIGNED)
                for op in OPS
            ],
        )
    return table


def run_reading(conf: dict[str, Any], sampling: Sampling, part: Part, ui: Ui) -> Table:
    folder = Path(tempfile.mkdtemp(prefix="bytewright-bench-"))
    clusters: dict[int, Any] = {}
    closing: list[Any] = []
    try:
        one = records(conf["mib"] * 2**20 // conf["files"])
        file_mib = len(one.data) / 2**20
        paths = []
        for i in range(conf["files"]):
            (path := folder / f"telemetry-{i:03}.bin").write_bytes(one.data)
            paths.append(str(path))
        mib = len(one.data) * len(paths) / 2**20
        sliced = paths[: max(1, round(conf["baseline_mib"] / file_mib))]

        def check_frame(files: int) -> Any:
            def check(df: Any) -> None:
                if len(df) != one.count * files:
                    raise Incorrect(f"{len(df)} rows, expected {one.count * files}")
                for name, total in one.sums.items():
                    if int(df[name].sum()) != total * files:
                        raise Incorrect(f"column {name!r} differs from the generated records")

            return check

        def client_of(workers: int) -> Any:
            """One cluster per worker count, shared by both ways of computing, started here:
            outside every timed call."""
            if workers not in clusters:
                distributed = need("distributed")
                cluster = distributed.LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=conf["processes"],
                    protocol="tcp://",
                    host="127.0.0.1",
                    dashboard_address=":0",  # any free port: never clash with another cluster
                    silence_logs=logging.ERROR,
                )
                closing.append(cluster)
                # Results come straight from the workers (pickle protocol 5, column buffers
                # as frames of their own), not through the scheduler: the setting
                # docs/dask.md gives for large results.
                client = distributed.Client(cluster, set_as_default=False, direct_to_workers=True)
                closing.append(client)
                clusters[workers] = client
            return clusters[workers]

        def gathered(workers: int) -> Any:
            bytewright.reader(paths)  # unavailable before any cluster starts
            return DirectCall(bytewright.gather_frame, client_of(workers), paths)

        def computed(workers: int) -> Any:
            bytewright.reader(paths)
            return DirectCall(bytewright.compute_frame, client_of(workers), paths)

        arms = {
            TWO: (lambda: gathered(2), len(paths)),
            ONE: (lambda: gathered(1), len(paths)),
            COMPUTE_TWO: (lambda: computed(2), len(paths)),
            COMPUTE_ONE: (lambda: computed(1), len(paths)),
            LOOP: (lambda: DirectCall(struct.frame, sliced), len(sliced)),
        }
        checks = {name: check_frame(files) for name, (_, files) in arms.items()}
        ui.step(f"reading {mib:,.0f} MiB: starting clusters, gating, timing")
        rounds = Sampling(sampling.budget_ns, conf.get("read_rounds", sampling.rounds))
        ns, statuses = race({n: a[0] for n, a in arms.items()}, lambda n, df: checks[n](df), rounds)
    finally:
        for closeable in reversed(closing):
            closeable.close()
        shutil.rmtree(folder, ignore_errors=True)
    table = Table(
        f"Reading {mib:,.0f} MiB of telemetry Records in {len(paths)} files into a DataFrame",
        ["Arm", "MiB per call", "ms per MiB", "MiB/s", f"÷ {TWO}", "Status"],
        note="Every time is per MiB of input, the best of "
        f"{rounds.rounds} rounds after a warm-up; clusters start before any timed call. "
        "read_records arms end with the whole DataFrame in this process: gathered = each "
        "partition fetched from its worker and concatenated here (docs/dask.md, Computing "
        "large results); .compute() = Dask's default, which first concatenates every "
        "partition in one task on one worker. The struct loop reads a slice of the files.",
    )
    per = {name: t / 1e6 / (file_mib * arms[name][1]) for name, t in ns.items()}  # ms/MiB
    for name in arms:
        p = per.get(name)
        part.record(f"dask/read/{name}", p, statuses[name])
        part.arm_status(f"dask/{name}", statuses[name])
        rate = f"{1e3 / p:,.1f}" if p else "—"
        table.add(
            name,
            f"{file_mib * arms[name][1]:,.0f}",
            fmt(p),
            rate,
            ratio(p, per.get(TWO)),
            statuses[name],
        )
    return table


def run_scan(conf: dict[str, Any], sampling: Sampling, part: Part) -> Table:
    """The cost of `scan=True` against decoding the same bytes, in one process."""
    one = records(conf["mib"] * 2**20 // conf["files"])
    mib = len(one.data) / 2**20

    def check(name: str, result: Any) -> None:
        want = (one.count, len(one.data)) if name == SCAN else one.count
        got = result if name == SCAN else len(result)
        if got != want:
            raise Incorrect(f"{got}, expected {want}")

    arms = {SCAN: lambda: bytewright.scan(one.data), DECODE: lambda: bytewright.decode(one.data)}
    ns, statuses = race(arms, check, sampling)
    per = {name: t / 1e6 / mib for name, t in ns.items()}  # ms/MiB
    table = Table(
        f"What `scan=True` costs: walking {mib:,.0f} MiB of Records against decoding them",
        ["Arm", "ms per MiB", "MiB/s", f"{DECODE} ÷ arm", "Status"],
        note="One file, one thread, in this process. The scan also reads every byte of the "
        "files once more from where they are stored, before any partition starts.",
    )
    for name in arms:
        p = per.get(name)
        part.record(f"dask/scan/{name}", p, statuses[name])
        part.arm_status(f"dask/{name}", statuses[name])
        rate = f"{1e3 / p:,.1f}" if p else "—"
        table.add(name, fmt(p), rate, ratio(per.get(DECODE), p), statuses[name])
    return table


def run(conf: dict[str, Any], sampling: Sampling, out: Path, ui: Ui) -> Part:
    part = Part("dask")
    ui.start("Part E: Dask", 3)
    ui.step("serialization families", advance=1)
    try:
        tables = [run_families(sampling, part)]
    except Unavailable as exc:  # no distributed: the reading arms say so too
        part.arm_status("dask/serialization", f"unavailable: {exc}")
        tables = []
    ui.step("reading", advance=1)
    tables.append(run_reading(conf, sampling, part, ui))
    ui.step("the cost of scan=True", advance=1)
    tables.append(run_scan(conf, sampling, part))
    ui.finish()
    intro = __doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else ""
    part.sections.append(Section("Part E: Dask", intro, tables))
    return part
