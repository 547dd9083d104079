"""A report over a mixed sweep (single-label runs on one test set, a binary run with a threshold, a multi-label run)
reads each run by its own decision and metric: runs sharing test rows are compared even beside runs that do not,
curves are in each run's selection metric, a calibration that raised ECE says so, a threshold that fell back says
what was applied, mistakes decided by a threshold are ranked past it, and a multi-label accuracy is named.

Runs are built in memory (report.runs.Run), and each test calls the section it checks, so no test draws more than
one figure."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.report import plots
from pipeline.report.analysis import compare_where_possible, mcnemar_exact_p
from pipeline.report.blocks import Heading, Paragraph, Table
from pipeline.report.formatting import format_metric, format_percent
from pipeline.report.runs import Run
from pipeline.report.scores import calibration_blocks, low_confidence_blocks, operating_blocks
from pipeline.report.sections import _curve_blocks, _disagreement_blocks, _mistake_blocks, eval_curve
from pipeline.report.summary import summary_blocks
from pipeline.run.record import RANKING_METRICS, Thresholds
from pipeline.scoring.thresholds import DEFAULT_THRESHOLD, choose_threshold

TOPICS = ["World", "Sports", "Business", "Sci/Tech"]


def run_of(
    name: str,
    labels: list[str],
    gold: list[str],
    predicted: list[str],
    probabilities: np.ndarray,
    texts: list[str] | None = None,
    multi_label: bool = False,
) -> Run:
    """A run whose test predictions are the given rows; `probabilities` (N, C) in the order of `labels`. The score is
    as test_predictions.csv has it: the predicted class's probability, or a multi-label row's highest."""
    scores = (
        probabilities.max(axis=1)
        if multi_label
        else probabilities[np.arange(len(predicted)), [labels.index(name) for name in predicted]]
    )
    predictions = pd.DataFrame(
        {
            "text": texts if texts is not None else [f"text {index}" for index in range(len(gold))],
            "label": gold,
            "predicted": predicted,
            "score": scores,
            **{f"prob_{label}": probabilities[:, index] for index, label in enumerate(labels)},
        }
    )
    metrics = {"labels": labels, "data": {"task": "multi_label" if multi_label else "single_label"}, "test": {}}
    return Run(name, Path(name), {}, metrics, [], predictions)


def topic_run(name: str, texts: list[str], gold: np.ndarray, seed: int, correct_share: float = 0.7) -> Run:
    """A 4-class run: the argmax of random probabilities, right on about `correct_share` of the rows."""
    rng = np.random.default_rng(seed)
    probabilities = rng.dirichlet(np.ones(len(TOPICS)), len(texts))
    right = rng.random(len(texts)) < correct_share
    # A right row's gold class gets the top probability; a wrong row keeps the draw, moved off gold.
    for row in np.flatnonzero(right):
        probabilities[row, gold[row]] = probabilities[row].max() + 0.1
    for row in np.flatnonzero(~right & (probabilities.argmax(axis=1) == gold)):
        probabilities[row, gold[row]] = 0.0
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    predicted = [TOPICS[index] for index in probabilities.argmax(axis=1)]
    return run_of(name, TOPICS, [TOPICS[index] for index in gold], predicted, probabilities, texts)


def paragraphs(blocks) -> list[str]:
    return [block.text for block in blocks if isinstance(block, Paragraph)]


def table_of(blocks, first_header: str) -> Table:
    return next(block for block in blocks if isinstance(block, Table) and block.header[0] == first_header)


def cells(table: Table) -> list[list[str]]:
    return [[cell.text for cell in row] for row in table.rows]


# ---------------------------------------------------------------------------------------------------------------
# 1. Where the runs disagree: each set of runs tested on the same rows


def test_runs_sharing_their_test_rows_are_compared_beside_runs_on_other_data():
    """Two runs on one test set, a third on other rows of the same task, a binary run: the two are compared (with
    McNemar's test), and the section names which runs could not be compared with which, and why."""
    rng = np.random.default_rng(0)
    texts = [f"story {index}" for index in range(40)]
    gold = rng.integers(0, len(TOPICS), len(texts))
    first, second = topic_run("first", texts, gold, seed=1, correct_share=0.8), topic_run("second", texts, gold, 2)
    other = topic_run("other", texts[:30], gold[:30], seed=3)
    binary = run_of("binary", ["no", "yes"], ["no", "yes"], ["no", "no"], np.array([[0.9, 0.1], [0.6, 0.4]]))
    runs = [first, other, second, binary]

    blocks = _disagreement_blocks(compare_where_possible(runs), runs)

    assert Heading("first vs second", level=3) in blocks
    predicted = {run.name: run.predictions["predicted"] for run in (first, second)}
    gold_names = first.predictions["label"]
    differ = predicted["first"] != predicted["second"]
    assert 0 < differ.sum() < len(texts), "the fixture should make the two runs disagree on some rows"
    texts_said = " ".join(paragraphs(blocks))
    assert f"The runs disagree on {differ.sum()} of {len(texts)} test texts" in texts_said
    only_first = int((differ & (predicted["first"] == gold_names)).sum())
    only_second = int((differ & (predicted["second"] == gold_names)).sum())
    assert f"p = {mcnemar_exact_p(only_first, only_second):.2g}" in texts_said
    assert "No comparison" not in texts_said

    not_compared = [text for text in paragraphs(blocks) if text.startswith("Not compared")]
    assert len(not_compared) == 3  # {first, second}, {other}, {binary}: every two of the three sets
    (on_other_rows,) = [text for text in not_compared if "with other" in text]
    assert on_other_rows.startswith("Not compared: first and second with other: they were tested on different data")
    assert f"{len(texts)} test rows in first, 30 in other" in on_other_rows
    assert all("other classes: 4 against 2" in text for text in not_compared if "with binary" in text)


# ---------------------------------------------------------------------------------------------------------------
# 2. Validation curves: each run in the metric that selected its model


def curve_run(name: str, metric: str, values: dict[str, list[float]], multi_label: bool = False) -> Run:
    history = [
        {"step": 10 * (index + 1), "elapsed_seconds": 5.0 * (index + 1)}
        | {f"eval_{key}": series[index] for key, series in values.items()}
        for index in range(len(next(iter(values.values()))))
    ]
    metrics = {"labels": TOPICS, "best": {"step": 20, "metric": metric}, "data": {"task": "single_label"}}
    if multi_label:
        metrics["data"]["task"] = "multi_label"
    return Run(name, Path(name), {}, metrics, history, None)


def test_runs_selected_by_different_metrics_are_drawn_each_in_its_own_named():
    """An accuracy-selected, a macro-F1-selected and a multi-label micro-F1-selected run: each curve and table row in
    its own metric, named; the multi-label run's subset accuracy (flat 0 early in training) is not what is shown."""
    runs = [
        curve_run("single", "accuracy", {"accuracy": [0.5, 0.7, 0.6], "macro_f1": [0.4, 0.6, 0.5]}),
        curve_run("binary", "macro_f1", {"accuracy": [0.9, 0.9, 0.9], "macro_f1": [0.5, 0.8, 0.7]}),
        curve_run("multi", "micro_f1", {"accuracy": [0.0, 0.0, 0.0], "micro_f1": [0.3, 0.6, 0.5]}, multi_label=True),
    ]
    table = table_of(_curve_blocks(runs), "Run")
    assert table.header[1] == "Metric (selected the model)" and table.header[3] == "First"
    for run, row in zip(runs, cells(table)):
        metric = run.ranking_metric
        assert row[1] == RANKING_METRICS[metric]
        highest = max(line[f"eval_{metric}"] for line in run.history)
        assert row[4].startswith(f"{format_metric(metric, highest)} (step ")

    figure = plots.validation_curves_figure([eval_curve(run) for run in runs])
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert legend == [f"{run.name} ({RANKING_METRICS[run.ranking_metric]})" for run in runs]
    assert "each model" in figure.axes[0].get_ylabel()


# ---------------------------------------------------------------------------------------------------------------
# 3. Calibration that made ECE worse


def calibrated_run(name: str, ece: dict[str, tuple[float, float]], loss: dict[str, tuple[float, float]]) -> Run:
    record = {
        "enabled": True,
        "temperature": 0.87,
        "bins": 15,
        "ece": {split: {"before": before, "after": after} for split, (before, after) in ece.items()},
        "loss": {split: {"before": before, "after": after} for split, (before, after) in loss.items()},
    }
    return Run(name, Path(name), {}, {"labels": TOPICS, "calibration": record}, [], None)


def test_a_temperature_that_raised_ece_is_said_to_have_done_so_with_the_honest_reading():
    """Temperature scaling minimises NLL, which can fall while ECE rises: where ECE after > before, the cell says
    "worse" and a note says so plainly, that the saved model's probabilities are the scaled ones, and what, if
    anything, scaling bought (the test NLL)."""
    loss = {"validation": (2.3594, 2.3531), "test": (2.3782, 2.3730)}
    worse_on_validation = calibrated_run("tags", {"validation": (0.1087, 0.1563), "test": (0.09, 0.03)}, loss)
    worse_everywhere = calibrated_run(
        "student", {"validation": (0.13, 0.18), "test": (0.15, 0.19)}, {**loss, "test": (1.10, 1.12)}
    )
    better = calibrated_run("fitted", {"validation": (0.24, 0.11), "test": (0.23, 0.08)}, loss)
    blocks = calibration_blocks([worse_on_validation, worse_everywhere, better])

    rows = {row[0]: row[2:4] for row in cells(table_of(blocks, "Run"))}
    assert rows["tags"] == ["0.1087 → 0.1563 (worse)", "0.0900 → 0.0300"]
    assert all(cell.endswith("(worse)") for cell in rows["student"])
    assert not any("worse" in cell for cell in rows["fitted"])

    notes = {text.split(":")[0]: text for text in paragraphs(blocks) if "worse" in text}
    assert set(notes) == {"tags", "student"}
    assert "made the expected calibration error worse (validation 0.1087 → 0.1563)." in notes["tags"]
    assert "minimises the validation NLL (2.3594 → 2.3531)" in notes["tags"]
    assert "by ECE on validation they are worse calibrated" in notes["tags"]
    assert "what scaling bought is a lower NLL (test 2.3782 → 2.3730)" in notes["tags"]
    assert "(validation 0.1300 → 0.1800, test 0.1500 → 0.1900)" in notes["student"]
    assert "on validation and test" in notes["student"]
    assert "the test NLL did not fall either (1.1000 → 1.1200)" in notes["student"]


# ---------------------------------------------------------------------------------------------------------------
# 4. A threshold that could not be chosen as asked: the row says what was applied


def test_a_threshold_that_fell_back_says_in_its_row_what_was_applied():
    """Records made by pipeline.scoring.thresholds itself (so a change of its wording shows here): a precision no threshold
    reaches (best_f1 used), a recall no threshold keeps, a class without positive validation rows (0.5 kept), and
    one chosen as asked."""
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    never_top = np.array([0.9, 0.6, -np.inf])  # a multi-class row whose argmax is another class: never labelled
    records = {
        "World": choose_threshold({"precision": 0.99}, scores, np.array([False, True, False, True]))[1],
        "Sports": choose_threshold({"recall": 0.99}, never_top, np.array([True, False, True]))[1],
        "Business": choose_threshold("best_f1", scores, np.zeros(4, dtype=bool))[1],
        "Sci/Tech": choose_threshold({"precision": 0.5}, scores, np.array([True, True, False, False]))[1],
    }
    assert all(records[name].get("fallback") for name in ("World", "Sports", "Business"))
    thresholds = {
        "kind": "flag",
        "thresholds": {name: record["threshold"] for name, record in records.items()},
        "chosen": records,
    }
    metrics = {"labels": TOPICS, "thresholds": thresholds, "test": {"low_confidence": {"flagged": 0, "share": 0.0}}}
    flagging = Run("flags", Path("flags"), {}, metrics, [], None)

    settings = {row[0]: row[2] for row in cells(table_of(low_confidence_blocks([flagging]), "Class"))}
    assert settings["World"] == "best_f1 (instead of precision ≥ 0.99)"
    sports_threshold = records["Sports"]["threshold"]
    assert settings["Sports"] == f"{sports_threshold:.4f} (instead of recall ≥ 0.99)"
    assert settings["Business"] == f"{DEFAULT_THRESHOLD} (instead of best_f1)"
    assert settings["Sci/Tech"] == "precision ≥ 0.5"

    # The binary operating-point table reads its rows the same way.
    binary_metrics = {
        "labels": ["no", "yes"],
        "thresholds": {"kind": "binary", "thresholds": {"yes": records["World"]["threshold"]}},
        "test": {"areas": {"per_class": {"yes": {"roc_auc": 0.9, "average_precision": 0.8}}}},
    }
    binary_metrics["thresholds"]["chosen"] = {"yes": records["World"]}
    binary = Run("binary", Path("binary"), {}, binary_metrics, [], None)
    (row,) = cells(table_of(operating_blocks([binary]), "Class"))
    assert row[2] == "best_f1 (instead of precision ≥ 0.99)"


# ---------------------------------------------------------------------------------------------------------------
# 5. Most confident mistakes where a threshold decides the label


def sureness(probability: float, threshold: float, given: bool) -> float:
    """How far past the threshold a wrong class decision went, as a share of the way to certainty."""
    return (probability - threshold) / (1 - threshold) if given else (threshold - probability) / threshold


def mistake_rows(run: Run) -> list[list[str]]:
    return cells(table_of(_mistake_blocks([run]), "Row"))


def test_binary_mistakes_under_a_threshold_are_ranked_past_it_not_by_the_predicted_score():
    """Threshold 0.97 on "yes": a "yes" at 0.98 barely passed it, a "no" at P(yes) 0.2 was far from it; ranked by
    the predicted class's probability (0.98 against 0.8) the near miss would come first."""
    threshold = 0.97
    p_yes = np.array([0.98, 0.20, 0.954, 0.10, 0.99])
    gold = ["no", "yes", "yes", "no", "yes"]
    predicted = ["yes" if p >= threshold else "no" for p in p_yes]
    run = run_of("binary", ["no", "yes"], gold, predicted, np.stack([1 - p_yes, p_yes], axis=1))
    run.metrics.thresholds = Thresholds(kind="binary", thresholds={"yes": threshold})

    wrong = [row for row in range(len(gold)) if gold[row] != predicted[row]]
    expected = sorted(wrong, key=lambda row: -sureness(p_yes[row], threshold, predicted[row] == "yes"))
    by_score = sorted(wrong, key=lambda row: -run.predictions["score"][row])
    assert expected != by_score, "the fixture should tell the two rankings apart"

    table = table_of(_mistake_blocks([run]), "Row")
    assert table.header[-2:] == ["Surest wrong decision", "Sureness"]
    rows = cells(table)
    assert [int(row[0]) for row in rows] == expected
    for row in rows:
        index = int(row[0])
        assert f"P {p_yes[index]:.3f}" in row[4] and f"threshold {threshold:.3f}" in row[4]
        assert ("yes given" if predicted[index] == "yes" else "yes left out") in row[4]
        assert float(row[5]) == pytest.approx(sureness(p_yes[index], threshold, predicted[index] == "yes"), abs=5e-4)


def test_multi_label_mistakes_are_ranked_by_the_class_they_got_wrong_not_their_highest_probability():
    """A row's score is its highest class probability, which may be a class it got right (0.95 for a, given and
    gold, beside b wrongly given at 0.55); a row that left out its gold b at 0.05 is the surer mistake."""
    labels = ["a", "b", "c"]
    probabilities = np.array([[0.95, 0.55, 0.10], [0.30, 0.05, 0.20], [0.90, 0.10, 0.70]])
    gold, predicted = ["a", "b", "a|c"], ["a|b", "", "a|c"]
    run = run_of("tags", labels, gold, predicted, probabilities, multi_label=True)

    rows = mistake_rows(run)
    assert [int(row[0]) for row in rows] == [1, 0]  # by score (0.95, 0.30) it would be [0, 1]
    assert rows[0][4] == f"b left out: P 0.050 under threshold {DEFAULT_THRESHOLD:.3f}"
    assert rows[1][4] == f"b given: P 0.550 ≥ threshold {DEFAULT_THRESHOLD:.3f}"


# ---------------------------------------------------------------------------------------------------------------
# 6. A multi-label run's accuracy beside single-label runs


def test_a_multi_label_accuracy_beside_single_label_runs_is_named_exact_match():
    def headline_run(name: str, multi_label: bool, accuracy: float, baseline_accuracy: float) -> Run:
        metrics = {
            "labels": TOPICS,
            "data": {"task": "multi_label" if multi_label else "single_label"},
            "test": {"accuracy": accuracy, "macro_f1": 0.6},
            "baseline": {"accuracy": baseline_accuracy, "macro_f1": 0.5},
        }
        return Run(name, Path(name), {}, metrics, [], None)

    runs = [headline_run("single", False, 0.5738, 0.6721), headline_run("multi", True, 0.1667, 0.3333)]
    rows = {row[0]: row[1:] for row in cells(table_of(summary_blocks(runs), ""))}
    for label, key in (("Test accuracy", "test"), ("Baseline test accuracy", "baseline")):
        single, multi = (getattr(run.metrics, key).accuracy for run in runs)
        assert rows[label] == [format_percent(single), f"{format_percent(multi)} (exact-match)"]
