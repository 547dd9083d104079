"""What a reader must know before trusting a ranking: the classical baseline, a test split too small to judge by,
unequal budgets, over-truncation, a model collapsed onto one class, texts its vocabulary cannot read. A run that lacks
a record contributes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.config.schema import TokenizerConfig, run_length_setting
from pipeline.report.analysis import SIGNIFICANCE_LEVEL, accuracy_interval
from pipeline.report.formatting import format_count, format_duration, format_metric, format_percent, join_names, number
from pipeline.report.runs import Run, num_test_samples
from pipeline.run.directory import PREDICTION_GOLD, PREDICTION_PREDICTED, config_setting, untrained_consequence
from pipeline.run.record import RANKING_METRICS, Baseline, is_number
from pipeline.text.unknown import unknown_tokens_warning
from pipeline.text.windows import LongTextRule

# Differences below these are rounding, not a different budget (samples seen: a share of the larger).
BUDGET_TOLERANCES = {"samples_seen": 0.01, "epochs": 0.01, "max_length": 0, "truncated_train": 0.005}
RECIPES_NOT_ARCHITECTURES = "the comparison is of recipes, not architectures"
CONFIDENCE = f"{1 - SIGNIFICANCE_LEVEL:.0%}"


# --- The baseline


def baseline_of(run: Run) -> Baseline | None:
    """metrics.json's `baseline` record when it holds a usable test accuracy."""
    record = run.metrics.baseline
    return record if record is not None and is_number(record.accuracy) else None


def baseline_error(run: Run) -> str | None:
    """Why the run's baseline could not be fitted, when metrics.json records a failed one."""
    record = run.metrics.baseline
    return str(record.error) if record is not None and not is_number(record.accuracy) and record.error else None


def baseline_description(record: Baseline) -> str:
    description = record.description or record.name
    return str(description) if description else "classical"


def baseline_sentences(runs: Sequence[Run]) -> list[str]:
    """One sentence per run that the baseline beats or matches (on its ranking metric); one for the runs ahead."""
    sentences, ahead = [], []
    for run in runs:
        record, key = baseline_of(run), run.ranking_metric
        score = run.metrics.test.figure(key)
        if record is None or not is_number(score) or not is_number(record.figure(key)):
            continue
        if within_test_noise(run, record.figure(key) - score):
            sentences.append(_untold_sentence(run, record, key))
        elif record.figure(key) >= score:
            sentences.append(_beaten_sentence(run, record, key))
        else:
            ahead.append((run, record, key))
    if ahead:
        sentences.append(_ahead_sentence(ahead, single=len(runs) == 1))
    return sentences


def _beaten_sentence(run: Run, record: Baseline, key: str) -> str:
    score = run.metrics.test.figure(key)
    verb = "beats" if record.figure(key) > score else "matches"
    sentence = (
        f"The {baseline_description(record)} baseline {verb} {run.name} on test {RANKING_METRICS[key]} "
        f"({format_metric(key, record.figure(key))} vs {format_metric(key, score)})"
    )
    baseline_seconds, model_seconds = record.train_seconds, run.metrics.timings.train_seconds
    if is_number(baseline_seconds) and is_number(model_seconds):
        better = "better than" if verb == "beats" else "as well as"
        return f"{sentence}: a model fitted in {format_duration(baseline_seconds)} does {better} one trained for {format_duration(model_seconds)}."
    return f"{sentence}: fine-tuning did not pay for itself on this data."


def _untold_sentence(run: Run, record: Baseline, key: str) -> str:
    """A gap within the noise of a small test split: neither is called the better."""
    low, high = small_test_interval(run)
    return (
        f"On {_rows(num_test_samples(run), 'test ')}, {run.name} ({format_metric(key, run.metrics.test.figure(key))}) and the "
        f"{baseline_description(record)} baseline ({format_metric(key, record.figure(key))}) cannot be told apart on test "
        f"{RANKING_METRICS[key]}: the gap is within the noise of so few rows ({run.name}'s test accuracy: "
        f"{CONFIDENCE} interval {format_percent(low)} to {format_percent(high)})."
    )


def _ahead_sentence(ahead: list[tuple[Run, Baseline, str]], single: bool) -> str:
    def gap(run: Run, record: Baseline, key: str) -> str:
        return f"{100 * (run.metrics.test.figure(key) - record.figure(key)):.2f} points of {RANKING_METRICS[key]}"

    if single:
        run, record, key = ahead[0]
        fitted = f", fitted in {format_duration(record.train_seconds)}" if is_number(record.train_seconds) else ""
        return f"{run.name} beats the {baseline_description(record)} baseline ({format_metric(key, record.figure(key))}{fitted}) by {gap(run, record, key)}."
    descriptions = {baseline_description(record) for _, record, _ in ahead}
    what = descriptions.pop() if len(descriptions) == 1 else "classical"
    parts = [
        f"{run.name} by {gap(run, record, key)} (baseline {format_metric(key, record.figure(key))})"
        for run, record, key in ahead
    ]
    return f"Ahead of the {what} baseline: {join_names(parts)}."


# --- A test split too small to judge by

# A test accuracy whose confidence interval is wider than this (under about 40 rows at 50%) means little.
SMALL_TEST_INTERVAL_WIDTH = 0.30


def small_test_interval(run: Run) -> tuple[float, float] | None:
    """The confidence interval of the run's test accuracy where it is wider than SMALL_TEST_INTERVAL_WIDTH."""
    accuracy, rows = run.metrics.test.accuracy, num_test_samples(run)
    if not is_number(accuracy) or not is_number(rows) or rows < 1:
        return None
    low, high = accuracy_interval(accuracy, int(rows))
    return (low, high) if high - low > SMALL_TEST_INTERVAL_WIDTH else None


def within_test_noise(run: Run, gap: float) -> bool:
    """Whether a gap in a test figure fits within a small test split's accuracy interval, which stands for the noise
    of its other figures too (measured on the same few rows)."""
    interval = small_test_interval(run)
    if interval is None:
        return False
    accuracy = run.metrics.test.accuracy
    return abs(gap) <= max(accuracy - interval[0], interval[1] - accuracy)


def small_test_note(run: Run) -> str | None:
    interval = small_test_interval(run)
    if interval is None:
        return None
    name = "subset accuracy" if run.multi_label else "accuracy"
    larger = (
        "a scored file of more rows"
        if run.metrics.evaluation
        else "a larger test split (data.test_fraction, or a data.test_file)"
    )
    return (
        f"only {_rows(num_test_samples(run), 'test ')}: its test {name} of {format_percent(run.metrics.test.accuracy)} has a {CONFIDENCE} confidence interval of "
        f"{format_percent(interval[0])} to {format_percent(interval[1])}, so its test figures, and any gap between them and another model's, "
        f"may be chance; {larger} gives figures to act on."
    )


# --- Training budgets


@dataclass
class Budget:
    samples_seen: float | None
    epochs: float | None
    max_length: float | None
    truncated_train: float | None


def budget_of(run: Run) -> Budget:
    """A run's training budget; older runs' samples seen are steps times the effective batch."""
    training, tokenization = run.metrics.training, run.metrics.tokenization
    seen, steps, batch = training.samples_seen, training.global_steps, training.effective_batch_size
    if not is_number(seen) and is_number(steps) and is_number(batch):
        seen = steps * batch
    truncated = (tokenization.truncated_fraction or {}).get("train")
    return Budget(number(seen), number(training.epochs_completed), number(tokenization.max_length), number(truncated))


def _differ(figure: str, a: float | None, b: float | None) -> bool:
    """Whether two runs' budget figures (Budget's fields) differ by more than BUDGET_TOLERANCES."""
    if a is None or b is None:
        return False
    gap, tolerance = abs(a - b), BUDGET_TOLERANCES[figure] * (max(a, b) if figure == "samples_seen" else 1)
    return gap >= tolerance if figure == "truncated_train" else gap > tolerance


def budget_sentence(runs: Sequence[Run]) -> str | None:
    """Name the ways the runs' training budgets differ; None when they match (or too little is recorded)."""
    if len(runs) < 2:
        return None
    if len(runs) == 2:
        return _pair_budget_sentence(runs[0], runs[1])
    return _many_budget_sentence(runs)


def _pair_budget_sentence(first: Run, second: Run) -> str | None:
    subject, other, a, b = first, second, budget_of(first), budget_of(second)
    # The run that saw more samples speaks first, so that the ratio reads as "N times as many".
    if a.samples_seen is not None and b.samples_seen is not None and b.samples_seen > a.samples_seen:
        subject, other, a, b = second, first, b, a
    clauses = []
    if _differ("epochs", a.epochs, b.epochs):
        clauses.append(f"completed {a.epochs:.2f} vs {b.epochs:.2f} epochs")
    if _differ("max_length", a.max_length, b.max_length):
        clauses.append(f"used fixed length {format_count(a.max_length)} vs {format_count(b.max_length)}")
    if _differ("truncated_train", a.truncated_train, b.truncated_train):
        clauses.append(
            f"truncated {format_percent(a.truncated_train)} vs {format_percent(b.truncated_train)} of the training texts"
        )
    if _differ("samples_seen", a.samples_seen, b.samples_seen):
        ratio = a.samples_seen / b.samples_seen if b.samples_seen else None
        times = f"{ratio:.1f}x the training samples of" if ratio is not None else "more training samples than"
        head = f"{subject.name} saw {times} {other.name} ({format_count(a.samples_seen)} vs {format_count(b.samples_seen)})"
        body = join_names([head, *clauses])
    elif clauses:
        body = f"Compared with {other.name}, {subject.name} {join_names(clauses)}"
    else:
        return None
    return f"{body}; {RECIPES_NOT_ARCHITECTURES}."


def _many_budget_sentence(runs: Sequence[Run]) -> str | None:
    budgets = [budget_of(run) for run in runs]
    facts = [
        ("samples seen", "samples_seen", format_count),
        ("epochs completed", "epochs", lambda value: f"{value:.2f}"),
        ("fixed length", "max_length", format_count),
        ("truncated training texts", "truncated_train", format_percent),
    ]
    parts = []
    for label, field, formatter in facts:
        values = [getattr(budget, field) for budget in budgets]
        known = [value for value in values if value is not None]
        if not any(_differ(field, x, y) for x in known for y in known):
            continue
        listed = ", ".join(f"{formatter(value)} ({run.name})" for run, value in zip(runs, values) if value is not None)
        parts.append(f"{label} {listed}")
    if not parts:
        return None
    return f"Training budgets differ: {'; '.join(parts)}; {RECIPES_NOT_ARCHITECTURES}."


# --- Truncation over budget


def truncation_over_budget(run: Run) -> tuple[float, float] | None:
    """(share of train truncated, budget) when the share exceeds tokenizer.max_truncated_fraction."""
    if config_setting(run.config, "tokenizer", "long_text") == "chunk":
        return None
    share = (run.metrics.tokenization.truncated_fraction or {}).get("train")
    budget = config_setting(run.config, "tokenizer", "max_truncated_fraction")
    budget = budget if is_number(budget) else TokenizerConfig().max_truncated_fraction  # a config that does not say
    return (share, budget) if is_number(share) and share > budget else None


def truncation_note(run: Run) -> str | None:
    over = truncation_over_budget(run)
    if over is None:
        return None
    share, budget = over
    length = run.metrics.tokenization.max_length
    at = f" at fixed length {format_count(length)}" if is_number(length) else ""
    dropped = LongTextRule.from_settings(run.config.get("tokenizer") or {}).dropped_part
    return (
        f"{format_percent(share)} of its training texts were truncated{at}, over the budget of {format_percent(budget)} "
        f"(tokenizer.max_truncated_fraction): the model never saw {dropped} of those texts."
    )


def untrained_note(run: Run) -> str | None:
    """Classes the model never saw in train, whose rows in a file scored by pipeline.evaluate count against it."""
    untrained = run.metrics.untrained_classes
    if not untrained:
        return None
    return f"no training rows for {join_names(untrained)}: {untrained_consequence(untrained)}."


# A run predicting this share of the test rows as one class that is under COLLAPSE_TRUE_SHARE of them has collapsed
# onto it; a model merely skewed towards a large class predicts it far less often.
COLLAPSE_PREDICTED_SHARE = 0.95
COLLAPSE_TRUE_SHARE = 0.70


def predicted_and_true_counts(run: Run) -> tuple[list[float], list[float]] | None:
    """Test rows predicted as each class and truly of each, from the confusion matrix, else test_predictions.csv."""
    if run.multi_label:
        return None
    matrix = run.test_confusion_matrix()
    if matrix is not None:
        return [sum(column) for column in zip(*matrix)], [sum(row) for row in matrix]
    if run.predictions is None or not {PREDICTION_GOLD, PREDICTION_PREDICTED} <= set(run.predictions.columns):
        return None
    predicted = run.predictions[PREDICTION_PREDICTED].astype(str).value_counts()
    gold = run.predictions[PREDICTION_GOLD].astype(str).value_counts()
    return [float(predicted.get(name, 0)) for name in run.labels], [float(gold.get(name, 0)) for name in run.labels]


def collapse_note(run: Run) -> str | None:
    counts = predicted_and_true_counts(run)
    total = sum(counts[0]) if counts else 0
    if not counts or not total:
        return None
    predicted, true = counts
    top = max(range(len(predicted)), key=predicted.__getitem__)
    share, true_share = predicted[top] / total, true[top] / total
    if share < COLLAPSE_PREDICTED_SHARE or true_share >= COLLAPSE_TRUE_SHARE:
        return None
    learning_rate = config_setting(run.config, "train", "learning_rate")
    now_rate = f" (now {learning_rate:g})" if is_number(learning_rate) else ""
    longer = run_length_setting(
        config_setting(run.config, "train", "epochs"), config_setting(run.config, "train", "max_steps")
    )
    return (
        f"predicts {run.labels[top]} for {format_percent(share, 1)} of the test rows ({format_count(predicted[top])} of "
        f"{format_count(total)}), a class that is {format_percent(true_share, 1)} of them: the model has collapsed onto "
        f"one class, as a learning rate too high for the data or too few rows or steps make it. Try a lower "
        f"train.learning_rate{now_rate}, more {longer} or training rows, or train.class_weights: balanced."
    )


def unpredicted_note(run: Run) -> str | None:
    """Classes with test rows that a single-label run never predicts (recall 0, which accuracy hides), short of a
    collapse or a class without training rows, which other notes cover."""
    counts = predicted_and_true_counts(run)
    if not counts or collapse_note(run) is not None:
        return None
    untrained = set(run.metrics.untrained_classes)
    predicted, true = counts
    missed = [
        index
        for index, (guessed, held) in enumerate(zip(predicted, true))
        if held and not guessed and run.labels[index] not in untrained
    ]
    if not missed:
        return None
    train_rows = run.metrics.data.train_class_rows
    described = []
    for index in missed:
        in_train = train_rows.get(run.labels[index])  # older runs record no class counts
        trained = f", {_rows(in_train)} in train" if is_number(in_train) else ""
        described.append(f"{run.labels[index]} ({_rows(true[index])} in test{trained})")
    pronoun = "it" if len(missed) == 1 else "them"
    return (
        f"never predicts {join_names(described)}: its recall of {pronoun} is 0, most often for too few training rows of "
        f"{pronoun} to learn from. Add rows of {pronoun}, or try train.class_weights: balanced."
    )


def unknown_tokens_note(run: Run) -> str | None:
    """The log's unknown-token warning, easily missed there: train's for a run, the scored file's for an evaluation."""
    split, whose = ("test", "the scored file's") if run.metrics.evaluation else ("train", "train's")
    token_share = (run.metrics.tokenization.unknown_token_share or {}).get(split)
    text_share = (run.metrics.tokenization.mostly_unknown_share or {}).get(split)
    tokenizer = str(config_setting(run.config, "tokenizer", "name_or_path") or "its tokenizer")
    warning = unknown_tokens_warning(number(token_share), number(text_share), whose, tokenizer)
    return f"{warning}." if warning else None


def _rows(count: Any, kind: str = "") -> str:
    return f"{format_count(count)} {kind}{'row' if count == 1 else 'rows'}"
