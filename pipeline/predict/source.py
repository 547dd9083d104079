"""Where a model comes from (`resolve_model_source`): a run directory, a model folder that records how its texts
were built (decision.json's "input") or any saved sequence-classification folder; and loading it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import models  # a lazy package: its names import torch when first used
from pipeline.common.errors import DataError, one_line
from pipeline.config.schema import DataConfig
from pipeline.data.lines import check_encoding
from pipeline.data.text import TextSpec, fewer_columns_warning
from pipeline.run.directory import (
    DECISION_FILE,
    DECISION_INPUT_KEY,
    TOKENIZER_FILE,
    RunDir,
    RunDirError,
    config_setting,
    holds_run,
    is_model_dir,
    is_run_dir,
    read_decision,
)
from pipeline.run.model_config import ModelConfigFile, class_names, read_model_config
from pipeline.text.tokenizer_file import TokenizerFile, TokenizerFileError
from pipeline.text.windows import LongTextRule

logger = logging.getLogger(__name__)


class PredictError(ValueError):
    """Bad input or settings: the command prints the message on one line and exits non-zero."""


@contextlib.contextmanager
def reraised_as(kind: type[Exception], *caught: type[Exception]) -> Iterator[None]:
    """`caught` errors raised again as `kind`, their message kept (one line, no chained traceback)."""
    try:
        yield
    except caught as error:
        raise kind(str(error)) from None


@dataclass(frozen=True)
class ModelSource:
    """Where the weights are and what the run says about the text: cheap to resolve, nothing loaded yet."""

    model_dir: Path
    text_spec: TextSpec
    # The run's fixed training length; None: not recorded (the tokenizer's limit applies).
    max_length: int | None
    run_dir: Path | None = None
    long_text: LongTextRule = field(default_factory=LongTextRule)
    pooling: str = "mean"
    column_names: tuple[str, ...] | None = None
    # False: a model folder that does not record how its texts were built; the defaults are a guess, and prediction warns.
    reading_recorded: bool = True
    # The run's data.encoding, offered when an input is not text in the encoding it is read with.
    encoding: str | None = None

    def with_text_columns(self, columns: Sequence[str] | None, option: str = "--text-columns") -> ModelSource:
        self._warn_fewer_columns(self.text_spec.columns, columns, option)
        return dataclasses.replace(self, text_spec=self.text_spec.with_columns(columns))

    def with_text_pair_columns(self, columns: Sequence[str] | None, option: str = "--text-pair-columns") -> ModelSource:
        check_pair_columns(self.text_spec, columns, self.reading_recorded, option)
        self._warn_fewer_columns(self.text_spec.pair_columns, columns, option)
        return dataclasses.replace(self, text_spec=self.text_spec.with_pair_columns(columns))

    def _warn_fewer_columns(self, trained: Sequence[str], given: Sequence[str] | None, option: str) -> None:
        """Only for a model that records its columns (defaults say nothing of how it was trained)."""
        warning = fewer_columns_warning(trained, given, option) if self.reading_recorded else None
        if warning:
            logger.warning(warning)

    def with_text_separator(self, separator: str | None) -> ModelSource:
        return dataclasses.replace(self, text_spec=self.text_spec.with_separator(separator))

    def unrecorded_reading_warning(self, max_length: int) -> str:
        spec = self.text_spec
        if len(spec.columns) == 1:
            built = f"the column '{spec.columns[0]}'"
        else:
            built = f"the columns {', '.join(spec.columns)} joined by {json.dumps(spec.separator)}"
        return (
            f"{self.model_dir} does not record how its texts were built or how long they were (no "
            f"'{DECISION_INPUT_KEY}' in {DECISION_FILE}: saved before models recorded it, or by another tool): reading "
            f"{built}, cut to {max_length} tokens; if it was trained otherwise, pass --text-columns, --text-separator "
            "and --max-length as in training"
        )

    def missing_columns_hint(self) -> str:
        if not self.reading_recorded:
            return f"; {self.model_dir} does not record the columns it was trained on: name them with --text-columns"
        if not self.column_names:
            return ""
        return (
            f"; for a file without a header row, as the run's were, pass --column-names {','.join(self.column_names)}"
        )

    def encoding_hint(self, used: str) -> str:
        """The run's encoding, when it differs from `used`. Only offered: taking a single-byte one by default would
        turn a UTF-8 input into wrong text (é as Ã©) without a word."""
        if self.encoding is None:
            return ""
        try:
            if check_encoding(self.encoding) == check_encoding(used):
                return ""
        except DataError:  # a run's setting that names no encoding offers none
            return ""
        return (
            f"; the run's training files were read as {self.encoding} (its data.encoding): --encoding {self.encoding}"
        )


def check_pair_columns(spec: TextSpec, columns: Sequence[str] | None, recorded: bool, option: str) -> None:
    """Refuse pair columns for a model recorded as trained on single texts (one that records nothing is believed)."""
    if columns and recorded and not spec.pair_columns:
        raise PredictError(f"{option}: the model was trained on single texts; a pair would be read as one text")


def empty_text_error(spec: TextSpec, values: Sequence[Any], what: str = "empty text") -> str:
    """The error cell of a row without text; for a pair, the empty side's columns ("no text in question2")."""
    if not spec.pair_columns:
        return spec.describe_empty(what)
    missing = f"no {spec.what_is_empty(values) or 'text'}"
    return f"{missing} (a pair needs both)" if any(spec.sides(values)) else missing


def empty_text_errors(spec: TextSpec, rows: Sequence[Sequence[Any]], what: str = "empty text") -> Callable[[int], str]:
    return lambda row: empty_text_error(spec, rows[row], what)


def default_text_spec() -> TextSpec:
    return TextSpec.from_data_config(DataConfig())


def run_max_length(run: RunDir, config: dict[str, Any]) -> int | None:
    """The fixed length the run tokenized to (metrics.json), else an integer tokenizer.max_length in config.yaml."""
    length = run.read_record(require_test=False).tokenization.max_length if run.metrics_path.is_file() else None
    return length if isinstance(length, int) and length > 0 else settings_max_length(config)


def settings_max_length(settings: dict[str, Any]) -> int | None:
    """tokenizer.max_length when it is a length (not auto, not absent)."""
    length = config_setting(settings, "tokenizer", "max_length")
    return length if isinstance(length, int) and length > 0 else None


def settings_source(
    model_dir: Path, settings: dict[str, Any], max_length: int | None, run_dir: Path | None = None
) -> ModelSource:
    """From a run's config.yaml or a model folder's record of it: one reader, so a copied folder predicts as its run."""
    data = settings.get("data") or {}
    names = data.get("column_names")
    return ModelSource(
        model_dir,
        TextSpec.from_settings(data, DataConfig()),  # defaults for keys a hand-written record omits
        max_length,
        run_dir,
        LongTextRule.from_settings(settings.get("tokenizer") or {}),
        str((settings.get("eval") or {}).get("chunk_pooling", "mean")),
        tuple(str(name) for name in names) if isinstance(names, list) and names else None,
        encoding=data.get("encoding"),
    )


def model_folder_source(model_dir: Path) -> ModelSource:
    """A model folder outside a run: its decision.json's record; without one, the defaults, flagged."""
    with reraised_as(PredictError, RunDirError):
        record = read_decision(model_dir) or {}
    settings = record.get(DECISION_INPUT_KEY)
    if not isinstance(settings, dict):
        return ModelSource(model_dir, default_text_spec(), None, reading_recorded=False)
    return settings_source(model_dir, settings, settings_max_length(settings))


def resolve_model_source(path: str | Path, require_finished: bool = True) -> ModelSource:
    """A run directory, a run's `model/` folder or a model folder on its own. `require_finished`: a run without
    metrics.json is refused when named by its directory, used with a warning when named by its model/ folder."""
    path = Path(path)
    if not path.exists():
        raise PredictError(f"model not found: {path}")
    run_path = path if is_run_dir(path) else path.parent if is_model_dir(path) and is_run_dir(path.parent) else None
    if run_path is not None:
        run = RunDir(run_path)
        if require_finished and not run.metrics_path.is_file():
            checkpoint = f"{run.model_dir} is a checkpoint without calibration or thresholds"
            if path == run_path:
                raise PredictError(f"{run.unfinished()}; to use it anyway ({checkpoint}), pass {run.model_dir}")
            logger.warning("%s; %s", run.unfinished(), checkpoint)
        with reraised_as(PredictError, RunDirError):
            config = run.read_config()
            return settings_source(run.model_dir, config, run_max_length(run, config), run_path)
    if is_model_dir(path):
        return model_folder_source(path)
    run = RunDir(path)
    if holds_run(path) and not run.metrics_path.is_file():  # a run that has not saved its model yet
        raise PredictError(run.unfinished())
    raise PredictError(f"{path} is neither a run directory (model/ and config.yaml) nor a saved model (config.json)")


def load_model_and_tokenizer(model_dir: Path) -> tuple[Any, Any]:
    """The PyTorch model in eval mode and transformers' tokenizer: the imports an export never pays for (3-5 s)."""
    tokenizer = _load_tokenizer(model_dir)
    load = models.load_classifier  # loads torch and transformers' model classes, and registers the encoder
    model = _load_user_files(lambda: load(model_dir), f"a sequence-classification model from {model_dir}")
    models.restrict_last_layer_to_cls(model)  # the same logits, fewer FLOPs (pipeline/models/cls_only.py)
    return model.eval(), tokenizer


def load_config_and_tokenizer(model_dir: Path, model_input_names: Sequence[str]) -> tuple[ModelConfigFile, Any]:
    """The model's config and tokenizer without its weights, and without transformers: what an export backend
    needs. `model_input_names`: the exported graph's inputs. A folder without tokenizer.json (a vocabulary that
    transformers converts) takes transformers' tokenizer."""
    config = read_config(model_dir)
    if not (Path(model_dir) / TOKENIZER_FILE).is_file():
        return config, _load_tokenizer(model_dir)
    with reraised_as(PredictError, TokenizerFileError):
        return config, TokenizerFile.load(model_dir, model_input_names)


def read_config(model_dir: Path) -> ModelConfigFile:
    with reraised_as(PredictError, RunDirError):
        return read_model_config(model_dir)


def model_classes(model_dir: Path) -> list[str]:
    """The model's class names, read before the weights (a folder's class files must name them)."""
    return class_names(read_config(model_dir))


def _load_tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = _load_user_files(
        lambda: AutoTokenizer.from_pretrained(str(model_dir)), f"a sequence-classification model from {model_dir}"
    )
    if not getattr(tokenizer, "is_fast", False):
        # The per-chunk batch call relies on the Rust tokenizer; a slow one would dominate the run time.
        raise PredictError(f"{model_dir} has no fast tokenizer (tokenizer.json or a convertible vocabulary)")
    return tokenizer


def _load_user_files(load: Callable[[], Any], what: str) -> Any:
    """A user's files: any failure to load them is bad input, one line naming what and where."""
    try:
        return load()
    except Exception as error:
        raise PredictError(f"cannot load {what}: {type(error).__name__}: {one_line(error)}") from None
