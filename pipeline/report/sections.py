"""The report's content as blocks: title, verdict and the sections from summary to most confident mistakes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline import plots
from pipeline.report.analysis import (
    Comparison,
    compare_predictions,
    most_confident_mistakes,
    predicted_column,
    score_column,
)
from pipeline.report.blocks import Block, Cell, Chart, Heading, Images, Paragraph, Table
from pipeline.report.caveats import (
    baseline_description,
    baseline_error,
    baseline_of,
    baseline_sentences,
    budget_sentence,
    truncation_note,
    truncation_over_budget,
)
from pipeline.report.formatting import (
    MISSING,
    format_count,
    format_duration,
    format_percent,
    format_rate,
    format_score,
    truncate,
)
from pipeline.report.runs import Run
from pipeline.report.scores import calibration_blocks, imbalance_sentence, is_imbalanced, operating_blocks
from pipeline.rundir import (
    HISTORY_FILE,
    METRICS_FILE,
    PREDICTION_GOLD,
    PREDICTION_PREDICTED,
    PREDICTION_ROW_ID,
    PREDICTION_SCORE,
    PREDICTION_TEXT,
    PREDICTIONS_FILE,
    REPORT_HTML,
    is_number,
    nested_get,
)

if TYPE_CHECKING:
    import pandas as pd

MAX_DISAGREEMENT_ROWS = 20

SECTION_SUMMARY = "Summary"
SECTION_CONFUSION = "Confusion matrices"
SECTION_CURVES = "Validation accuracy"
SECTION_PER_CLASS = "Per-class F1"
SECTION_DISAGREEMENTS = "Where the runs disagree"
SECTION_MISTAKES = "Most confident mistakes"
SECTION_EXPORT = "ONNX export: parity and speed"


def build_report(runs: Sequence[Run], generated_at: datetime | None = None) -> tuple[str, list[Block]]:
    """The report's title and blocks, shared by both renderings."""
    comparison = compare_predictions(runs) if len(runs) >= 2 else None
    title = "Evaluation report: " + " vs ".join(run.name for run in runs)
    blocks: list[Block] = [Heading(title, level=1)]
    blocks += _header_blocks(runs, comparison, generated_at or datetime.now().astimezone())
    blocks += _summary_blocks(runs)
    blocks += _confusion_blocks(runs)
    blocks += _curve_blocks(runs)
    blocks += _per_class_blocks(runs)
    blocks += calibration_blocks(runs)
    blocks += operating_blocks(runs)
    if len(runs) == 1:
        blocks += _export_blocks(runs[0])
    if comparison is not None:
        blocks += _disagreement_blocks(comparison)
    blocks += _mistake_blocks(runs)
    return title, blocks


# --- 1. Header: when, which runs, the verdict, what was skipped


def _header_blocks(runs: Sequence[Run], comparison: Comparison | None, generated_at: datetime) -> list[Block]:
    locations = ", ".join(f"{run.name} ({run.path})" for run in runs)
    blocks: list[Block] = [
        Paragraph(f"Generated {generated_at:%Y-%m-%d %H:%M %Z}. Runs: {locations}.", style="meta"),
        Paragraph(" ".join([_verdict(runs, comparison), *_caveat_sentences(runs)]), style="verdict"),
    ]
    blocks += [Paragraph(f"{run.name}: {note}", style="note") for run in runs for note in run.notes]
    blocks += [
        Paragraph(f"{run.name}: {note}", style="note") for run in runs for note in [truncation_note(run)] if note
    ]
    return blocks


def _verdict(runs: Sequence[Run], comparison: Comparison | None) -> str:
    imbalanced = any(map(is_imbalanced, runs))
    if len(runs) == 1:
        run = runs[0]
        samples = f"on {format_count(_num_test_samples(run))} test texts."
        if imbalanced:  # accuracy would mostly measure the majority classes
            return (
                f"{run.name}: test macro-F1 {format_score(run.metric('test', 'macro_f1'))}, balanced accuracy "
                f"{format_percent(run.metric('test', 'balanced_accuracy'))} (accuracy "
                f"{format_percent(run.metric('test', 'accuracy'))}) {samples} {imbalance_sentence(runs)}"
            )
        return (
            f"{run.name}: test accuracy {format_percent(run.metric('test', 'accuracy'))}, macro-F1 "
            f"{format_score(run.metric('test', 'macro_f1'))} {samples}"
        )
    if imbalanced:
        return _macro_f1_verdict(runs, comparison)
    ranked = sorted(runs, key=lambda run: run.metric("test", "accuracy"), reverse=True)
    best, runner_up = ranked[0], ranked[1]
    best_accuracy, runner_up_accuracy = best.metric("test", "accuracy"), runner_up.metric("test", "accuracy")
    caveat = ""
    test_sizes = {_num_test_samples(run) for run in runs} - {None}
    if (comparison is not None and comparison.different_test_data) or len(test_sizes) > 1:
        caveat = " Caution: the runs were tested on different data."
    elif comparison is not None and comparison.mcnemar_p_value is not None and len(runs) == 2:
        # Only with exactly two runs does the test compare the same pair as the accuracy gap above.
        caveat = " " + _significance_sentence(comparison.mcnemar_p_value)
    if best_accuracy == runner_up_accuracy:
        tied = [run.name for run in ranked if run.metric("test", "accuracy") == best_accuracy]
        return f"{' and '.join(tied)} tie on test accuracy at {format_percent(best_accuracy)}.{caveat}"
    gap_points = 100 * (best_accuracy - runner_up_accuracy)
    rival = "runner-up " if len(runs) > 2 else ""
    return (
        f"Best by test accuracy: {best.name} with {format_percent(best_accuracy)}, {gap_points:.2f} points "
        f"ahead of {rival}{runner_up.name} ({format_percent(runner_up_accuracy)}).{caveat}"
    )


def _macro_f1_verdict(runs: Sequence[Run], comparison: Comparison | None) -> str:
    """Imbalanced classes: runs ranked by test macro-F1, saying why."""

    def macro_f1(run: Run) -> float:
        value = run.metric("test", "macro_f1")
        return value if is_number(value) else -1.0

    ranked = sorted(runs, key=macro_f1, reverse=True)
    best, runner_up = ranked[0], ranked[1]
    caveat = (
        " Caution: the runs were tested on different data."
        if (comparison is not None and comparison.different_test_data)
        else ""
    )
    reason = imbalance_sentence(runs)
    if macro_f1(best) == macro_f1(runner_up):
        return (
            f"{best.name} and {runner_up.name} tie on test macro-F1 at {format_score(macro_f1(best))}. {reason}{caveat}"
        )
    return (
        f"Best by test macro-F1: {best.name} with {format_score(macro_f1(best))} (balanced accuracy "
        f"{format_percent(best.metric('test', 'balanced_accuracy'))}), ahead of {runner_up.name} "
        f"({format_score(macro_f1(runner_up))}). {reason}{caveat}"
    )


def _caveat_sentences(runs: Sequence[Run]) -> list[str]:
    """After the ranking: how the runs' training budgets differ, and where the classical baseline stands."""
    budget = budget_sentence(runs)
    return ([budget] if budget else []) + baseline_sentences(runs)


def _significance_sentence(p_value: float) -> str:
    if p_value < 0.05:
        return f"The gap is statistically significant (McNemar p = {p_value:.2g})."
    return f"The gap may be chance (McNemar p = {p_value:.2g})."


def _num_test_samples(run: Run) -> Any:
    if is_number(run.metric("test", "num_samples")):
        return run.metric("test", "num_samples")
    return len(run.predictions) if run.predictions is not None else None


# --- 2. Summary table


def _summary_blocks(runs: Sequence[Run]) -> list[Block]:
    rows: list[list[Cell]] = [
        *_headline_rows(runs),
        # The speed side of the trade, next to accuracy: the prediction path's rows/s (pipeline.predict).
        _metric_row(
            "Prediction rows/s",
            runs,
            lambda r: r.metric("throughput", "predict_rows_per_second"),
            format_rate,
            higher=True,
        ),
        *_distill_rows(runs),
        *_baseline_rows(runs),
    ]
    for label in _by_support(runs, _all_labels(runs)):
        rows.append(
            _metric_row(
                f"F1: {label}",
                runs,
                lambda r, c=label: r.metric("test", "per_class", c, "f1"),
                format_score,
                higher=True,
            )
        )
    rows += [
        _metric_row("Test loss", runs, lambda r: r.metric("test", "loss"), format_score, higher=False),
        _text_row("Test samples", runs, lambda r: format_count(_num_test_samples(r))),
        _text_row("Best step", runs, _best_step_text),
        _text_row("Steps trained", runs, _steps_text),
        _text_row("Parameters", runs, lambda r: format_count(_num_parameters(r))),
        _text_row("Fixed length (tokens)", runs, _max_length_text),
        _text_row("Longer than the fixed length (test)", runs, lambda r: _long_text_share(r, "test")),
        _text_row("Longer than the fixed length (train)", runs, _truncated_train_text),
        _text_row("Training time", runs, lambda r: format_duration(r.metric("timings", "train_seconds"))),
        _text_row("Total time", runs, lambda r: format_duration(r.metric("timings", "total_seconds"))),
        _text_row(
            "Training samples/s", runs, lambda r: format_rate(r.metric("throughput", "train_samples_per_second"))
        ),
        _text_row(
            "Evaluation samples/s", runs, lambda r: format_rate(r.metric("throughput", "eval_samples_per_second"))
        ),
        _text_row("Device", runs, _device_text),
        _text_row("Mixed precision", runs, lambda r: _plain(r.metric("training", "mixed_precision"))),
        _text_row("Effective batch size", runs, lambda r: format_count(r.metric("training", "effective_batch_size"))),
        _text_row("Model", runs, _model_text),
        _text_row("Finished", runs, lambda r: _timestamp_text(r.metric("run", "finished_at"))),
    ]
    reason = imbalance_sentence(runs)
    leading = [Paragraph(reason, style="note")] if reason else []
    return [Heading(SECTION_SUMMARY), *leading, Table(["", *[run.name for run in runs]], rows), *_baseline_notes(runs)]


def _headline_rows(runs: Sequence[Run]) -> list[list[Cell]]:
    """Accuracy first, or macro-F1 and balanced accuracy first when train's classes are imbalanced (a note above
    the table says so); multi-label runs add micro- and samples-F1 and the Hamming loss."""

    def row(label: str, key: str, formatter: Callable[[Any], str], higher: bool = True) -> list[Cell]:
        return _metric_row(label, runs, lambda r: r.metric("test", key), formatter, higher=higher)

    accuracy = row("Test accuracy", "accuracy", format_percent)
    macro_f1 = row("Macro-F1", "macro_f1", format_score)
    balanced = (
        [row("Balanced accuracy", "balanced_accuracy", format_percent)]
        if any(is_number(run.metric("test", "balanced_accuracy")) for run in runs)
        else []
    )
    rows = [macro_f1, *balanced, accuracy] if any(map(is_imbalanced, runs)) else [accuracy, macro_f1, *balanced]
    if any(is_number(run.metric("test", "micro_f1")) for run in runs):
        rows += [
            row("Micro-F1", "micro_f1", format_score),
            row("Samples-F1", "samples_f1", format_score),
            row("Hamming loss", "hamming_loss", format_score, higher=False),
        ]
    return rows


def _baseline_rows(runs: Sequence[Run]) -> list[list[Cell]]:
    """The classical baseline's test accuracy, macro-F1 and training time per run; none when no run has one."""
    if not any(baseline_of(run) or baseline_error(run) for run in runs):
        return []
    return [
        _text_row("Baseline test accuracy", runs, lambda r: format_percent(nested_get(baseline_of(r), "accuracy"))),
        _text_row("Baseline macro-F1", runs, lambda r: format_score(nested_get(baseline_of(r), "macro_f1"))),
        _text_row(
            "Baseline training time", runs, lambda r: format_duration(nested_get(baseline_of(r), "train_seconds"))
        ),
    ]


def _baseline_notes(runs: Sequence[Run]) -> list[Block]:
    descriptions = sorted({baseline_description(record) for record in map(baseline_of, runs) if record})
    blocks: list[Block] = []
    if descriptions:
        blocks.append(
            Paragraph(
                f"Baseline: {', '.join(descriptions)}, fitted on each run's own train split and scored on its test split "
                "(eval.baseline).",
                style="meta",
            )
        )
    blocks += [
        Paragraph(f"{run.name}: the baseline could not be fitted: {error}", style="note")
        for run in runs
        for error in [baseline_error(run)]
        if error
    ]
    return blocks


def _long_text_share(run: Run, split: str) -> str:
    """The share of texts longer than the fixed length, and what became of them: truncated, or read in windows."""
    text = format_percent(run.metric("tokenization", "truncated_fraction", split))
    windows = run.metric("tokenization", "windows_per_document", split)
    if isinstance(windows, dict) and is_number(windows.get("mean")):
        return f"{text}, read in windows ({windows['mean']:.2f} per text, max {windows.get('max')})"
    return f"{text} truncated" if text != MISSING else text


def _truncated_train_text(run: Run) -> str:
    text = _long_text_share(run, "train")
    over = truncation_over_budget(run)
    return f"{text} (over the {format_percent(over[1])} budget)" if over else text


def _metric_row(
    label: str, runs: Sequence[Run], value_of: Callable[[Run], Any], formatter: Callable[[Any], str], higher: bool
) -> list[Cell]:
    """A numeric row; with several runs the best value is emphasised."""
    values = [value_of(run) for run in runs]
    numbers = [value for value in values if is_number(value)]
    best = (max(numbers) if higher else min(numbers)) if len(runs) > 1 and len(set(numbers)) > 1 else None
    cells = [Cell(formatter(value), "best" if best is not None and value == best else "num") for value in values]
    return [Cell(label), *cells]


def _distill_rows(runs: Sequence[Run]) -> list[list[Cell]]:
    """Which teacher a distilled run learnt from, and how (metrics.json `distill`); none when no run was distilled."""
    if not any(run.metric("distill") for run in runs):
        return []

    def teacher_text(run: Run) -> str:
        record = run.metric("distill")
        if not record:
            return MISSING
        accuracy = record.get("teacher_test_accuracy")
        tested = f" (test {format_percent(accuracy)})" if is_number(accuracy) else ""
        return f"{record.get('teacher')}{tested}"

    def settings_text(run: Run) -> str:
        record = run.metric("distill")
        if not record:
            return MISSING
        augment = record.get("augment") or "none"
        copies = f" x{record.get('augment_copies')}" if augment != "none" else ""
        embeddings = ", teacher's embeddings" if record.get("init_embeddings") else ""
        return (
            f"alpha {record.get('alpha')}, T {record.get('temperature')}, augment {augment}{copies}{embeddings}, "
            f"{format_count(nested_get(record, 'transfer_set', 'total'))} transfer rows"
        )

    return [_text_row("Distilled from", runs, teacher_text), _text_row("Distillation", runs, settings_text)]


def _text_row(label: str, runs: Sequence[Run], text_of: Callable[[Run], str]) -> list[Cell]:
    return [Cell(label), *[Cell(text_of(run), "num") for run in runs]]


def _all_labels(runs: Sequence[Run]) -> list[str]:
    """Class names in the first run's order; classes only later runs know are appended."""
    labels: list[str] = []
    for run in runs:
        labels += [label for label in run.labels if label not in labels]
    return labels


def _plain(value: Any) -> str:
    return MISSING if value is None or value == "" else str(value)


def _best_step_text(run: Run) -> str:
    step = run.metric("best", "step")
    if not is_number(step):
        return MISSING
    accuracy = run.metric("best", "validation_accuracy")
    return f"{format_count(step)} (val. {format_percent(accuracy)})" if is_number(accuracy) else format_count(step)


def _steps_text(run: Run) -> str:
    steps, epochs = run.metric("training", "global_steps"), run.metric("training", "epochs_completed")
    if not is_number(steps):
        return MISSING
    text = format_count(steps) + (f" ({epochs:.2f} epochs)" if is_number(epochs) else "")
    return text + (", stopped early" if run.metric("training", "stopped_early") is True else "")


def _num_parameters(run: Run) -> Any:
    return run.metric("run", "num_parameters")


def _max_length_text(run: Run) -> str:
    length = run.metric("tokenization", "max_length")
    setting = run.metric("tokenization", "max_length_setting")
    if not is_number(length):
        return MISSING
    return f"{format_count(length)} (auto)" if setting == "auto" else format_count(length)


def _device_text(run: Run) -> str:
    kind, name = run.metric("device", "type"), run.metric("device", "name")
    processes = run.metric("device", "num_processes") or run.metric("training", "num_processes")
    if kind is None and name is None:
        return MISSING
    device = f"{kind} ({name})" if kind and name and name != kind else str(kind or name)
    if is_number(processes):
        device += f", {int(processes)} process" + ("es" if processes != 1 else "")
    return device


def _model_text(run: Run) -> str:
    kind = run.metric("run", "model_kind") or nested_get(run.config, "model", "kind")
    name = run.metric("run", "model_name_or_path") or nested_get(run.config, "model", "name_or_path")
    if kind == "encoder":
        # The from-scratch encoder borrows only a tokenizer; its name_or_path names no pretrained weights.
        return "encoder (from scratch)"
    return " · ".join(str(part) for part in (kind, name) if part) or MISSING


def _timestamp_text(value: Any) -> str:
    if not isinstance(value, str):
        return MISSING
    try:
        return f"{datetime.fromisoformat(value):%Y-%m-%d %H:%M}"
    except ValueError:
        return value


# --- 3. Confusion matrices


def _confusion_blocks(runs: Sequence[Run]) -> list[Block]:
    blocks: list[Block] = [
        Heading(SECTION_CONFUSION),
        Paragraph("Rows: true class; columns: predicted class. Colour: share of the true class.", style="meta"),
    ]
    images = []
    for run in runs:
        matrix = run.metric("test", "confusion_matrix")
        if run.metric("data", "task") == "multi_label":
            blocks.append(
                Paragraph(
                    f"{run.name}: a multi-label task has no confusion matrix; see the per-class precision and recall.",
                    style="note",
                )
            )
            continue
        if not _valid_matrix(matrix, len(run.labels)):
            blocks.append(Paragraph(f"{run.name}: {METRICS_FILE} has no usable test confusion matrix.", style="note"))
            continue
        title = f"{run.name} (test accuracy {format_percent(run.metric('test', 'accuracy'))})"
        figure = plots.confusion_matrix_figure(matrix, run.labels, title=truncate(title, 60))
        # No caption: the chart's own title names the run.
        images.append(Chart(plots.figure_to_png(figure), alt_text=f"confusion matrix of {run.name}"))
        blocks += [Heading(run.name, level=3, only="md"), _confusion_table(matrix, run.labels)]
    if images:
        blocks.append(Images(images, only="html"))
    return blocks


def _valid_matrix(matrix: Any, size: int) -> bool:
    return (
        isinstance(matrix, list)
        and len(matrix) == size
        and all(isinstance(row, list) and len(row) == size and all(map(is_number, row)) for row in matrix)
    )


def _confusion_table(matrix: list[list[float]], labels: list[str]) -> Table:
    """Row-normalised: each cell is the share of its true class (so rare classes read as clearly as common ones),
    with the count beside it."""
    rows = []
    for label, row in zip(labels, matrix):
        total = sum(row)
        cells = [
            Cell(f"{format_percent(count / total, 1) if total else MISSING} ({format_count(count)})", "num")
            for count in row
        ]
        rows.append([Cell(label), *cells])
    return Table(["true ↓ predicted → (share of the true class)", *labels], rows, only="md")


# --- 4. Validation curves


def eval_curve(run: Run) -> plots.EvalCurve:
    """The validation accuracy points of a run's training history (the lines that carry eval_accuracy)."""
    points = [line for line in run.history if is_number(line.get("eval_accuracy")) and is_number(line.get("step"))]
    best_step = run.metric("best", "step")
    return plots.EvalCurve(
        run_name=run.name,
        steps=[point["step"] for point in points],
        elapsed_seconds=[
            point["elapsed_seconds"] if is_number(point.get("elapsed_seconds")) else None for point in points
        ],
        accuracies=[point["eval_accuracy"] for point in points],
        best_step=best_step if is_number(best_step) else None,
    )


def _curve_blocks(runs: Sequence[Run]) -> list[Block]:
    blocks: list[Block] = [Heading(SECTION_CURVES)]
    curves = [eval_curve(run) for run in runs]
    with_points = [curve for curve in curves if curve.steps]
    for curve in curves:
        if not curve.steps:
            blocks.append(
                Paragraph(f"{curve.run_name}: {HISTORY_FILE} has no evaluation lines, so no curve.", style="note")
            )
    if not with_points:
        return blocks
    figure = plots.validation_curves_figure(with_points)
    caption = "Validation accuracy by optimizer step and by training time; ★ marks the selected (best) model."
    blocks.append(Images([Chart(plots.figure_to_png(figure), "validation accuracy curves", caption)], only="html"))
    blocks.append(Paragraph(f"The curves are drawn in {REPORT_HTML}.", style="meta", only="md"))
    rows = [
        [
            Cell(curve.run_name),
            Cell(format_count(len(curve.steps)), "num"),
            Cell(_curve_point(curve, 0), "num"),
            Cell(_curve_point(curve, int(np.argmax(curve.accuracies))), "num"),
            Cell(_curve_point(curve, -1), "num"),
        ]
        for curve in with_points
    ]
    blocks.append(Table(["Run", "Evaluations", "First", "Highest", "Last"], rows))
    return blocks


def _curve_point(curve: plots.EvalCurve, index: int) -> str:
    elapsed = curve.elapsed_seconds[index]
    when = f", {format_duration(elapsed)}" if elapsed is not None else ""
    return f"{format_percent(curve.accuracies[index])} (step {format_count(curve.steps[index])}{when})"


# --- 5. Per-class F1


def _per_class_blocks(runs: Sequence[Run]) -> list[Block]:
    labels = _by_support(runs, _all_labels(runs))
    f1_by_run = {run.name: [_per_class_value(run, label, "f1") for label in labels] for run in runs}
    blocks: list[Block] = [Heading(SECTION_PER_CLASS)]
    if any(value is not None for values in f1_by_run.values() for value in values):
        figure = plots.per_class_f1_figure(labels, f1_by_run)
        chart = Chart(plots.figure_to_png(figure), "per-class F1 bars", "F1 per class on the test split")
        blocks.append(Images([chart], only="html"))
    blocks.append(_per_class_table(runs, labels))
    return blocks


def _by_support(runs: Sequence[Run], labels: list[str]) -> list[str]:
    """Classes with the most test rows first (the first run that knows a class gives its support)."""

    def support(label: str) -> float:
        found = next(
            (value for value in (_per_class_value(run, label, "support") for run in runs) if value is not None), None
        )
        return -(found or 0)

    return sorted(labels, key=support)


def _per_class_table(runs: Sequence[Run], labels: list[str]) -> Table:
    """One row per class and run (a column per run would need unreadably long headers), best F1 in bold; classes
    with the most test rows first."""
    several = len(runs) > 1
    rows, row_styles = [], []
    for label in labels:
        f1_values = [_per_class_value(run, label, "f1") for run in runs]
        best_f1 = max((value for value in f1_values if value is not None), default=None)
        support = next(
            (value for value in (_per_class_value(run, label, "support") for run in runs) if value is not None), None
        )
        for index, (run, f1) in enumerate(zip(runs, f1_values)):
            first_of_class = index == 0
            row = [Cell(label if first_of_class else ""), Cell(format_count(support) if first_of_class else "", "num")]
            row += [Cell(run.name)] if several else []
            row += [
                Cell(format_score(_per_class_value(run, label, "precision")), "num"),
                Cell(format_score(_per_class_value(run, label, "recall")), "num"),
                Cell(format_score(f1), "best" if several and f1 is not None and f1 == best_f1 else "num"),
            ]
            rows.append(row)
            row_styles.append("group-start" if first_of_class and several else "")
    header = ["Class", "Support", *(["Run"] if several else []), "Precision", "Recall", "F1"]
    return Table(header, rows, row_styles=row_styles)


def _per_class_value(run: Run, label: str, key: str) -> float | None:
    value = run.metric("test", "per_class", label, key)
    return value if is_number(value) else None


# --- 6. Disagreements


def _disagreement_blocks(comparison: Comparison) -> list[Block]:
    blocks: list[Block] = [Heading(SECTION_DISAGREEMENTS)]
    if comparison.unavailable_reason:
        return blocks + [Paragraph(f"No comparison: {comparison.unavailable_reason}.", style="note")]
    if comparison.left_out:
        blocks.append(
            Paragraph(f"Left out for lack of {PREDICTIONS_FILE}: {', '.join(comparison.left_out)}.", style="note")
        )
    disagreements = comparison.disagreements
    count, total = len(disagreements), comparison.num_rows
    share = f" ({100 * count / total:.1f}%)" if total else ""
    blocks.append(Paragraph(f"The runs disagree on {count:,} of {total:,} test texts{share}."))
    if count == 0:
        return blocks
    right = "; ".join(f"{name} right on {comparison.right_counts[name]:,}" for name in comparison.run_names)
    summary = f"Of those: {right}; all wrong on {comparison.all_wrong_count:,}."
    if comparison.mcnemar_p_value is not None:
        p_value = comparison.mcnemar_p_value
        reading = (
            "below 0.05: the accuracy gap is unlikely to be chance"
            if p_value < 0.05
            else "not below 0.05: the accuracy gap may be chance"
        )
        summary += f" McNemar's exact test on these texts: p = {p_value:.2g} ({reading})."
    blocks.append(Paragraph(summary))
    shown = _order_disagreements(disagreements, comparison.run_names).head(MAX_DISAGREEMENT_ROWS)
    blocks.append(
        Paragraph(
            f"{'All' if len(shown) == count else f'The first {len(shown)}'} of them, those where every run was surest "
            f"of its answer first (row: the text's id in the data, or for older runs its position in {PREDICTIONS_FILE}; "
            "✓ right, ✗ wrong; score: "
            "probability of the predicted class).",
            style="meta",
        )
    )
    rows = []
    for row_index, row in shown.iterrows():
        cells = _row_text_gold_cells(row_index, row)
        for name in comparison.run_names:
            cells.append(_prediction_cell(row[predicted_column(name)], row[score_column(name)], row[PREDICTION_GOLD]))
        rows.append(cells)
    blocks.append(Table(["Row", "Text", "Gold", *comparison.run_names], rows))
    return blocks


def _order_disagreements(disagreements: pd.DataFrame, run_names: list[str]) -> pd.DataFrame:
    """Most striking first: texts where even the least sure run was sure, i.e. confident conflicting answers."""
    least_sure = disagreements[[score_column(name) for name in run_names]].min(axis=1)
    return disagreements.assign(_least_sure=least_sure).sort_values("_least_sure", ascending=False, kind="stable")


def _row_text_gold_cells(row_index: Any, row: pd.Series) -> list[Cell]:
    """The first cells of a row about one test text: its id (the data's id column or its line number, so results
    join back to the source; older runs: its position in the predictions file), the text, the gold class."""
    row_id = row.get(PREDICTION_ROW_ID, row_index)
    return [Cell(str(row_id), "num"), Cell(truncate(row[PREDICTION_TEXT]), "text"), Cell(str(row[PREDICTION_GOLD]))]


def _prediction_cell(predicted: str, score: float, gold: str) -> Cell:
    is_right = predicted == gold
    return Cell(f"{'✓' if is_right else '✗'} {predicted} ({score:.3f})", "right" if is_right else "wrong")


# --- ONNX export (single-run reports): parity with PyTorch and speed, from onnx/export.json


def _export_blocks(run: Run) -> list[Block]:
    from pipeline.export.record import (
        ExportError,
        auto_backend,
        parity_rows,
        read_export_record,
    )

    try:
        record = read_export_record(run.path)
    except ExportError as error:
        return [Heading(SECTION_EXPORT), Paragraph(str(error), style="note")]
    if record is None:
        return []
    verification = record.get("verification") or {}
    meta = (
        f"Scored on {format_count(verification.get('rows'))} rows ({verification.get('source', MISSING)}) on "
        f"{verification.get('machine', MISSING)}; agreement and probability difference against PyTorch fp32. "
        f"An export that disagrees on more than {format_percent(verification.get('max_disagreement'))} of the "
        f"rows or loses more than {verification.get('max_accuracy_loss_points', MISSING)} accuracy points is "
        "refused."
    )
    rows = [
        [
            Cell(row.backend),
            Cell(format_percent(row.label_agreement), "num"),
            Cell(MISSING if row.max_probability_difference is None else f"{row.max_probability_difference:.4f}", "num"),
            Cell(format_percent(row.accuracy), "num"),
            Cell(format_rate(row.rows_per_second), "num"),
            Cell(MISSING if row.speedup is None else f"{row.speedup:.2f}x", "num"),
            Cell(row.status),
        ]
        for row in parity_rows(record)
    ]
    return [
        Heading(SECTION_EXPORT),
        Paragraph(meta, style="meta"),
        Table(
            ["Backend", "Label agreement", "Max prob. difference", "Accuracy", "Rows/s", "Speed vs PyTorch", "Status"],
            rows,
        ),
        Paragraph(f"--backend auto runs {auto_backend(record)}: {record.get('auto_reason', MISSING)}."),
    ]


# --- 7. Most confident mistakes


def _mistake_blocks(runs: Sequence[Run]) -> list[Block]:
    blocks: list[Block] = [Heading(SECTION_MISTAKES)]
    for run in runs:
        blocks.append(Heading(run.name, level=3))
        if run.predictions is None:
            blocks.append(Paragraph(f"No {PREDICTIONS_FILE} in this run, so no mistakes to show.", style="note"))
            continue
        mistakes = most_confident_mistakes(run.predictions)
        if mistakes.empty:
            blocks.append(Paragraph("No mistakes: every test text was classified correctly."))
            continue
        num_wrong = int((run.predictions[PREDICTION_PREDICTED] != run.predictions[PREDICTION_GOLD]).sum())
        blocks.append(
            Paragraph(f"{len(mistakes)} of {num_wrong:,} wrong predictions, highest score first.", style="meta")
        )
        rows = [
            [
                *_row_text_gold_cells(row_index, row),
                Cell(str(row[PREDICTION_PREDICTED])),
                Cell(f"{row[PREDICTION_SCORE]:.3f}", "num"),
            ]
            for row_index, row in mistakes.iterrows()
        ]
        blocks.append(Table(["Row", "Text", "Gold", "Predicted", "Score"], rows))
    return blocks
