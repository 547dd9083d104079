"""Batch prediction: label the rows of a CSV/TSV file (or a DataFrame, or a list of texts) with a trained model.

    python -m pipeline.predict --model runs/ag_news_bert --input news.csv --output labelled.csv
    python -m pipeline.predict --model runs/ag_news_bert --input - --output - --format tsv < in.tsv > out.tsv

`--model` is a run directory (its `model/`, plus the text columns, separator and fixed length of the run) or any
saved Hugging Face sequence-classification directory, BERT or the from-scratch encoder alike.

The output holds every input row, in input order, with its input columns unchanged, then `label` (class name),
`label_id`, `score` (probability of that label), optionally `prob_<class>` for every class, and `error`: empty for
a labelled row, the reason for a row that could not be labelled (its text is empty). `error` is always written so
the header does not depend on what the first chunk happens to contain.

The file is streamed in chunks, so memory does not grow with the number of rows; output goes to a temporary file
beside the destination and is renamed into place only when complete.

From Python (a notebook), load the model once and reuse it:

    predictor = Predictor.from_path("runs/ag_news_bert")
    predict_texts(predictor, ["Stocks fell sharply", "A late goal won the cup"])   # [("Business", 0.93), ...]
    labelled = predict_dataframe(predictor, frame, probabilities=True)
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import csv
import gzip
import io
import json
import logging
import math
import os
import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
import yaml

from pipeline.io import atomic_path

# Batches are length-sorted, so a big batch wastes little on padding; on CPU 128 beat 64 by ~25%.
DEFAULT_BATCH_SIZE = 128
DEFAULT_CHUNK_SIZE = 10_000
# Padded lengths are rounded up to this multiple (vector widths, tensor-core tiles); as in stage 2 and batching.
LENGTH_MULTIPLE = 8
# BERT's learned position table has 512 rows; tokenizers report a huge model_max_length when it is unset.
POSITION_LIMIT = 512
# Python's csv module refuses fields over 128 KiB by default; a long article is a legitimate field.
CSV_FIELD_SIZE_LIMIT = 64 * 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
# In bf16, rows whose two best probabilities are closer than this are recomputed in fp32. bf16 moved MiniLM's
# probabilities by at most 0.017 on AG News test rows, so beyond this margin bf16 cannot change the label.
DEFAULT_RECHECK_MARGIN = 0.02
PROBABILITY_FORMAT = "%.6g"
FORMATS = {"csv": ",", "tsv": "\t"}

# The columns prediction adds after the input's own, in this order; prob_<class> columns go before `error`.
LABEL_COLUMN, LABEL_ID_COLUMN, SCORE_COLUMN, ERROR_COLUMN = "label", "label_id", "score", "error"


class PredictError(ValueError):
    """Bad input or settings: the command prints the message on one line and exits non-zero."""


# ---------------------------------------------------------------------------------------------------------------
# What the model reads: which columns make the text, and how


@dataclass(frozen=True)
class TextSpec:
    """How a row's text is built from its columns; a run directory records what its model was trained on."""

    columns: tuple[str, ...] = ("text",)
    separator: str = " "
    # ag_news_csv writes a newline inside a field as a backslash followed by "n" (data.unescape_newlines).
    unescape_newlines: bool = False

    def join(self, values: Sequence[str]) -> str:
        """As stage 1 builds training texts (data.build_texts): each part unescaped and stripped, empty parts
        skipped (no doubled separators). Training and prediction must read exactly the same text."""
        parts = (value.replace("\\n", "\n") if self.unescape_newlines else value for value in values)
        return self.separator.join(part for part in (part.strip() for part in parts) if part)

    def empty_text_error(self) -> str:
        return f"empty text in {', '.join(self.columns)}"


@dataclass(frozen=True)
class ModelSource:
    """Where the weights are and what the run says about the text: cheap to resolve, nothing loaded yet."""

    model_dir: Path
    text_spec: TextSpec
    # The run's fixed training length; None for a bare model directory (then the tokenizer's limit applies).
    max_length: int | None
    run_dir: Path | None = None


def _is_model_dir(path: Path) -> bool:
    return (path / "config.json").is_file()


def _is_run_dir(path: Path) -> bool:
    return _is_model_dir(path / "model") and (path / "config.yaml").is_file()


def _read_run_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.yaml (the resolved PipelineConfig dumped as YAML) as plain nested dicts."""
    config_path = run_dir / "config.yaml"
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise PredictError(f"cannot read the run's config {config_path}: {_one_line(error)}") from None
    if not isinstance(config, dict):
        raise PredictError(f"the run's config {config_path} is not a mapping of sections")
    return config


def _run_text_spec(config: dict[str, Any]) -> TextSpec:
    """The text the model was trained on: data.text_columns joined by data.text_separator, maybe unescaped."""
    data = config.get("data") or {}
    defaults = TextSpec()  # the DataConfig defaults, for a hand-written config that leaves keys out
    columns = data.get("text_columns", list(defaults.columns))
    if isinstance(columns, str):
        columns = [columns]
    return TextSpec(
        columns=tuple(str(column) for column in columns),
        separator=str(data.get("text_separator", defaults.separator)),
        unescape_newlines=bool(data.get("unescape_newlines", defaults.unescape_newlines)),
    )


def _run_max_length(run_dir: Path, config: dict[str, Any]) -> int | None:
    """The fixed length the run tokenized to (metrics.json), else an integer tokenizer.max_length in config.yaml."""
    metrics_path = run_dir / "metrics.json"
    if metrics_path.is_file():
        try:
            metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise PredictError(f"cannot read the run's metrics {metrics_path}: {_one_line(error)}") from None
        length = ((metrics if isinstance(metrics, dict) else {}).get("tokenization") or {}).get("max_length")
        if isinstance(length, int) and length > 0:
            return length
    length = (config.get("tokenizer") or {}).get("max_length")
    return length if isinstance(length, int) and length > 0 else None


def resolve_model_source(path: str | Path) -> ModelSource:
    """A run directory, a run's `model/` folder (the run's settings still apply) or a bare saved model."""
    path = Path(path)
    if not path.exists():
        raise PredictError(f"model not found: {path}")
    run_dir = None
    if _is_run_dir(path):
        run_dir = path
    elif _is_model_dir(path) and path.name == "model" and _is_run_dir(path.parent):
        run_dir = path.parent
    if run_dir is not None:
        config = _read_run_config(run_dir)
        return ModelSource(run_dir / "model", _run_text_spec(config), _run_max_length(run_dir, config), run_dir)
    if _is_model_dir(path):
        return ModelSource(path, TextSpec(), None)
    raise PredictError(f"{path} is neither a run directory (model/ and config.yaml) nor a saved model (config.json)")


# ---------------------------------------------------------------------------------------------------------------
# Device and precision


def resolve_device(name: str) -> torch.device:
    """'auto' takes the GPU when there is one; an unavailable device is an error, not a silent fallback."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise PredictError(f"unknown device '{name}' (use cpu, cuda, cuda:<index> or auto)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise PredictError(f"device '{name}' requested but no CUDA GPU is available (use --device cpu)")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise PredictError(f"device '{name}' does not exist: {torch.cuda.device_count()} GPU(s) visible")
    return device


def _cpu_has_native_bf16() -> bool:
    """bf16 pays off on a CPU only with native bf16 instructions (AVX512-BF16, AMX); emulated it is slower."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    if any(getattr(torch.cpu, check, lambda: False)() for check in checks):
        return True
    if os.uname().machine in ("aarch64", "arm64"):  # Arm's BF16 extension, as oneDNN sees it
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def resolve_precision(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype, or None for full fp32. 'auto' takes bf16 where the hardware runs it natively."""
    if precision == "fp32":
        return None
    if device.type == "cuda":
        supported = torch.cuda.is_bf16_supported()
    elif device.type == "cpu":
        supported = _cpu_has_native_bf16() if precision == "auto" else True
    else:
        supported = False
    if precision == "bf16" and not supported:
        raise PredictError(f"--precision bf16 is not supported on {device}; use --precision fp32")
    return torch.bfloat16 if supported else None


# ---------------------------------------------------------------------------------------------------------------
# The predictor: model, tokenizer, labels, length, device, text spec -- loaded once


@dataclass
class LabelledTexts:
    """Predictions for a list of texts: rows without text get label_id -1, NaN probabilities and an error."""

    label_ids: np.ndarray  # (N,) int64
    probabilities: np.ndarray  # (N, K) float32
    errors: list[str]


@dataclass
class Predictor:
    model: torch.nn.Module = field(repr=False)
    tokenizer: Any = field(repr=False)
    labels: list[str]
    max_length: int
    device: torch.device
    text_spec: TextSpec
    batch_size: int = DEFAULT_BATCH_SIZE
    autocast_dtype: torch.dtype | None = None
    recheck_margin: float = DEFAULT_RECHECK_MARGIN
    source: ModelSource | None = field(default=None, repr=False)
    # (process index, number of processes): under several processes each one runs every n-th batch and the
    # results are gathered, so every process ends with the same probabilities as a single process would.
    shard: tuple[int, int] = (0, 1)

    @classmethod
    def from_path(
        cls,
        path: str | Path,
        *,
        device: str = "auto",
        precision: str = "auto",
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int | None = None,
        text_columns: Sequence[str] | None = None,
        recheck_margin: float = DEFAULT_RECHECK_MARGIN,
    ) -> Predictor:
        """Load a run directory or saved model; `max_length` and `text_columns` override what the run recorded."""
        source = resolve_model_source(path)
        if text_columns:
            source = ModelSource(
                source.model_dir,
                TextSpec(tuple(text_columns), source.text_spec.separator, source.text_spec.unescape_newlines),
                source.max_length,
                source.run_dir,
            )
        return cls.from_source(
            source,
            device=device,
            precision=precision,
            batch_size=batch_size,
            max_length=max_length,
            recheck_margin=recheck_margin,
        )

    @classmethod
    def from_source(
        cls,
        source: ModelSource,
        *,
        device: str = "auto",
        precision: str = "auto",
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int | None = None,
        recheck_margin: float = DEFAULT_RECHECK_MARGIN,
    ) -> Predictor:
        if batch_size < 1:
            raise PredictError(f"batch size must be positive, got {batch_size}")
        if max_length is None and source.max_length is None and source.run_dir is not None:
            # Another length than training's would change the predictions of long texts: do not guess.
            raise PredictError(
                f"run {source.run_dir} records no tokenization.max_length (no metrics.json: did it finish?); "
                "pass --max-length"
            )
        torch_device = resolve_device(device)
        autocast_dtype = resolve_precision(precision, torch_device)
        model, tokenizer = _load_model_and_tokenizer(source.model_dir)
        model.to(torch_device)
        limit = _length_limit(tokenizer, model)
        length = max_length or source.max_length or limit
        if length > limit:
            raise PredictError(f"max length {length} exceeds the model's limit of {limit} tokens")
        if length < 2:
            raise PredictError(f"max length must be at least 2 ([CLS] and [SEP]), got {length}")
        labels = [str(model.config.id2label[index]) for index in range(model.config.num_labels)]
        return cls(
            model,
            tokenizer,
            labels,
            length,
            torch_device,
            source.text_spec,
            batch_size,
            autocast_dtype,
            recheck_margin,
            source,
        )

    @property
    def precision(self) -> str:
        return "bf16" if self.autocast_dtype == torch.bfloat16 else "fp32"

    def infer(
        self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(texts) -> (label_ids (N,) int64, probabilities (N, K) float32): the whole per-chunk computation.

        A pure function of the texts (no state is kept between calls), so a distributed run can hand each
        process a slice of a chunk and stitch the results. One fast-tokenizer call per chunk. In bf16, rows
        whose two best classes are closer than `recheck_margin` are run again in fp32, so near-ties get the
        full-precision label (a few percent of rows for a trained model).
        """
        count = len(texts)
        if count == 0:
            return np.empty(0, dtype=np.int64), np.empty((0, len(self.labels)), dtype=np.float32)
        token_ids = self.tokenizer(
            list(texts),
            truncation=True,
            max_length=self.max_length,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=count)
        probabilities = self._forward(token_ids, lengths, np.arange(count), self.autocast_dtype, on_batch)
        if self.autocast_dtype is not None and self.recheck_margin > 0 and len(self.labels) > 1:
            top_two = np.sort(probabilities, axis=1)[:, -2:]  # (N, 2)
            close = np.flatnonzero(top_two[:, 1] - top_two[:, 0] < self.recheck_margin)
            if len(close):
                probabilities[close] = self._forward(token_ids, lengths, close, None, None)
        return probabilities.argmax(axis=1).astype(np.int64), probabilities

    def _forward(
        self,
        token_ids: Sequence[Sequence[int]],
        lengths: np.ndarray,
        rows: np.ndarray,
        autocast_dtype: torch.dtype | None,
        on_batch: Callable[[int], None] | None,
    ) -> np.ndarray:
        """Probabilities (len(rows), K) of the given rows, in the order of `rows`.

        Rows go through the model longest first, each batch padded only to its own longest row (rounded up to
        a multiple of 8): exact, since padded keys are masked out of attention and positions are absolute.
        Longest first also means the biggest batch comes first, so a batch size too big for memory fails at once.
        """
        probabilities = np.empty((len(rows), len(self.labels)), dtype=np.float32)
        order = np.argsort(-lengths[rows], kind="stable")  # positions within `rows`
        pad_id = self.tokenizer.pad_token_id or 0
        autocast = (
            torch.autocast(self.device.type, dtype=autocast_dtype)
            if autocast_dtype is not None
            else contextlib.nullcontext()
        )
        process_index, num_processes = self.shard
        with torch.inference_mode(), autocast:
            for batch_number, start in enumerate(range(0, len(rows), self.batch_size)):
                if batch_number % num_processes != process_index:
                    continue
                batch = order[start : start + self.batch_size]
                batch_rows = rows[batch]
                input_ids, attention_mask = pad_batch(
                    [token_ids[row] for row in batch_rows], lengths[batch_rows], pad_id, self.max_length
                )
                logits = self.model(
                    input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device)
                ).logits  # (B, K)
                probabilities[batch] = logits.float().softmax(dim=-1).cpu().numpy()
                if on_batch is not None:
                    on_batch(len(batch))
        if num_processes > 1:
            probabilities = self._gather_batches(probabilities, order)
        return probabilities

    def _gather_batches(self, probabilities: np.ndarray, order: np.ndarray) -> np.ndarray:
        """Give every process the rows the others computed. Whole batches are shared out, never split, so each
        row is computed with the same batch-mates and padding as in a single process: the same numbers."""
        from accelerate.utils import gather_object

        process_index, num_processes = self.shard
        mine = np.concatenate(
            [
                order[start : start + self.batch_size]
                for number, start in enumerate(range(0, len(order), self.batch_size))
                if number % num_processes == process_index
            ]
            or [np.empty(0, dtype=np.int64)]
        )
        for positions, values in gather_object([(mine, probabilities[mine])]):
            probabilities[positions] = values
        return probabilities

    def label_texts(
        self,
        texts: Sequence[str | None],
        on_batch: Callable[[int], None] | None = None,
        empty_error: str = "empty text",
    ) -> LabelledTexts:
        """`infer` on the rows that have text; empty or missing texts stay in place, unlabelled, with an error."""
        has_text = np.fromiter((bool(text and text.strip()) for text in texts), dtype=bool, count=len(texts))
        kept = np.flatnonzero(has_text)
        label_ids = np.full(len(texts), -1, dtype=np.int64)
        probabilities = np.full((len(texts), len(self.labels)), np.nan, dtype=np.float32)
        kept_ids, kept_probabilities = self.infer([texts[index] for index in kept], on_batch)
        label_ids[kept] = kept_ids
        probabilities[kept] = kept_probabilities
        errors = ["" if ok else empty_error for ok in has_text]
        return LabelledTexts(label_ids, probabilities, errors)


def pad_batch(
    token_ids: Sequence[Sequence[int]], lengths: np.ndarray, pad_id: int, max_length: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad a batch to its longest row rounded up to a multiple of 8 (never beyond max_length)."""
    longest = int(lengths.max())
    width = min(LENGTH_MULTIPLE * math.ceil(longest / LENGTH_MULTIPLE), max(max_length, longest))
    input_ids = np.full((len(token_ids), width), pad_id, dtype=np.int64)  # (B, T)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = ids
    attention_mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)  # (B, T)
    return torch.from_numpy(input_ids), torch.from_numpy(attention_mask)


def _length_limit(tokenizer: Any, model: torch.nn.Module) -> int:
    """The longest input the tokenizer and the model's position table take (as stage 2's length_limit)."""
    limits = [POSITION_LIMIT, int(min(tokenizer.model_max_length, 10**9))]
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions:
        limits.append(int(positions))
    return min(limits)


def _load_model_and_tokenizer(model_dir: Path) -> tuple[torch.nn.Module, Any]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    _register_encoder()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        model = AutoModelForSequenceClassification.from_pretrained(str(model_dir))
    except Exception as error:  # noqa: BLE001 -- a user's files: any failure to load them is bad input
        raise PredictError(
            f"cannot load a sequence-classification model from {model_dir}: {type(error).__name__}: {_one_line(error)}"
        ) from None
    if not getattr(tokenizer, "is_fast", False):
        # The per-chunk batch call relies on the Rust tokenizer; a slow one would dominate the run time.
        raise PredictError(f"{model_dir} has no fast tokenizer (tokenizer.json or a convertible vocabulary)")
    return model.eval(), tokenizer


def _register_encoder() -> None:
    """Importing the encoder registers it with the Auto classes, so its saved runs load like BERT's."""
    import pipeline.models.encoder  # noqa: F401


# ---------------------------------------------------------------------------------------------------------------
# Python API


def _as_predictor(model: str | Path | Predictor, **options: Any) -> Predictor:
    return model if isinstance(model, Predictor) else Predictor.from_path(model, **options)


def predict_texts(
    model_dir: str | Path | Predictor,
    texts: Sequence[str],
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: str = "auto",
    precision: str = "auto",
) -> list[tuple[str, float]]:
    """(label, score) for each text, in order; an empty text gives ("", nan). Pass a Predictor to load once."""
    predictor = _as_predictor(model_dir, batch_size=batch_size, device=device, precision=precision)
    result = predictor.label_texts(list(texts))
    scores = result.probabilities[np.arange(len(texts)), np.maximum(result.label_ids, 0)]
    return [
        (predictor.labels[label_id] if label_id >= 0 else "", float(score) if label_id >= 0 else math.nan)
        for label_id, score in zip(result.label_ids.tolist(), scores.tolist())
    ]


def predict_dataframe(
    model_dir: str | Path | Predictor,
    df: Any,
    text_columns: Sequence[str] | None = None,
    probabilities: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: str = "auto",
    precision: str = "auto",
    prefix: str = "",
) -> Any:
    """A copy of `df` with label, label_id (nullable Int64), score, [prob_<class>...], error columns added.

    Text columns default to those the model was trained with. Rows whose text is empty or missing (NaN, None)
    are kept, unlabelled, with the reason in `error`. `prefix` goes before every added column's name.
    """
    import pandas as pd

    predictor = _as_predictor(model_dir, batch_size=batch_size, device=device, precision=precision)
    spec = (
        predictor.text_spec
        if not text_columns
        else TextSpec(tuple(text_columns), predictor.text_spec.separator, predictor.text_spec.unescape_newlines)
    )
    check_columns(list(df.columns), spec.columns, "the DataFrame", "text_columns=")
    label_column, label_id_column, score_column, *probability_columns, error_column = output_columns(
        predictor.labels, probabilities, prefix
    )
    check_no_clash(
        list(df.columns),
        [label_column, label_id_column, score_column, *probability_columns, error_column],
        "the DataFrame",
        "prefix=",
    )
    # Missing values (NaN, None, pd.NA) count as empty strings, so a row with no text at all gets an error.
    parts = [df[column].where(df[column].notna(), "").astype(str).tolist() for column in spec.columns]
    texts = [spec.join(values) for values in zip(*parts)]
    result = predictor.label_texts(texts, empty_error=f"empty or missing text in {', '.join(spec.columns)}")
    labelled = df.copy()
    ids = result.label_ids.tolist()
    labelled[label_column] = [predictor.labels[i] if i >= 0 else "" for i in ids]
    labelled[label_id_column] = pd.array([i if i >= 0 else None for i in ids], dtype="Int64")
    scores = result.probabilities[np.arange(len(texts)), np.maximum(result.label_ids, 0)]
    labelled[score_column] = np.where(result.label_ids >= 0, scores, np.nan)
    for index, column in enumerate(probability_columns):
        labelled[column] = result.probabilities[:, index]
    labelled[error_column] = result.errors
    return labelled


def output_columns(labels: Sequence[str], probabilities: bool, prefix: str = "") -> list[str]:
    """label, label_id, score, [prob_<class>...], error -- each behind `prefix` (e.g. "pred_")."""
    probability_columns = [f"prob_{name}" for name in labels] if probabilities else []
    names = [LABEL_COLUMN, LABEL_ID_COLUMN, SCORE_COLUMN, *probability_columns, ERROR_COLUMN]
    return [prefix + name for name in names]


def check_columns(available: Sequence[str], wanted: Sequence[str], where: str, option: str = "--text-columns") -> None:
    missing = [column for column in wanted if column not in available]
    if missing:
        raise PredictError(
            f"{where} has no column {', '.join(repr(c) for c in missing)} "
            f"(its columns: {', '.join(repr(c) for c in available)}); choose with {option}"
        )


def check_no_clash(available: Sequence[str], added: Sequence[str], where: str, option: str = "--prefix") -> None:
    """Our columns must not shadow input columns (a gold `label` column is common): a reader would see two."""
    clashes = [column for column in added if column in available]
    if clashes:
        raise PredictError(
            f"{where} already has column {', '.join(repr(c) for c in clashes)}, which prediction adds; "
            f"name the added columns differently with {option} (e.g. pred_)"
        )


# ---------------------------------------------------------------------------------------------------------------
# Reading: decoded lines with line numbers and bytes read, then CSV/TSV records in chunks


def _one_line(error: BaseException | str) -> str:
    return " ".join(str(error).split())


def table_format(path: str, explicit: str | None) -> str:
    """--format wins; otherwise .tsv/.tab (optionally .gz) is TSV and everything else CSV."""
    if explicit:
        return explicit
    name = path.lower().removesuffix(".gz")
    return "tsv" if name.endswith((".tsv", ".tab")) else "csv"


def check_encoding(encoding: str) -> str:
    """The codec to decode with: utf-8 also drops a byte-order mark (Excel writes one) from the header."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise PredictError(f"unknown encoding '{encoding}' (e.g. utf-8, latin-1, cp1252, utf-16)") from None
    return "utf-8-sig" if name == "utf-8" else name


class LineSource:
    """Decoded physical lines of a (possibly gzip-compressed) byte stream, counting lines and bytes read.

    Decoding line by line (rather than through a TextIOWrapper) lets a bad byte be reported with its line.
    """

    def __init__(self, raw: IO[bytes], name: str, encoding: str, size: int | None):
        self.raw = raw
        self.name = name
        self.encoding = encoding
        self.size = size  # bytes on disk (compressed size for gzip); None for a pipe
        self.line_number = 0
        self._bytes_read = 0
        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
        self.compressed = buffered.peek(2)[:2] == GZIP_MAGIC
        self._stream: IO[bytes] = gzip.GzipFile(fileobj=buffered, mode="rb") if self.compressed else buffered

    def position(self) -> int:
        """Bytes of the file consumed so far (compressed bytes for gzip), for the progress estimate."""
        if self.compressed:
            try:
                return self.raw.tell()
            except OSError:
                return 0
        return self._bytes_read

    def __iter__(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="strict")
        lines = iter(self._stream)
        while True:
            try:
                raw_line = next(lines)
            except StopIteration:
                break
            except (OSError, EOFError, zlib.error) as error:
                raise PredictError(f"{self.name}: cannot read (corrupt gzip data?): {_one_line(error)}") from None
            self.line_number += 1
            self._bytes_read += len(raw_line)
            try:
                yield decoder.decode(raw_line)
            except UnicodeDecodeError as error:
                bad = raw_line[error.start : error.end]
                encoding = self.encoding.removesuffix("-sig")
                raise PredictError(
                    f"{self.name}: line {self.line_number}: bytes that are not valid {encoding} "
                    f"({bad!r} at byte {error.start + 1} of the line); "
                    "give the file's encoding with --encoding (e.g. --encoding latin-1)"
                ) from None
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise PredictError(
                f"{self.name}: line {self.line_number}: the file ends inside a {self.encoding} character; "
                "give the file's encoding with --encoding"
            ) from None


@dataclass
class Table:
    """The header and a generator of row chunks; the generator raises PredictError on a malformed record."""

    header: list[str]
    chunks: Iterator[list[list[str]]]


def read_table(lines: LineSource, delimiter: str, chunk_size: int, column_names: Sequence[str] | None) -> Table:
    """Parse records, every field kept as the exact string in the file ("NA", "001" and "" round-trip).

    Without `column_names` the first record is the header. With them the file has no header, except that a
    first record repeating the names exactly is taken as one (as data.column_names does for training files).
    """
    # Process-wide, but only ever raised: the default would reject a long article as a "malformed" field.
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_SIZE_LIMIT))
    reader = csv.reader(iter(lines), delimiter=delimiter, strict=True)
    records = _records(reader, lines)
    first = next(records, None)
    if first is None:
        raise PredictError(f"{lines.name} is empty")
    _, first_record = first
    if column_names:
        header = list(column_names)
        pending = [] if first_record == header else [first]
    else:
        header, pending = first_record, []
    return Table(header, _chunks(records, pending, len(header), lines.name, chunk_size))


def _records(reader: Any, lines: LineSource) -> Iterator[tuple[int, list[str]]]:
    """(first line of the record, fields); blank lines are skipped, as pandas does."""
    previous_end = 0
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            kind = "TSV" if reader.dialect.delimiter == "\t" else "CSV"
            raise PredictError(
                f"{lines.name}: line {previous_end + 1}: malformed {kind} record "
                f"({_one_line(error)}; an unclosed quote?)"
            ) from None
        start, previous_end = previous_end + 1, reader.line_num
        if record:
            yield start, record


def _chunks(
    records: Iterator[tuple[int, list[str]]],
    pending: list[tuple[int, list[str]]],
    width: int,
    name: str,
    chunk_size: int,
) -> Iterator[list[list[str]]]:
    chunk: list[list[str]] = []
    for line, record in _chain(pending, records):
        if len(record) != width:
            raise PredictError(
                f"{name}: line {line}: expected {width} fields, found {len(record)} "
                "(a stray delimiter or quote? for tab-separated files use --format tsv)"
            )
        chunk.append(record)
        if len(chunk) == chunk_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _chain(first: list, rest: Iterator) -> Iterator:
    yield from first
    yield from rest


@contextlib.contextmanager
def open_input(path: str, encoding: str) -> Iterator[LineSource]:
    """A LineSource over the file (or stdin for '-'); a missing or unreadable file is a PredictError."""
    if path == "-":
        yield LineSource(sys.stdin.buffer, "<stdin>", encoding, None)
        return
    file_path = Path(path)
    if not file_path.exists():
        raise PredictError(f"input file not found: {path}")
    if file_path.is_dir():
        raise PredictError(f"input is a directory, not a file: {path}")
    try:
        handle = open(file_path, "rb")  # noqa: SIM115 -- closed by the `with` below; only open() maps to an error
    except OSError as error:
        raise PredictError(f"cannot read input file {path}: {error.strerror or error}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise PredictError(f"{path} is empty")
        yield LineSource(handle, path, encoding, size)


# ---------------------------------------------------------------------------------------------------------------
# Writing


class TableWriter:
    """CSV/TSV rows with minimal quoting and '\\n' line ends.

    csv.writer quotes a field that holds the delimiter, a quote or a character of the line terminator, but
    not a lone '\\r' when the terminator is '\\n'; such a field would come back split, so rows holding one
    are written fully quoted.
    """

    def __init__(self, handle: IO[str], delimiter: str):
        self._minimal = csv.writer(handle, delimiter=delimiter, lineterminator="\n")
        self._quoted = csv.writer(handle, delimiter=delimiter, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def write(self, row: Sequence[str]) -> None:
        writer = self._quoted if any("\r" in value for value in row) else self._minimal
        writer.writerow(row)


@contextlib.contextmanager
def open_output(path: str, overwrite: bool) -> Iterator[IO[str]]:
    """stdout for '-'; otherwise a temporary file beside `path`, renamed onto it only if the block succeeds."""
    if path == "-":
        handle = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
        try:
            yield handle
            handle.flush()
        finally:
            handle.detach()  # leave sys.stdout open for the caller
        return
    with atomic_path(path) as temp_path:
        opener = gzip.open if path.lower().endswith(".gz") else open
        with opener(temp_path, "wt", encoding="utf-8", newline="") as handle:
            yield handle
        # mkstemp creates the file private (0600); give it the permissions any new file would get.
        os.chmod(temp_path, 0o666 & ~_current_umask())
        if Path(path).exists() and not overwrite:  # it appeared while we worked: still never clobber it
            raise PredictError(f"output file {path} appeared while predicting; pass --overwrite to replace it")


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_output(path: str, overwrite: bool) -> None:
    """Before any work: never replace an existing file silently."""
    if path == "-":
        return
    target = Path(path)
    if target.is_dir():
        raise PredictError(f"output is a directory, not a file: {path}")
    if target.exists() and not overwrite:
        raise PredictError(f"output file {path} already exists; pass --overwrite to replace it")


# ---------------------------------------------------------------------------------------------------------------
# The command


@dataclass
class RunSummary:
    rows: int = 0
    rows_without_text: int = 0
    seconds: float = 0.0


def format_probabilities(values: np.ndarray) -> np.ndarray:
    """Six significant digits: what a probability can tell, and stable against float noise between batchings."""
    return np.char.mod(PROBABILITY_FORMAT, values)


def format_rows(
    records: list[list[str]], result: LabelledTexts, labels: Sequence[str], probabilities: bool
) -> Iterator[list[str]]:
    """Input fields unchanged, then label, label_id, score, [prob_<class>...], error."""
    found = result.label_ids >= 0
    scores = format_probabilities(result.probabilities[np.arange(len(records)), np.maximum(result.label_ids, 0)])
    probability_text = format_probabilities(result.probabilities) if probabilities else None
    blank_probabilities = [""] * len(labels) if probabilities else []
    for index, record in enumerate(records):
        if found[index]:
            label_id = int(result.label_ids[index])
            extra = [labels[label_id], str(label_id), scores[index]]
            extra += probability_text[index].tolist() if probabilities else []
        else:
            extra = ["", "", "", *blank_probabilities]
        yield record + extra + [result.errors[index]]


def predict_file(
    predictor: Predictor,
    table: Table,
    lines: LineSource,
    writer: TableWriter,
    added_columns: list[str],
    probabilities: bool,
    progress: Any,
) -> RunSummary:
    """Stream chunks through the model: read, label, write; memory stays one chunk deep."""
    summary = RunSummary()
    started = time.perf_counter()
    columns = [table.header.index(column) for column in predictor.text_spec.columns]
    writer.write(table.header + added_columns)
    empty_error = predictor.text_spec.empty_text_error()
    for records in table.chunks:
        summary.rows += len(records)
        _update_total_estimate(progress, lines, summary.rows)
        texts = [predictor.text_spec.join([record[column] for column in columns]) for record in records]
        result = predictor.label_texts(texts, on_batch=progress.update, empty_error=empty_error)
        without_text = sum(1 for error in result.errors if error)
        summary.rows_without_text += without_text
        progress.update(without_text)
        for row in format_rows(records, result, predictor.labels, probabilities):
            writer.write(row)
    summary.seconds = time.perf_counter() - started
    return summary


def _update_total_estimate(progress: Any, lines: LineSource, rows_read: int) -> None:
    """Rows expected in all, from the share of the file's bytes read so far: gives tqdm its ETA."""
    position = lines.position()
    if lines.size and position > 0:
        progress.total = max(rows_read, round(rows_read * lines.size / position))
        progress.refresh()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.predict",
        description="Label the rows of a CSV/TSV file with a trained text classifier. Output: every input row, "
        "in order and unchanged, then label, label_id, score, [prob_<class>...], error.",
    )
    parser.add_argument(
        "--model", required=True, help="run directory (runs/<name>) or saved Hugging Face model directory"
    )
    parser.add_argument("--input", required=True, help="CSV/TSV file, optionally gzip-compressed; '-' for stdin")
    parser.add_argument("--output", required=True, help="CSV/TSV file to write (.gz compresses); '-' for stdout")
    parser.add_argument(
        "--text-columns",
        type=_column_list,
        help="comma-separated columns joined into the text (default: those the model was trained with; "
        "'text' for a bare model directory)",
    )
    parser.add_argument(
        "--column-names",
        type=_column_list,
        help="names for the columns of a file without a header row (e.g. class_index,title,description); "
        "a first row repeating the names is still read as a header",
    )
    parser.add_argument(
        "--format", choices=sorted(FORMATS), help="csv or tsv for input and output (default: by extension; csv for '-')"
    )
    parser.add_argument(
        "--encoding", default="utf-8", help="encoding of the input (default utf-8); output is always utf-8"
    )
    parser.add_argument("--batch-size", type=_positive_int, default=DEFAULT_BATCH_SIZE, help="rows per forward pass")
    parser.add_argument(
        "--chunk-size", type=_positive_int, default=DEFAULT_CHUNK_SIZE, help="rows read, labelled and written at a time"
    )
    parser.add_argument("--max-length", type=_positive_int, help="tokens per text (default: the run's training length)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:<index> or auto (default)")
    parser.add_argument(
        "--precision",
        choices=["auto", "fp32", "bf16"],
        default="auto",
        help="auto (default): bf16 autocast where the hardware has native bf16, else fp32",
    )
    parser.add_argument(
        "--recheck-margin",
        type=float,
        default=DEFAULT_RECHECK_MARGIN,
        help=f"in bf16, rows whose two best classes are closer than this in probability are recomputed in fp32 "
        f"(default {DEFAULT_RECHECK_MARGIN}; 0 turns it off)",
    )
    parser.add_argument("--probabilities", action="store_true", help="add a prob_<class> column per class")
    parser.add_argument(
        "--prefix",
        default="",
        help="put this before the added columns' names, e.g. pred_ when the input already has a label column",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace the output file if it exists")
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar (it is off anyway when stderr is not a terminal)"
    )
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _column_list(text: str) -> list[str]:
    columns = [part.strip() for part in text.split(",") if part.strip()]
    if not columns:
        raise argparse.ArgumentTypeError("name at least one column")
    return columns


def run(args: argparse.Namespace) -> RunSummary:
    """Validate everything cheap first (output, input, columns), then load the model and stream."""
    from tqdm import tqdm

    process_index, num_processes = distributed_shard()
    if num_processes > 1 and args.input == "-":
        raise PredictError("under several processes every process reads the input: give a file, not '-'")
    if process_index == 0:
        check_output(args.output, args.overwrite)
    encoding = check_encoding(args.encoding)
    delimiter = FORMATS[table_format(args.input, args.format)]
    out_delimiter = FORMATS[table_format(args.output, args.format)]
    source = resolve_model_source(args.model)
    with open_input(args.input, encoding) as lines:
        table = read_table(lines, delimiter, args.chunk_size, args.column_names)
        spec = source.text_spec
        if args.text_columns:
            spec = TextSpec(tuple(args.text_columns), spec.separator, spec.unescape_newlines)
        check_columns(table.header, spec.columns, lines.name)
        source = ModelSource(source.model_dir, spec, source.max_length, source.run_dir)
        predictor = Predictor.from_source(
            source,
            device=distributed_device(args.device, num_processes),
            precision=args.precision,
            batch_size=args.batch_size,
            max_length=args.max_length,
            recheck_margin=args.recheck_margin,
        )
        predictor.shard = (process_index, num_processes)
        added_columns = output_columns(predictor.labels, args.probabilities, args.prefix)
        check_no_clash(table.header, added_columns, lines.name)
        progress = tqdm(
            total=None,
            unit=" rows",
            file=sys.stderr,
            # None: off when stderr is not a terminal; only the main process shows one
            disable=True if args.no_progress or process_index > 0 else None,
            dynamic_ncols=True,
            desc="Predicting",
        )
        # Only the main process writes; the others compute their share of each chunk and hand it over.
        output = open_output(args.output, args.overwrite) if process_index == 0 else contextlib.nullcontext(None)
        with progress, output as handle:
            writer = TableWriter(handle, out_delimiter) if handle is not None else NullWriter()
            summary = predict_file(predictor, table, lines, writer, added_columns, args.probabilities, progress)
            progress.total = progress.n
    return summary


class NullWriter:
    def write(self, row: Sequence[str]) -> None:
        pass


def distributed_shard() -> tuple[int, int]:
    """(process index, number of processes) under `accelerate launch` / `torchrun`; (0, 1) otherwise."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 0, 1
    from accelerate import PartialState

    # Without a GPU, ask for the CPU (gloo) backend explicitly, or each process would run alone.
    state = PartialState(cpu=not torch.cuda.is_available())
    return state.process_index, state.num_processes


def distributed_device(device: str, num_processes: int) -> str:
    """With several processes on GPUs, `auto` means this process's own GPU, not the first one."""
    if num_processes > 1 and device == "auto" and torch.cuda.is_available():
        return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return device


def _quiet_libraries() -> None:
    """Library warnings and progress bars would break the one-line error contract and clutter stderr."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    logging.getLogger("torch").setLevel(logging.ERROR)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, unwound like Ctrl-C so that the temporary output file is removed."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> None:
    """The command. Errors print one line on stderr and raise SystemExit with a non-zero code."""
    args = parse_args(argv)
    _quiet_libraries()
    # SIGTERM (kill, a batch scheduler) unwinds like Ctrl-C, so the temporary output file is removed.
    # Only the main thread may set handlers (main() can be called from a worker thread, e.g. in a notebook).
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_handler = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    try:
        summary = run(args)
    except PredictError as error:
        print(f"error: {_one_line(error)}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt as interrupt:
        print("error: interrupted; no output was written", file=sys.stderr)
        raise SystemExit(128 + (signal.SIGTERM if isinstance(interrupt, _Terminated) else signal.SIGINT)) from None
    except BrokenPipeError:  # the reader of stdout went away (e.g. `| head`): nothing more to say
        with contextlib.suppress(OSError):
            sys.stderr.close()
        raise SystemExit(1) from None
    except OSError as error:  # disk full, permission denied while writing
        print(f"error: {_one_line(error)}", file=sys.stderr)
        raise SystemExit(1) from None
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous_handler)
    if os.environ.get("RANK", "0") != "0":  # under several processes the main one reports
        return
    rate = summary.rows / summary.seconds if summary.seconds > 0 else 0.0
    destination = "stdout" if args.output == "-" else args.output
    note = ""
    if summary.rows_without_text:
        note = f"; {summary.rows_without_text} rows had no text and were left unlabelled (see the error column)"
    print(f"labelled {summary.rows} rows -> {destination} ({rate:.0f} rows/s){note}", file=sys.stderr)


if __name__ == "__main__":
    main()
