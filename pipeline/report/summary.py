"""The report's summary table (one row per figure, one column per run, the best value emphasised) and the class
order (most test rows first) that the per-class section shares."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from pipeline.report.blocks import Block, Cell, Heading, Paragraph, Table
from pipeline.report.caveats import baseline_description, baseline_error, baseline_of, truncation_over_budget
from pipeline.report.formatting import (
    MISSING,
    format_count,
    format_duration,
    format_metric,
    format_percent,
    format_rate,
    format_score,
)
from pipeline.report.plots import MAX_PLOTTED_CLASSES
from pipeline.report.runs import Run, num_test_samples, ranks_models, repeats_its_run
from pipeline.report.scores import imbalance_sentence, is_imbalanced
from pipeline.run.directory import config_setting, per_class_score
from pipeline.run.record import RANKING_METRICS, Baseline, Distill, is_number
from pipeline.scoring.thresholds import selection_cut_off

SECTION_SUMMARY = "Summary"
# A multi-label run's accuracy beside single-label runs: subset accuracy, a far stricter figure.
EXACT_MATCH = "exact-match"


def summary_blocks(runs: Sequence[Run]) -> list[Block]:
    rows: list[list[Cell]] = [
        *_headline_rows(runs),
        _metric_row("Prediction rows/s", runs, lambda r: r.metrics.throughput.predict_rows_per_second, format_rate),
        *_distill_rows(runs),
        *_baseline_rows(runs),
    ]
    labels = by_support(runs, all_labels(runs))
    for label in labels[:MAX_PLOTTED_CLASSES]:  # the largest classes; every one is in the per-class table
        rows.append(_metric_row(f"F1: {label}", runs, lambda r, c=label: per_class_value(r, c, "f1"), format_score))
    if len(labels) > MAX_PLOTTED_CLASSES:
        more = len(labels) - MAX_PLOTTED_CLASSES
        rows.append(_text_row(f"F1: {more:,} smaller classes", runs, lambda r: "in the per-class table"))
    rows += [
        _metric_row("Test loss", runs, lambda r: r.metrics.test.loss, format_score, higher=False),
        _text_row("Test samples", runs, lambda r: format_count(num_test_samples(r))),
        _text_row("Best step", runs, _best_step_text),
        _text_row("Steps trained", runs, _steps_text),
        _text_row("Parameters", runs, lambda r: format_count(r.metrics.run.num_parameters)),
        _text_row("Fixed length (tokens)", runs, _max_length_text),
        _text_row("Longer than the fixed length (test)", runs, lambda r: _long_text_share(r, "test")),
        _text_row("Longer than the fixed length (train)", runs, _truncated_train_text),
        _text_row("Training time", runs, lambda r: format_duration(r.metrics.timings.train_seconds)),
        _text_row("Validation during training", runs, _validation_text),
        _text_row("Total time", runs, lambda r: format_duration(r.metrics.timings.total_seconds)),
        *([_text_row("Time budget", runs, _budget_text)] if any(_budget_text(r) != MISSING for r in runs) else []),
        # Where the rest of the run went: start-up, validation, evaluation, outputs (the report's own writing aside).
        _text_row("Time by phase", runs, lambda r: r.metrics.timings.split or MISSING),
        _text_row("Training samples/s", runs, lambda r: format_rate(r.metrics.throughput.train_samples_per_second)),
        _text_row("Evaluation samples/s", runs, lambda r: format_rate(r.metrics.throughput.eval_samples_per_second)),
        _text_row("Device", runs, _device_text),
        _text_row("Mixed precision", runs, lambda r: _plain(r.metrics.training.mixed_precision)),
        _text_row("Effective batch size", runs, lambda r: format_count(r.metrics.training.effective_batch_size)),
        _text_row("Model", runs, _model_text),
        _text_row("Finished", runs, lambda r: _timestamp_text(r.metrics.run.finished_at)),
    ]
    reason = imbalance_sentence(runs)
    leading = [Paragraph(reason, style="note")] if reason else []
    return [Heading(SECTION_SUMMARY), *leading, Table(["", *[run.name for run in runs]], rows), *_baseline_notes(runs)]


def _headline_rows(runs: Sequence[Run]) -> list[list[Cell]]:
    """Accuracy first, or macro-F1 and balanced accuracy when train's classes are imbalanced; micro-F1 first (as
    subset accuracy) when every run is multi-label."""

    def row(label: str, key: str, formatter: Callable[[Any], str], **options: Any) -> list[Cell]:
        return _metric_row(label, runs, lambda r: r.metrics.test.figure(key), formatter, **options)

    macro_f1 = row("Macro-F1", "macro_f1", format_score)
    multi_label = [
        row("Micro-F1", "micro_f1", format_score),
        row("Samples-F1", "samples_f1", format_score),
        row("Hamming loss", "hamming_loss", format_score, higher=False),
    ]
    if all(run.multi_label for run in runs):
        micro_f1, *others = multi_label
        return [micro_f1, macro_f1, row("Subset accuracy", "accuracy", format_percent), *others]
    accuracy = row("Test accuracy", "accuracy", format_percent, qualifier=_exact_match)
    has_balanced = any(is_number(run.metrics.test.balanced_accuracy) for run in runs)
    balanced = [row("Balanced accuracy", "balanced_accuracy", format_percent)] if has_balanced else []
    rows = [macro_f1, *balanced, accuracy] if any(map(is_imbalanced, runs)) else [accuracy, macro_f1, *balanced]
    if any(is_number(run.metrics.test.micro_f1) for run in runs):
        rows += multi_label
    return rows


def _baseline_rows(runs: Sequence[Run]) -> list[list[Cell]]:
    """The classical baseline's figures per run; none when no run has one."""
    if not any(baseline_of(run) or baseline_error(run) for run in runs):
        return []
    subset = all(run.multi_label for run in runs)

    def row(label: str, text_of: Callable[[Baseline, Run], str]) -> list[Cell]:
        return _text_row(f"Baseline {label}", runs, lambda run: text_of(baseline_of(run) or Baseline(), run))

    def accuracy_text(record: Baseline, run: Run) -> str:
        qualifier = _exact_match(run) if not subset and is_number(record.accuracy) else ""
        return format_percent(record.accuracy) + qualifier

    micro_f1 = any(run.ranking_metric == "micro_f1" for run in runs)
    return [
        *([row("micro-F1", lambda record, _: format_score(record.micro_f1))] if micro_f1 else []),
        row("subset accuracy" if subset else "test accuracy", accuracy_text),
        row("macro-F1", lambda record, _: format_score(record.macro_f1)),
        row("training time", lambda record, _: format_duration(record.train_seconds)),
    ]


def _baseline_notes(runs: Sequence[Run]) -> list[Block]:
    descriptions = sorted({baseline_description(record) for record in map(baseline_of, runs) if record})
    fitted = f"Baseline: {', '.join(descriptions)}, fitted on each run's own train split and scored on its test split (eval.baseline)."
    blocks: list[Block] = [Paragraph(fitted, style="meta")] if descriptions else []
    errors = [(run.name, baseline_error(run)) for run in runs]
    return blocks + [
        Paragraph(f"{name}: the baseline could not be fitted: {error}", style="note") for name, error in errors if error
    ]


def _long_text_share(run: Run, split: str) -> str:
    """The share of texts longer than the fixed length: truncated, or read in windows."""
    text = format_percent((run.metrics.tokenization.truncated_fraction or {}).get(split))
    windows = (run.metrics.tokenization.windows_per_document or {}).get(split)
    if isinstance(windows, dict) and is_number(windows.get("mean")):
        return f"{text}, read in windows ({windows['mean']:.2f} per text, max {windows.get('max')})"
    return f"{text} truncated" if text != MISSING else text


def _truncated_train_text(run: Run) -> str:
    text = _long_text_share(run, "train")
    over = truncation_over_budget(run)
    return f"{text} (over the {format_percent(over[1])} budget)" if over else text


def _exact_match(run: Run) -> str:
    return f" ({EXACT_MATCH})" if run.multi_label else ""


def _metric_row(
    label: str,
    runs: Sequence[Run],
    value_of: Callable[[Run], Any],
    formatter: Callable[[Any], str],
    higher: bool = True,
    qualifier: Callable[[Run], str] | None = None,
) -> list[Cell]:
    """A numeric row, the best value emphasised where the report ranks the runs; a pipeline.evaluate folder beside the
    run it scored (the same model on another file) is no rival."""
    values = [value_of(run) for run in runs]
    rivals = [not repeats_its_run(run, runs) for run in runs]
    numbers = [value for value, rival in zip(values, rivals) if rival and is_number(value)]
    compared = ranks_models(runs) and len(set(numbers)) > 1
    best = (max(numbers) if higher else min(numbers)) if compared else None
    cells = [
        Cell(
            formatter(value) + (qualifier(run) if qualifier and is_number(value) else ""),
            "best" if best is not None and rival and value == best else "num",
        )
        for run, value, rival in zip(runs, values, rivals)
    ]
    return [Cell(label), *cells]


def _distill_rows(runs: Sequence[Run]) -> list[list[Cell]]:
    if not any(run.metrics.distill for run in runs):
        return []

    def row(label: str, text_of: Callable[[Distill], str]) -> list[Cell]:
        return _text_row(label, runs, lambda run: text_of(run.metrics.distill) if run.metrics.distill else MISSING)

    def teacher_text(record: Distill) -> str:
        accuracy = record.teacher_test_accuracy
        tested = f" (test {format_percent(accuracy)})" if is_number(accuracy) else ""
        return f"{record.teacher}{tested}"

    def settings_text(record: Distill) -> str:
        augment = record.augment or "none"
        copies = f" x{record.augment_copies}" if augment != "none" else ""
        embeddings = ", teacher's embeddings" if record.init_embeddings else ""
        return (
            f"alpha {record.alpha}, T {record.temperature}, augment {augment}{copies}{embeddings}, "
            f"{format_count((record.transfer_set or {}).get('total'))} transfer rows"
        )

    return [row("Distilled from", teacher_text), row("Distillation", settings_text)]


def _text_row(label: str, runs: Sequence[Run], text_of: Callable[[Run], str]) -> list[Cell]:
    return [Cell(label), *[Cell(text_of(run), "num") for run in runs]]


def all_labels(runs: Sequence[Run]) -> list[str]:
    """Class names in the first run's order; classes only later runs know are appended."""
    labels: list[str] = []
    for run in runs:
        labels += [label for label in run.labels if label not in labels]
    return labels


def _plain(value: Any) -> str:
    return MISSING if value is None or value == "" else str(value)


def _best_step_text(run: Run) -> str:
    step = run.metrics.best.step
    if not is_number(step):
        return MISSING
    key, score = run.ranking_metric, run.metrics.best.score
    if not is_number(score):
        return format_count(step)
    cut_off = selection_cut_off(run.metrics)  # the run's validation figures apply its thresholds; this did not
    return f"{format_count(step)} (val. {RANKING_METRICS[key]} {format_metric(key, score)}{', ' + cut_off if cut_off else ''})"


def _steps_text(run: Run) -> str:
    steps, epochs = run.metrics.training.global_steps, run.metrics.training.epochs_completed
    if not is_number(steps):
        return MISSING
    text = format_count(steps) + (f" ({epochs:.2f} epochs)" if is_number(epochs) else "")
    return text + (", stopped early" if run.metrics.training.stopped_early is True else "")


def _validation_text(run: Run) -> str:
    """The passes, their time and its share of training time (train.eval_budget caps it under `auto`)."""
    training, train_seconds = run.metrics.training, run.metrics.timings.train_seconds
    if not is_number(training.validation_seconds) or not is_number(training.validation_passes):
        return MISSING
    # A run resumed after training has no training seconds of its own to share the passes with.
    share = (
        f", {training.validation_seconds / train_seconds:.0%} of training"
        if is_number(train_seconds) and train_seconds > 0
        else ""
    )
    return f"{format_count(training.validation_passes)} passes, {format_duration(training.validation_seconds)}{share}"


def _budget_text(run: Run) -> str:
    """train.time_budget and the steps it allowed."""
    training = run.metrics.training
    if not is_number(training.time_budget_seconds) or not is_number(training.time_budget_steps):
        return MISSING
    return f"{format_duration(training.time_budget_seconds)}: {format_count(training.time_budget_steps)} steps allowed"


def _max_length_text(run: Run) -> str:
    tokenization = run.metrics.tokenization
    auto = " (auto)" if tokenization.max_length_setting == "auto" and is_number(tokenization.max_length) else ""
    return format_count(tokenization.max_length) + auto


def _device_text(run: Run) -> str:
    kind, name = run.metrics.device.type, run.metrics.device.name
    processes = run.metrics.device.num_processes or run.metrics.training.num_processes
    if kind is None and name is None:
        return MISSING
    device = f"{kind} ({name})" if kind and name and name != kind else str(kind or name)
    if is_number(processes):
        device += f", {int(processes)} process" + ("es" if processes != 1 else "")
    return device


def _model_text(run: Run) -> str:
    kind = run.metrics.run.model_kind or config_setting(run.config, "model", "kind")
    name = run.metrics.run.model_name_or_path or config_setting(run.config, "model", "name_or_path")
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


def by_support(runs: Sequence[Run], labels: list[str]) -> list[str]:
    """Classes with the most test rows first (the first run that knows a class gives its support)."""

    def support(label: str) -> float:
        values = (per_class_value(run, label, "support") for run in runs)
        return -(next((value for value in values if value is not None), None) or 0)

    return sorted(labels, key=support)


def per_class_value(run: Run, label: str, key: str) -> float | None:
    return per_class_score((run.metrics.test.per_class or {}).get(label), key)
