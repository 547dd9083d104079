"""Evaluation reports for one or more run directories: report.md and a self-contained report.html.

    python -m pipeline.report runs/ag_news_bert runs/ag_news_encoder --output reports/bert_vs_encoder

Reports read only what a run directory holds (config.yaml, metrics.json, history.jsonl, test_predictions.csv;
see docs/run-directory.md), so runs trained on another machine can be compared anywhere. The same content is
rendered twice: Markdown (tables only, small and diffable) and HTML (tables plus embedded PNG charts, inline CSS,
no external fetches, so the one file can be mailed or archived).
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import math
import struct
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from pipeline import plots
from pipeline.io import atomic_write_text

MAX_DISAGREEMENT_ROWS = 20
MAX_MISTAKE_ROWS = 10
MAX_TEXT_CHARS = 140
PREDICTION_COLUMNS = ("text", "label", "predicted", "score")
MISSING = "—"


class ReportError(ValueError):
    """A run directory is missing, unfinished or holds a file that cannot be read."""


class ReportWarning(UserWarning):
    """Something in a run directory was skipped; the report still stands."""


# ---------------------------------------------------------------------------------------------------------------
# Loading run directories


@dataclass
class Run:
    """Everything a report needs from one run directory."""

    name: str
    path: Path
    config: dict[str, Any]
    metrics: dict[str, Any]
    history: list[dict[str, Any]]
    predictions: pd.DataFrame | None
    # What was skipped while loading (e.g. a truncated history line); shown at the top of the report.
    notes: list[str] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [str(label) for label in self.metrics["labels"]]

    def metric(self, *keys: str) -> Any:
        """metrics.json value at a nested key path, or None where any level is absent."""
        return _nested_get(self.metrics, *keys)


def load_run(run_dir: str | Path) -> Run:
    """Read one run directory; raise ReportError naming the directory and what is missing or broken."""
    path = Path(run_dir)
    _check_is_run_directory(path)
    run = Run(
        name=_directory_name(path),
        path=path,
        config=_read_config(path),
        metrics=_read_metrics(path),
        history=[],
        predictions=None,
    )
    run.history = _read_history(path, run.notes)
    run.predictions = _read_predictions(path, run.notes)
    return run


def load_runs(run_dirs: Sequence[str | Path]) -> list[Run]:
    """load_run for each directory, renamed where two directories share a name so columns stay distinguishable."""
    if not run_dirs:
        raise ReportError("no run directories given")
    runs = [load_run(run_dir) for run_dir in run_dirs]
    for run, name in zip(runs, _unique_names([run.path for run in runs])):
        run.name = name
    return runs


def _directory_name(path: Path) -> str:
    return path.name or path.resolve().name


def _unique_names(paths: Sequence[Path]) -> list[str]:
    names = [_directory_name(path) for path in paths]
    if len(set(names)) == len(names):
        return names
    # runs/a/bert vs elsewhere/bert: the parent folder tells them apart.
    qualified = [f"{path.resolve().parent.name}/{name}" for path, name in zip(paths, names)]
    if len(set(qualified)) == len(qualified):
        return qualified
    return [f"{name} ({index + 1})" for index, name in enumerate(names)]


def _check_is_run_directory(path: Path) -> None:
    if not path.exists():
        raise ReportError(f"{path}: run directory does not exist")
    if not path.is_dir():
        raise ReportError(f"{path}: not a directory (expected a run directory such as runs/<name>)")
    contract_files = ("config.yaml", "metrics.json", "history.jsonl")
    if any((path / name).exists() for name in contract_files):
        if not (path / "metrics.json").is_file():
            raise ReportError(
                f"{path}: metrics.json is missing — the run did not finish evaluation (is it still training?)"
            )
        if not (path / "config.yaml").is_file():
            raise ReportError(f"{path}: config.yaml is missing — every finished run directory holds its config")
        return
    runs_inside = sorted(child.name for child in path.iterdir() if (child / "metrics.json").is_file())
    hint = f"; run directories inside it: {', '.join(runs_inside[:5])}" if runs_inside else ""
    raise ReportError(f"{path}: not a run directory (no config.yaml, metrics.json or history.jsonl){hint}")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ReportError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise ReportError(f"{path}: cannot be read: {error.strerror}") from None


def _read_config(run_dir: Path) -> dict[str, Any]:
    config_path = run_dir / "config.yaml"
    try:
        config = yaml.safe_load(_read_text(config_path))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ReportError(f"{config_path}: invalid YAML{where}") from None
    if not isinstance(config, dict):
        raise ReportError(f"{config_path}: expected a mapping of config sections")
    return config


def _read_metrics(run_dir: Path) -> dict[str, Any]:
    metrics_path = run_dir / "metrics.json"
    text = _read_text(metrics_path)
    if not text.strip():
        raise ReportError(f"{metrics_path}: the file is empty — the run did not finish writing it")
    try:
        metrics = json.loads(text)
    except json.JSONDecodeError as error:
        raise ReportError(
            f"{metrics_path}: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
    if not isinstance(metrics, dict):
        raise ReportError(f"{metrics_path}: expected a JSON object at the top level")
    labels = metrics.get("labels")
    if not isinstance(labels, list) or not labels:
        raise ReportError(f"{metrics_path}: 'labels' (the class names) is missing or empty")
    if not _is_number(_nested_get(metrics, "test", "accuracy")):
        raise ReportError(f"{metrics_path}: 'test.accuracy' is missing — the test split was not evaluated")
    return metrics


def _read_history(run_dir: Path, notes: list[str]) -> list[dict[str, Any]]:
    """Parse history.jsonl; a truncated last line (the run was killed mid-write) is skipped with a warning."""
    history_path = run_dir / "history.jsonl"
    if not history_path.is_file():
        _note(notes, f"{history_path}: missing, so there are no validation curves")
        return []
    numbered_lines = [(number, line) for number, line in enumerate(_read_text(history_path).splitlines(), 1)
                      if line.strip()]
    records = []
    for position, (line_number, line) in enumerate(numbered_lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if position == len(numbered_lines) - 1:
                _note(notes, f"{history_path}: line {line_number} is truncated and was skipped")
                break
            raise ReportError(f"{history_path}: line {line_number} is not valid JSON: {error.msg}") from None
        if not isinstance(record, dict):
            raise ReportError(f"{history_path}: line {line_number} is not a JSON object")
        records.append(record)
    return records


def _read_predictions(run_dir: Path, notes: list[str]) -> pd.DataFrame | None:
    predictions_path = run_dir / "test_predictions.csv"
    if not predictions_path.is_file():
        _note(notes, f"{predictions_path}: missing, so no per-text comparison or mistakes")
        return None
    try:
        # keep_default_na=False: a news text that reads "NA" or "null" must stay text.
        predictions = pd.read_csv(predictions_path, dtype={"text": str, "label": str, "predicted": str},
                                  keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise ReportError(f"{predictions_path}: the file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as error:
        raise ReportError(f"{predictions_path}: cannot be parsed as CSV: {_first_line(error)}") from None
    missing_columns = [column for column in PREDICTION_COLUMNS if column not in predictions.columns]
    if missing_columns:
        raise ReportError(f"{predictions_path}: missing column(s) {', '.join(missing_columns)}")
    scores = pd.to_numeric(predictions["score"], errors="coerce")
    if scores.isna().any():
        bad_row = int(np.flatnonzero(scores.isna().to_numpy())[0])
        raise ReportError(f"{predictions_path}: column 'score' is not a number in data row {bad_row + 1}")
    predictions["score"] = scores.astype(float)
    return predictions


def _note(notes: list[str], message: str) -> None:
    notes.append(message)
    warnings.warn(message, ReportWarning, stacklevel=3)


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _nested_get(mapping: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(mapping, dict) or key not in mapping:
            return None
        mapping = mapping[key]
    return mapping


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------------------------------------------------
# Confusion matrix image (also written by the evaluation stage into each run directory)


def plot_confusion_matrix(matrix: Sequence[Sequence[float]] | np.ndarray, labels: Sequence[str],
                          path: str | Path, title: str | None = None) -> Path:
    """Write a labelled confusion-matrix PNG (rows: true class, columns: predicted) atomically to `path`."""
    return plots.save_png(plots.confusion_matrix_figure(matrix, labels, title), path)


# ---------------------------------------------------------------------------------------------------------------
# Analyses over predictions


def most_confident_mistakes(predictions: pd.DataFrame, limit: int = MAX_MISTAKE_ROWS) -> pd.DataFrame:
    """Wrong predictions with the highest scores first: the errors a model is surest of, often label noise."""
    mistakes = predictions[predictions["predicted"] != predictions["label"]]
    return mistakes.sort_values("score", ascending=False, kind="stable").head(limit)


@dataclass
class Comparison:
    """Row-by-row comparison of the runs' test predictions, joined by position."""

    run_names: list[str]
    # Runs without test_predictions.csv, compared with nothing.
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


def compare_predictions(runs: Sequence[Run]) -> Comparison:
    """Find the test texts on which the runs disagree, after checking they were tested on the same texts."""
    with_predictions = [run for run in runs if run.predictions is not None]
    names = [run.name for run in with_predictions]
    left_out = [run.name for run in runs if run.predictions is None]
    if len(with_predictions) < 2:
        return Comparison(names, left_out, f"fewer than two runs have test_predictions.csv (missing for "
                                           f"{', '.join(left_out)})")
    mismatch = _test_data_mismatch(with_predictions)
    if mismatch:
        return Comparison(names, left_out, f"the runs were tested on different data ({mismatch}), so their "
                                           "predictions cannot be compared text by text", different_test_data=True)

    first = with_predictions[0].predictions
    joined = pd.DataFrame({"text": first["text"].to_numpy(), "label": first["label"].to_numpy()})
    for run in with_predictions:
        joined[f"predicted:{run.name}"] = run.predictions["predicted"].to_numpy()
        joined[f"score:{run.name}"] = run.predictions["score"].to_numpy()
    predicted = joined[[f"predicted:{name}" for name in names]]
    disagree = predicted.ne(predicted.iloc[:, 0], axis=0).any(axis=1)
    disagreements = joined[disagree]

    right = {name: disagreements[f"predicted:{name}"] == disagreements["label"] for name in names}
    comparison = Comparison(
        run_names=names,
        left_out=left_out,
        num_rows=len(joined),
        disagreements=disagreements,
        right_counts={name: int(is_right.sum()) for name, is_right in right.items()},
        all_wrong_count=int((~pd.concat(right.values(), axis=1).any(axis=1)).sum()) if len(disagreements) else 0,
    )
    if len(names) == 2:
        comparison.mcnemar_p_value = _mcnemar_exact_p(int((right[names[0]] & ~right[names[1]]).sum()),
                                                      int((right[names[1]] & ~right[names[0]]).sum()))
    return comparison


def _test_data_mismatch(runs: Sequence[Run]) -> str | None:
    reference = runs[0]
    for run in runs[1:]:
        if len(run.predictions) != len(reference.predictions):
            return (f"{len(reference.predictions):,} test rows in {reference.name}, "
                    f"{len(run.predictions):,} in {run.name}")
        for column, what in (("text", "texts"), ("label", "gold labels")):
            differs = reference.predictions[column].to_numpy() != run.predictions[column].to_numpy()
            if differs.any():
                return f"{what} differ between {reference.name} and {run.name} first at row {int(np.argmax(differs))}"
    return None


def _mcnemar_exact_p(only_first_right: int, only_second_right: int) -> float | None:
    """Two-sided exact binomial p-value of McNemar's test; None without discordant pairs."""
    discordant = only_first_right + only_second_right
    if discordant == 0:
        return None
    tail = sum(math.comb(discordant, k) for k in range(min(only_first_right, only_second_right) + 1))
    # Integer arithmetic: 0.5 ** n underflows for the thousands of discordant texts of a large test set.
    return min(1.0, 2 * tail / 2**discordant)


# ---------------------------------------------------------------------------------------------------------------
# Number formatting, one convention for the whole report


def format_percent(value: Any, decimals: int = 2) -> str:
    return f"{100 * value:.{decimals}f}%" if _is_number(value) else MISSING


def format_score(value: Any) -> str:
    return f"{value:.4f}" if _is_number(value) else MISSING


def format_count(value: Any) -> str:
    return f"{int(value):,}" if _is_number(value) else MISSING


def format_rate(value: Any) -> str:
    return f"{value:,.1f}" if _is_number(value) else MISSING


def format_duration(seconds: Any) -> str:
    """4.2s, 42s, 1m 23s, 2h 05m 09s."""
    if not _is_number(seconds):
        return MISSING
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(round(seconds))
    hours, remainder = divmod(whole, 3600)
    minutes, secs = divmod(remainder, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def _truncate(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# ---------------------------------------------------------------------------------------------------------------
# Document model: sections are built once as blocks, then rendered to Markdown and to HTML


@dataclass
class Cell:
    text: str
    # "best" (bold), "right"/"wrong" (a prediction against gold), "num" (right-aligned), "text" (long prose)
    style: str = ""


@dataclass
class Block:
    # "md" or "html" when a block exists in one rendering only (charts in HTML, their table stand-ins in Markdown).
    only: str = field(default="", kw_only=True)


@dataclass
class Heading(Block):
    text: str
    level: int = 2


@dataclass
class Paragraph(Block):
    text: str
    style: str = ""  # "verdict", "note" or "meta"


@dataclass
class Table(Block):
    header: list[str]
    rows: list[list[Cell]]
    # Optional CSS class per row (HTML only), e.g. to separate groups of rows.
    row_styles: list[str] | None = None

    def numeric_columns(self) -> list[bool]:
        """Columns whose every cell is a number (blank cells aside), to be right-aligned."""
        return [bool(self.rows) and all(row[i].style in ("num", "best") or not row[i].text for row in self.rows)
                and any(row[i].text for row in self.rows) for i in range(len(self.header))]


@dataclass
class Chart:
    png: bytes
    alt_text: str
    caption: str = ""


@dataclass
class Images(Block):
    """Charts shown side by side, wrapping on narrow screens."""

    charts: list[Chart]


SECTION_SUMMARY = "Summary"
SECTION_CONFUSION = "Confusion matrices"
SECTION_CURVES = "Validation accuracy"
SECTION_PER_CLASS = "Per-class F1"
SECTION_DISAGREEMENTS = "Where the runs disagree"
SECTION_MISTAKES = "Most confident mistakes"


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
    if comparison is not None:
        blocks += _disagreement_blocks(comparison)
    blocks += _mistake_blocks(runs)
    return title, blocks


def _header_blocks(runs: Sequence[Run], comparison: Comparison | None, generated_at: datetime) -> list[Block]:
    locations = ", ".join(f"{run.name} ({run.path})" for run in runs)
    blocks: list[Block] = [
        Paragraph(f"Generated {generated_at:%Y-%m-%d %H:%M %Z}. Runs: {locations}.", style="meta"),
        Paragraph(_verdict(runs, comparison), style="verdict"),
    ]
    blocks += [Paragraph(f"{run.name}: {note}", style="note") for run in runs for note in run.notes]
    return blocks


def _verdict(runs: Sequence[Run], comparison: Comparison | None) -> str:
    if len(runs) == 1:
        run = runs[0]
        return (f"{run.name}: test accuracy {format_percent(run.metric('test', 'accuracy'))}, macro-F1 "
                f"{format_score(run.metric('test', 'macro_f1'))} on {format_count(_num_test_samples(run))} "
                "test texts.")
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
    return (f"Best by test accuracy: {best.name} with {format_percent(best_accuracy)}, {gap_points:.2f} points "
            f"ahead of {rival}{runner_up.name} ({format_percent(runner_up_accuracy)}).{caveat}")


def _significance_sentence(p_value: float) -> str:
    if p_value < 0.05:
        return f"The gap is statistically significant (McNemar p = {p_value:.2g})."
    return f"The gap may be chance (McNemar p = {p_value:.2g})."


def _num_test_samples(run: Run) -> Any:
    if _is_number(run.metric("test", "num_samples")):
        return run.metric("test", "num_samples")
    return len(run.predictions) if run.predictions is not None else None


# --- 2. Summary table


def _summary_blocks(runs: Sequence[Run]) -> list[Block]:
    rows: list[list[Cell]] = [
        _metric_row("Test accuracy", runs, lambda r: r.metric("test", "accuracy"), format_percent, higher=True),
        _metric_row("Macro-F1", runs, lambda r: r.metric("test", "macro_f1"), format_score, higher=True),
    ]
    for label in _all_labels(runs):
        rows.append(_metric_row(f"F1: {label}", runs, lambda r, c=label: r.metric("test", "per_class", c, "f1"),
                                format_score, higher=True))
    rows += [
        _metric_row("Test loss", runs, lambda r: r.metric("test", "loss"), format_score, higher=False),
        _text_row("Test samples", runs, lambda r: format_count(_num_test_samples(r))),
        _text_row("Best step", runs, _best_step_text),
        _text_row("Steps trained", runs, _steps_text),
        _text_row("Parameters", runs, lambda r: format_count(_num_parameters(r))),
        _text_row("Fixed length (tokens)", runs, _max_length_text),
        _text_row("Truncated texts (test)", runs,
                  lambda r: format_percent(r.metric("tokenization", "truncated_fraction", "test"))),
        _text_row("Truncated texts (train)", runs,
                  lambda r: format_percent(r.metric("tokenization", "truncated_fraction", "train"))),
        _text_row("Training time", runs, lambda r: format_duration(r.metric("timings", "train_seconds"))),
        _text_row("Total time", runs, lambda r: format_duration(r.metric("timings", "total_seconds"))),
        _text_row("Training samples/s", runs,
                  lambda r: format_rate(r.metric("throughput", "train_samples_per_second"))),
        _text_row("Evaluation samples/s", runs,
                  lambda r: format_rate(r.metric("throughput", "eval_samples_per_second"))),
        _text_row("Device", runs, _device_text),
        _text_row("Mixed precision", runs, lambda r: _plain(r.metric("training", "mixed_precision"))),
        _text_row("Effective batch size", runs, lambda r: format_count(r.metric("training", "effective_batch_size"))),
        _text_row("Model", runs, _model_text),
        _text_row("Finished", runs, lambda r: _timestamp_text(r.metric("run", "finished_at"))),
    ]
    return [Heading(SECTION_SUMMARY), Table(["", *[run.name for run in runs]], rows)]


def _metric_row(label: str, runs: Sequence[Run], value_of: Callable[[Run], Any],
                formatter: Callable[[Any], str], higher: bool) -> list[Cell]:
    """A numeric row; with several runs the best value is emphasised."""
    values = [value_of(run) for run in runs]
    numbers = [value for value in values if _is_number(value)]
    best = (max(numbers) if higher else min(numbers)) if len(runs) > 1 and len(set(numbers)) > 1 else None
    cells = [Cell(formatter(value), "best" if best is not None and value == best else "num") for value in values]
    return [Cell(label), *cells]


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
    if not _is_number(step):
        return MISSING
    accuracy = run.metric("best", "validation_accuracy")
    return f"{format_count(step)} (val. {format_percent(accuracy)})" if _is_number(accuracy) else format_count(step)


def _steps_text(run: Run) -> str:
    steps, epochs = run.metric("training", "global_steps"), run.metric("training", "epochs_completed")
    if not _is_number(steps):
        return MISSING
    text = format_count(steps) + (f" ({epochs:.2f} epochs)" if _is_number(epochs) else "")
    return text + (", stopped early" if run.metric("training", "stopped_early") is True else "")


def _num_parameters(run: Run) -> Any:
    return run.metric("run", "num_parameters")


def _max_length_text(run: Run) -> str:
    length = run.metric("tokenization", "max_length")
    setting = run.metric("tokenization", "max_length_setting")
    if not _is_number(length):
        return MISSING
    return f"{format_count(length)} (auto)" if setting == "auto" else format_count(length)


def _device_text(run: Run) -> str:
    kind, name = run.metric("device", "type"), run.metric("device", "name")
    processes = run.metric("device", "num_processes") or run.metric("training", "num_processes")
    if kind is None and name is None:
        return MISSING
    device = f"{kind} ({name})" if kind and name and name != kind else str(kind or name)
    if _is_number(processes):
        device += f", {int(processes)} process" + ("es" if processes != 1 else "")
    return device


def _model_text(run: Run) -> str:
    kind = run.metric("run", "model_kind") or _nested_get(run.config, "model", "kind")
    name = run.metric("run", "model_name_or_path") or _nested_get(run.config, "model", "name_or_path")
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
    blocks: list[Block] = [Heading(SECTION_CONFUSION),
                           Paragraph("Rows: true class; columns: predicted class. Colour: share of the true class.",
                                     style="meta")]
    images = []
    for run in runs:
        matrix = run.metric("test", "confusion_matrix")
        if not _valid_matrix(matrix, len(run.labels)):
            blocks.append(Paragraph(f"{run.name}: metrics.json has no usable test confusion matrix.", style="note"))
            continue
        title = f"{run.name} (test accuracy {format_percent(run.metric('test', 'accuracy'))})"
        figure = plots.confusion_matrix_figure(matrix, run.labels, title=_truncate(title, 60))
        # No caption: the chart's own title names the run.
        images.append(Chart(plots.figure_to_png(figure), alt_text=f"confusion matrix of {run.name}"))
        blocks += [Heading(run.name, level=3, only="md"), _confusion_table(matrix, run.labels)]
    if images:
        blocks.append(Images(images, only="html"))
    return blocks


def _valid_matrix(matrix: Any, size: int) -> bool:
    return (isinstance(matrix, list) and len(matrix) == size
            and all(isinstance(row, list) and len(row) == size and all(map(_is_number, row)) for row in matrix))


def _confusion_table(matrix: list[list[float]], labels: list[str]) -> Table:
    rows = [[Cell(label), *[Cell(format_count(count), "num") for count in row]] for label, row in zip(labels, matrix)]
    return Table(["true ↓ predicted →", *labels], rows, only="md")


# --- 4. Validation curves


def eval_curve(run: Run) -> plots.EvalCurve:
    """The validation accuracy points of a run's history.jsonl (lines that carry eval_accuracy)."""
    points = [line for line in run.history if _is_number(line.get("eval_accuracy")) and _is_number(line.get("step"))]
    best_step = run.metric("best", "step")
    return plots.EvalCurve(
        run_name=run.name,
        steps=[point["step"] for point in points],
        elapsed_seconds=[point["elapsed_seconds"] if _is_number(point.get("elapsed_seconds")) else None
                         for point in points],
        accuracies=[point["eval_accuracy"] for point in points],
        best_step=best_step if _is_number(best_step) else None,
    )


def _curve_blocks(runs: Sequence[Run]) -> list[Block]:
    blocks: list[Block] = [Heading(SECTION_CURVES)]
    curves = [eval_curve(run) for run in runs]
    with_points = [curve for curve in curves if curve.steps]
    for curve in curves:
        if not curve.steps:
            blocks.append(Paragraph(f"{curve.run_name}: history.jsonl has no evaluation lines, so no curve.",
                                    style="note"))
    if not with_points:
        return blocks
    figure = plots.validation_curves_figure(with_points)
    caption = "Validation accuracy by optimizer step and by training time; ★ marks the selected (best) model."
    blocks.append(Images([Chart(plots.figure_to_png(figure), "validation accuracy curves", caption)], only="html"))
    blocks.append(Paragraph("The curves are drawn in report.html.", style="meta", only="md"))
    rows = [[Cell(curve.run_name), Cell(format_count(len(curve.steps)), "num"), Cell(_curve_point(curve, 0), "num"),
             Cell(_curve_point(curve, int(np.argmax(curve.accuracies))), "num"), Cell(_curve_point(curve, -1), "num")]
            for curve in with_points]
    blocks.append(Table(["Run", "Evaluations", "First", "Highest", "Last"], rows))
    return blocks


def _curve_point(curve: plots.EvalCurve, index: int) -> str:
    elapsed = curve.elapsed_seconds[index]
    when = f", {format_duration(elapsed)}" if elapsed is not None else ""
    return f"{format_percent(curve.accuracies[index])} (step {format_count(curve.steps[index])}{when})"


# --- 5. Per-class F1


def _per_class_blocks(runs: Sequence[Run]) -> list[Block]:
    labels = _all_labels(runs)
    f1_by_run = {run.name: [_per_class_value(run, label, "f1") for label in labels] for run in runs}
    blocks: list[Block] = [Heading(SECTION_PER_CLASS)]
    if any(value is not None for values in f1_by_run.values() for value in values):
        figure = plots.per_class_f1_figure(labels, f1_by_run)
        chart = Chart(plots.figure_to_png(figure), "per-class F1 bars", "F1 per class on the test split")
        blocks.append(Images([chart], only="html"))
    blocks.append(_per_class_table(runs, labels))
    return blocks


def _per_class_table(runs: Sequence[Run], labels: list[str]) -> Table:
    """One row per class and run (a column per run would need unreadably long headers), best F1 in bold."""
    several = len(runs) > 1
    rows, row_styles = [], []
    for label in labels:
        f1_values = [_per_class_value(run, label, "f1") for run in runs]
        best_f1 = max((value for value in f1_values if value is not None), default=None)
        support = next((value for value in (_per_class_value(run, label, "support") for run in runs)
                        if value is not None), None)
        for index, (run, f1) in enumerate(zip(runs, f1_values)):
            first_of_class = index == 0
            row = [Cell(label if first_of_class else ""),
                   Cell(format_count(support) if first_of_class else "", "num")]
            row += [Cell(run.name)] if several else []
            row += [Cell(format_score(_per_class_value(run, label, "precision")), "num"),
                    Cell(format_score(_per_class_value(run, label, "recall")), "num"),
                    Cell(format_score(f1), "best" if several and f1 is not None and f1 == best_f1 else "num")]
            rows.append(row)
            row_styles.append("group-start" if first_of_class and several else "")
    header = ["Class", "Support", *(["Run"] if several else []), "Precision", "Recall", "F1"]
    return Table(header, rows, row_styles=row_styles)


def _per_class_value(run: Run, label: str, key: str) -> float | None:
    value = run.metric("test", "per_class", label, key)
    return value if _is_number(value) else None


# --- 6. Disagreements


def _disagreement_blocks(comparison: Comparison) -> list[Block]:
    blocks: list[Block] = [Heading(SECTION_DISAGREEMENTS)]
    if comparison.unavailable_reason:
        return blocks + [Paragraph(f"No comparison: {comparison.unavailable_reason}.", style="note")]
    if comparison.left_out:
        blocks.append(Paragraph(f"Left out for lack of test_predictions.csv: {', '.join(comparison.left_out)}.",
                                style="note"))
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
        reading = ("below 0.05: the accuracy gap is unlikely to be chance" if p_value < 0.05
                   else "not below 0.05: the accuracy gap may be chance")
        summary += f" McNemar's exact test on these texts: p = {p_value:.2g} ({reading})."
    blocks.append(Paragraph(summary))
    shown = _order_disagreements(disagreements, comparison.run_names).head(MAX_DISAGREEMENT_ROWS)
    blocks.append(Paragraph(
        f"{'All' if len(shown) == count else f'The first {len(shown)}'} of them, those where every run was surest "
        "of its answer first (row: position in test_predictions.csv, from 0; ✓ right, ✗ wrong; score: "
        "probability of the predicted class).", style="meta"))
    rows = []
    for row_index, row in shown.iterrows():
        cells = [Cell(str(row_index), "num"), Cell(_truncate(row["text"]), "text"), Cell(str(row["label"]))]
        for name in comparison.run_names:
            cells.append(_prediction_cell(row[f"predicted:{name}"], row[f"score:{name}"], row["label"]))
        rows.append(cells)
    blocks.append(Table(["Row", "Text", "Gold", *comparison.run_names], rows))
    return blocks


def _order_disagreements(disagreements: pd.DataFrame, run_names: list[str]) -> pd.DataFrame:
    """Most striking first: texts where even the least sure run was sure, i.e. confident conflicting answers."""
    least_sure = disagreements[[f"score:{name}" for name in run_names]].min(axis=1)
    return disagreements.assign(_least_sure=least_sure).sort_values("_least_sure", ascending=False, kind="stable")


def _prediction_cell(predicted: str, score: float, gold: str) -> Cell:
    is_right = predicted == gold
    return Cell(f"{'✓' if is_right else '✗'} {predicted} ({score:.3f})", "right" if is_right else "wrong")


# --- 7. Most confident mistakes


def _mistake_blocks(runs: Sequence[Run]) -> list[Block]:
    blocks: list[Block] = [Heading(SECTION_MISTAKES)]
    for run in runs:
        blocks.append(Heading(run.name, level=3))
        if run.predictions is None:
            blocks.append(Paragraph("No test_predictions.csv in this run, so no mistakes to show.", style="note"))
            continue
        mistakes = most_confident_mistakes(run.predictions)
        if mistakes.empty:
            blocks.append(Paragraph("No mistakes: every test text was classified correctly."))
            continue
        num_wrong = int((run.predictions["predicted"] != run.predictions["label"]).sum())
        blocks.append(Paragraph(f"{len(mistakes)} of {num_wrong:,} wrong predictions, highest score first.",
                                style="meta"))
        rows = [[Cell(str(row_index), "num"), Cell(_truncate(row["text"]), "text"), Cell(str(row["label"])),
                 Cell(str(row["predicted"])), Cell(f"{row['score']:.3f}", "num")]
                for row_index, row in mistakes.iterrows()]
        blocks.append(Table(["Row", "Text", "Gold", "Predicted", "Score"], rows))
    return blocks


# ---------------------------------------------------------------------------------------------------------------
# Rendering


def render_markdown(blocks: Iterable[Block]) -> str:
    parts = [_block_markdown(block) for block in blocks if block.only != "html"]
    return "\n\n".join(part for part in parts if part) + "\n"


def _block_markdown(block: Block) -> str:
    if isinstance(block, Heading):
        return "#" * block.level + " " + _md_escape(block.text)
    if isinstance(block, Paragraph):
        text = _md_escape(block.text)
        return {"verdict": f"**{text}**", "note": f"> Note: {text}", "meta": f"*{text}*"}.get(block.style, text)
    if isinstance(block, Table):
        return _table_markdown(block)
    return ""


def _table_markdown(table: Table) -> str:
    numeric = table.numeric_columns()
    lines = ["| " + " | ".join(_md_escape(text) for text in table.header) + " |",
             "|" + "|".join("---:" if is_numeric else "---" for is_numeric in numeric) + "|"]
    for row in table.rows:
        cells = [f"**{_md_escape(cell.text)}**" if cell.style == "best" else _md_escape(cell.text) for cell in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    # Pipes would split table cells; "<" would let a text from the data inject HTML into rendered Markdown.
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


_CSS = """
body { margin: 0; background: #f3f4f6; color: #1d2430;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 36px 56px; background: #fff; }
h1 { font-size: 1.65em; margin: 0 0 .3em; }
h2 { font-size: 1.3em; margin: 2.2em 0 .6em; padding-bottom: .25em; border-bottom: 1px solid #dde1e6; }
h3 { font-size: 1.05em; margin: 1.5em 0 .4em; }
.meta { color: #5b6573; font-size: .9em; }
.verdict { font-size: 1.08em; font-weight: 600; background: #eef5ff; border-left: 4px solid #1f77b4;
           padding: .6em .9em; }
.note { background: #fff7e6; border-left: 4px solid #f0a020; padding: .4em .8em; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; margin: .4em 0 1em; font-size: .9em; }
th, td { border: 1px solid #dde1e6; padding: .32em .65em; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num, td.best, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.group-start td { border-top: 2px solid #b9c0c9; }
td.best { font-weight: 700; }
td.right { color: #1b7a2f; white-space: nowrap; }
td.wrong { color: #b3261e; white-space: nowrap; }
td.text { min-width: 280px; max-width: 560px; }
.figures { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
figure { margin: 0; flex: 1 1 400px; }
figure img { display: block; width: 100%; height: auto; }
figcaption { font-size: .86em; color: #5b6573; text-align: center; margin-top: .2em; }
"""


def render_html(title: str, blocks: Iterable[Block]) -> str:
    body = "\n".join(_block_html(block) for block in blocks if block.only != "md")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
            f"{body}\n</main>\n</body>\n</html>\n")


def _block_html(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{html.escape(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        css_class = f' class="{block.style}"' if block.style else ""
        return f"<p{css_class}>{html.escape(block.text)}</p>"
    if isinstance(block, Table):
        return _table_html(block)
    if isinstance(block, Images):
        return '<div class="figures">' + "".join(map(_chart_html, block.charts)) + "</div>"
    return ""


def _table_html(table: Table) -> str:
    header = "".join(f'<th class="num">{html.escape(text)}</th>' if numeric else f"<th>{html.escape(text)}</th>"
                     for text, numeric in zip(table.header, table.numeric_columns()))
    row_styles = table.row_styles or [""] * len(table.rows)
    body = "".join(
        (f'<tr class="{style}">' if style else "<tr>") + "".join(_cell_html(cell) for cell in row) + "</tr>"
        for row, style in zip(table.rows, row_styles)
    )
    return f'<div class="table-wrap"><table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table></div>'


def _cell_html(cell: Cell) -> str:
    css_class = f' class="{cell.style}"' if cell.style else ""
    return f"<td{css_class}>{html.escape(cell.text)}</td>"


def _chart_html(chart: Chart) -> str:
    # Never wider than the image's own CSS size: upscaling would blur small charts.
    css_width = _png_width(chart.png) * 96 // plots.PNG_DPI
    data_uri = "data:image/png;base64," + base64.b64encode(chart.png).decode("ascii")
    figcaption = f"<figcaption>{html.escape(chart.caption)}</figcaption>" if chart.caption else ""
    return (f'<figure style="max-width: {css_width}px"><img src="{data_uri}" alt="{html.escape(chart.alt_text)}">'
            f"{figcaption}</figure>")


def _png_width(png: bytes) -> int:
    # The IHDR chunk follows the 8-byte signature: length, type, then width and height as big-endian uint32.
    return struct.unpack(">I", png[16:20])[0]


# ---------------------------------------------------------------------------------------------------------------
# Entry points


def write_report(run_dirs: Sequence[str | Path], output_dir: str | Path) -> tuple[Path, Path]:
    """Write report.md and report.html for the given runs into output_dir; return their paths."""
    if isinstance(run_dirs, (str, Path)):  # a lone path would otherwise be taken as a sequence of characters
        run_dirs = [run_dirs]
    runs = load_runs(list(run_dirs))
    title, blocks = build_report(runs)
    output_dir = Path(output_dir)
    markdown_path, html_path = output_dir / "report.md", output_dir / "report.html"
    atomic_write_text(markdown_path, render_markdown(blocks))
    atomic_write_text(html_path, render_html(title, blocks))
    return markdown_path, html_path


def default_output_dir(run_dirs: Sequence[str | Path]) -> Path:
    names = _unique_names([Path(run_dir) for run_dir in run_dirs])
    return Path("reports") / "_vs_".join(name.replace("/", "-") for name in names)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.report",
        description="Write report.md and a self-contained report.html comparing one or more run directories.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory, e.g. runs/ag_news_bert")
    parser.add_argument("--output", "-o", type=Path, default=None,
                        help="output folder (default: reports/<run names joined by _vs_>)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    output_dir = args.output if args.output is not None else default_output_dir(args.runs)
    # Warnings become one-line messages: Python's default format adds a source line meant for developers.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReportWarning)
        try:
            paths = write_report(args.runs, output_dir)
        except (ReportError, OSError) as error:
            paths, failure = (), error
        else:
            failure = None
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    if failure is not None:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
