"""The target evaluator on made-up metrics: verdicts and the floor explanations."""

from __future__ import annotations

from pathlib import Path

from benchmarks.report import Part
from benchmarks.targets import MET, MISSED, NOT_MEASURED, evaluate

RATIO = """
[[target]]
text = "two threads at least 1.7x one"
measure = "columns/t/one"
over = "columns/t/two"
at_least = 1.7
floor = "columns/t/floor"
floor_name = "copy floor"
below_floor = "explain"
"""


def _outcome(tmp_path: Path, metrics: dict[str, float], targets: str = RATIO) -> tuple[str, str]:
    path = tmp_path / "targets.toml"
    path.write_text(targets, encoding="utf-8")
    part = Part("columns")
    part.metrics.update(metrics)
    (outcome,) = evaluate([part], path)
    return outcome.verdict, outcome.measured


def test_a_ratio_that_meets_its_target_is_met(tmp_path: Path) -> None:
    verdict, text = _outcome(tmp_path, {"columns/t/one": 18.0, "columns/t/two": 10.0})
    assert (verdict, text) == (MET, "1.80x (18.0 / 10.0 ns)")


def test_a_miss_below_the_floor_says_what_the_floor_allows(tmp_path: Path) -> None:
    metrics = {"columns/t/one": 16.0, "columns/t/two": 10.0, "columns/t/floor": 10.0}
    verdict, text = _outcome(tmp_path, metrics)
    assert verdict == MISSED
    assert text == "1.60x (16.0 / 10.0 ns); below the copy floor: even at the floor at most 1.60x"


def test_a_miss_the_floor_would_allow_is_a_plain_miss(tmp_path: Path) -> None:
    metrics = {"columns/t/one": 16.0, "columns/t/two": 12.0, "columns/t/floor": 8.0}
    assert _outcome(tmp_path, metrics) == (MISSED, "1.33x (16.0 / 12.0 ns)")


def test_a_miss_without_its_floor_measured_is_a_plain_miss(tmp_path: Path) -> None:
    assert _outcome(tmp_path, {"columns/t/one": 16.0, "columns/t/two": 10.0}) == (
        MISSED,
        "1.60x (16.0 / 10.0 ns)",
    )


def test_a_target_whose_part_did_not_run_is_not_measured(tmp_path: Path) -> None:
    path = tmp_path / "targets.toml"
    path.write_text(RATIO, encoding="utf-8")
    (outcome,) = evaluate([Part("graphs")], path)
    assert (outcome.verdict, outcome.measured) == (NOT_MEASURED, "part `columns` not run")


def test_small_times_keep_three_decimals(tmp_path: Path) -> None:
    """0.050 / 0.116 ms, not 0.1 / 0.1: a ratio's two times stay readable below 10."""
    metrics = {"columns/t/one": 0.05, "columns/t/two": 0.116}
    assert _outcome(tmp_path, metrics) == (MISSED, "0.43x (0.050 / 0.116 ns)")
