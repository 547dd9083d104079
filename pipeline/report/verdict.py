"""The report's opening: when it was made and from which runs, the verdict (which run is best, by which metric,
and how sure), and the notes that qualify it (training budgets, the baseline, what was skipped or over-truncated)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from pipeline.report.analysis import Comparison, compare_predictions, gap_reading
from pipeline.report.blocks import Block, Paragraph
from pipeline.report.caveats import (
    baseline_sentences,
    budget_sentence,
    collapse_note,
    small_test_note,
    truncation_note,
    unknown_tokens_note,
    unpredicted_note,
    untrained_note,
)
from pipeline.report.formatting import format_count, format_metric, format_percent, format_score
from pipeline.report.runs import Run, num_test_samples, one_model, repeats_its_run, same_task
from pipeline.report.scores import imbalance_sentence, is_imbalanced
from pipeline.run.record import RANKING_METRICS, is_number

DIFFERENT_DATA_CAUTION = "Caution: the runs were tested on different data."


def header_blocks(runs: Sequence[Run], comparison: Comparison | None, generated_at: datetime) -> list[Block]:
    locations = ", ".join(f"{run.name} ({run.path})" for run in runs)
    blocks: list[Block] = [
        Paragraph(f"Generated {generated_at:%Y-%m-%d %H:%M %Z}. Runs: {locations}.", style="meta"),
        Paragraph(" ".join(_verdict_sentences(runs, comparison)), style="verdict"),
    ]
    blocks += [Paragraph(evaluation_note(run), style="note") for run in runs if run.metrics.evaluation]

    def notes(of: Callable[[Run], list[str | None]], shown: Sequence[Run] = runs) -> list[Block]:
        return [Paragraph(f"{run.name}: {note}", style="note") for run in shown for note in of(run) if note]

    blocks += notes(lambda run: run.notes)
    # Notes on how the model was trained: once, on the run itself.
    trained = [run for run in runs if not repeats_its_run(run, runs)]
    blocks += notes(lambda run: [truncation_note(run), untrained_note(run)], trained)
    # On every run, a pipeline.evaluate folder too: a model may collapse on one file only.
    return blocks + notes(
        lambda run: [small_test_note(run), unknown_tokens_note(run), collapse_note(run), unpredicted_note(run)]
    )


def evaluation_note(run: Run) -> str:
    """A folder of python -m pipeline.evaluate: its test figures are another file's, the rest the run's own."""
    record = run.metrics.evaluation
    seen = f" It is the run's own {record.run_file}: these figures overstate how the model does on new text."
    return (
        f"{run.name}: the model of {record.model} scored on {record.input} ({format_count(record.rows)} rows) by python -m pipeline.evaluate. "
        f"Test figures are that file's; validation figures, thresholds and training records are the run's own.{seen if record.run_file else ''}"
    )


def _verdict_sentences(runs: Sequence[Run], comparison: Comparison | None) -> list[str]:
    """The verdict and its caveats, ranking without a pipeline.evaluate folder beside the run it scored (no rival)."""
    if one_model(runs):
        return [_one_model_verdict(runs)]
    competing = [run for run in runs if not repeats_its_run(run, runs)]
    if len(competing) < len(runs):
        comparison = compare_predictions(competing) if len(competing) > 1 else None
    budget = budget_sentence(competing)
    return [_verdict(competing, comparison), *([budget] if budget else []), *baseline_sentences(competing)]


def _verdict(runs: Sequence[Run], comparison: Comparison | None) -> str:
    imbalanced = any(map(is_imbalanced, runs))
    if len(runs) == 1:
        run = runs[0]
        samples = f"on {format_count(num_test_samples(run))} test texts."
        if imbalanced:  # accuracy would mostly measure the majority classes
            return (
                f"{run.name}: test macro-F1 {format_score(run.metrics.test.macro_f1)}, balanced accuracy {format_percent(run.metrics.test.balanced_accuracy)} "
                f"(accuracy {format_percent(run.metrics.test.accuracy)}) {samples} {imbalance_sentence(runs)}"
            )
        if run.ranking_metric == "micro_f1":  # multi-label: accuracy is subset accuracy, every label of a text right
            return (
                f"{run.name}: test micro-F1 {format_score(run.metrics.test.micro_f1)}, subset accuracy {format_percent(run.metrics.test.accuracy)}, "
                f"macro-F1 {format_score(run.metrics.test.macro_f1)} {samples}"
            )
        return f"{run.name}: test accuracy {format_percent(run.metrics.test.accuracy)}, macro-F1 {format_score(run.metrics.test.macro_f1)} {samples}"
    if not same_task(runs):
        return _unranked_verdict(runs)
    # Imbalanced classes are ranked by macro-F1, multi-label runs side by side by micro-F1, any other mix by accuracy.
    multi_label = all(run.ranking_metric == "micro_f1" for run in runs)
    return _ranked_verdict(runs, comparison, "macro_f1" if imbalanced else "micro_f1" if multi_label else "accuracy")


def _ranked_verdict(runs: Sequence[Run], comparison: Comparison | None, key: str) -> str:
    """The best run by test `key` and its lead over the runner-up, or the runs that tie for best."""

    def score(run: Run) -> float:
        value = run.metrics.test.figure(key)
        return value if is_number(value) else -1.0

    ranked = sorted(runs, key=score, reverse=True)
    best, runner_up = ranked[0], ranked[1]
    name, (best_text, runner_up_text) = RANKING_METRICS[key], (format_metric(key, score(run)) for run in ranked[:2])
    p_value = comparison.mcnemar_p_value if comparison is not None else None
    caveat = f" {DIFFERENT_DATA_CAUTION}" if _tested_on_different_data(runs, comparison) else ""
    if not caveat and key == "accuracy" and p_value is not None and len(runs) == 2:
        # Only with two runs does the test compare the pair the gap above does; it speaks to accuracy, not micro-F1.
        caveat = f" McNemar's exact test: p = {p_value:.2g} ({gap_reading(p_value)})."
    if key == "macro_f1":
        caveat = f" {imbalance_sentence(runs)}{caveat}"
    if score(best) == score(runner_up):
        tied = [run.name for run in ranked if score(run) == score(best)]
        return f"{' and '.join(tied)} tie on test {name} at {best_text}.{caveat}"
    if key == "macro_f1":
        balanced = format_percent(best.metrics.test.balanced_accuracy)
        return f"Best by test {name}: {best.name} with {best_text} (balanced accuracy {balanced}), ahead of {runner_up.name} ({runner_up_text}).{caveat}"
    gap_points, rival = 100 * (score(best) - score(runner_up)), "runner-up " if len(runs) > 2 else ""
    return f"Best by test {name}: {best.name} with {best_text}, {gap_points:.2f} points ahead of {rival}{runner_up.name} ({runner_up_text}).{caveat}"


def _one_model_verdict(runs: Sequence[Run]) -> str:
    """A run beside folders that scored its model on other files: scores side by side, not ranked."""
    key = runs[0].ranking_metric
    scores = ", ".join(
        f"{format_metric(key, run.metrics.test.figure(key))} on {_scored_file(run)} ({format_count(num_test_samples(run))} texts)"
        for run in runs
    )
    return f"One model on {len(runs)} files, by test {RANKING_METRICS[key]}: {scores}."


def _unranked_verdict(runs: Sequence[Run]) -> str:
    scores = "; ".join(
        f"{run.name}: {format_count(len(run.labels))} classes, test {RANKING_METRICS[run.ranking_metric]} "
        f"{format_metric(run.ranking_metric, run.metrics.test.figure(run.ranking_metric))}"
        for run in runs
    )
    return f"Not ranked: the runs do different tasks (other classes, or single- beside multi-label), so their scores do not compare. {scores}."


def _scored_file(run: Run) -> str:
    """What a run's test figures were scored on; a folder of class folders as aclImdb/test/ (a bare "test" reads as a
    split of the run)."""
    scored = run.metrics.evaluation and run.metrics.evaluation.input
    if not scored:
        return f"{run.name}'s test split"
    path = Path(scored)
    if run.metrics.data.class_folders:
        return f"{path.parent.name}/{path.name}/" if path.parent.name else f"{path.name}/"
    return path.name


def _tested_on_different_data(runs: Sequence[Run], comparison: Comparison | None) -> bool:
    """The runs' test predictions differ text by text, or, where a run has none to compare, their test sizes do."""
    test_sizes = {num_test_samples(run) for run in runs} - {None}
    return (comparison is not None and comparison.different_test_data) or len(test_sizes) > 1
