"""Reports read imbalance right (macro-F1 and balanced accuracy lead above a 3:1 class ratio, classes by support,
row-normalised confusion matrix) and show calibration and operating points."""

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.report.blocks import Images, Paragraph, Table
from pipeline.report.runs import Run
from pipeline.report.sections import build_report
from pipeline.report.verdict import header_blocks
from pipeline.run.record import Best, Evaluation, LowConfidence, Thresholds
from pipeline.scoring.calibration import reliability_bins


def run_of(name: str, ratio: float, binary: bool = False) -> Run:
    labels = ["neg", "pos"] if binary else ["big", "mid", "rare"]
    per_class = {
        label: {"precision": 0.8, "recall": 0.7, "f1": 0.75, "support": support}
        for label, support in zip(labels, [10, 300, 40])
    }
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 200)
    scores = np.clip(gold * 0.5 + rng.random(200) * 0.5, 0, 1)
    probabilities = np.stack([1 - scores, scores], axis=1)
    bins = reliability_bins(probabilities, gold)
    metrics = {
        "labels": labels,
        "test": {
            "accuracy": 0.9,
            "macro_f1": 0.6,
            "balanced_accuracy": 0.55,
            "num_samples": 350,
            "per_class": per_class,
            "confusion_matrix": [[8, 2, 0], [30, 270, 0], [0, 20, 20]][: len(labels)],
        },
        "data": {"class_counts": {"train": {"imbalance_ratio": ratio}}},
        "calibration": {
            "enabled": True,
            "temperature": 1.7,
            "bins": 15,
            "ece": {"validation": {"before": 0.08, "after": 0.02}, "test": {"before": 0.09, "after": 0.03}},
            "loss": {"validation": {"before": 0.5, "after": 0.4}, "test": {"before": 0.52, "after": 0.41}},
            "reliability": {"test": {"before": bins, "after": bins}},
        },
    }
    predictions = None
    if binary:
        metrics["test"]["confusion_matrix"] = [[90, 10], [20, 80]]
        metrics["test"]["areas"] = {"per_class": {"pos": {"roc_auc": 0.9, "average_precision": 0.85}}}
        metrics["thresholds"] = {
            "kind": "binary",
            "thresholds": {"pos": 0.4},
            "chosen": {
                "pos": {
                    "setting": {"precision": 0.99},
                    "threshold": 0.4,
                    "fallback": "no threshold reaches precision 0.99",
                }
            },
        }
        predictions = pd.DataFrame(
            {
                "text": ["t"] * 200,
                "label": np.where(gold == 1, "pos", "neg"),
                "predicted": "pos",
                "score": 0.5,
                "prob_neg": 1 - scores,
                "prob_pos": scores,
            }
        )
    return Run(name, Path(name), {}, metrics, [], predictions)


def test_a_calibration_that_fitted_no_temperature_says_why():
    run = run_of("separable", ratio=1.0)
    run.metrics.calibration.temperature, run.metrics.calibration.warning = (
        1.0,
        "the validation NLL kept falling to the bound",
    )
    _, blocks = build_report([run])
    assert "separable: the validation NLL kept falling to the bound" in texts(blocks)
    assert "kept falling" not in texts(build_report([run_of("fitted", ratio=1.0)])[1])


def texts(blocks) -> str:
    return "\n".join(block.text for block in blocks if isinstance(block, Paragraph))


def test_imbalanced_runs_lead_with_macro_f1_and_balanced_accuracy_and_say_why():
    _, blocks = build_report([run_of("skewed", ratio=20.0)])
    summary = next(block for block in blocks if isinstance(block, Table))
    assert [row[0].text for row in summary.rows[:3]] == ["Macro-F1", "Balanced accuracy", "Test accuracy"]
    assert "imbalanced" in texts(blocks) and "20.0" in texts(blocks)
    assert texts(blocks).index("macro-F1 0.6000") < texts(blocks).index("accuracy 90.00%")

    _, balanced = build_report([run_of("even", ratio=1.5)])
    summary = next(block for block in balanced if isinstance(block, Table))
    assert summary.rows[0][0].text == "Test accuracy" and "imbalanced" not in texts(balanced)


def test_imbalanced_runs_tested_on_different_data_are_ranked_with_a_caution():
    """Runs without test predictions to compare row by row, whose test sets differ in size: the macro-F1 ranking of
    imbalanced runs cautions that they were tested on different data, as the accuracy ranking does."""
    first, second = run_of("first", ratio=20.0), run_of("second", ratio=20.0)
    second.metrics.test.num_samples, second.metrics.test.macro_f1 = 500, 0.5
    _, blocks = build_report([first, second])
    verdict = next(block.text for block in blocks if isinstance(block, Paragraph) and block.style == "verdict")
    assert verdict.startswith("Best by test macro-F1: first")
    assert "Caution: the runs were tested on different data." in verdict


def test_imbalanced_runs_tied_on_macro_f1_are_all_named():
    """Three imbalanced runs at one macro-F1 tie, all three, as the accuracy ranking names every tied run; a run
    below them is not named among the tied."""
    runs = [run_of(name, ratio=20.0) for name in ("first", "second", "third", "fourth")]
    runs[3].metrics.test.macro_f1 = 0.5
    blocks = header_blocks(runs, None, datetime.now(timezone.utc))  # the opening alone: no figures to draw
    verdict = next(block.text for block in blocks if isinstance(block, Paragraph) and block.style == "verdict")
    assert verdict.startswith("first and second and third tie on test macro-F1 at 0.6000.")
    assert "fourth tie" not in verdict and "and fourth" not in verdict


def test_runs_with_different_classes_are_set_side_by_side_not_ranked():
    """A 2-class and a 3-class run answer different questions, as do a single- and a multi-label run on the same
    classes: the verdict names no best run. The same classes in another order are the same task, ranked as usual."""
    three, two = run_of("three", ratio=1.5), run_of("two", ratio=1.5, binary=True)
    two.metrics.test.accuracy = 0.99
    _, blocks = build_report([three, two])
    verdict = next(block.text for block in blocks if isinstance(block, Paragraph) and block.style == "verdict")
    assert verdict.startswith("Not ranked: the runs do different tasks")
    assert "three: 3 classes, test accuracy" in verdict and "two: 2 classes, test accuracy 99.00%" in verdict
    assert "Best" not in verdict

    multi = run_of("multi", ratio=1.5)
    multi.metrics.data.task = "multi_label"
    _, blocks = build_report([three, multi])
    verdict = next(block.text for block in blocks if isinstance(block, Paragraph) and block.style == "verdict")
    assert verdict.startswith("Not ranked: the runs do different tasks")

    reordered = run_of("reordered", ratio=1.5)
    reordered.metrics.labels = list(reversed(reordered.metrics.labels))
    _, blocks = build_report([three, reordered])
    verdict = next(block.text for block in blocks if isinstance(block, Paragraph) and block.style == "verdict")
    assert not verdict.startswith("Not ranked")


def test_the_best_step_shows_the_validation_score_of_the_metric_that_picked_it():
    """A model kept on validation macro-F1 records best.validation_macro_f1 (no validation accuracy): the summary shows
    that score and names it, as the model card does."""
    run = run_of("skewed", ratio=20.0)
    run.metrics.best = Best.from_dict({"step": 150, "metric": "macro_f1", "validation_macro_f1": 0.81})
    _, blocks = build_report([run])
    summary = next(block for block in blocks if isinstance(block, Table))
    best_step = next(row for row in summary.rows if row[0].text == "Best step")
    assert best_step[1].text == "150 (val. macro-F1 0.8100)"
    # A binary run whose threshold is not 0.5 was kept on its argmax score: the row says so.
    run.metrics.labels = ["no", "yes"]
    run.metrics.thresholds = Thresholds(kind="binary", thresholds={"yes": 0.9})
    summary = next(block for block in build_report([run])[1] if isinstance(block, Table))
    best_step = next(row for row in summary.rows if row[0].text == "Best step")
    assert best_step[1].text.endswith("0.8100, at the 0.5 cut-off, before the thresholds chosen after training)")


def test_classes_by_support_and_a_row_normalised_confusion_matrix():
    _, blocks = build_report([run_of("skewed", ratio=20.0)])
    tables = [block for block in blocks if isinstance(block, Table)]
    per_class = next(table for table in tables if table.header[:2] == ["Class", "Support"])
    assert [row[0].text for row in per_class.rows] == ["mid", "rare", "big"]  # 300, 40, 10 test rows
    confusion = next(table for table in tables if table.header[0].startswith("true"))
    assert confusion.rows[0][1].text == "80.0% (8)" and confusion.rows[1][2].text == "90.0% (270)"


def test_per_class_support_is_each_runs_own_when_the_runs_scored_other_rows():
    """A run beside pipeline.evaluate's scores of another file: its F1 for `big` is over 40 rows there, not the run's
    10; and one model on two files is not ranked, so no F1 is bold."""
    run, same_rows, other_file = (run_of(name, ratio=20.0) for name in ("skewed", "same_rows", "skewed_on_march"))
    other_file.metrics.test.per_class["big"].update(support=40, f1=0.5)
    other_file.metrics.evaluation = Evaluation(model=str(run.path.resolve()), rows=370)
    same_rows.metrics.test.per_class["big"]["f1"] = 0.5
    tables = {}
    for name, runs in (("same", [run, same_rows]), ("other", [run, other_file])):
        blocks = build_report(runs)[1]
        tables[name] = next(block for block in blocks if isinstance(block, Table) and block.header[1] == "Support")
    cells = {name: [(row[0].text, row[1].text, row[2].text) for row in table.rows] for name, table in tables.items()}
    assert ("big", "10", "skewed") in cells["same"] and ("", "", "same_rows") in cells["same"]
    assert ("big", "10", "skewed") in cells["other"] and ("", "40", "skewed_on_march") in cells["other"]
    assert ("", "300", "skewed_on_march") in cells["other"]  # every class per run, once any differs
    bold = {name: [row[5].style for row in table.rows if row[5].style == "best"] for name, table in tables.items()}
    assert bold["same"] and not bold["other"]


def test_calibration_and_operating_points_are_shown():
    _, blocks = build_report([run_of("binary", ratio=1.2, binary=True)])
    tables = [block for block in blocks if isinstance(block, Table)]
    calibration = next(table for table in tables if table.header[:2] == ["Run", "Temperature"])
    assert calibration.rows[0][1].text == "1.700" and calibration.rows[0][2].text == "0.0800 → 0.0200"
    assert calibration.header[-1].startswith("Test loss") and calibration.rows[0][-1].text == "0.5200 → 0.4100"
    operating = next(table for table in tables if "ROC AUC" in table.header)
    assert operating.rows[0][0].text == "pos" and operating.rows[0][1].text == "0.4000"
    assert "no threshold reaches precision 0.99" in texts(blocks)
    charts = [chart.alt_text for block in blocks if isinstance(block, Images) for chart in block.charts]
    assert any("reliability" in alt for alt in charts) and any("precision-recall" in alt for alt in charts)


def test_a_threshold_that_labels_no_test_row_has_no_test_precision():
    """A binary run whose rare class no test row reaches: its precision there is undefined (the per-class table
    says 0), not the precision-recall curve's 1 at recall 0."""
    run = run_of("never", ratio=7.6, binary=True)
    run.metrics.thresholds.thresholds["pos"] = 1.5  # above every score
    _, blocks = build_report([run])
    operating = next(block for block in blocks if isinstance(block, Table) and "ROC AUC" in block.header)
    row = dict(zip(operating.header, (cell.text for cell in operating.rows[0])))
    assert (row["Precision (test)"], row["Recall (test)"]) == ("—", "0.0000")


def test_a_multi_class_run_with_thresholds_shows_its_low_confidence_rows():
    run = run_of("flags", ratio=1.0)
    run.metrics.test.low_confidence = LowConfidence(
        flagged=3, share=0.6, accuracy_of_kept=1.0, accuracy_of_flagged=1 / 3
    )
    run.metrics.thresholds = Thresholds.from_dict(
        {
            "kind": "flag",
            "thresholds": {"big": 0.7, "mid": 0.5},
            "chosen": {
                "big": {
                    "setting": {"precision": 0.9},
                    "threshold": 0.7,
                    "validation_precision": 0.92,
                    "note": "chosen on only 9 validation rows of the class: a rough estimate",
                },
                "mid": {
                    "setting": "best_f1",
                    "threshold": 0.5,
                    "fallback": "no positive validation rows: kept 0.5",
                    "applied": "0.5",
                },
            },
        }
    )
    run.predictions = pd.DataFrame(
        {
            "text": ["a", "b", "c", "d", "e"],
            "label": ["big", "big", "mid", "rare", "big"],
            "predicted": ["big", "big", "mid", "rare", "big"],
            "score": [0.6, 0.9, 0.4, 0.3, 0.65],
            "low_confidence": [True, False, True, False, True],
        }
    )
    _, blocks = build_report([run])
    tables = [block for block in blocks if isinstance(block, Table)]
    overall = next(table for table in tables if table.header[:2] == ["Run", "Flagged"])
    assert [cell.text for cell in overall.rows[0]] == ["flags", "3", "60.00%", "100.00%", "33.33%"]
    per_class = next(table for table in tables if table.header[-1] == "Flagged (test)")
    rows = {row[0].text: [cell.text for cell in row[1:]] for row in per_class.rows}
    assert rows["big"] == ["0.7000", "precision ≥ 0.9", "0.9200", "—", "2"]
    # The row says what set the threshold: the 0.5 kept, not the best_f1 asked for (the note below says why).
    assert rows["mid"][:2] == ["0.5000", "0.5 (instead of best_f1)"] and rows["mid"][-1] == "1"
    assert rows["rare"] == ["—", "none: never flagged", "—", "—", "0"]
    assert "mid: no positive validation rows: kept 0.5." in texts(blocks)
    assert "big: chosen on only 9 validation rows of the class: a rough estimate." in texts(blocks)
    assert not any(
        table.header[:2] == ["Run", "Flagged"]
        for table in build_report([run_of("argmax", 1.0)])[1]
        if isinstance(table, Table)
    )
