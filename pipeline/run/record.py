"""metrics.json as typed records: one `RunRecord` per finished run, read and written here and nowhere else.

    record = read_record(run.metrics_path)  # RunDirError, naming the file, when it is damaged; then
    record.test.accuracy, record.ranking_metric ...; write_record(run.metrics_path, record)  # atomically

docs/run-directory.md describes every key (tests/run/test_record.py checks the page against these classes). The
codec is generic (pipeline/run/sections.py: dataclasses.fields and type hints), so a section is only its list of fields:

- A key the classes do not name (a newer or older file's) is kept in `extra` and written back; null stays null.
- A file without `format_version` is version 1 (runs before it was recorded): the same keys, one reader.
- Per-class maps (class name -> score) stay dicts: their keys are the run's classes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.common.io import atomic_write_json
from pipeline.run.sections import Section, section_fields

METRICS_FILE = "metrics.json"
# 1: no format_version key (runs made before it); 2: the same keys, with format_version.
FORMAT_VERSION = 2

# The test figures a run can be ranked by (train.selection_metric's choices), and their names in sentences.
RANKING_METRICS = {"accuracy": "accuracy", "macro_f1": "macro-F1", "micro_f1": "micro-F1"}


class RunDirError(ValueError):
    """A run directory missing something or holding a damaged file, named; here so reading metrics.json raises it."""


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise RunDirError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise RunDirError(f"{path}: cannot be read: {error.strerror}") from None


# ---------------------------------------------------------------------------------------------------------------
# The sections, in the order a run writes them


@dataclass
class RunInfo(Section):
    name: str | None = None
    model_kind: str | None = None
    model_name_or_path: str | None = None
    num_parameters: int | None = None
    started_at: str | None = None
    finished_at: str | None = None


@dataclass
class Areas(Section):  # under the ROC and precision-recall curves: binary and multi-label runs
    per_class: dict[str, dict[str, float]] | None = None  # class -> roc_auc, average_precision
    macro_roc_auc: float | None = None
    macro_average_precision: float | None = None


@dataclass
class LowConfidence(Section):  # the rows a flagging run marked
    flagged: int | None = None
    share: float | None = None
    accuracy_of_kept: float | None = None
    accuracy_of_flagged: float | None = None


@dataclass
class Scores(Section):
    """A split's metrics (stage 4's metric module, then loss, areas and low_confidence)."""

    accuracy: float | None = None
    subset_accuracy: float | None = None
    micro_f1: float | None = None
    macro_f1: float | None = None
    samples_f1: float | None = None
    hamming_loss: float | None = None
    balanced_accuracy: float | None = None
    num_samples: int | None = None
    per_class: dict[str, dict[str, Any]] | None = None  # class -> precision, recall, f1, support
    confusion_matrix: list[list[int]] | None = None
    loss: float | None = None
    areas: Areas | None = None
    low_confidence: LowConfidence | None = None

    def figure(self, metric: str) -> Any:
        """A figure by its name (a ranking metric's, say), or None."""
        return getattr(self, metric, None) if metric in {f.name for f in section_fields(type(self))} else None


@dataclass
class Best(Section):
    """The selected model; its score is under `validation_<metric>` (in `extra`)."""

    step: int | None = None
    metric: str | None = None

    @property
    def ranking_metric(self) -> str:
        """The validation metric that picked the model (train.selection_metric), or accuracy where not recorded."""
        return self.metric if self.metric in RANKING_METRICS else "accuracy"

    @property
    def score(self) -> Any:
        """Its value: validation_<ranking_metric>."""
        return self.extra.get(f"validation_{self.ranking_metric}")


@dataclass
class Data(Section):  # what stage 1 did (pipeline.data.load's summary)
    task: str | None = None
    label_reading: dict[str, Any] | None = None
    class_counts: dict[str, dict[str, Any]] | None = None  # split -> rows, per_class, imbalance_ratio
    sizes: dict[str, int] | None = None
    seed: int | None = None
    carved_from_train: dict[str, float] | None = None
    split_column: dict[str, Any] | None = None
    id_column: str | None = None
    duplicates: dict[str, Any] | None = None
    incomplete_rows: dict[str, Any] | None = None
    repeated_headers: dict[str, Any] | None = None
    quoting: dict[str, Any] | None = None
    delimiter: dict[str, Any] | None = None
    sheet: dict[str, Any] | None = None
    class_folders: dict[str, Any] | None = None
    class_files: dict[str, Any] | None = None
    decoding: dict[str, Any] | None = None  # files not read as data.encoding says, lines read as U+FFFD

    @property
    def train_counts(self) -> dict[str, Any]:
        """class_counts.train: rows, per_class, imbalance_ratio ({} where not recorded)."""
        counts = (self.class_counts or {}).get("train")
        return counts if isinstance(counts, dict) else {}

    @property
    def train_class_rows(self) -> dict[str, Any]:
        """Train rows per class ({} where not recorded)."""
        per_class = self.train_counts.get("per_class")
        return per_class if isinstance(per_class, dict) else {}


@dataclass
class Tokenization(Section):
    max_length: int | None = None
    max_length_setting: Any = None
    truncated_fraction: dict[str, float] | None = None
    windows_per_document: dict[str, Any] | None = None
    from_cache: bool | None = None
    from_cache_by_process: list[bool] | None = None
    unknown_token_share: dict[str, float] | None = None
    mostly_unknown_share: dict[str, float] | None = None


@dataclass
class Timings(Section):
    """Seconds per phase of the process. PHASES, in the order they run, add up to total_seconds exactly: what no
    phase covers is other_seconds. eval_seconds is the sum of test_seconds and calibration_seconds."""

    startup_seconds: float | None = None
    setup_seconds: float | None = None
    data_seconds: float | None = None
    model_load_seconds: float | None = None
    tokenize_seconds: float | None = None
    teacher_seconds: float | None = None
    train_setup_seconds: float | None = None
    train_seconds: float | None = None
    validation_seconds: float | None = None
    validation_pass_seconds: list[float] | None = None
    best_model_save_seconds: float | None = None
    checkpoint_seconds: float | None = None
    eval_seconds: float | None = None
    calibration_seconds: float | None = None
    test_seconds: float | None = None
    baseline_seconds: float | None = None
    ensemble_seconds: float | None = None
    label_audit_seconds: float | None = None
    export_seconds: float | None = None
    predict_speed_seconds: float | None = None
    outputs_seconds: float | None = None
    other_seconds: float | None = None
    total_seconds: float | None = None

    PHASES = (
        ("startup_seconds", "start-up"),
        ("setup_seconds", "set-up"),
        ("data_seconds", "data"),
        ("model_load_seconds", "model load"),
        ("tokenize_seconds", "tokenization"),
        ("teacher_seconds", "teacher"),
        ("train_setup_seconds", "training set-up"),
        ("train_seconds", "training steps"),
        ("validation_seconds", "validation"),
        ("best_model_save_seconds", "best-model saves"),
        ("checkpoint_seconds", "checkpoints"),
        ("calibration_seconds", "calibration"),
        ("test_seconds", "test"),
        ("baseline_seconds", "baseline"),
        ("ensemble_seconds", "ensemble"),
        ("label_audit_seconds", "label audit"),
        ("export_seconds", "export"),
        ("predict_speed_seconds", "speed sample"),
        ("outputs_seconds", "outputs"),
        ("other_seconds", "other"),
    )

    def close(self, total: float) -> None:
        """Set total_seconds, and other_seconds to what no phase covers."""
        covered = sum(getattr(self, key) or 0.0 for key, _ in self.PHASES if key != "other_seconds")
        self.total_seconds, self.other_seconds = total, total - covered

    @property
    def split(self) -> str:
        """The phases that took time, as the run's last line and its report show them: 'data 1.1 s, ...'."""
        shown = [(name, getattr(self, key)) for key, name in self.PHASES]
        return ", ".join(f"{name} {seconds:.1f} s" for name, seconds in shown if is_number(seconds) and seconds >= 0.05)


@dataclass
class Throughput(Section):
    train_samples_per_second: float | None = None
    eval_samples_per_second: float | None = None
    predict_rows_per_second: float | None = None
    predict_rows_timed: int | None = None
    predict_backend: str | None = None


@dataclass
class Training(Section):
    global_steps: int | None = None
    samples_seen: int | None = None
    epochs_completed: float | None = None
    effective_batch_size: int | None = None
    mixed_precision: str | None = None
    fast_dropout_modules: int | None = None
    last_layer_cls_only: bool | None = None
    num_processes: int | None = None
    stopped_early: bool | None = None
    loss: str | None = None
    focal_gamma: float | None = None
    class_weights: list[float] | None = None
    head_parameters: list[str] | None = None
    validation_passes: int | None = None
    validation_seconds: float | None = None
    validation_rows: int | None = None
    time_budget_seconds: float | None = None
    time_budget_steps: int | None = None

    @property
    def scoring_precision(self) -> str:
        """The precision stage 4 scored in, as prediction names it: bf16 under bf16 autocast, else fp32."""
        return "bf16" if self.mixed_precision == "bf16" else "fp32"


@dataclass
class Device(Section):
    type: str | None = None
    name: str | None = None
    num_processes: int | None = None
    cpu_threads: int | None = None
    cpu_threads_reason: str | None = None
    freed_memory_kept: bool | None = None


@dataclass
class Versions(Section):
    python: str | None = None
    torch: str | None = None
    transformers: str | None = None
    datasets: str | None = None
    accelerate: str | None = None
    pipeline: str | None = None


@dataclass
class Distill(Section):
    teacher: str | None = None
    teacher_model_dir: str | None = None
    teacher_test_accuracy: float | None = None
    teacher_train_accuracy: float | None = None
    alpha: float | None = None
    temperature: float | None = None
    augment: str | None = None
    augment_copies: int | None = None
    unlabeled_file: str | None = None
    transfer_set: dict[str, int] | None = None  # labelled, unlabeled, unlabeled_dropped_as_eval_duplicates, ...
    teacher_logits_from_cache: bool | None = None
    teacher_labelling_seconds: float | None = None
    teacher_rows_per_second: float | None = None
    init_embeddings: dict[str, Any] | None = None  # from, dimensions, variance_kept


@dataclass
class Calibration(Section):
    enabled: bool | None = None
    method: str | None = None
    temperature: float | None = None
    bins: int | None = None
    ece: dict[str, dict[str, float]] | None = None  # split -> before, after
    loss: dict[str, dict[str, float]] | None = None
    reliability: dict[str, dict[str, list[dict[str, Any]]]] | None = None  # bins: low, high, count, confidence, ...
    warning: str | None = None
    fitted_temperature: float | None = None  # the fit's; `temperature` is the one applied
    applied: bool | None = None
    fitted_on: str | None = None

    def before_after(self, record: str, split: str) -> tuple[Any, Any]:
        """A split's `ece` or `loss` (`record`) before and after calibration; None where not recorded."""
        pair = (getattr(self, record) or {}).get(split)
        return (pair.get("before"), pair.get("after")) if isinstance(pair, dict) else (None, None)


@dataclass
class Chosen(Section):  # how one class's threshold was chosen
    setting: Any = None
    threshold: float | None = None
    validation_precision: float | None = None
    validation_recall: float | None = None
    fallback: str | None = None
    applied: Any = None
    note: str | None = None


@dataclass
class Thresholds(Section):
    kind: str | None = None
    labels: list[str] | None = None
    thresholds: dict[str, float] | None = None
    chosen: dict[str, Chosen] | None = None
    setting: Any = None


@dataclass
class Baseline(Scores):
    """The TF-IDF baseline: its test metrics (as `test`, less loss, areas and low_confidence) and its fit."""

    name: str | None = None
    description: str | None = None
    train_seconds: float | None = None
    seconds: float | None = None
    num_train_samples: int | None = None
    num_features: int | None = None
    settings: dict[str, Any] | None = None  # ngram_range, sublinear_tf, min_df, max_features, C, solver
    error: str | None = None


@dataclass
class Ensemble(Section):  # the model averaged with the baseline (eval.ensemble)
    setting: str | None = None
    kept: bool | None = None
    weight: float | None = None  # the model's share; the baseline's is 1 - weight
    reason: str | None = None
    rule: str | None = None
    validation: dict[str, dict[str, float]] | None = None  # model, baseline, ensemble -> accuracy, macro_f1, loss
    test: dict[str, dict[str, float]] | None = None
    mcnemar: dict[str, dict[str, Any]] | None = None  # model, baseline -> only_ensemble_right, ..., p_value


@dataclass
class Evaluation(Section):  # a pipeline.evaluate folder's input and model
    model: str | None = None
    input: str | None = None
    run_file: str | None = None
    overrides: list[str] | None = None
    rows: int | None = None
    removed_rows: int | None = None
    backend: str | None = None


@dataclass
class LabelAudit(Section):  # the label audit (eval.label_audit): label_issues.csv in figures
    method: str | None = None
    splits: dict[str, dict[str, Any]] | None = None  # split -> rows, flagged, near_duplicates, signals
    class_pairs: dict[str, int] | None = None  # "given -> suggested" -> flagged rows
    seconds: float | None = None
    note: str | None = None


@dataclass
class RunRecord(Section):
    """metrics.json: a finished run's record (or a pipeline.evaluate folder's)."""

    format_version: int = FORMAT_VERSION
    # Every run has these: read as empty where an older file lacks them, so `record.test.accuracy` is None then.
    run: RunInfo = field(default_factory=RunInfo)
    labels: list[str] = field(default_factory=list)
    validation: Scores | None = None  # None in a pipeline.evaluate folder of a run without one
    test: Scores = field(default_factory=Scores)
    best: Best = field(default_factory=Best)
    data: Data = field(default_factory=Data)
    tokenization: Tokenization = field(default_factory=Tokenization)
    timings: Timings = field(default_factory=Timings)
    throughput: Throughput = field(default_factory=Throughput)
    training: Training = field(default_factory=Training)
    device: Device = field(default_factory=Device)
    versions: Versions = field(default_factory=Versions)
    # Only some runs have these (None otherwise): distillation, older runs, a pipeline.evaluate folder.
    distill: Distill | None = None
    calibration: Calibration | None = None
    thresholds: Thresholds | None = None
    baseline: Baseline | None = None
    ensemble: Ensemble | None = None
    evaluation: Evaluation | None = None
    label_audit: LabelAudit | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        record = super().from_dict(data if "format_version" in data else {"format_version": 1, **data})
        record.labels = [str(label) for label in record.labels] if isinstance(record.labels, list) else []
        return record

    @property
    def multi_label(self) -> bool:
        return self.data.task == "multi_label"

    @property
    def ranking_metric(self) -> str:
        """The test figure a run is ranked and set against baselines by: the validation metric that picked its best
        model (best.metric, train.selection_metric), or accuracy where the run does not record one."""
        return self.best.ranking_metric

    @property
    def headline_metrics(self) -> list[str]:
        """The test figures a run is summed up by (console, card): its selection metric, then accuracy and macro-F1."""
        lead = self.ranking_metric
        return [lead, *(name for name in ("accuracy", "macro_f1") if name != lead)]

    @property
    def headline_scores(self) -> str:
        """The run's last console line: led by the metric that selected its model (micro-F1 for multi-label, where
        accuracy is the strict subset accuracy)."""
        names = {**RANKING_METRICS, "accuracy": "subset accuracy" if self.test.micro_f1 is not None else "accuracy"}
        shown = [(name, self.test.figure(name)) for name in self.headline_metrics]
        scores = ", ".join(f"{names[name]} {value:.4f}" for name, value in shown if value is not None)
        return f"{scores} on {self.test.num_samples} rows"

    @property
    def untrained_classes(self) -> list[str]:
        """Classes with no training rows (data.class_counts), kept among the labels: the log, report and card say so."""
        return [str(name) for name, count in self.data.train_class_rows.items() if count == 0]


# ---------------------------------------------------------------------------------------------------------------
# The file


def read_record(path: Path, require_test: bool = True) -> RunRecord:
    """metrics.json of any version, checked for class names (and a test accuracy); RunDirError naming it if damaged."""
    text = read_text(path)
    if not text.strip():
        raise RunDirError(f"{path}: the file is empty — the run did not finish writing it")
    try:
        metrics = json.loads(text)
    except json.JSONDecodeError as error:
        raise RunDirError(f"{path}: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    if not isinstance(metrics, dict):
        raise RunDirError(f"{path}: expected a JSON object at the top level")
    labels = metrics.get("labels")
    if not isinstance(labels, list) or not labels:
        raise RunDirError(f"{path}: 'labels' (the class names) is missing or empty")
    test = metrics.get("test")
    if require_test and not (isinstance(test, dict) and is_number(test.get("accuracy"))):
        raise RunDirError(f"{path}: 'test.accuracy' is missing — the test split was not evaluated")
    return RunRecord.from_dict(metrics)


def write_record(path: Path, record: RunRecord) -> None:
    """metrics.json, atomically, at the current format version."""
    record.format_version = FORMAT_VERSION
    atomic_write_json(path, record.to_dict())
