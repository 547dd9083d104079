"""The run directory: the contract between training, prediction and reports, and the only module that knows it.

    run = RunDir(Path("runs/ag_news_bert"))
    run.metrics_path, run.model_dir, run.read_record(), run.read_history(), run.read_predictions()

Every file name below lives here and nowhere else (metrics.json's in pipeline.run.record, which reads and writes
it; docs/run-directory.md describes the contents). Readers raise
`RunDirError` naming the file and what is wrong with it, so every command reports a damaged run the same way.
"""

from __future__ import annotations

import json
import os
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.common.io import atomic_write_json
from pipeline.run.record import (
    METRICS_FILE,
    RunDirError,
    RunRecord,
    is_number,
    read_record,
    read_text,
    write_record,
)
from pipeline.run.record import RANKING_METRICS as RANKING_METRICS  # the model card reads them here

CONFIG_FILE = "config.yaml"
HISTORY_FILE = "history.jsonl"
PREDICTIONS_FILE = "test_predictions.csv"
MODEL_DIR = "model"
CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_PREFIX = "step_"
TENSORBOARD_DIR = "tensorboard"
# In every checkpoint folder: the loop's position and the learning-rate schedule, as JSON (nothing pickled).
TRAINER_STATE_FILE = "trainer_state.json"
REPORT_MARKDOWN = "report.md"
REPORT_HTML = "report.html"
CONFUSION_MATRIX_PNG = "confusion_matrix.png"
# What save_pretrained writes first: a folder holding it is a saved model.
MODEL_CONFIG_FILE = "config.json"
# The Hugging Face model card inside model/ (YAML metadata, then Markdown): pipeline/card/write.py writes it.
MODEL_CARD_FILE = "README.md"
MODEL_WEIGHTS_FILE = "model.safetensors"
# The fast tokenizer's whole pipeline, and transformers' settings around it (special tokens, length limit).
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
# python -m pipeline.export: ONNX models and their verification record, in one folder of the run.
EXPORT_DIR = "onnx"
EXPORT_RECORD_FILE = "export.json"
ONNX_MODEL_FILES = {
    "fp32": "model.onnx",
    "int8": "model.int8.onnx",
    "openvino": "model.openvino.onnx",
    "openvino-int8": "model.openvino-int8.onnx",
}
# Exports that failed verification are moved here: kept for inspection, never used.
EXPORT_REFUSED_DIR = "refused"

# Stage 1's record of the split: which rows (by id) are in which split, and the rows removed (duplicates; with
# data.incomplete_rows: drop, rows without a text or a label).
SPLITS_FILE = "splits.csv"
REMOVED_ROWS_FILE = "removed_rows.csv"
# The label audit's rows to read again (pipeline.scoring.label_audit).
LABEL_ISSUES_FILE = "label_issues.csv"
# Held while a finetune process owns the run directory: its process id, for the next one to check.
LOCK_FILE = ".lock"
# Inside model/, beside the weights: how probabilities become labels (pipeline.scoring.thresholds): the decision thresholds
# chosen on validation, the task and its label separator, and the calibration temperature (already folded into the
# weights: a record, never to be applied again). Absent: argmax, or 0.5 per class for a multi-label model.
DECISION_FILE = "decision.json"
# The baseline averaged into the model's probabilities, where the run kept that ensemble (pipeline.scoring.ensemble).
ENSEMBLE_FILE = "ensemble.json"
BASELINE_WEIGHTS_FILE = "baseline.safetensors"
# decision.json's key for how the model's texts were built and read (text columns and separator, the fixed length,
# the long-text rule), in config.yaml's sections and keys: so the folder alone, copied out of its run, predicts
# as the run does (pipeline.scoring.decide writes it, pipeline.predict.source reads it). Absent in models saved before.
DECISION_INPUT_KEY = "input"

# Under data.cache_dir, not in a run directory: distillation's content-keyed caches (pipeline/distill/teacher.py).
TEACHER_LOGITS_CACHE_DIR = "teacher_logits"  # <key>.npy: (N, K) float32 teacher logits of one list of texts
TRANSFER_CACHE_DIR = "transfer_texts"  # <key>.json: the augmented texts of one train split and setting

# test_predictions.csv: these columns, then the row's id (the data's id column, else its line or record number),
# then low_confidence where the decision flags rows, then prob_<class> per class.
PREDICTION_TEXT, PREDICTION_GOLD, PREDICTION_PREDICTED, PREDICTION_SCORE = "text", "label", "predicted", "score"
PREDICTION_COLUMNS = (PREDICTION_TEXT, PREDICTION_GOLD, PREDICTION_PREDICTED, PREDICTION_SCORE)
PREDICTION_ROW_ID = "row_id"
# Multi-class runs with thresholds: true where the top probability is below its class's threshold (the label is
# kept, not forced; pipeline.scoring.thresholds). Prediction output uses the same column.
PREDICTION_LOW_CONFIDENCE = "low_confidence"
PROBABILITY_PREFIX = "prob_"


def owned_names() -> set[str]:
    """Every top-level name the pipeline writes into a run directory: only these are deleted on overwrite."""
    return {
        CONFIG_FILE,
        METRICS_FILE,
        HISTORY_FILE,
        PREDICTIONS_FILE,
        MODEL_DIR,
        CHECKPOINTS_DIR,
        TENSORBOARD_DIR,
        REPORT_MARKDOWN,
        REPORT_HTML,
        CONFUSION_MATRIX_PNG,
        SPLITS_FILE,
        REMOVED_ROWS_FILE,
        LOCK_FILE,
        EXPORT_DIR,
    }


def is_staging_leftover(name: str) -> bool:
    """Temporary names of atomic writes (io.atomic_path, io.replace_directory, checkpoints) left by a crash."""
    return name.startswith(".") and name.endswith((".tmp", ".partial", ".old"))


class RunDirWarning(UserWarning):
    """Something optional in a run directory was missing or damaged and was skipped."""


def is_model_dir(path: Path) -> bool:
    return (Path(path) / MODEL_CONFIG_FILE).is_file()


def is_run_dir(path: Path) -> bool:
    """A run that got as far as saving a model (what prediction needs)."""
    path = Path(path)
    return is_model_dir(path / MODEL_DIR) and (path / CONFIG_FILE).is_file()


def holds_run(path: Path) -> bool:
    """Whether a folder holds (the start of) a run: training writes its config and history first."""
    path = Path(path)
    return (path / CONFIG_FILE).exists() or (path / HISTORY_FILE).exists()


def _inside(*names: str) -> property:
    """A RunDir property: the path of `names` inside the run directory."""
    return property(lambda run: run.path.joinpath(*names))


@dataclass(frozen=True)
class RunDir:
    path: Path

    config_path = _inside(CONFIG_FILE)
    metrics_path = _inside(METRICS_FILE)
    history_path = _inside(HISTORY_FILE)
    predictions_path = _inside(PREDICTIONS_FILE)
    model_dir = _inside(MODEL_DIR)
    model_card_path = _inside(MODEL_DIR, MODEL_CARD_FILE)
    checkpoints_dir = _inside(CHECKPOINTS_DIR)
    tensorboard_dir = _inside(TENSORBOARD_DIR)
    confusion_matrix_path = _inside(CONFUSION_MATRIX_PNG)
    label_issues_path = _inside(LABEL_ISSUES_FILE)
    export_dir = _inside(EXPORT_DIR)
    export_record_path = _inside(EXPORT_DIR, EXPORT_RECORD_FILE)

    def checkpoint_path(self, global_step: int) -> Path:
        return self.checkpoints_dir / f"{CHECKPOINT_PREFIX}{global_step}"

    def checkpoints(self) -> list[Path]:
        """Completed checkpoints, oldest first (staging folders and foreign names are not checkpoints)."""
        if not self.checkpoints_dir.is_dir():
            return []
        steps = {}
        for child in self.checkpoints_dir.iterdir():
            number = child.name.removeprefix(CHECKPOINT_PREFIX)
            if child.is_dir() and child.name.startswith(CHECKPOINT_PREFIX) and number.isdigit():
                steps[int(number)] = child
        return [steps[step] for step in sorted(steps)]

    def check_finished(self) -> None:
        """Raise RunDirError unless this is a finished run (config and metrics), saying what it is instead."""
        path = self.path
        if not path.exists():
            raise RunDirError(f"{path}: run directory does not exist")
        if not path.is_dir():
            raise RunDirError(f"{path}: not a directory (expected a run directory such as runs/<name>)")
        if holds_run(path) or self.metrics_path.exists():
            if not self.metrics_path.is_file():
                raise RunDirError(self.unfinished())
            if not self.config_path.is_file():
                raise RunDirError(f"{path}: {CONFIG_FILE} is missing — every finished run directory holds its config")
            return
        runs_inside = sorted(child.name for child in path.iterdir() if (child / METRICS_FILE).is_file())
        hint = f"; run directories inside it: {', '.join(runs_inside[:5])}" if runs_inside else ""
        raise RunDirError(f"{path}: not a run directory (no {CONFIG_FILE}, {METRICS_FILE} or {HISTORY_FILE}){hint}")

    def unfinished(self) -> str:
        """The one message for a run directory without a finished model (no metrics.json), as prediction,
        evaluation, reports and model cards say it: still training, or stopped, and then how to go on."""
        missing = f"{self.path}: {METRICS_FILE} is missing, so the run has not finished"
        owner = live_lock_owner(self.path)
        if owner is not None:
            return f"{missing} — it is still training (process {owner} holds it); wait for it to finish"
        checkpoints = self.checkpoints()
        if checkpoints:
            return (
                f"{missing} — it stopped (interrupted, or it failed); continue it from its last checkpoint "
                f"({checkpoints[-1].name}): {self.finetune_command('train.resume=true')}"
            )
        return (
            f"{missing} — it stopped (interrupted, or it failed) without a checkpoint to continue from "
            f"(train.save_every_steps); train it again: {self.finetune_command('run.overwrite=true')}"
        )

    def finetune_command(self, *settings: str) -> str:
        """`python -m pipeline.finetune` on this run's config.yaml with `settings`, naming the run's place where it
        was moved since training (run.output_dir and run.name, which a resumed run may change); the settings alone
        where config.yaml cannot be read."""
        try:
            saved = self.read_config().get("run") or {}
        except RunDirError:
            return " ".join(settings)
        words = ["python", "-m", "pipeline.finetune", "--config", str(self.config_path), *settings]
        place = Path(str(saved.get("output_dir", ""))).expanduser() / str(saved.get("name", ""))
        if place.resolve() != self.path.resolve():
            words += [f"run.output_dir={self.path.parent}", f"run.name={self.path.name}"]
        return " ".join(shlex.quote(word) for word in words)

    def read_config(self) -> dict[str, Any]:
        """config.yaml as plain nested dicts (the resolved PipelineConfig)."""
        import yaml

        try:
            config = yaml.safe_load(read_text(self.config_path))
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise RunDirError(f"{self.config_path}: invalid YAML{where}") from None
        if not isinstance(config, dict):
            raise RunDirError(f"{self.config_path}: expected a mapping of config sections")
        return config

    def read_record(self, require_test: bool = True) -> RunRecord:
        """metrics.json as a RunRecord (pipeline.run.record), any version of it."""
        return read_record(self.metrics_path, require_test)

    def read_history(self, notes: list[str] | None = None) -> list[dict[str, Any]]:
        """history.jsonl; a truncated last line (the run was killed mid-write) is skipped, with a note."""
        notes = [] if notes is None else notes
        if not self.history_path.is_file():
            note(notes, f"{self.history_path}: missing, so there are no validation curves")
            return []
        numbered = [(n, line) for n, line in enumerate(read_text(self.history_path).splitlines(), 1) if line.strip()]
        records = []
        for position, (line_number, line) in enumerate(numbered):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                if position == len(numbered) - 1:
                    note(notes, f"{self.history_path}: line {line_number} is truncated and was skipped")
                    break
                raise RunDirError(f"{self.history_path}: line {line_number} is not valid JSON: {error.msg}") from None
            if not isinstance(record, dict):
                raise RunDirError(f"{self.history_path}: line {line_number} is not a JSON object")
            records.append(record)
        return records

    def read_predictions(self, notes: list[str] | None = None) -> Any:
        """test_predictions.csv as a DataFrame (every text kept as text), or None when the run wrote none."""
        import pandas as pd

        notes = [] if notes is None else notes
        path = self.predictions_path
        if not path.is_file():
            note(notes, f"{path}: missing, so no per-text comparison or mistakes")
            return None
        try:
            # keep_default_na=False: a text that reads "NA" or "null" must stay text.
            text_columns = dict.fromkeys(
                (PREDICTION_TEXT, PREDICTION_GOLD, PREDICTION_PREDICTED, PREDICTION_ROW_ID), str
            )
            predictions = pd.read_csv(path, dtype=text_columns, keep_default_na=False)
        except pd.errors.EmptyDataError:
            raise RunDirError(f"{path}: the file is empty") from None
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as error:
            raise RunDirError(f"{path}: cannot be parsed as CSV: {first_line(error)}") from None
        missing = [column for column in PREDICTION_COLUMNS if column not in predictions.columns]
        if missing:
            raise RunDirError(f"{path}: missing column(s) {', '.join(missing)}")
        scores = pd.to_numeric(predictions[PREDICTION_SCORE], errors="coerce")
        if scores.isna().any():
            bad_row = int(np.flatnonzero(scores.isna().to_numpy())[0])
            raise RunDirError(f"{path}: column '{PREDICTION_SCORE}' is not a number in data row {bad_row + 1}")
        predictions[PREDICTION_SCORE] = scores.astype(float)
        return predictions

    def write_record(self, record: RunRecord) -> None:
        write_record(self.metrics_path, record)


def write_decision(model_dir: Path, record: dict[str, Any]) -> None:
    atomic_write_json(Path(model_dir) / DECISION_FILE, record)


def read_decision(model_dir: Path) -> dict[str, Any] | None:
    """model/decision.json, or None when the model has none (runs before it existed, bare models)."""
    path = Path(model_dir) / DECISION_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise RunDirError(f"{path}: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    if not isinstance(record, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    return record


def folded_temperature(model_dir: Path) -> float:
    """The temperature folded into the saved model's output layer (model/decision.json, written by
    pipeline.scoring.decide): its logits are the trained model's divided by it, so multiplying them by it gives back the
    probabilities before calibration. 1.0 when none was folded (train.calibrate false; models saved before
    decision.json existed were never calibrated)."""
    record = read_decision(model_dir) or {}
    if record.get("temperature_folded") and is_number(record.get("temperature")):
        return float(record["temperature"])
    return 1.0


def saved_model_config(model_dir: Path) -> dict[str, Any] | None:
    """A saved model's config.json (save_pretrained's), or None where it is missing, unreadable or not a JSON
    object: for readers that only describe the model (the model card) and leave out what they cannot read."""
    try:
        saved = json.loads((Path(model_dir) / MODEL_CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


# ---------------------------------------------------------------------------------------------------------------
# Small helpers shared by the readers and their users


def note(notes: list[str], message: str) -> None:
    """Record a skipped part of a run directory and warn about it."""
    notes.append(message)
    warnings.warn(message, RunDirWarning, stacklevel=3)


def first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def config_setting(config: Any, *keys: str) -> Any:
    """A setting of config.yaml as plain dicts (RunDir.read_config's, or decision.json's `input`) by its section
    and key, or None where the run's config lacks it (older runs); metrics.json is read typed (RunRecord)."""
    for key in keys:
        if not isinstance(config, dict) or key not in config:
            return None
        config = config[key]
    return config


def per_class_score(scores: Any, key: str) -> float | None:
    """One class's test figure from metrics.json `per_class`; None (shown as missing) for recall and F1 of a class
    without test rows, which have nothing to measure (scikit-learn reports 0 there). Its precision stays: 0 when the
    class was predicted and wrong every time. The report and the model card both read per-class figures here."""
    scores = scores if isinstance(scores, dict) else {}
    value = scores.get(key)
    if key in ("recall", "f1") and scores.get("support") == 0:
        return None
    return value if is_number(value) else None


def untrained_consequence(untrained: list[str]) -> str:
    """What classes without training rows mean for the model's scores, as the report and the model card say it."""
    pronoun = "it" if len(untrained) == 1 else "them"
    return f"the model never learned {pronoun}, so its scores for {pronoun} mean nothing"


# ---------------------------------------------------------------------------------------------------------------
# Who holds a run directory (pipeline.run.ownership takes and releases it)


def live_lock_owner(path: Path) -> int | None:
    """The id of the live process, other than this one, that holds the run directory's lock; None where none does
    (a lock left by a process that no longer runs is no one's)."""
    try:
        owner = (path / LOCK_FILE).read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    # ASCII digits only: str.isdigit takes "²", which int() refuses. os.kill(0, 0) signals this process's own group,
    # which is always alive: 0 is no process's id.
    if not (owner.isascii() and owner.isdigit()) or int(owner) in (0, os.getpid()):
        return None
    try:
        os.kill(int(owner), 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: an id past any process's (a damaged lock)
        return None
    except PermissionError:  # it exists, under another user
        pass
    return int(owner)
