"""Range and consistency checks of a loaded config (`validate`, run by `load_config`): what types alone cannot
express. Class names are checked against the data once it is loaded.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.config.reading import PAIR_MARK, VALUE_RULES, normalise_name
from pipeline.config.schema import ConfigError, DataConfig, PipelineConfig
from pipeline.config.train_config import duration_seconds

POSITIVE, IN_RANGE, OUT_OF_RANGE = "must be a positive integer", "must be between 0 and 1", "out of range"
# (key, rule, test): a set value at `key` must pass `test`, else "key: rule, got value". Types alone cannot say it.
RANGES: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
    ("train.per_device_batch_size", POSITIVE, lambda v: v > 0),
    ("train.gradient_accumulation_steps", POSITIVE, lambda v: v > 0),
    ("train.log_every_steps", POSITIVE, lambda v: v > 0),
    ("eval.batch_size", POSITIVE, lambda v: v > 0),
    ("eval.max_batch_tokens", POSITIVE, lambda v: v == "auto" or v > 0),
    ("train.max_steps", POSITIVE, lambda v: v > 0),
    ("train.eval_every_steps", "must be a positive integer or auto", lambda v: v == "auto" or v > 0),
    ("train.eval_budget", "must be in (0, 1]", lambda v: 0.0 < v <= 1.0),
    (
        "train.time_budget",
        "must be seconds or a duration such as 90s, 10m or 1h",
        lambda v: (duration_seconds(v) or 0) > 0,
    ),
    ("eval.validation_sample_rows", POSITIVE, lambda v: v > 0),
    ("train.save_every_steps", POSITIVE, lambda v: v > 0),
    ("train.early_stopping_patience", POSITIVE, lambda v: v > 0),
    ("train.cpu_threads", POSITIVE, lambda v: v > 0),
    ("data.max_train_samples", POSITIVE, lambda v: v > 0),
    ("data.max_eval_samples", POSITIVE, lambda v: v > 0),
    ("train.learning_rate", OUT_OF_RANGE, lambda v: v > 0),
    ("train.head_learning_rate", OUT_OF_RANGE, lambda v: v > 0),
    ("train.weight_decay", OUT_OF_RANGE, lambda v: v >= 0),
    ("train.max_grad_norm", OUT_OF_RANGE, lambda v: v >= 0),
    ("run.seed", OUT_OF_RANGE, lambda v: v >= 0),
    ("tokenizer.max_truncated_fraction", OUT_OF_RANGE, lambda v: 0 <= v < 1),
    ("data.hub_timeout_seconds", OUT_OF_RANGE, lambda v: v > 0),
    ("data.validation_fraction", IN_RANGE, lambda v: 0.0 < v < 1.0),
    ("data.test_fraction", IN_RANGE, lambda v: 0.0 < v < 1.0),
    ("train.warmup_ratio", "must be in [0, 1)", lambda v: 0.0 <= v < 1.0),
    ("tokenizer.max_length", "must be at least 8", lambda v: v == "auto" or v >= 8),
    ("tokenizer.head_fraction", IN_RANGE, lambda v: 0.0 < v < 1.0),
    ("tokenizer.max_chunks", "must be at least 1", lambda v: v >= 1),
    ("eval.predict_speed_rows", "must be 0 (off) or positive", lambda v: v >= 0),
    ("train.distill.alpha", "must be in [0, 1]", lambda v: 0.0 <= v <= 1.0),
    ("train.distill.temperature", "must be a finite number > 0", lambda v: 0 < v < math.inf),
    ("train.distill.augment_copies", POSITIVE, lambda v: v >= 1),
    ("train.distill.augment_word_probability", "must be in [0, 1)", lambda v: 0.0 <= v < 1.0),
    ("train.distill.augment_ngram_probability", "must be in [0, 1]", lambda v: 0.0 <= v <= 1.0),
    ("train.distill.augment_ngram_max", POSITIVE, lambda v: v >= 1),
    ("train.distill.teacher_batch_size", POSITIVE, lambda v: v >= 1),
    ("train.focal_gamma", "must be a finite number >= 0", lambda v: 0.0 <= v < math.inf),
)


def validate(config: PipelineConfig) -> None:
    """Range and consistency checks that types alone cannot express."""
    for section in ("run", "data", "tokenizer", "train", "eval"):  # NaN and infinities would crash or mislead later
        for key, value in vars(getattr(config, section)).items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{section}.{key}: must be a finite number, got {value}")
    for key, rule, test in RANGES:
        value = functools.reduce(getattr, key.split("."), config)
        if value is not None and not test(value):
            raise ConfigError(f"{key}: {rule}, got {value}")
    if config.train.selection_metric == "micro_f1" and config.data.task != "multi_label":
        raise ConfigError(
            "train.selection_metric: micro_f1 is for multi-label tasks (for a single label it equals accuracy); use accuracy, macro_f1 or auto"
        )
    if config.train.epochs <= 0 and config.train.max_steps is None:
        raise ConfigError(f"train.epochs: must be positive (or set train.max_steps), got {config.train.epochs}")
    name = config.run.name  # one folder inside run.output_dir: never the output folder itself, a parent, or elsewhere
    if not name.strip() or name in (".", "..") or "/" in name or "\\" in name or Path(name).is_absolute():
        raise ConfigError(
            f"run.name: must be a plain folder name (no path separators, not empty, '.' or '..'), got {name!r}"
        )
    # A window holds max_length minus [CLS] and [SEP]; a stride as large would never move forward. The length is
    # checked against the stride only when texts are chunked: truncation never reads the stride, so a short
    # max_length (32) must not fail on its default.
    tokenizer = config.tokenizer
    chunked = tokenizer.long_text == "chunk" and isinstance(tokenizer.max_length, int)
    if tokenizer.chunk_stride < 0 or (chunked and tokenizer.chunk_stride >= tokenizer.max_length - 2):
        raise ConfigError(
            f"tokenizer.chunk_stride: must be at least 0 and smaller than a window (tokenizer.max_length - 2), got {tokenizer.chunk_stride}"
        )
    if config.data.source == "files" and not config.data.train_file:
        raise ConfigError("data.train_file: required when data.source is 'files'")
    _validate_hub_splits(config.data)
    if not config.data.text_columns:
        raise ConfigError("data.text_columns: name at least one column")
    for name, rule in VALUE_RULES.items():
        problem = rule(getattr(config.data, name)) if getattr(config.data, name) is not None else None
        if problem:
            raise ConfigError(f"data.{name}: {problem}")
    if config.data.json_field is not None and not config.data.json_field.strip():
        raise ConfigError("data.json_field: name the key of the object that holds the records, or leave it unset")
    _validate_label_columns(config)
    # Written values only: an empty cell is always a missing label (one that is also a class names that class).
    for index, value in enumerate(config.data.missing_label_values):
        if not value.strip():
            raise ConfigError(
                f"data.missing_label_values[{index}]: empty; an empty label cell is always a missing label, list only written marks (NaN, N/A, -)"
            )
    _validate_text_pair(config)
    _validate_split_column(config)
    _validate_distill(config)
    _validate_decisions(config)


def _validate_hub_splits(data: DataConfig) -> None:
    """data.hub_splits: for the Hub only, each a distinct Hub split (its keys are checked with the splits,
    data.hub_split_names)."""
    if not data.hub_splits:
        return
    if data.source != "hub":
        raise ConfigError("data.hub_splits: names the splits of a Hub dataset; data.source is 'files'")
    names = list(data.hub_splits.values())
    if len(set(names)) < len(names):
        raise ConfigError(
            f"data.hub_splits: {data.hub_splits} gives one Hub split to two splits, whose rows would be both"
        )


def _validate_text_pair(config: PipelineConfig) -> None:
    """data.text_pair_columns: distinct from the first text's and the label's columns, and read whole or cut as
    pairs are (windows and head/tail cuts are rules for one text)."""
    data, rule = config.data, config.tokenizer
    if PAIR_MARK in data.text_separator:  # it would make a pair of a single text's columns
        raise ConfigError(
            f"data.text_separator: {data.text_separator!r} holds {PAIR_MARK}, the mark of a pair's two texts"
        )
    if data.text_pair_columns is None:
        return
    if not data.text_pair_columns:
        raise ConfigError("data.text_pair_columns: name at least one column, or leave it unset for single texts")
    first = {normalise_name(column) for column in data.text_columns}
    labels = {normalise_name(column) for column in data.label_columns or [data.label_column]}
    for column in data.text_pair_columns:
        if normalise_name(column) in first:
            raise ConfigError(f"data.text_pair_columns: '{column}' is also in data.text_columns; a pair has two texts")
        if normalise_name(column) in labels:
            raise ConfigError(f"data.text_pair_columns: holds the label column '{column}'")
    if rule.long_text == "chunk":
        raise ConfigError(
            "tokenizer.long_text: chunk reads one long text in windows; with data.text_pair_columns a pair longer than max_length is cut from the end of its longer text (long_text: truncate)"
        )
    if rule.truncation != "head":
        raise ConfigError(
            f"tokenizer.truncation: {rule.truncation} cuts one text; with data.text_pair_columns a pair longer than max_length is cut from the end of its longer text (truncation: head)"
        )


def _validate_label_columns(config: PipelineConfig) -> None:
    """The label column(s) against the text columns, and data.label_columns' own rules."""
    data = config.data
    key = "data.label_columns" if data.label_columns else "data.label_column"
    texts = {normalise_name(column) for column in data.text_columns}
    for column in data.label_columns or [data.label_column]:
        if normalise_name(column) in texts:
            raise ConfigError(
                f"data.text_columns: holds the label column '{column}' ({key}); the model would read each row's answer in its text"
            )
    if data.label_names_file is not None and (data.label_names or data.label_columns):
        given = "data.label_names" if data.label_names else "data.label_columns"
        raise ConfigError(f"data.label_names_file: the classes are named once; {given} names them too, unset one")
    if not data.label_columns:
        return
    if data.task != "multi_label":
        raise ConfigError(
            "data.label_columns: one 0/1 column per class is a multi-label layout; set data.task=multi_label (a single-label task names its one column in data.label_column)"
        )
    if data.label_names:
        raise ConfigError(
            "data.label_names: the classes are the names of data.label_columns, in their order; leave label_names unset"
        )
    normalised = [normalise_name(column) for column in data.label_columns]
    if len(set(normalised)) < 2 or len(set(normalised)) < len(normalised):
        raise ConfigError(
            f"data.label_columns: name two or more distinct columns, one per class, got {data.label_columns} (one 0/1 column is a single-label task: data.label_column)"
        )
    joined = [column for column in data.label_columns if data.label_separator in column]
    if joined:
        raise ConfigError(
            f"data.label_columns: column {joined[0]!r} contains data.label_separator {data.label_separator!r}, which joins classes in predictions; set another separator"
        )


def _validate_split_column(config: PipelineConfig) -> None:
    """data.split_column says each row's split: not beside files that say it too, and not a column read as
    something else (a row's text, label or id)."""
    data = config.data
    column = data.split_column
    if column is None:
        return
    if not column.strip():
        raise ConfigError("data.split_column: empty; name the column that says each row's split, or leave it unset")
    given = [key for key in ("validation_file", "test_file") if getattr(data, key)]
    if data.source == "files" and given:
        raise ConfigError(
            f"data.split_column: the column '{column}' says which rows are validation and test, and data.{given[0]} gives them too; unset one (a file to score a trained run: python -m pipeline.evaluate)"
        )
    label_key = "data.label_columns" if data.label_columns else "data.label_column"
    roles = {
        label_key: data.label_columns or [data.label_column],
        "data.text_columns": data.text_columns,
        "data.text_pair_columns": data.text_pair_columns or [],
        "data.id_column": [data.id_column] if data.id_column else [],
    }
    for key, columns in roles.items():
        if normalise_name(column) in {normalise_name(name) for name in columns}:
            raise ConfigError(
                f"data.split_column: '{column}' is also read by {key}; the split column only says which split a row is in, name another column"
            )


THRESHOLD_TARGETS = ("precision", "recall")


def _validate_decisions(config: PipelineConfig) -> None:
    """Class weights, the label separator and eval.threshold (class names are checked against the data once it is
    loaded, pipeline.scoring.thresholds / pipeline.train.losses)."""
    if isinstance(config.train.class_weights, dict):
        for name, weight in config.train.class_weights.items():
            if not 0.0 < weight < math.inf:
                raise ConfigError(f"train.class_weights.{name}: must be a finite number > 0, got {weight}")
    if not config.data.label_separator:
        raise ConfigError(
            'data.label_separator: must not be empty (in a YAML file quote a | or >: "|"; bare, it starts a block of text)'
        )
    threshold = config.eval.threshold
    if isinstance(threshold, dict) and not is_threshold_target(threshold):
        for name, setting in threshold.items():
            _validate_threshold(setting, f"eval.threshold.{name}")
    elif threshold is not None:
        _validate_threshold(threshold, "eval.threshold")


def is_threshold_target(setting: object) -> bool:
    """{precision: p} or {recall: r}: a target, as opposed to a mapping class -> setting."""
    return isinstance(setting, dict) and len(setting) == 1 and next(iter(setting)) in THRESHOLD_TARGETS


def _validate_threshold(setting: object, key: str) -> None:
    if isinstance(setting, float) and not 0.0 < setting < 1.0:
        raise ConfigError(f"{key}: a probability threshold must be between 0 and 1, got {setting}")
    if isinstance(setting, dict):
        if not is_threshold_target(setting):
            raise ConfigError(f"{key}: expected a number, best_f1, {{precision: p}} or {{recall: r}}, got {setting}")
        ((target, value),) = setting.items()
        if not 0.0 < value <= 1.0:
            raise ConfigError(f"{key}.{target}: must be in (0, 1], got {value}")


def _validate_distill(config: PipelineConfig) -> None:
    """The settings that only make sense with a teacher, and those a teacher rules out."""
    distill = config.train.distill
    if distill.teacher is not None and not distill.teacher.strip():
        raise ConfigError("train.distill.teacher: empty; give a run directory or model folder, or leave it unset")
    if distill.teacher is None:
        for key, value in (
            ("data.unlabeled_file", config.data.unlabeled_file),
            ("train.distill.augment", None if distill.augment == "none" else distill.augment),
            ("train.distill.init_embeddings", distill.init_embeddings or None),
        ):
            if value is not None:
                raise ConfigError(f"{key}: needs a teacher; set train.distill.teacher")
    elif distill.init_embeddings and config.model.kind != "encoder":
        raise ConfigError(
            "train.distill.init_embeddings: only for a student trained from scratch (model.kind: encoder)"
        )
    elif config.tokenizer.long_text != "truncate":
        raise ConfigError(
            "train.distill.teacher: distillation takes one row per text; use tokenizer.long_text=truncate"
        )
    elif config.data.task != "single_label":
        raise ConfigError("train.distill.teacher: distillation (softmax soft targets) needs data.task=single_label")
    elif config.train.loss != "cross_entropy" or config.train.class_weights != "none":
        raise ConfigError(
            "train.loss / train.class_weights: not used with train.distill.teacher (the distillation loss replaces them); leave them at cross_entropy / none"
        )
