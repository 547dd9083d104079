"""Analyses over the runs' test predictions: text-by-text comparison, McNemar's exact test, confident mistakes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pipeline.report.runs import Run
from pipeline.rundir import (
    PREDICTION_GOLD,
    PREDICTION_PREDICTED,
    PREDICTION_ROW_ID,
    PREDICTION_SCORE,
    PREDICTION_TEXT,
    PREDICTIONS_FILE,
)

MAX_MISTAKE_ROWS = 10
# McNemar p-values below this read as an accuracy gap that is more than chance.
SIGNIFICANCE_LEVEL = 0.05


def most_confident_mistakes(predictions: pd.DataFrame, limit: int = MAX_MISTAKE_ROWS) -> pd.DataFrame:
    """Wrong predictions with the highest scores first: the errors a model is surest of, often label noise."""
    mistakes = predictions[predictions[PREDICTION_PREDICTED] != predictions[PREDICTION_GOLD]]
    return mistakes.sort_values(PREDICTION_SCORE, ascending=False, kind="stable").head(limit)


@dataclass
class Comparison:
    """Row-by-row comparison of the runs' test predictions, joined by position."""

    run_names: list[str]
    # Runs without test predictions, compared with nothing.
    left_out: list[str] = field(default_factory=list)
    # Why no comparison was possible (different test data, missing predictions); None when it was made.
    unavailable_reason: str | None = None
    different_test_data: bool = False
    num_rows: int = 0
    # Rows where not every run predicted the same class, with text, gold, and per run predicted/score columns.
    disagreements: pd.DataFrame | None = None
    right_counts: dict[str, int] = field(default_factory=dict)
    all_wrong_count: int = 0
    # Exact McNemar test on the disagreements (two runs only): is the accuracy gap more than chance?
    mcnemar_p_value: float | None = None


def predicted_column(run_name: str) -> str:
    """The column of Comparison.disagreements holding one run's predicted class."""
    return f"{PREDICTION_PREDICTED}:{run_name}"


def score_column(run_name: str) -> str:
    """The column of Comparison.disagreements holding one run's score (probability of its predicted class)."""
    return f"{PREDICTION_SCORE}:{run_name}"


def compare_predictions(runs: Sequence[Run]) -> Comparison:
    """Find the test texts on which the runs disagree, after checking they were tested on the same texts."""
    with_predictions = [run for run in runs if run.predictions is not None]
    names = [run.name for run in with_predictions]
    left_out = [run.name for run in runs if run.predictions is None]
    if len(with_predictions) < 2:
        return Comparison(
            names, left_out, f"fewer than two runs have {PREDICTIONS_FILE} (missing for {', '.join(left_out)})"
        )
    mismatch = _test_data_mismatch(with_predictions)
    if mismatch:
        return Comparison(
            names,
            left_out,
            f"the runs were tested on different data ({mismatch}), so their "
            "predictions cannot be compared text by text",
            different_test_data=True,
        )

    first = with_predictions[0].predictions
    joined = pd.DataFrame(
        {PREDICTION_TEXT: first[PREDICTION_TEXT].to_numpy(), PREDICTION_GOLD: first[PREDICTION_GOLD].to_numpy()}
    )
    if PREDICTION_ROW_ID in first.columns:  # ids join results back to the source
        joined[PREDICTION_ROW_ID] = first[PREDICTION_ROW_ID].to_numpy()
    for run in with_predictions:
        joined[predicted_column(run.name)] = run.predictions[PREDICTION_PREDICTED].to_numpy()
        joined[score_column(run.name)] = run.predictions[PREDICTION_SCORE].to_numpy()
    # Compared as values (class sets for multi-label runs), so two runs' separators or class orders do not matter.
    gold = _values(with_predictions[0], PREDICTION_GOLD)
    predicted = {run.name: _values(run, PREDICTION_PREDICTED) for run in with_predictions}
    disagree = np.any([predicted[name] != predicted[names[0]] for name in names], axis=0)
    disagreements = joined[disagree]

    right = {name: pd.Series(predicted[name][disagree] == gold[disagree]) for name in names}
    comparison = Comparison(
        run_names=names,
        left_out=left_out,
        num_rows=len(joined),
        disagreements=disagreements,
        right_counts={name: int(is_right.sum()) for name, is_right in right.items()},
        all_wrong_count=int((~pd.concat(right.values(), axis=1).any(axis=1)).sum()) if len(disagreements) else 0,
    )
    if len(names) == 2:
        comparison.mcnemar_p_value = mcnemar_exact_p(
            int((right[names[0]] & ~right[names[1]]).sum()), int((right[names[1]] & ~right[names[0]]).sum())
        )
    return comparison


def _test_data_mismatch(runs: Sequence[Run]) -> str | None:
    reference = runs[0]
    for run in runs[1:]:
        if len(run.predictions) != len(reference.predictions):
            return (
                f"{len(reference.predictions):,} test rows in {reference.name}, {len(run.predictions):,} in {run.name}"
            )
        texts_differ = reference.predictions[PREDICTION_TEXT].to_numpy() != run.predictions[PREDICTION_TEXT].to_numpy()
        gold_differs = _values(reference, PREDICTION_GOLD) != _values(run, PREDICTION_GOLD)
        for differs, what in ((texts_differ, "texts"), (gold_differs, "gold labels")):
            if differs.any():
                return f"{what} differ between {reference.name} and {run.name} first at row {int(np.argmax(differs))}"
    return None


def _values(run: Run, column: str) -> np.ndarray:
    """A label column as an object array of comparable values (class names, or class sets)."""
    values = np.empty(len(run.predictions), dtype=object)
    values[:] = run.label_values(column)
    return values


def gap_reading(p_value: float) -> str:
    """What McNemar's p-value says about two runs' accuracy gap, as the verdict and the disagreements section say it."""
    if p_value < SIGNIFICANCE_LEVEL:
        return f"below {SIGNIFICANCE_LEVEL:g}: the accuracy gap is unlikely to be chance"
    return f"not below {SIGNIFICANCE_LEVEL:g}: the accuracy gap may be chance"


def mcnemar_exact_p(only_first_right: int, only_second_right: int) -> float | None:
    """Two-sided exact binomial p-value of McNemar's test; None without discordant pairs."""
    discordant = only_first_right + only_second_right
    if discordant == 0:
        return None
    tail = sum(math.comb(discordant, k) for k in range(min(only_first_right, only_second_right) + 1))
    # Integer arithmetic: 0.5 ** n underflows for the thousands of discordant texts of a large test set.
    return min(1.0, 2 * tail / 2**discordant)
