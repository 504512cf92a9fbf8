"""The benchmark harness in its smoke profile: gates pass and the report renders. No timings."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rich")
pytest.importorskip("matplotlib")

import bytewright

from benchmarks.report import SECTION_ARMS, SECTION_ENVIRONMENT, SECTION_TARGETS
from benchmarks.runner import PARTS, Run, run
from benchmarks.targets import MET, MISSED, NOT_MEASURED, TARGETS


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    out = tmp_path_factory.mktemp("bench")
    return run("smoke", (), out, quiet=True, command="pytest smoke"), out


@pytest.fixture(scope="module")
def metrics(smoke: tuple[Run, Path]) -> dict[str, float]:
    return {k: v for part in smoke[0].parts for k, v in part.metrics.items()}


def test_every_available_arm_passes_its_correctness_gate(smoke: tuple[Run, Path]) -> None:
    assert [item for part in smoke[0].parts for item in part.incorrect] == []


def test_every_part_ran(smoke: tuple[Run, Path]) -> None:
    assert [p.name for p in smoke[0].parts] == list(PARTS)


def test_stdlib_and_installed_peer_arms_are_measured(metrics: dict[str, float]) -> None:
    peers = {"construct": "construct", "rustruct-core": "rustruct", "rustruct": "rustruct"}
    for workload in ("scalars", "vector", "telemetry"):
        for op in ("pack", "unpack"):
            assert f"wire/slope/{workload}/{op}/struct" in metrics
            for arm, module in peers.items():
                if installed(module):
                    assert f"wire/slope/{workload}/{op}/{arm}" in metrics, arm
    if installed("dataclasses_struct"):
        assert "wire/slope/scalars/pack/dataclasses-struct" in metrics
    assert "bulk/Struct.pack_into presized bytearray" in metrics
    assert "graphs/dumps/Primitives/pickle" in metrics
    if installed("pysafe_pickle"):
        assert "graphs/loads/Ints (10,000)/pysafe-pickle" in metrics
    if installed("msgspec"):
        assert "graphs/dumps/List of Dataclasses (1,000)/msgspec" in metrics
        assert "graphs/loads/List of Dataclasses (1,000)/msgspec" in metrics
    if installed("numpy"):
        assert "columns/lab unpack/numpy frombuffer + column copies" in metrics
        assert "columns/lab pack/numpy structured assembly" in metrics
    assert "columns/lab unpack/struct.iter_unpack into column lists" in metrics
    if installed("pyarrow") and installed("rustruct"):
        assert "columns/telemetry/rustruct unpack_from loop + from_pylist" in metrics
    if installed("dpkt") and installed("pandas"):
        assert "columns/pcap/dpkt loop + pandas DataFrame" in metrics
        assert "dask/read/struct loop + pandas" in metrics
    if installed("scapy"):
        assert "columns/pcap/scapy rdpcap" in metrics
    if installed("distributed"):
        assert "dask/serialize/Primitives/distributed pickle family" in metrics
    for statement in ("rustruct", "construct", "msgpack", "msgspec"):
        if installed(statement):
            assert f"startup/import/{statement}" in metrics
    assert "startup/build/construct" in metrics or not installed("construct")


def test_bytewright_arms_are_measured_once_their_api_exists(metrics: dict[str, float]) -> None:
    """An API drift must not silently turn a bytewright arm into "unavailable"."""
    for workload in ("scalars", "vector", "telemetry"):
        for op in ("pack", "unpack"):
            for arm in ("bytewright-codec", "bytewright"):
                assert f"wire/slope/{workload}/{op}/{arm}" in metrics, (workload, op, arm)
    assert "bulk/bytewright codec.pack per record + join" in metrics
    assert "bulk/bytewright pack_many (bulk)" in metrics
    assert "graphs/dumps/Primitives/bytewright.pickle" in metrics
    assert "graphs/hmac/bytewright.pickle" in metrics
    for op in ("dumps", "loads"):
        assert f"graphs/threads/{op}/Bytes (1 MB)/bytewright.pickle/x2" in metrics
    assert "graphs/loads/Primitives/bytewright loads_pickle" in metrics
    assert "formats/dns/bytewright.formats.dns" in metrics
    assert "formats/msgpack/bytewright msgpack" in metrics
    assert "startup/import/bytewright" in metrics
    assert "startup/import/bytewright.pickle" in metrics
    assert "startup/build/bytewright" in metrics
    columns = hasattr(bytewright.Struct, "unpack_table") and installed("pyarrow")
    if columns:
        for workload in ("lab unpack", "telemetry", "threads fixed", "threads variable"):
            assert any(k.startswith(f"columns/{workload}/bytewright") for k in metrics), workload
        for threads in (1, 2):
            floor = f"memory floor: one copy, {threads} thread{'s' if threads > 1 else ''} (numpy)"
            assert f"columns/threads fixed/{floor}" in metrics
    if hasattr(bytewright.Struct, "pack_table"):
        assert "columns/lab pack/bytewright pack_table" in metrics
    if hasattr(importlib.import_module("bytewright.formats.pcap"), "read_table") and columns:
        assert "columns/pcap/bytewright formats.pcap.read_table" in metrics
    if installed("bytewright.dask") and installed("distributed"):
        assert "dask/serialize/Primitives/bytewright family" in metrics
        assert "dask/deserialize/Primitives/bytewright family, no key" in metrics
        assert "dask/sign_floor/Primitives" in metrics
        if hasattr(importlib.import_module("bytewright.dask"), "read_records"):
            assert "dask/read/read_records, 2 workers" in metrics
            assert "dask/read/read_records, 1 worker" in metrics
            assert "dask/scan/Codec.scan_messages" in metrics
            assert "dask/scan/Codec.unpack_table" in metrics


def test_report_renders_with_every_section_and_plot(smoke: tuple[Run, Path]) -> None:
    result, out = smoke
    text = Path(result.report).read_text(encoding="utf-8")
    for heading in (
        SECTION_ENVIRONMENT,
        SECTION_TARGETS,
        SECTION_ARMS,
        "## Part A: wire codecs",
        "## Part A: scalars",
        "## Part A: vector",
        "## Part A: telemetry",
        "## Part A: IO and threads",
        "## Part B: bulk records",
        "## Part C: object graphs",
        "## Part D: columns",
        "## Part E: Dask",
        "## Part F: real formats",
        "## Part G: start-up and build cost",
    ):
        assert heading in text, heading
    pngs = ["wire-scalars.png", "wire-vector.png", "wire-telemetry.png", "bulk-records.png"]
    pngs.append("graphs-speedup.png")
    for png in pngs:
        assert (out / png).stat().st_size > 0
        assert f"]({png})" in text


def test_every_target_evaluates_to_a_plain_verdict(smoke: tuple[Run, Path]) -> None:
    declared: list[dict[str, Any]] = tomllib.loads(TARGETS.read_text(encoding="utf-8"))["target"]
    outcomes = smoke[0].outcomes
    assert [o.target for o in outcomes] == [t["text"] for t in declared]
    assert {o.verdict for o in outcomes} <= {MET, MISSED, NOT_MEASURED}
    # Every target of an available arm is evaluated, never left "not measured" by a typo in
    # a metric name: only targets that need a missing arm may be NOT MEASURED.
    for o in outcomes:
        if o.verdict == NOT_MEASURED:
            assert (
                "unavailable" in o.measured
                or "not resolvable" in o.measured
                or "unmeasured" in o.measured
            ), o
