"""Range and consistency checks of a loaded config (`validate`, run by `load_config`): what types alone cannot
express. Class names are checked against the data once it is loaded.
"""

from __future__ import annotations

import math
from pathlib import Path

from pipeline.config.reading import PAIR_MARK, delimiter_problem, label_prefix_problem, normalise_name
from pipeline.config.schema import ConfigError, DataConfig, PipelineConfig, TokenizerConfig


def validate(config: PipelineConfig) -> None:
    """Range checks that types alone cannot express."""
    positive = {
        "train.per_device_batch_size": config.train.per_device_batch_size,
        "train.gradient_accumulation_steps": config.train.gradient_accumulation_steps,
        "train.log_every_steps": config.train.log_every_steps,
        "eval.batch_size": config.eval.batch_size,
    }
    optional_positive = {
        "eval.max_batch_tokens": None if config.eval.max_batch_tokens == "auto" else config.eval.max_batch_tokens,
        "train.max_steps": config.train.max_steps,
        "train.eval_every_steps": config.train.eval_every_steps,
        "train.save_every_steps": config.train.save_every_steps,
        "train.early_stopping_patience": config.train.early_stopping_patience,
        "train.cpu_threads": config.train.cpu_threads,
        "data.max_train_samples": config.data.max_train_samples,
        "data.max_eval_samples": config.data.max_eval_samples,
    }
    for key, value in {**positive, **{k: v for k, v in optional_positive.items() if v is not None}}.items():
        if value <= 0:
            raise ConfigError(f"{key}: must be a positive integer, got {value}")
    _validate_numbers(config)
    if config.train.selection_metric == "micro_f1" and config.data.task != "multi_label":
        raise ConfigError(
            "train.selection_metric: micro_f1 is for multi-label tasks (for a single label it equals accuracy); use accuracy, macro_f1 or auto"
        )
    if config.train.epochs <= 0 and config.train.max_steps is None:
        raise ConfigError(f"train.epochs: must be positive (or set train.max_steps), got {config.train.epochs}")
    _validate_run_name(config.run.name)
    for key in ("validation_fraction", "test_fraction"):
        if not 0.0 < getattr(config.data, key) < 1.0:
            raise ConfigError(f"data.{key}: must be between 0 and 1, got {getattr(config.data, key)}")
    if not 0.0 <= config.train.warmup_ratio < 1.0:
        raise ConfigError(f"train.warmup_ratio: must be in [0, 1), got {config.train.warmup_ratio}")
    _validate_long_text(config.tokenizer)
    if config.data.source == "files" and not config.data.train_file:
        raise ConfigError("data.train_file: required when data.source is 'files'")
    _validate_hub_splits(config.data)
    if not config.data.text_columns:
        raise ConfigError("data.text_columns: name at least one column")
    delimiter_error = delimiter_problem(config.data.delimiter) if config.data.delimiter is not None else None
    if delimiter_error:
        raise ConfigError(f"data.delimiter: {delimiter_error}")
    if config.data.json_field is not None and not config.data.json_field.strip():
        raise ConfigError("data.json_field: name the key of the object that holds the records, or leave it unset")
    prefix_error = label_prefix_problem(config.data.label_prefix)
    if prefix_error:
        raise ConfigError(f"data.label_prefix: {prefix_error}")
    _validate_label_columns(config)
    _validate_missing_label_values(config.data)
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


def _validate_missing_label_values(data: DataConfig) -> None:
    """data.missing_label_values: written values (an empty cell is always a missing label). One that is also a class
    of data.label_names names that class (labels.MissingLabel.of), so that listing a class "N/A" needs no other
    setting."""
    for index, value in enumerate(data.missing_label_values):
        if not value.strip():
            raise ConfigError(
                f"data.missing_label_values[{index}]: empty; an empty label cell is always a missing label, list only written marks (NaN, N/A, -)"
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
            f"data.split_column: the column '{column}' says which rows are validation and test, and data.{given[0]} "
            "gives them too; unset one (a file to score a trained run: python -m pipeline.evaluate)"
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
    """Class weights, focal loss, the label separator and eval.threshold: ranges (class names are checked against
    the data once it is loaded, pipeline.scoring.thresholds / pipeline.train.losses)."""
    train = config.train
    if not 0.0 <= train.focal_gamma < math.inf:
        raise ConfigError(f"train.focal_gamma: must be a finite number >= 0, got {train.focal_gamma}")
    if isinstance(train.class_weights, dict):
        for name, weight in train.class_weights.items():
            if not 0.0 < weight < math.inf:
                raise ConfigError(f"train.class_weights.{name}: must be a finite number > 0, got {weight}")
    if not config.data.label_separator:
        raise ConfigError(
            'data.label_separator: must not be empty (in a YAML file quote a | or >: "|"; bare, it starts a block of '
            "text)"
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
    """train.distill.* ranges, and the settings that only make sense with a teacher."""
    distill = config.train.distill
    checks = {
        "train.distill.alpha": (0.0 <= distill.alpha <= 1.0, "must be in [0, 1]"),
        "train.distill.temperature": (0 < distill.temperature < math.inf, "must be a finite number > 0"),
        "train.distill.augment_copies": (distill.augment_copies >= 1, "must be a positive integer"),
        "train.distill.augment_word_probability": (0.0 <= distill.augment_word_probability < 1.0, "must be in [0, 1)"),
        "train.distill.augment_ngram_probability": (
            0.0 <= distill.augment_ngram_probability <= 1.0,
            "must be in [0, 1]",
        ),
        "train.distill.augment_ngram_max": (distill.augment_ngram_max >= 1, "must be a positive integer"),
        "train.distill.teacher_batch_size": (distill.teacher_batch_size >= 1, "must be a positive integer"),
    }
    if config.eval.predict_speed_rows < 0:
        raise ConfigError(f"eval.predict_speed_rows: must be 0 (off) or positive, got {config.eval.predict_speed_rows}")
    for key, (ok, rule) in checks.items():
        if not ok:
            raise ConfigError(f"{key}: {rule}, got {getattr(distill, key.rsplit('.', 1)[1])}")
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
    elif getattr(config.tokenizer, "long_text", "truncate") != "truncate":
        raise ConfigError(
            "train.distill.teacher: distillation takes one row per text; use tokenizer.long_text=truncate"
        )
    elif getattr(config.data, "task", "single_label") != "single_label":
        raise ConfigError("train.distill.teacher: distillation (softmax soft targets) needs data.task=single_label")
    elif (
        getattr(config.train, "loss", "cross_entropy") != "cross_entropy"
        or getattr(config.train, "class_weights", "none") != "none"
    ):
        raise ConfigError(
            "train.loss / train.class_weights: not used with train.distill.teacher (the distillation loss replaces them); leave them at cross_entropy / none"
        )


def _validate_long_text(tokenizer: TokenizerConfig) -> None:
    if isinstance(tokenizer.max_length, int) and tokenizer.max_length < 8:
        raise ConfigError(f"tokenizer.max_length: must be at least 8, got {tokenizer.max_length}")
    if not 0.0 < tokenizer.head_fraction < 1.0:
        raise ConfigError(f"tokenizer.head_fraction: must be between 0 and 1, got {tokenizer.head_fraction}")
    if tokenizer.max_chunks < 1:
        raise ConfigError(f"tokenizer.max_chunks: must be at least 1, got {tokenizer.max_chunks}")
    # A window holds max_length minus [CLS] and [SEP]; a stride as large would never move forward. The length is
    # checked against the stride only when texts are chunked: truncation never reads the stride, so a short
    # max_length (32) must not fail on its default.
    chunked = tokenizer.long_text == "chunk" and isinstance(tokenizer.max_length, int)
    if tokenizer.chunk_stride < 0 or (chunked and tokenizer.chunk_stride >= tokenizer.max_length - 2):
        raise ConfigError(
            f"tokenizer.chunk_stride: must be at least 0 and smaller than a window (tokenizer.max_length - 2), got {tokenizer.chunk_stride}"
        )


def _validate_numbers(config: PipelineConfig) -> None:
    """Values that pass the type check but would crash or mislead later: NaN, infinities, negative rates."""
    for section in ("run", "data", "tokenizer", "train", "eval"):
        for key, value in vars(getattr(config, section)).items():
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{section}.{key}: must be a finite number, got {value}")
    checks = {
        "train.learning_rate": config.train.learning_rate > 0,
        "train.head_learning_rate": config.train.head_learning_rate is None or config.train.head_learning_rate > 0,
        "train.weight_decay": config.train.weight_decay >= 0,
        "train.max_grad_norm": config.train.max_grad_norm >= 0,
        "run.seed": config.run.seed >= 0,
        "tokenizer.max_truncated_fraction": 0 <= config.tokenizer.max_truncated_fraction < 1,
        "data.hub_timeout_seconds": config.data.hub_timeout_seconds > 0,
    }
    for key, ok in checks.items():
        if not ok:
            section, name = key.split(".")
            raise ConfigError(f"{key}: out of range, got {getattr(getattr(config, section), name)}")


def _validate_run_name(name: str) -> None:
    """run.name is one folder inside run.output_dir: never the output folder itself, a parent, or elsewhere."""
    if not name.strip() or name in (".", "..") or "/" in name or "\\" in name or Path(name).is_absolute():
        raise ConfigError(
            f"run.name: must be a plain folder name (no path separators, not empty, '.' or '..'), got {name!r}"
        )
