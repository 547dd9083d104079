"""Verification of an export (`verify_exports`): the same rows through PyTorch fp32 (the reference), PyTorch as
`--backend torch` runs it here and each exported model, all through the predictor's own batching.

The rows: the run's validation split, sampled to --max-rows, or topped up with its other texts (agreement needs no
label; accuracy stays on the labelled rows). A row differs when prediction would write it otherwise (class, set or
low-confidence flag). The limits are in pipeline.run.exports.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pipeline.common.errors import one_line
from pipeline.common.hardware import resolve_inference_dtype
from pipeline.config.load import load_config
from pipeline.data.load import load_splits
from pipeline.data.splits import column_values
from pipeline.models import max_positions
from pipeline.predict.predictor import Predictor, load_decision
from pipeline.predict.runtime import open_backend
from pipeline.predict.source import ModelSource
from pipeline.run.directory import PREDICTION_GOLD, PREDICTION_TEXT, RunDir, RunDirError
from pipeline.run.exports import (
    MAX_ACCURACY_LOSS_POINTS,
    MAX_DISAGREEMENT,
    MIN_VERIFICATION_ROWS,
    STATUS_REFUSED,
    STATUS_VERIFIED,
    ExportChoice,
    ExportError,
    auto_backend,
    backend_name,
    not_for_auto,
    parity_rows,
    rows_used,
    too_few_rows,
)
from pipeline.run.model_config import class_names, is_multi_label
from pipeline.scoring.thresholds import Decision
from pipeline.text.lengths import length_limit

logger = logging.getLogger("pipeline.export")

WARMUP_ROWS = 32
# Rows a static int8 model calibrates on (NNCF's default subset is 300 samples).
CALIBRATION_ROWS = 320
# The parity table's figures (ParityRow's, in order): width and format.
CELLS = ((10, "{:.2%}"), (10, "{:.4f}"), (10, "{:.2%}"), (9, "{:.0f}"), (9, "{:.2f}x"))


@dataclass
class VerificationRows:
    texts: list[str]
    gold: list[str] | None  # class names of the first len(gold) texts (the labelled rows), when known
    source: str
    # Training texts a static int8 export calibrates on, kept apart from the rows that verify it.
    calibration: list[str] = dataclasses.field(default_factory=list)
    calibration_source: str = ""
    # Unlabelled texts that top up a sample smaller than max_rows, by source, drawn in this order.
    top_up: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    name: str = "validation"  # what the labelled rows are, as `parts` counts them
    # Rows of the sample by source (the labelled rows first), set by `sample`.
    parts: dict[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        keep = [index for index, text in enumerate(self.texts) if text and text.strip()]
        if len(keep) < len(self.texts):
            labelled = len(self.gold) if self.gold is not None else 0
            self.texts = [self.texts[index] for index in keep]
            self.gold = [self.gold[index] for index in keep if index < labelled] if self.gold is not None else None

    @property
    def labelled_rows(self) -> int:
        return len(self.gold) if self.gold is not None else 0

    def sample(self, max_rows: int | None, seed: int, calibrating: bool = True) -> VerificationRows:
        """At most `max_rows` rows: a seeded sample kept in order (a class-sorted file must not give one class),
        else all of them topped up to `max_rows`, never with the calibration rows when `calibrating`."""
        calibration = seeded_sample(self.calibration, CALIBRATION_ROWS, seed)
        texts, gold, source = self.texts, self.gold, self.source
        parts = {self.name: len(texts)}
        if max_rows is not None and len(texts) > max_rows:
            chosen = seeded_indices(len(texts), max_rows, seed)
            texts = [self.texts[index] for index in chosen]
            gold = [self.gold[index] for index in chosen] if self.gold is not None else None
            parts = {self.name: max_rows}
            source = f"{self.source}, {max_rows} of {len(self.texts)} rows (seeded sample)"
        elif max_rows is not None and len(texts) < max_rows and self.top_up:
            kept_apart = calibration if calibrating else []
            added, drawn = self._top_up(set(kept_apart), max_rows - len(texts), seed)
            texts, parts = texts + added, {**parts, **drawn}
            counts = ", ".join(f"{count} {name}" for name, count in drawn.items() if count)
            source += f", topped up with {counts} texts (no labels used)" if added else ", no other texts to add"
            if kept_apart:
                source += f", not the {len(kept_apart)} rows a static int8 model calibrates on"
        return VerificationRows(texts, gold, source, calibration, self.calibration_source, name=self.name, parts=parts)

    def _top_up(self, calibration: set[str], wanted: int, seed: int) -> tuple[list[str], dict[str, int]]:
        """Up to `wanted` texts from the top-up sources in order, neither verification rows already nor calibration
        rows (ranges set on a row flatter int8's agreement on it); how many each source gave."""
        taken = set(self.texts) | calibration
        added: list[str] = []
        drawn: dict[str, int] = {}
        for name, texts in self.top_up.items():
            fresh = [text for text in dict.fromkeys(texts) if text and text.strip() and text not in taken]
            chosen = seeded_sample(fresh, max(wanted - len(added), 0), seed)
            added += chosen
            taken.update(chosen)
            drawn[name] = len(chosen)
        return added, drawn

    def calibration_texts(self, seed: int) -> tuple[list[str], str]:
        """(texts, where they come from): CALIBRATION_ROWS of the calibration rows, else of the verification rows."""
        texts, source = self.calibration, self.calibration_source
        if not texts:
            texts, source = self.texts, "the verification rows (no training rows at hand)"
        return seeded_sample(texts, CALIBRATION_ROWS, seed), f"{min(len(texts), CALIBRATION_ROWS)} of {source}"


def validation_gold(validation: Any, task: str) -> list[str] | None:
    """The validation rows' class names; None for a multi-label run (sets: held to agreement alone)."""
    if task == "multi_label":
        return None
    names = validation.features["label"].names
    return [names[label] for label in column_values(validation, "label")]


def seeded_indices(size: int, count: int, seed: int) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).choice(size, size=count, replace=False))


def seeded_sample(texts: list[str], count: int, seed: int) -> list[str]:
    if len(texts) <= count:
        return list(texts)
    return [texts[index] for index in seeded_indices(len(texts), count, seed)]


def verification_rows(run: RunDir) -> VerificationRows:
    """The run's validation split, re-created from its config.yaml, with test and train texts to top it up and
    train's to calibrate on; else its test_predictions.csv, alone."""
    data_logger = logging.getLogger("pipeline.data.load")
    level = data_logger.level
    data_logger.setLevel(logging.ERROR)  # the split summary and Hub fallbacks: the record notes the outcome
    try:
        config = load_config(run.config_path)
        splits = load_splits(config.data, config.run.seed)
        validation = splits["validation"]
        return VerificationRows(
            column_values(validation, "text"),
            validation_gold(validation, config.data.task),
            "validation split (re-created from config.yaml)",
            column_values(splits["train"], "text"),
            "train split",
            top_up={name: column_values(splits[name], "text") for name in ("test", "train")},
        )
    except Exception as error:  # data moved, Hub offline, config from another version: fall back
        reason = one_line(error)
        reason = reason if len(reason) <= 160 else reason[:160].rsplit(" ", 1)[0] + " ..."
    finally:
        data_logger.setLevel(level)
    try:
        predictions = run.read_predictions([])
    except RunDirError as error:
        raise ExportError(f"the validation split cannot be re-created ({reason}) and {error}") from None
    if predictions is None:
        raise ExportError(
            f"{run.path}: the validation split cannot be re-created ({reason}) and there is no test predictions file to verify the export on"
        )
    return VerificationRows(
        predictions[PREDICTION_TEXT].tolist(),
        predictions[PREDICTION_GOLD].tolist(),
        f"test predictions file (the validation split could not be re-created: {reason})",
        name="test predictions",
    )


def reference_predictor(model: torch.nn.Module, tokenizer: Any, source: ModelSource, batch_size: int) -> Predictor:
    """PyTorch fp32 on the CPU, reading texts as prediction does: the numbers every export is held to."""
    labels = class_names(model.config)
    limit = length_limit(tokenizer, max_positions(model))
    length = min(source.max_length or limit, limit)
    cpu = torch.device("cpu")
    multi_label = is_multi_label(model.config)
    decision, _ = load_decision(source.model_dir, labels, multi_label)
    return Predictor(
        model.to(cpu),
        tokenizer,
        labels,
        length,
        cpu,
        source.text_spec,
        batch_size,
        long_text=source.long_text,
        pooling=source.pooling,
        multi_label=multi_label,
        decision=decision,
    )


@dataclass
class Results:
    torch: dict[str, Any]
    variants: dict[str, dict[str, Any]]
    auto: str | None
    auto_reason: str
    timed_passes: int = 1  # per backend; its best rate counts
    max_disagreement: float = MAX_DISAGREEMENT
    max_accuracy_loss_points: float = MAX_ACCURACY_LOSS_POINTS
    min_rows_for_auto: int = MIN_VERIFICATION_ROWS


def verify_exports(reference: Predictor, files: dict[str, Path], rows: VerificationRows, rounds: int) -> Results:
    """Score `rows` with every backend (`rounds` timed passes; the best rate counts): label agreement on every row,
    accuracy on the labelled ones. Too few rows for auto: one pass, as speed decides nothing."""
    count = len(rows.texts)
    too_few = too_few_rows(count)
    if too_few:
        logger.warning(f"{too_few}: the exports can be verified, but --backend auto will not choose one")
    predictors = _predictors(reference, files)
    passes = 1 if too_few else max(1, rounds)
    probabilities, rates = _measure(predictors, rows.texts, passes)

    gold = _gold_ids(reference.labels, rows.gold)
    decision = reference.decision  # the labels prediction writes: a multi-label row's set, not its argmax
    reference_probabilities = probabilities["torch-fp32"]
    reference_accuracy = _accuracy(decision.predict(reference_probabilities), gold)
    baseline = "torch-bf16" if "torch-bf16" in predictors else "torch-fp32"
    baseline_precision = baseline.removeprefix("torch-")
    torch_results = {
        "fp32": {"accuracy": reference_accuracy, "rows_per_second": rates["torch-fp32"]},
        "default": {
            "precision": baseline_precision,
            "accuracy": _accuracy(decision.predict(probabilities[baseline]), gold),
            "rows_per_second": rates[baseline],
            "label_agreement": 1.0 - _differing(decision, probabilities[baseline], reference_probabilities) / count,
        },
    }
    variants: dict[str, dict[str, Any]] = {}
    for variant in files:
        name = backend_name(variant)
        ids = decision.predict(probabilities[name])
        disagreeing = _differing(decision, probabilities[name], reference_probabilities)
        accuracy = _accuracy(ids, gold)
        change = None if accuracy is None or reference_accuracy is None else 100 * (accuracy - reference_accuracy)
        entry = {
            "label_agreement": 1.0 - disagreeing / count,
            "disagreeing_rows": disagreeing,
            "max_probability_difference": float(np.abs(probabilities[name] - probabilities["torch-fp32"]).max()),
            "accuracy": accuracy,
            "accuracy_change_points": change,
            "rows_per_second": rates[name],
            "speedup_vs_torch": rates[name] / rates[baseline],
        }
        status, reason = _judge(entry, count, reference_accuracy, baseline_precision)
        if status == STATUS_VERIFIED and too_few:
            reason = f"verified, kept, but not chosen by --backend auto: {too_few}; {reason}"
        variants[variant] = {"status": status, "reason": reason, **entry}
        precision = getattr(predictors[name].backend, "precision", None)
        if precision:
            variants[variant]["precision"] = precision
    auto, auto_reason = _auto_choice(variants, baseline_precision, count)
    return Results(torch_results, variants, auto, auto_reason, timed_passes=passes)


def _predictors(reference: Predictor, files: dict[str, Path]) -> dict[str, Predictor]:
    """torch-fp32 (the reference), torch-bf16 where `--backend torch` runs that here, and one per export."""
    cpu = torch.device("cpu")
    predictors = {"torch-fp32": reference}
    default_dtype = resolve_inference_dtype("auto", cpu)
    if default_dtype is not None:
        predictors["torch-bf16"] = dataclasses.replace(reference, compute_dtype=default_dtype)
    for variant, path in files.items():
        predictors[backend_name(variant)] = export_predictor(reference, variant, path, "verification")
    return predictors


def export_predictor(reference: Predictor, variant: str, path: Path, reason: str) -> Predictor:
    """`reference`'s tokenization and batching, with the exported model as its backend."""
    backend = open_backend(variant, path)
    return dataclasses.replace(
        reference, model=None, compute_dtype=None, backend=backend, choice=ExportChoice(variant, path, reason)
    )


def _gold_ids(labels: list[str], gold: list[str] | None) -> np.ndarray | None:
    """Gold class names as label ids; -1 for a name the model does not know."""
    if gold is None:
        return None
    return np.array([labels.index(name) if name in labels else -1 for name in map(str, gold)])


def _judge(entry: dict[str, Any], count: int, reference_accuracy: float | None, precision: str) -> tuple[str, str]:
    """(status, reason) of one export's `entry`: refused beyond the limits, else verified, saying whether it is
    faster than PyTorch (in `precision`)."""
    disagreeing, accuracy, change = entry["disagreeing_rows"], entry["accuracy"], entry["accuracy_change_points"]
    speedup, problems = entry["speedup_vs_torch"], []
    if disagreeing > MAX_DISAGREEMENT * count:
        problems.append(
            f"labels differ from PyTorch fp32 on {disagreeing} of {count} rows ({disagreeing / count:.2%}; the limit is {MAX_DISAGREEMENT:.1%})"
        )
    if change is not None and -change > MAX_ACCURACY_LOSS_POINTS:
        problems.append(
            f"accuracy {accuracy:.2%} vs PyTorch fp32's {reference_accuracy:.2%}: {-change:.2f} points lost (the limit is {MAX_ACCURACY_LOSS_POINTS})"
        )
    if problems:
        return STATUS_REFUSED, "; ".join(problems)
    if speedup > 1.0:
        return STATUS_VERIFIED, f"verified; {speedup:.2f}x the rows/s of PyTorch ({precision}) here"
    slower = f"slower than PyTorch ({precision}) here ({speedup:.2f}x its rows/s)"
    return STATUS_VERIFIED, f"verified, kept, but not chosen by --backend auto: {slower}"


def _measure(
    predictors: dict[str, Predictor], texts: list[str], rounds: int
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    for predictor in predictors.values():  # kernel selection and first allocations are not timed
        predictor.infer(texts[:WARMUP_ROWS])
    probabilities: dict[str, np.ndarray] = {}
    rates: dict[str, list[float]] = defaultdict(list)
    names = list(predictors)
    for round_index in range(max(1, rounds)):
        for name in names if round_index % 2 == 0 else reversed(names):
            start = time.perf_counter()
            _, result = predictors[name].infer(texts)
            rates[name].append(len(texts) / max(time.perf_counter() - start, 1e-9))
            probabilities.setdefault(name, result)
    return probabilities, {name: max(values) for name, values in rates.items()}


def _differing(decision: Decision, probabilities: np.ndarray, reference: np.ndarray) -> int:
    """Rows prediction writes otherwise under `decision`: another class, set or low-confidence flag."""
    differ = decision.predict(probabilities) != decision.predict(reference)
    differ = differ.any(axis=1) if differ.ndim == 2 else differ
    return int((differ | (decision.low_confidence(probabilities) != decision.low_confidence(reference))).sum())


def _accuracy(ids: np.ndarray, gold: np.ndarray | None) -> float | None:
    """Accuracy on the labelled rows (the first len(gold)); none for multi-label sets (ids (N, C))."""
    if gold is None or ids.ndim == 2 or not (gold >= 0).any():
        return None
    known = gold >= 0
    return float((ids[: len(gold)][known] == gold[known]).mean())


def _auto_choice(variants: dict[str, dict[str, Any]], precision: str, count: int) -> tuple[str | None, str]:
    verified = {name: v for name, v in variants.items() if v["status"] == STATUS_VERIFIED}
    if not verified:
        return None, "no export passed verification"
    ineligible = not_for_auto(count)
    if ineligible:
        return None, ineligible
    faster = {name: v for name, v in verified.items() if v["speedup_vs_torch"] > 1.0}
    if not faster:
        speeds = ", ".join(f"{name} {v['speedup_vs_torch']:.2f}x" for name, v in verified.items())
        return None, f"no verified export was faster than PyTorch ({precision}) here: {speeds}"
    best = max(faster, key=lambda name: faster[name]["rows_per_second"])
    chosen = faster[best]
    agreement, speedup = chosen["label_agreement"], chosen["speedup_vs_torch"]
    return (
        best,
        f"{best} verified on {count} rows ({agreement:.2%} label agreement with PyTorch fp32), {speedup:.2f}x PyTorch ({precision})'s rows/s on the verifying machine",
    )


def format_record(record: dict[str, Any]) -> str:
    """The parity and speed table of an export.json, as plain text."""
    verification = record.get("verification", {})
    lines = [
        f"Verified on {verification.get('rows')} rows: {verification.get('source')}",
        f"Measured: {rows_used(record)}",
        f"{'backend':<22}{'agreement':>10}{'max |dp|':>10}{'accuracy':>10}{'rows/s':>9}{'vs torch':>9}  status",
    ]
    for row in parity_rows(record):
        figures = (row.label_agreement, row.max_probability_difference, row.accuracy, row.rows_per_second, row.speedup)
        cells = "".join(
            f"{'-' if value is None else form.format(value):>{width}}" for value, (width, form) in zip(figures, CELLS)
        )
        lines.append(f"{row.backend:<22}{cells}  {row.status}")
    lines.append(f"--backend auto: {auto_backend(record)} ({record.get('auto_reason')})")
    return "\n".join(lines)
