"""The report's sections on scores you can act on: class imbalance (which metrics lead), calibration before and
after temperature scaling, operating points (thresholds, ROC and precision-recall curves) and low-confidence rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pipeline.data import labels
from pipeline.data.labels import IMBALANCE_RATIO
from pipeline.report import plots
from pipeline.report.blocks import Block, Cell, Chart, Heading, Images, Paragraph, Table, num_cells
from pipeline.report.formatting import MISSING, format_count, format_percent, format_score
from pipeline.report.runs import Run
from pipeline.run.directory import (
    PREDICTION_GOLD,
    PREDICTION_LOW_CONFIDENCE,
    PREDICTION_PREDICTED,
    PROBABILITY_PREFIX,
    REPORT_HTML,
)
from pipeline.run.record import Calibration, Chosen, LowConfidence, is_number

SECTION_CALIBRATION = "Calibration"
SECTION_OPERATING = "Operating points"
SECTION_LOW_CONFIDENCE = "Low-confidence rows"
# Curves drawn per run at most (the classes with the most test rows); the table lists every class.
MAX_CURVES = 8
THRESHOLD_COLUMNS = ["Class", "Threshold", "Setting", "Precision (val.)", "Recall (val.)"]
OPERATING_META = (
    "Per class: the decision threshold (chosen on validation as eval.threshold says; stored in model/decision.json and used by "
    "pipeline.predict), its precision and recall on validation and on test, and the areas under the test ROC and precision-recall "
    "curves (average precision). The dot on each curve is the chosen operating point."
)
LOW_CONFIDENCE_META = (
    "A multi-class run with decision thresholds (eval.threshold) keeps the most probable class as the label and flags a row whose "
    "probability for it is below that class's threshold, for a person to check; pipeline.predict marks the same rows in its "
    "low_confidence column. The thresholds were chosen on validation (model/decision.json); precision and recall on validation "
    "count the rows labelled the class and not flagged. The counts and accuracies are on test."
)


# --- Imbalance


def imbalance_ratio(run: Run) -> float | None:
    ratio = run.metrics.data.train_counts.get("imbalance_ratio")
    return float(ratio) if is_number(ratio) else None


def is_imbalanced(run: Run) -> bool:
    """Whether the report leads this run with macro-F1 and balanced accuracy. Never a multi-label run: it has no
    balanced accuracy, and micro-F1 picked its model whatever the skew."""
    return not run.multi_label and labels.is_imbalanced(imbalance_ratio(run))


def imbalance_sentence(runs: Sequence[Run]) -> str | None:
    """Why the summary leads with macro-F1 and balanced accuracy, when it does."""
    skewed = [(run.name, imbalance_ratio(run)) for run in runs if is_imbalanced(run)]
    if not skewed:
        return None
    ratios = ", ".join(f"{ratio:.1f} in {name}" for name, ratio in skewed) if len(runs) > 1 else f"{skewed[0][1]:.1f}"
    return (
        f"The train classes are imbalanced (largest / smallest class: {ratios}; above {IMBALANCE_RATIO:g}), so macro-F1 and balanced "
        "accuracy lead: accuracy mostly measures the majority classes."
    )


# --- Calibration


def calibration_blocks(runs: Sequence[Run]) -> list[Block]:
    calibrated = [(run, run.metrics.calibration) for run in runs if run.metrics.calibration]
    calibrated = [(run, calibration) for run, calibration in calibrated if isinstance(calibration.ece, dict)]
    if not calibrated:
        return []
    bins = calibrated[0][1].bins or MISSING
    meta = (
        f"Expected calibration error ({bins} equal-width confidence bins: the gap between confidence and accuracy, weighted by rows) "
        "before and after temperature scaling. The temperature is fitted on validation and folded into the saved model, so every way "
        "of loading it gives the calibrated probabilities; the labels (argmax) do not change. Multi-label runs are measured over "
        "every (text, class) probability."
    )
    blocks: list[Block] = [Heading(SECTION_CALIBRATION), Paragraph(meta, style="meta")]
    rows = [
        [
            Cell(run.name),
            *num_cells(_temperature_text(c), _ece_text(c, "validation"), _ece_text(c, "test"), _loss_text(c)),
        ]
        for run, c in calibrated
    ]
    headers = ["Run", "Temperature", "ECE validation (before → after)", "ECE test (before → after)"]
    blocks.append(Table([*headers, "Test loss (NLL, before → after)"], rows))
    for run, calibration in calibrated:
        notes = [
            f"{run.name}: {calibration.warning}." if calibration.warning else None,
            ece_rise_note(run.name, calibration),
        ]
        blocks += [Paragraph(note, style="note") for note in notes if note]
    charts = [_reliability_chart(run.name, calibration) for run, calibration in calibrated]
    blocks.append(Images([chart for chart in charts if chart is not None], only="html"))
    blocks.append(Paragraph(f"Reliability diagrams (test split) are drawn in {REPORT_HTML}.", style="meta", only="md"))
    return blocks


def _temperature_text(calibration: Calibration) -> str:
    if calibration.enabled is False:
        return "off"
    return f"{calibration.temperature:.3f}" if is_number(calibration.temperature) else MISSING


def _loss_text(calibration: Calibration) -> str:
    """ECE alone can improve while the probabilities get worse: the test NLL shows that."""
    before, after = calibration.before_after("loss", "test")
    if calibration.enabled is False or not (is_number(before) and is_number(after)):
        return format_score(before)
    return _change(calibration, "loss", "test")


def _ece_text(calibration: Calibration, split: str) -> str:
    if calibration.enabled is False:
        return format_score(calibration.before_after("ece", split)[0])
    return _change(calibration, "ece", split) + (" (worse)" if _ece_rose(calibration, split) else "")


def _ece_rose(calibration: Calibration, split: str) -> bool:
    before, after = calibration.before_after("ece", split)
    return calibration.enabled is not False and is_number(before) and is_number(after) and after > before


def ece_rise_note(name: str, calibration: Calibration) -> str | None:
    """Where temperature scaling (which minimises the validation NLL, not ECE) raised the ECE: the saved model's
    probabilities are the worse calibrated ones."""
    risen = [split for split in ("validation", "test") if _ece_rose(calibration, split)]
    if not risen:
        return None
    changes = ", ".join(f"{split} {_change(calibration, 'ece', split)}" for split in risen)
    note = (
        f"{name}: temperature scaling made the expected calibration error worse ({changes}). Scaling fits the temperature that "
        f"minimises the validation NLL ({_change(calibration, 'loss', 'validation')}), and the NLL can fall while ECE rises. The saved "
        f"model gives the scaled probabilities, so read the higher ECE as theirs: by ECE on {' and '.join(risen)} they are worse "
        "calibrated than the unscaled ones were"
    )
    test_before, test_after = calibration.before_after("loss", "test")
    if not (is_number(test_before) and is_number(test_after)):
        return note + "."
    test_change = _change(calibration, "loss", "test")
    if test_after < test_before:
        return f"{note}; what scaling bought is a lower NLL (test {test_change})."
    return f"{note}, and the test NLL did not fall either ({test_change}): on test, scaling bought nothing."


def _change(calibration: Calibration, record: str, split: str) -> str:
    before, after = calibration.before_after(record, split)
    return f"{format_score(before)} → {format_score(after)}"


def _reliability_chart(name: str, calibration: Calibration) -> Chart | None:
    bins = (calibration.reliability or {}).get("test")
    if not isinstance(bins, dict) or not isinstance(bins.get("before"), list):
        return None
    ece_before, ece_after = calibration.before_after("ece", "test")
    figure = plots.reliability_figure(bins["before"], bins.get("after") or [], ece_before, ece_after, f"{name} (test)")
    return Chart(plots.figure_to_png(figure), f"reliability diagram of {name}")


# --- Operating points: thresholds, ROC and precision-recall curves


def operating_blocks(runs: Sequence[Run]) -> list[Block]:
    """Binary and multi-label runs: per class the threshold and how it was chosen, the areas, and the curves."""
    eligible = [run for run in runs if run.metrics.test.areas and isinstance(run.metrics.test.areas.per_class, dict)]
    if not eligible:
        return []
    blocks: list[Block] = [Heading(SECTION_OPERATING), Paragraph(OPERATING_META, style="meta")]
    for run in eligible:
        if len(runs) > 1:
            blocks.append(Heading(run.name, level=3))
        curves = operating_curves(run)
        blocks.append(_operating_table(run, {curve.name: curve for curve in curves}))
        blocks += _threshold_notes(run)
        if curves:
            figure = plots.operating_curves_figure(curves[:MAX_CURVES], title=f"{run.name} (test)")
            chart = Chart(plots.figure_to_png(figure), f"ROC and precision-recall curves of {run.name}")
            blocks.append(Images([chart], only="html"))
    return blocks


def _operating_table(run: Run, curves: dict[str, plots.OperatingCurve]) -> Table:
    rows = []
    for name, areas in run.metrics.test.areas.per_class.items():
        chosen = run.chosen(name) or Chosen()
        point = curves[name].point if name in curves else None
        tested = (point[2], point[1]) if point else (None, None)
        scores = [*tested, areas.get("roc_auc"), areas.get("average_precision")]
        cells = _threshold_cells(name, run.threshold(name), applied_setting_text(chosen), chosen)
        rows.append([*cells, *num_cells(*map(format_score, scores))])
    return Table([*THRESHOLD_COLUMNS, "Precision (test)", "Recall (test)", "ROC AUC", "Average precision"], rows)


def _threshold_cells(name: str, threshold: Any, setting: str, chosen: Chosen) -> list[Cell]:
    """The columns both threshold tables open with (THRESHOLD_COLUMNS)."""
    scores = (chosen.validation_precision, chosen.validation_recall)
    return [Cell(name), Cell(format_score(threshold), "num"), Cell(setting), *num_cells(*map(format_score, scores))]


def _threshold_notes(run: Run) -> list[Block]:
    """Where a class's threshold could not be chosen as asked (what was used instead), or rests on few rows."""
    chosen = {name: run.chosen(name) or Chosen() for name in run.labels}
    return [
        Paragraph(f"{name}: {text}.", style="note")
        for name, c in chosen.items()
        for text in (c.fallback, c.note)
        if text
    ]


def low_confidence_blocks(runs: Sequence[Run]) -> list[Block]:
    """Multi-class runs with thresholds: rows flagged, accuracy of kept and flagged rows, each class's threshold."""
    flagging = [run for run in runs if run.metrics.test.low_confidence is not None]
    if not flagging:
        return []
    header = ["Run", "Flagged", "Share flagged", "Accuracy of kept rows", "Accuracy of flagged rows"]
    table = Table(header, [[Cell(run.name), *_flag_cells(run.metrics.test.low_confidence)] for run in flagging])
    blocks: list[Block] = [Heading(SECTION_LOW_CONFIDENCE), Paragraph(LOW_CONFIDENCE_META, style="meta"), table]
    for run in flagging:
        if len(runs) > 1:
            blocks.append(Heading(run.name, level=3))
        blocks.append(_flag_table(run))
        blocks += _threshold_notes(run)
    return blocks


def _flag_cells(record: LowConfidence) -> list[Cell]:
    shares = (record.share, record.accuracy_of_kept, record.accuracy_of_flagged)
    return num_cells(format_count(record.flagged), *map(format_percent, shares))


def _flag_table(run: Run) -> Table:
    flagged = _flagged_per_class(run)
    rows = []
    for name in run.labels:
        chosen = run.chosen(name)
        threshold = ((run.metrics.thresholds and run.metrics.thresholds.thresholds) or {}).get(name)
        setting = applied_setting_text(chosen) if chosen else "none: never flagged"
        count = format_count(flagged.get(name, 0)) if flagged is not None else MISSING
        rows.append([*_threshold_cells(name, threshold, setting, chosen or Chosen()), *num_cells(count)])
    return Table([*THRESHOLD_COLUMNS, "Flagged (test)"], rows)


def _flagged_per_class(run: Run) -> dict[str, int] | None:
    predictions = run.predictions
    if predictions is None or PREDICTION_LOW_CONFIDENCE not in predictions.columns:
        return None
    flagged = predictions[PREDICTION_LOW_CONFIDENCE].astype(str).str.lower() == "true"
    return predictions.loc[flagged, PREDICTION_PREDICTED].astype(str).value_counts().to_dict()


def applied_setting_text(chosen: Chosen) -> str:
    """The setting asked for, or where it could not be met what was used, e.g. "best_f1 (instead of precision ≥ 0.6)"."""
    asked = _setting_text(chosen.setting)
    if not chosen.fallback:
        return asked
    applied = chosen.applied
    return f"{applied} (instead of {asked})" if applied else f"{asked} (not met)"  # runs from before `applied`


def _setting_text(setting: Any) -> str:
    if setting is None:
        return "default"
    if isinstance(setting, dict):
        return ", ".join(f"{key} ≥ {value:g}" for key, value in setting.items())
    return str(setting)


def operating_curves(run: Run) -> list[plots.OperatingCurve]:
    """Each scored class's test curves, the classes with the most positives first."""
    predictions = run.predictions
    if predictions is None:
        return []
    # Imported here, once there is something to draw: scikit-learn takes a second or two to import.
    from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score, roc_curve

    curves = []
    for name in run.metrics.test.areas.per_class:
        column = f"{PROBABILITY_PREFIX}{name}"
        if column not in predictions.columns:
            continue
        scores = predictions[column].astype(float).to_numpy()
        positive = _positives(run, name)
        if not 0 < positive.sum() < len(positive):
            continue
        fpr, tpr, _ = roc_curve(positive, scores)
        precision, recall, _ = precision_recall_curve(positive, scores)
        areas = float(roc_auc_score(positive, scores)), float(average_precision_score(positive, scores))
        point = _point(scores, positive, run.threshold(name))
        curves.append(plots.OperatingCurve(name, fpr, tpr, recall, precision, *areas, point))
    return sorted(curves, key=lambda curve: -int(_positives(run, curve.name).sum()))


def _positives(run: Run, name: str) -> np.ndarray:
    gold = run.label_values(PREDICTION_GOLD)
    if run.multi_label:
        return np.array([name in label_set for label_set in gold], dtype=bool)
    return np.array(gold) == name


def _point(scores: np.ndarray, positive: np.ndarray, threshold: float) -> tuple[float, float, float | None]:
    """(false positive rate, recall, precision) at score >= threshold; precision None when no row is predicted the
    class, where the precision-recall curve's convention of 1 reads as perfect."""
    predicted = scores >= threshold
    true_positive = float((predicted & positive).sum())
    negatives = float((~positive).sum())
    false_positive_rate = float((predicted & ~positive).sum()) / negatives if negatives else 0.0
    recall = true_positive / float(positive.sum())
    precision = true_positive / float(predicted.sum()) if predicted.any() else None
    return false_positive_rate, recall, precision
