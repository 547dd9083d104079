"""The report's summary rows of validation cost and of the time budget (pipeline/report/summary.py)."""

from pathlib import Path

from pipeline.report.formatting import MISSING
from pipeline.report.runs import Run
from pipeline.report.summary import _budget_text, _validation_text


def _run(training: dict) -> Run:
    metrics = {"labels": ["a", "b"], "timings": {"train_seconds": 200.0}, "training": training}
    return Run("r", Path("r"), {}, metrics, [], None)


def test_validation_shows_its_passes_time_and_share_of_training():
    run = _run({"validation_passes": 4, "validation_seconds": 18.0})
    assert _validation_text(run) == "4 passes, 18s, 9% of training"
    assert _validation_text(_run({})) == MISSING  # runs made before it was recorded


def test_the_budget_shows_what_it_allowed_and_only_where_set():
    run = _run({"time_budget_seconds": 300.0, "time_budget_steps": 412})
    assert _budget_text(run) == "5m 00s: 412 steps allowed"
    assert _budget_text(_run({"validation_passes": 1})) == MISSING
