"""The benchmark harness in its smoke profile: gates pass and the report renders. No timings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("rich")
pytest.importorskip("matplotlib")

from benchmarks.cli import run
from benchmarks.report import SECTION_ARMS, SECTION_ENVIRONMENT, SECTION_TARGETS
from benchmarks.targets import MET, MISSED, NOT_MEASURED

# Arms of installed peers must be measured; arms whose package is missing are reported as
# unavailable by the harness itself, which is what the smoke test then accepts.
PEERS = {
    "construct": "construct",
    "dataclasses-struct": "dataclasses_struct",
    "rustruct-core": "rustruct",
    "rustruct": "rustruct",
    "pysafe-pickle": "pysafe_pickle",
}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("bench")
    return run("smoke", (), out, quiet=True, command="pytest smoke"), out


def test_every_available_arm_passes_its_correctness_gate(smoke) -> None:  # type: ignore[no-untyped-def]
    result, _ = smoke
    incorrect = [item for part in result.parts for item in part.incorrect]
    assert incorrect == []


def test_all_three_parts_ran(smoke) -> None:  # type: ignore[no-untyped-def]
    result, _ = smoke
    assert [p.name for p in result.parts] == ["wire", "lab", "pickle", "formats"]


def test_stdlib_and_installed_peer_arms_are_measured(smoke) -> None:  # type: ignore[no-untyped-def]
    result, _ = smoke
    metrics = {k: v for part in result.parts for k, v in part.metrics.items()}
    for workload in ("scalars", "vector", "telemetry"):
        for op in ("pack", "unpack"):
            assert ("slope", workload, op, "struct") in metrics
            for arm, module in PEERS.items():
                scalars_only = arm == "dataclasses-struct" and workload != "scalars"
                if arm == "pysafe-pickle" or scalars_only:
                    continue
                if importlib.util.find_spec(module):
                    assert ("slope", workload, op, arm) in metrics, arm
    assert ("lab", "Struct.pack_into presized bytearray") in metrics
    assert ("dumps", "Primitives", "pickle") in metrics
    if importlib.util.find_spec("pysafe_pickle"):
        assert ("loads", "Ints (10,000)", "pysafe-pickle") in metrics


def test_bytewright_arms_are_measured_once_their_api_exists(smoke) -> None:  # type: ignore[no-untyped-def]
    """An API drift must not silently turn a bytewright arm into "unavailable"."""
    import bytewright

    result, _ = smoke
    metrics = {k: v for part in result.parts for k, v in part.metrics.items()}
    if hasattr(bytewright, "compile") and hasattr(bytewright, "Struct"):
        for workload in ("scalars", "vector", "telemetry"):
            for op in ("pack", "unpack"):
                for arm in ("bytewright-codec", "bytewright"):
                    assert ("slope", workload, op, arm) in metrics, (workload, op, arm)
        assert ("lab", "bytewright codec.pack per record + join") in metrics
        if hasattr(bytewright.Struct, "pack_many"):
            assert ("lab", "bytewright pack_many (bulk)") in metrics
    if importlib.util.find_spec("bytewright.pickle"):
        assert ("dumps", "Primitives", "bytewright.pickle") in metrics
        assert ("hmac", "bytewright.pickle") in metrics
    if importlib.util.find_spec("dnslib") and importlib.util.find_spec("msgpack"):
        assert ("formats", "dns", "bytewright.formats.dns") in metrics
        assert ("formats", "msgpack", "bytewright msgpack") in metrics


def test_report_renders_with_every_section_and_plot(smoke) -> None:  # type: ignore[no-untyped-def]
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
        "## Part A: build cost, IO and threads",
        "## Part B: bulk records",
        "## Part C: object graphs",
        "## Part D: real formats",
    ):
        assert heading in text, heading
    pngs = ["wire-scalars.png", "wire-vector.png", "wire-telemetry.png", "lab-bulk-records.png"]
    if importlib.util.find_spec("pysafe_pickle"):
        pngs.append("graphs-speedup.png")
    for png in pngs:
        assert (out / png).stat().st_size > 0
        assert f"]({png})" in text


def test_every_target_has_a_plain_verdict(smoke) -> None:  # type: ignore[no-untyped-def]
    result, _ = smoke
    assert len(result.outcomes) == 25
    assert {o.verdict for o in result.outcomes} <= {MET, MISSED, NOT_MEASURED}
