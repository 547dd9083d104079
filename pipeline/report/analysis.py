"""Analyses over the runs' test predictions: text-by-text comparison (of every set of runs tested on the same rows),
McNemar's exact test, the confidence interval of an accuracy, confident mistakes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from statistics import NormalDist

import numpy as np
import pandas as pd

from pipeline.common.stats import mcnemar_exact_p
from pipeline.report.runs import Run, same_task
from pipeline.run.directory import (
    PREDICTION_GOLD,
    PREDICTION_PREDICTED,
    PREDICTION_ROW_ID,
    PREDICTION_SCORE,
    PREDICTION_TEXT,
    PREDICTIONS_FILE,
    PROBABILITY_PREFIX,
)

MAX_MISTAKE_ROWS = 10
# McNemar p-values below this read as an accuracy gap that is more than chance.
SIGNIFICANCE_LEVEL = 0.05
# The normal quantile of a two-sided interval at that level: 95% confidence, z = 1.96.
CONFIDENCE_Z = NormalDist().inv_cdf(1 - SIGNIFICANCE_LEVEL / 2)


# Columns threshold_mistakes adds to a run's wrong rows.
SURENESS = "sureness"
WRONG_DECISION = "wrong_decision"


def most_confident_mistakes(predictions: pd.DataFrame, limit: int = MAX_MISTAKE_ROWS) -> pd.DataFrame:
    """Wrong predictions with the highest scores first (often label noise), where the argmax decides the label."""
    mistakes = predictions[predictions[PREDICTION_PREDICTED] != predictions[PREDICTION_GOLD]]
    return mistakes.sort_values(PREDICTION_SCORE, ascending=False, kind="stable").head(limit)


def threshold_mistakes(run: Run, limit: int = MAX_MISTAKE_ROWS) -> pd.DataFrame | None:
    """A binary or multi-label run's wrong rows, surest first, with their surest wrong class decision and its
    SURENESS; None where the argmax decides the label or the probabilities are missing.

    Where a threshold t decides, the predicted class's probability does not say how sure a mistake was, so each
    wrong decision is measured past t as a share of the way to certainty: (p - t) / (1 - t) for a class wrongly
    given, (t - p) / t for one wrongly left out (0: a near miss, 1: certain)."""
    predictions, classes = run.predictions, run.thresholded_classes()
    columns = [f"{PROBABILITY_PREFIX}{name}" for name in classes]
    if predictions is None or not classes or not set(columns) <= set(predictions.columns):
        return None
    probabilities = predictions[columns].astype(float).to_numpy()
    thresholds = np.array([run.threshold(name) for name in classes])
    given, true = (_class_matrix(run, column, classes) for column in (PREDICTION_PREDICTED, PREDICTION_GOLD))
    tiny = np.finfo(float).tiny  # a threshold of 0 or 1 leaves no room on one side: nothing can be past it there
    sureness = np.where(
        given,
        (probabilities - thresholds) / np.maximum(1 - thresholds, tiny),
        (thresholds - probabilities) / np.maximum(thresholds, tiny),
    )
    sureness = np.where(given != true, sureness, -np.inf)
    wrong = np.isfinite(sureness).any(axis=1)
    surest = sureness.argmax(axis=1)
    decisions = [
        _decision_text(classes[column], probabilities[row, column], thresholds[column], given[row, column])
        for row, column in enumerate(surest)
    ]
    surest_sureness = sureness[np.arange(len(sureness)), surest]
    mistakes = predictions.assign(**{SURENESS: surest_sureness, WRONG_DECISION: decisions})[wrong]
    return mistakes.sort_values(SURENESS, ascending=False, kind="stable").head(limit)


def _class_matrix(run: Run, column: str, classes: list[str]) -> np.ndarray:
    """(N, C) booleans: whether each row's label in `column` holds each class."""
    values = run.label_values(column)
    sets = values if run.multi_label else [{value} for value in values]
    matrix = np.array([[name in label_set for name in classes] for label_set in sets], dtype=bool)
    return matrix.reshape(len(sets), len(classes))


def _decision_text(name: str, probability: float, threshold: float, given: bool) -> str:
    """'yes left out: P 0.954 under threshold 0.970' (in words: a "<" would be escaped in the Markdown file)."""
    if given:
        return f"{name} given: P {probability:.3f} ≥ threshold {threshold:.3f}"
    return f"{name} left out: P {probability:.3f} under threshold {threshold:.3f}"


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


@dataclass
class NotCompared:
    """Runs (with test predictions) that could not be compared with some others, and why."""

    runs: list[str]
    others: list[str]
    reason: str


@dataclass
class Comparisons:
    """The runs' test predictions compared within each set of runs tested on the same rows of the same task."""

    groups: list[Comparison]
    # Every two sets of runs that could not be compared with each other, and why.
    not_compared: list[NotCompared]
    # Runs without test predictions, compared with nothing.
    left_out: list[str]


def compare_where_possible(runs: Sequence[Run]) -> Comparisons:
    """Compare each group of runs scored on the same test rows of the same task, and say why groups differ."""
    groups: list[list[Run]] = []
    for run in runs:
        if run.predictions is None:
            continue
        group = next((group for group in groups if why_not_comparable(group[0], run) is None), None)
        if group is None:
            groups.append([run])
        else:
            group.append(run)
    return Comparisons(
        groups=[compare_predictions(group) for group in groups if len(group) > 1],
        not_compared=[
            NotCompared(
                [run.name for run in first], [run.name for run in second], why_not_comparable(first[0], second[0])
            )
            for first, second in combinations(groups, 2)
        ],
        left_out=[run.name for run in runs if run.predictions is None],
    )


def why_not_comparable(first: Run, second: Run) -> str | None:
    """Why two runs' test predictions cannot be compared text by text; None when they can."""
    if not same_task([first, second]):
        if first.multi_label != second.multi_label:
            return "they do different tasks (single- beside multi-label)"
        sizes = f": {len(first.labels)} against {len(second.labels)}" if len(first.labels) != len(second.labels) else ""
        return f"they do different tasks (other classes{sizes})"
    mismatch = _test_data_mismatch([first, second])
    return f"they were tested on different data ({mismatch})" if mismatch else None


# The columns of Comparison.disagreements holding one run's predicted class and its score (that class's probability).
def predicted_column(run_name: str) -> str:
    return f"{PREDICTION_PREDICTED}:{run_name}"


def score_column(run_name: str) -> str:
    return f"{PREDICTION_SCORE}:{run_name}"


def compare_predictions(runs: Sequence[Run]) -> Comparison:
    """Find the test texts on which the runs disagree, after checking they were tested on the same texts."""
    with_predictions = [run for run in runs if run.predictions is not None]
    names = [run.name for run in with_predictions]
    left_out = [run.name for run in runs if run.predictions is None]
    if len(with_predictions) < 2:
        missing = f"fewer than two runs have {PREDICTIONS_FILE} (missing for {', '.join(left_out)})"
        return Comparison(names, left_out, missing)
    if mismatch := _test_data_mismatch(with_predictions):
        different = (
            f"the runs were tested on different data ({mismatch}), so their predictions cannot be compared text by text"
        )
        return Comparison(names, left_out, different, different_test_data=True)

    first = with_predictions[0].predictions
    # Ids, where the run wrote them, join results back to the source.
    ids = [PREDICTION_ROW_ID] if PREDICTION_ROW_ID in first.columns else []
    joined = first[[PREDICTION_TEXT, PREDICTION_GOLD, *ids]].reset_index(drop=True)
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
    """What McNemar's p-value says about two runs' accuracy gap."""
    if p_value < SIGNIFICANCE_LEVEL:
        return f"below {SIGNIFICANCE_LEVEL:g}: the accuracy gap is unlikely to be chance"
    return f"not below {SIGNIFICANCE_LEVEL:g}: the accuracy gap may be chance"


def accuracy_interval(accuracy: float, rows: int) -> tuple[float, float]:
    """The Wilson score interval of an accuracy on `rows` rows: unlike the normal approximation, it stays within 0..1
    and does not shrink to a point at 0% or 100% on a few rows."""
    squared = CONFIDENCE_Z**2 / rows
    centre = (accuracy + squared / 2) / (1 + squared)
    half = CONFIDENCE_Z * math.sqrt(accuracy * (1 - accuracy) / rows + squared / (4 * rows)) / (1 + squared)
    return max(0.0, centre - half), min(1.0, centre + half)
