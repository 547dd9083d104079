"""The report's content as blocks: `build_report` puts the sections in order and builds those no other module does
(confusion matrices, validation curves, per-class F1, ONNX export, disagreements, most confident mistakes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.report import plots
from pipeline.report.analysis import (
    SURENESS,
    WRONG_DECISION,
    Comparison,
    Comparisons,
    compare_predictions,
    compare_where_possible,
    gap_reading,
    most_confident_mistakes,
    predicted_column,
    score_column,
    threshold_mistakes,
)
from pipeline.report.audit import audit_blocks
from pipeline.report.blocks import Block, Cell, Chart, Heading, Images, Paragraph, Table, num_cells
from pipeline.report.ensemble import ensemble_blocks
from pipeline.report.formatting import (
    MISSING,
    format_count,
    format_duration,
    format_metric,
    format_percent,
    format_rate,
    format_score,
    join_names,
    number,
    truncate,
)
from pipeline.report.removed import removed_blocks
from pipeline.report.runs import Run, ranks_models
from pipeline.report.scores import calibration_blocks, low_confidence_blocks, operating_blocks
from pipeline.report.summary import all_labels, by_support, per_class_value, summary_blocks
from pipeline.report.verdict import header_blocks
from pipeline.run.directory import (
    HISTORY_FILE,
    PREDICTION_GOLD,
    PREDICTION_PREDICTED,
    PREDICTION_ROW_ID,
    PREDICTION_SCORE,
    PREDICTION_TEXT,
    PREDICTIONS_FILE,
    REPORT_HTML,
)
from pipeline.run.exports import ExportError, auto_backend, parity_rows, read_export_record, rows_used
from pipeline.run.record import METRICS_FILE, RANKING_METRICS, is_number

if TYPE_CHECKING:
    import pandas as pd

MAX_DISAGREEMENT_ROWS = 20

SECTION_CONFUSION = "Confusion matrices"
SECTION_CURVES = "Validation curves"
SECTION_PER_CLASS = "Per-class F1"
SECTION_DISAGREEMENTS = "Where the runs disagree"
SECTION_MISTAKES = "Most confident mistakes"
SECTION_EXPORT = "ONNX export: parity and speed"


def build_report(runs: Sequence[Run], generated_at: datetime | None = None) -> tuple[str, list[Block]]:
    comparison = compare_predictions(runs) if len(runs) >= 2 else None
    title = "Evaluation report: " + " vs ".join(run.name for run in runs)
    blocks: list[Block] = [Heading(title, level=1)]
    blocks += header_blocks(runs, comparison, generated_at or datetime.now().astimezone())
    blocks += summary_blocks(runs)
    blocks += ensemble_blocks(runs)
    blocks += removed_blocks(runs)
    blocks += _confusion_blocks(runs)
    blocks += _curve_blocks(runs)
    blocks += _per_class_blocks(runs)
    blocks += calibration_blocks(runs)
    blocks += operating_blocks(runs)
    blocks += low_confidence_blocks(runs)
    if len(runs) == 1:
        blocks += _export_blocks(runs[0])
    if len(runs) >= 2:
        blocks += _disagreement_blocks(compare_where_possible(runs), runs)
    blocks += _mistake_blocks(runs)
    blocks += audit_blocks(runs)
    return title, blocks


# --- 3. Confusion matrices


def _confusion_blocks(runs: Sequence[Run]) -> list[Block]:
    blocks: list[Block] = [
        Heading(SECTION_CONFUSION),
        Paragraph("Rows: true class; columns: predicted class. Colour: share of the true class.", style="meta"),
    ]
    images = []
    for run in runs:
        matrix = run.test_confusion_matrix()
        if run.multi_label:
            note = f"{run.name}: a multi-label task has no confusion matrix; see the per-class precision and recall."
            blocks.append(Paragraph(note, style="note"))
            continue
        if matrix is None:
            blocks.append(Paragraph(f"{run.name}: {METRICS_FILE} has no usable test confusion matrix.", style="note"))
            continue
        title = f"{run.name} (test accuracy {format_percent(run.metrics.test.accuracy)})"
        figure = plots.confusion_matrix_figure(matrix, run.labels, title=truncate(title, limit=60))
        images.append(Chart(plots.figure_to_png(figure), alt_text=f"confusion matrix of {run.name}"))
        blocks += [Heading(run.name, level=3, only="md"), *_confusion_table(matrix, run.labels)]
    if images:
        blocks.append(Images(images, only="html"))
    return blocks


def _confusion_table(matrix: list[list[float]], labels: list[str]) -> list[Block]:
    """Row-normalised (rare classes read as clearly as common ones), limited to the classes the image shows: a
    200-class table would be 40,000 cells."""
    shown = plots.shown_classes(matrix)

    def cell(row: list[float], column: int) -> str:
        return f"{format_percent(row[column] / sum(row), 1) if sum(row) else MISSING} ({format_count(row[column])})"

    rows = [[Cell(labels[index]), *num_cells(*(cell(matrix[index], column) for column in shown))] for index in shown]
    header = ["true ↓ predicted → (share of the true class)", *(labels[index] for index in shown)]
    blocks: list[Block] = [Table(header, rows, only="md")]
    if len(shown) < len(labels):
        note = f"The {len(shown)} classes with the most test rows, of {len(labels)}; {METRICS_FILE} holds the whole matrix (test.confusion_matrix)."
        blocks.insert(0, Paragraph(note, style="meta", only="md"))
    return blocks


# --- 4. Validation curves


def eval_curve(run: Run, metric: str | None = None) -> plots.EvalCurve:
    """The validation points of a run's history in `metric` (default: the one that selected its model; accuracy
    where the history lacks it)."""
    metric = metric or run.ranking_metric
    if not any(is_number(line.get(f"eval_{metric}")) for line in run.history):
        metric = "accuracy"
    key = f"eval_{metric}"
    points = [line for line in run.history if is_number(line.get(key)) and is_number(line.get("step"))]
    return plots.EvalCurve(
        run_name=run.name,
        steps=[point["step"] for point in points],
        elapsed_seconds=[number(point.get("elapsed_seconds")) for point in points],
        values=[point[key] for point in points],
        best_step=number(run.metrics.best.step),
        metric=metric,
        metric_name=RANKING_METRICS[metric],
    )


def _curve_blocks(runs: Sequence[Run]) -> list[Block]:
    """Each run's curve in the metric that selected its model: accuracy says nothing of a multi-label run early on."""
    blocks: list[Block] = [Heading(SECTION_CURVES)]
    curves = [(run, eval_curve(run)) for run in runs]
    drawn = [(run, curve) for run, curve in curves if curve.steps]
    blocks += [
        Paragraph(f"{run.name}: {HISTORY_FILE} has no evaluation lines, so no curve.", style="note")
        for run, curve in curves
        if not curve.steps
    ]
    if not drawn:
        return blocks
    with_points = [curve for _, curve in drawn]
    shared = plots.shared_metric_name(with_points)
    figure = plots.validation_curves_figure(with_points)
    each = "" if shared else ", each run in the metric that selected its model (in the legend)"
    caption = f"Validation {shared or 'curves'} by optimizer step and by training time{each}; ★ marks the selected (best) model."
    blocks.append(
        Images([Chart(plots.figure_to_png(figure), f"validation {shared or 'metric'} curves", caption)], only="html")
    )
    blocks.append(Paragraph(f"The curves are drawn in {REPORT_HTML}.", style="meta", only="md"))
    rows = []
    for run, curve in drawn:
        metric = [] if shared else [Cell(_curve_metric_text(run, curve))]
        points = (_curve_point(curve, index) for index in (0, int(np.argmax(curve.values)), -1))
        rows.append([Cell(curve.run_name), *metric, *num_cells(format_count(len(curve.steps)), *points)])
    header = (
        ["Run", "Evaluations", f"First {shared}", "Highest", "Last"]
        if shared
        else ["Run", "Metric (selected the model)", "Evaluations", "First", "Highest", "Last"]
    )
    blocks.append(Table(header, rows))
    return blocks


def _curve_metric_text(run: Run, curve: plots.EvalCurve) -> str:
    if curve.metric == run.ranking_metric:
        return curve.metric_name
    return f"{curve.metric_name} ({HISTORY_FILE} has no {RANKING_METRICS[run.ranking_metric]})"


def _curve_point(curve: plots.EvalCurve, index: int) -> str:
    elapsed = curve.elapsed_seconds[index]
    when = f", {format_duration(elapsed)}" if elapsed is not None else ""
    value = format_metric(curve.metric, curve.values[index])
    return f"{value} (step {format_count(curve.steps[index])}{when})"


# --- 5. Per-class F1


def _per_class_blocks(runs: Sequence[Run]) -> list[Block]:
    labels = by_support(runs, all_labels(runs))
    f1_by_run = {run.name: [per_class_value(run, label, "f1") for label in labels] for run in runs}
    blocks: list[Block] = [Heading(SECTION_PER_CLASS)]
    if any(value is not None for values in f1_by_run.values() for value in values):
        figure = plots.per_class_f1_figure(labels, f1_by_run)
        shown = min(len(labels), plots.MAX_PLOTTED_CLASSES)
        caption = "F1 per class on the test split" + (
            f": the {shown} classes with the most test rows, of {len(labels)}" if shown < len(labels) else ""
        )
        chart = Chart(plots.figure_to_png(figure), "per-class F1 bars", caption)
        blocks.append(Images([chart], only="html"))
    blocks.append(_per_class_table(runs, labels))
    return blocks


def _per_class_table(runs: Sequence[Run], labels: list[str]) -> Table:
    """One row per class and run (a column per run needs unreadably long headers). Supports are printed once per
    class when every run scored the same rows, else on each run's row, so no F1 is read as over another's rows."""
    several = len(runs) > 1
    ranked = ranks_models(runs)
    supports = {label: [per_class_value(run, label, "support") for run in runs] for label in labels}
    same_rows = all(len({value for value in values if value is not None}) <= 1 for values in supports.values())
    rows, row_styles = [], []
    for label in labels:
        f1_values = [per_class_value(run, label, "f1") for run in runs]
        best_f1 = max((value for value in f1_values if value is not None), default=None)
        shared = next((value for value in supports[label] if value is not None), None)
        for index, (run, f1) in enumerate(zip(runs, f1_values)):
            if same_rows:
                support = format_count(shared) if index == 0 else ""
            else:
                support = format_count(supports[label][index])
            row = [Cell("" if index else label), Cell(support, "num"), *([Cell(run.name)] if several else [])]
            row += num_cells(*(format_score(per_class_value(run, label, key)) for key in ("precision", "recall")))
            rows.append(
                [*row, Cell(format_score(f1), "best" if ranked and f1 is not None and f1 == best_f1 else "num")]
            )
            row_styles.append("group-start" if index == 0 and several else "")
    header = ["Class", "Support", *(["Run"] if several else []), "Precision", "Recall", "F1"]
    return Table(header, rows, row_styles=row_styles)


# --- 6. Disagreements


def _disagreement_blocks(comparisons: Comparisons, runs: Sequence[Run]) -> list[Block]:
    """Each set of runs tested on the same rows compared text by text, then which could not be compared, and why."""
    blocks: list[Block] = [Heading(SECTION_DISAGREEMENTS)]
    if comparisons.left_out:
        left_out = f"Left out for lack of {PREDICTIONS_FILE}: {', '.join(comparisons.left_out)}."
        blocks.append(Paragraph(left_out, style="note"))
    if not comparisons.groups:
        reason = (
            "no two runs were tested on the same rows of the same task"
            if comparisons.not_compared
            else f"fewer than two runs have {PREDICTIONS_FILE}"
        )
        blocks.append(Paragraph(f"No comparison: {reason}.", style="note"))
    multi_label = {run.name: run.multi_label for run in runs}
    titled = len(comparisons.groups) > 1 or bool(comparisons.not_compared)
    for comparison in comparisons.groups:
        if titled:
            blocks.append(Heading(" vs ".join(comparison.run_names), level=3))
        blocks += _comparison_blocks(comparison, any(multi_label[name] for name in comparison.run_names))
    for pair in comparisons.not_compared:
        why = f"{pair.reason}, so their predictions cannot be compared text by text"
        blocks.append(
            Paragraph(f"Not compared: {join_names(pair.runs)} with {join_names(pair.others)}: {why}.", style="note")
        )
    return blocks


def _comparison_blocks(comparison: Comparison, multi_label: bool) -> list[Block]:
    blocks: list[Block] = []
    disagreements = comparison.disagreements
    count, total = len(disagreements), comparison.num_rows
    share = f" ({100 * count / total:.1f}%)" if total else ""
    blocks.append(Paragraph(f"The runs disagree on {count:,} of {total:,} test texts{share}."))
    if count == 0:
        return blocks
    right = "; ".join(f"{name} right on {comparison.right_counts[name]:,}" for name in comparison.run_names)
    summary = f"Of those: {right}; all wrong on {comparison.all_wrong_count:,}."
    if (p_value := comparison.mcnemar_p_value) is not None:
        summary += f" McNemar's exact test on these texts: p = {p_value:.2g} ({gap_reading(p_value)})."
    blocks.append(Paragraph(summary))
    # Most striking first: texts where even the least sure run was sure.
    least_sure = disagreements[[score_column(name) for name in comparison.run_names]].min(axis=1)
    ordered = disagreements.assign(_least_sure=least_sure).sort_values("_least_sure", ascending=False, kind="stable")
    shown = ordered.head(MAX_DISAGREEMENT_ROWS)
    highest = "; for a multi-label run, its highest class probability" if multi_label else ""
    legend = (
        f"{'All' if len(shown) == count else f'The first {len(shown)}'} of them, those where every run was surest of its answer first "
        f"(row: the text's id in the data, or for older runs its position in {PREDICTIONS_FILE}; ✓ right, ✗ wrong; score: "
        f"probability of the predicted class{highest})."
    )
    blocks.append(Paragraph(legend, style="meta"))
    rows = [
        [*_row_text_gold_cells(row_index, row), *(_prediction_cell(row, name) for name in comparison.run_names)]
        for row_index, row in shown.iterrows()
    ]
    blocks.append(Table(["Row", "Text", "Gold", *comparison.run_names], rows))
    return blocks


def _row_text_gold_cells(row_index: Any, row: pd.Series) -> list[Cell]:
    """Id (older runs: position in the predictions file), text and gold class of one test text."""
    row_id = row.get(PREDICTION_ROW_ID, row_index)
    return [Cell(str(row_id), "num"), Cell(truncate(row[PREDICTION_TEXT]), "text"), Cell(str(row[PREDICTION_GOLD]))]


def _prediction_cell(row: pd.Series, run_name: str) -> Cell:
    predicted, score = row[predicted_column(run_name)], row[score_column(run_name)]
    is_right = predicted == row[PREDICTION_GOLD]
    return Cell(f"{'✓' if is_right else '✗'} {predicted} ({score:.3f})", "right" if is_right else "wrong")


# --- ONNX export (single-run reports): parity with PyTorch and speed, from onnx/export.json


def _export_blocks(run: Run) -> list[Block]:
    try:
        record = read_export_record(run.path)
    except ExportError as error:
        return [Heading(SECTION_EXPORT), Paragraph(str(error), style="note")]
    if record is None:
        return []
    verification = record.get("verification") or {}
    meta = (
        f"Scored on {verification.get('machine', MISSING)}: {rows_used(record)}; the rows: {verification.get('source', MISSING)}. "
        f"An export that disagrees on more than {format_percent(verification.get('max_disagreement'))} of the rows or loses more than "
        f"{verification.get('max_accuracy_loss_points', MISSING)} accuracy points is refused."
    )
    calibration = record.get("calibration")
    if isinstance(calibration, dict):
        meta += f" The {calibration.get('variant', MISSING)} model's activation ranges were calibrated on {calibration.get('source', MISSING)}."
    rows = []
    for row in parity_rows(record):
        speedup = MISSING if row.speedup is None else f"{row.speedup:.2f}x"
        figures = [format_percent(row.label_agreement), format_score(row.max_probability_difference)]
        figures += [format_percent(row.accuracy), format_rate(row.rows_per_second), speedup]
        rows.append([Cell(row.backend), *num_cells(*figures), Cell(row.status)])
    header = ["Backend", "Label agreement", "Max prob. difference", "Accuracy", "Rows/s", "Speed vs PyTorch", "Status"]
    auto = Paragraph(f"--backend auto runs {auto_backend(record)}: {record.get('auto_reason', MISSING)}.")
    return [Heading(SECTION_EXPORT), Paragraph(meta, style="meta"), Table(header, rows), auto]


# --- 7. Most confident mistakes


def _mistake_blocks(runs: Sequence[Run]) -> list[Block]:
    blocks: list[Block] = [Heading(SECTION_MISTAKES)]
    for run in runs:
        blocks.append(Heading(run.name, level=3))
        if run.predictions is None:
            blocks.append(Paragraph(f"No {PREDICTIONS_FILE} in this run, so no mistakes to show.", style="note"))
            continue
        num_wrong = int((run.predictions[PREDICTION_PREDICTED] != run.predictions[PREDICTION_GOLD]).sum())
        if num_wrong == 0:
            blocks.append(Paragraph("No mistakes: every test text was classified correctly."))
            continue
        blocks += _mistake_table(run, num_wrong)
    return blocks


def _mistake_table(run: Run, num_wrong: int) -> list[Block]:
    """By the argmax: the highest probability of the predicted class first; by thresholds (binary, multi-label): each
    mistake's surest wrong class decision."""
    mistakes = threshold_mistakes(run)
    if mistakes is None:
        mistakes, order = (
            most_confident_mistakes(run.predictions),
            "the highest probability of the predicted class first.",
        )
        header = ["P(predicted)"]

        def cells(row: pd.Series) -> list[Cell]:
            return [Cell(f"{row[PREDICTION_SCORE]:.3f}", "num")]
    else:
        order = (
            "surest first. A threshold decides these labels, so each row shows the class decision it got wrong that the model was surest "
            "of (its probability against the class's threshold), and sureness: how far that probability went past the threshold, as a "
            "share of the way to certainty (0: at the threshold; 1: probability 1 for a class wrongly given, 0 for one wrongly left out)."
        )
        header = ["Surest wrong decision", "Sureness"]

        def cells(row: pd.Series) -> list[Cell]:
            return [Cell(row[WRONG_DECISION]), Cell(f"{row[SURENESS]:.3f}", "num")]

    rows = [
        [*_row_text_gold_cells(row_index, row), Cell(str(row[PREDICTION_PREDICTED])), *cells(row)]
        for row_index, row in mistakes.iterrows()
    ]
    meta = Paragraph(f"{len(mistakes)} of {num_wrong:,} wrong predictions, {order}", style="meta")
    return [meta, Table(["Row", "Text", "Gold", "Predicted", *header], rows)]
