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
TWO, ONE, LOOP = "read_records, 2 workers", "read_records, 1 worker", "struct loop + pandas"
SCAN, DECODE = "Codec.scan_messages", "Codec.unpack_table"
OPS = ("serialize", "deserialize")


def copy_frames(frames: list[Any]) -> list[bytes]:
    """One copy of every frame: what a family that copies its payload once must pay."""
    return [bytes(memoryview(frame)) for frame in frames]


def sign_frames(frames: list[Any]) -> list[bytes]:
    """One HMAC-SHA256 of every frame (OpenSSL's, through `hmac.digest`): what a family
    that authenticates its payload must pay at least, on top of any copy."""
    return [hmac.digest(bytewright.HMAC_KEY, frame, "sha256") for frame in frames]


def run_families(sampling: Sampling, part: Part) -> Table:
    protocol = need("distributed.protocol")
    families, statuses = {}, {}
    for name, factory in FAMILIES.items():
        try:
            families[name], statuses[name] = factory(), "ok"
        except Exception as exc:
            statuses[name] = status(exc)
    table = Table(
        "Serialization families: µs per call of `serialize` / `deserialize` (no cluster)",
        [
            "Data shape",
            *[f"{op} {n}" for op in OPS for n in FAMILIES],
            "one copy of the pickle frames",
            "one HMAC of the pickle frames",
            *[f"{op} pickle ÷ {arm}" for arm in ("bytewright", "no key") for op in OPS],
        ],
        note="Above 1.00x: the bytewright family is faster. Shapes where pickle beats one copy "
        "of its own frames (zero-copy buffers) are below the one-copy floor; shapes where it "
        "beats one HMAC-SHA256 of them are below the signing floor of the signed family, which "
        "hashes every byte it writes or reads (the pickle family authenticates nothing).",
    )
    for shape, value in shapes().items():
        calls: dict[str, Any] = {}
        cells: dict[str, str] = {}
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
                    calls["sign_floor"] = DirectCall(sign_frames, frames)
        ns = measure(calls, sampling)
        part.record(f"dask/copy_floor/{shape}", ns.get("copy_floor"))
        part.record(f"dask/sign_floor/{shape}", ns.get("sign_floor"))
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
            fmt(ns.get("copy_floor"), 1e3),
            fmt(ns.get("sign_floor"), 1e3),
            *[
                ratio(ns.get(f"{op}/{PICKLE}"), ns.get(f"{op}/{arm}"))
                for arm in (OURS, UNSIGNED)
                for op in OPS
            ],
        )
    return table


def run_reading(conf: dict[str, Any], sampling: Sampling, part: Part, ui: Ui) -> Table:
    folder = Path(tempfile.mkdtemp(prefix="bytewright-bench-"))
    clusters: list[Any] = []
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

        def on_cluster(workers: int) -> Any:
            bytewright.reader(paths)  # unavailable before any cluster starts
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
            clusters.append(cluster)
            # Results come straight from the workers (pickle protocol 5, column buffers as
            # frames of their own), not through the scheduler (protocol 4: every buffer
            # copied into the pickle stream): the setting docs/dask.md gives for large
            # results.
            client = distributed.Client(cluster, set_as_default=False, direct_to_workers=True)
            clusters.append(client)
            return DirectCall(lambda: client.compute(bytewright.reader(paths), sync=True))

        arms = {
            TWO: (lambda: on_cluster(2), len(paths)),
            ONE: (lambda: on_cluster(1), len(paths)),
            LOOP: (lambda: DirectCall(struct.frame, sliced), len(sliced)),
        }
        checks = {name: check_frame(files) for name, (_, files) in arms.items()}
        ui.step(f"reading {mib:,.0f} MiB: starting clusters, gating, timing")
        ns, statuses = race(
            {n: a[0] for n, a in arms.items()}, lambda n, df: checks[n](df), sampling
        )
    finally:
        for closeable in reversed(clusters):
            closeable.close()
        shutil.rmtree(folder, ignore_errors=True)
    table = Table(
        f"Reading {mib:,.0f} MiB of telemetry Records in {len(paths)} files into a DataFrame",
        ["Arm", "MiB per call", "ms per MiB", "MiB/s", f"÷ {TWO}", "Status"],
        note="The struct loop reads a slice of the files; every time is per MiB of input.",
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
