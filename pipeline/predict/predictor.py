"""The predictor: a model, its tokenizer, labels, length and text rule, loaded once (`Predictor.from_path`);
texts in, label ids and probabilities out, through a backend: PyTorch or the run's verified export.

An export runs without importing torch or transformers (3-5 s of start-up, more than labelling a few thousand
texts takes): its config, tokenizer and runtime are read directly, and torch is imported only for PyTorch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.common.hardware import HardwareError, resolve_device, resolve_inference_dtype, torch_sees_no_gpu
from pipeline.config.schema import MAX_BATCH_TOKENS, DataConfig, batch_token_budget
from pipeline.data.text import TextSpec
from pipeline.predict.backend import Backend
from pipeline.predict.runtime import open_backend
from pipeline.predict.source import (
    ModelSource,
    PredictError,
    load_config_and_tokenizer,
    load_model_and_tokenizer,
    reraised_as,
    resolve_model_source,
)
from pipeline.predict.torch_backend import TorchBackend
from pipeline.run.directory import DECISION_FILE, RunDirError, read_decision
from pipeline.run.exports import BACKEND_RUNTIMES, ExportChoice, ExportError, choose_export
from pipeline.run.model_config import class_names, config_max_positions, is_multi_label, to_probabilities
from pipeline.scoring.baseline_model import SavedEnsemble, load_ensemble
from pipeline.scoring.thresholds import KIND_BINARY, KIND_FLAG, KIND_MULTI_LABEL, Decision, default_decision
from pipeline.text.lengths import length_limit, padded_width, sorted_batches
from pipeline.text.unknown import UnknownTokens
from pipeline.text.windows import (
    SEGMENT_IDS,
    EncodedDocuments,
    LongTextRule,
    encode_documents,
    pad_ids,
    pool_documents,
)

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

# Told how many texts (or rows) each batch finished: a progress bar's update.
Progress = Callable[[int], None] | None
# Batches are length-sorted, so a big batch wastes little on padding.
DEFAULT_BATCH_SIZE = 128
# In bf16, rows whose two best probabilities are closer than this are recomputed in fp32: beyond it bf16's
# error in probability is too small to change the label.
DEFAULT_RECHECK_MARGIN = 0.02


@dataclass
class LabelledTexts:
    """Predictions for a list of texts: rows without text get label_id -1, NaN probabilities and an error."""

    label_ids: np.ndarray  # (N,) int64 (multi-label: the most probable class)
    probabilities: np.ndarray  # (N, K) float32 (multi-label: one sigmoid per class)
    errors: list[str]
    label_sets: np.ndarray | None = None  # (N, K) bool, multi-label models only: the classes predicted
    low_confidence: np.ndarray | None = None  # (N,) bool, multi-class thresholds only: top probability too low
    unknown: UnknownTokens | None = None

    def scores(self) -> np.ndarray:
        """(N,) the probability of each row's label; NaN for rows without one."""
        picked = self.probabilities[np.arange(len(self.label_ids)), np.maximum(self.label_ids, 0)]
        return np.where(self.label_ids >= 0, picked, np.nan)


@dataclass
class Predictor:
    model: torch.nn.Module | None = field(repr=False)  # None when an export runs the forward pass
    tokenizer: Any = field(repr=False)
    labels: list[str]
    max_length: int
    device: torch.device | None  # None when an export runs the forward pass: on the CPU, without torch
    text_spec: TextSpec
    batch_size: int = DEFAULT_BATCH_SIZE
    compute_dtype: torch.dtype | None = None
    recheck_margin: float = DEFAULT_RECHECK_MARGIN
    # (process index, number of processes): each process runs every n-th batch and the results are gathered.
    shard: tuple[int, int] = (0, 1)
    long_text: LongTextRule = field(default_factory=LongTextRule)
    pooling: str = "mean"
    # Tokens per batch, at most (rows x padded width); None: no cap.
    max_batch_tokens: int | None = MAX_BATCH_TOKENS
    backend: Backend | None = field(default=None, repr=False)
    choice: ExportChoice = field(default_factory=lambda: ExportChoice(None, None, "asked for"))
    multi_label: bool = False
    # model/decision.json; default argmax, or 0.5 per class for multi-label.
    decision: Decision | None = None
    label_separator: str = field(default_factory=lambda: DataConfig().label_separator)
    # False: a model folder that records no text rule, read by the defaults.
    reading_recorded: bool = True
    # model/ensemble.json: the baseline averaged into the model's probabilities; None: the model alone.
    ensemble: SavedEnsemble | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.backend is None:
            self.backend = TorchBackend(self.model, self.device)
        if self.decision is None:
            self.decision = default_decision(self.labels, self.multi_label)

    @classmethod
    def from_path(
        cls,
        path: str | Path,
        *,
        text_columns: Sequence[str] | None = None,
        text_separator: str | None = None,
        text_pair_columns: Sequence[str] | None = None,
        **options: Any,
    ) -> Predictor:
        """Load a run directory or saved model; the text options override those the run recorded; other options
        as `from_source`."""
        source = (
            resolve_model_source(path)
            .with_text_columns(text_columns, "text_columns")
            .with_text_pair_columns(text_pair_columns, "text_pair_columns")
            .with_text_separator(text_separator)
        )
        return cls.from_source(source, **options)

    @classmethod
    def from_source(
        cls,
        source: ModelSource,
        *,
        device: str = "auto",
        precision: str = "auto",
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_batch_tokens: int | str | None = "auto",
        max_length: int | None = None,
        recheck_margin: float = DEFAULT_RECHECK_MARGIN,
        backend: str = "auto",
    ) -> Predictor:
        """`backend`: "torch"; an export variant (an error when there is none: never a silent fallback); "auto"
        (the export verification found faster than PyTorch, else PyTorch). A set `precision` makes "auto" PyTorch."""
        _check_options(source, batch_size, max_batch_tokens, max_length)
        if device == "auto" and backend in BACKEND_RUNTIMES:
            device = "cpu"  # exports run on the CPU
        torch_device = None if _known_cpu(device) else _resolved(device)
        device_type = "cpu" if torch_device is None else torch_device.type
        choice = _choose_backend(source, backend, precision, device_type)
        compute_dtype = None  # fp32; exports: whatever their runtime computes in
        if choice.variant is None:
            torch_device = torch_device or _resolved(device)
            with reraised_as(PredictError, HardwareError):
                compute_dtype = resolve_inference_dtype(precision, torch_device)
            model, tokenizer, config, engine = _load_torch(source, torch_device)
        else:
            model, torch_device = None, None
            config, tokenizer, engine = _load_export(source, choice)
        length = _fixed_length(tokenizer, config, max_length or source.max_length)
        if not source.reading_recorded:  # a guess that changes predictions if wrong: say so, once per load
            logger.warning(source.unrecorded_reading_warning(length))
        labels = class_names(config)
        decision, separator = load_decision(source.model_dir, labels, is_multi_label(config))
        with reraised_as(PredictError, RunDirError):
            ensemble = load_ensemble(source.model_dir, labels)
        return cls(
            model,
            tokenizer,
            labels,
            length,
            torch_device,
            source.text_spec,
            batch_size,
            compute_dtype,
            recheck_margin,
            long_text=source.long_text,
            pooling=source.pooling,
            max_batch_tokens=batch_token_budget(max_batch_tokens, device_type),
            backend=engine,
            choice=choice,
            multi_label=is_multi_label(config),
            decision=decision,
            label_separator=separator,
            reading_recorded=source.reading_recorded,
            ensemble=ensemble,
        )

    @property
    def precision(self) -> str:
        """PyTorch's precision: "fp32", or "bf16", the one reduced precision prediction runs in."""
        return "fp32" if self.compute_dtype is None else "bf16"

    @property
    def on_cpu(self) -> bool:
        return self.device is None or self.device.type == "cpu"

    @property
    def backend_name(self) -> str:
        return self.backend.name

    def describe_backend(self) -> str:
        if self.backend.name == "torch":
            detail = self.precision
        else:
            runtime_precision = getattr(self.backend, "precision", None)
            detail = str(self.choice.path) + (f", {runtime_precision}" if runtime_precision else "")
        return f"backend {self.backend.name} ({detail}): {self.choice.reason}"

    def infer(self, texts: Sequence[str], on_batch: Progress = None) -> tuple[np.ndarray, np.ndarray]:
        """(texts) -> (label_ids (N,) int64, probabilities (N, K) float32); keeps no state between calls."""
        return self._infer_encoded(self.encode(texts), texts, on_batch)

    def _infer_encoded(
        self, encoded: EncodedDocuments, texts: Sequence[str], on_batch: Progress = None
    ) -> tuple[np.ndarray, np.ndarray]:
        probabilities = self.document_probabilities(self.row_logits(encoded, on_batch), encoded)
        probabilities = self.with_ensemble(probabilities, texts)
        return self.labels_of(probabilities), probabilities

    def with_ensemble(self, probabilities: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """(N, K) pooled model probabilities of `texts` -> the run's ensemble with the baseline's, where it kept one."""
        return probabilities if self.ensemble is None else self.ensemble.combine(probabilities, texts)

    def encode(self, texts: Sequence[str]) -> EncodedDocuments:
        """The rows the model reads for `texts` (one per text or per window, as in training), from one pass."""
        return encode_documents(self.tokenizer, texts, self.max_length, self.long_text)

    def row_logits(self, encoded: EncodedDocuments, on_batch: Progress = None, recheck: bool = True) -> np.ndarray:
        """(R, K) float32 logits of the encoded rows. In bf16, rows whose label could flip within `recheck_margin`
        are run again in fp32 (unless `recheck` is off), so near-ties get the full-precision label."""
        if len(encoded.rows) == 0:
            return np.empty((0, len(self.labels)), dtype=np.float32)
        lengths = encoded.row_lengths
        on_batch = texts_progress(on_batch, len(encoded.content_lengths), len(encoded.rows))
        logits = self._forward(encoded, lengths, np.arange(len(encoded.rows)), self.compute_dtype, on_batch)
        if (
            recheck
            and self.compute_dtype is not None
            and self.recheck_margin > 0
            and (len(self.labels) > 1 or self.multi_label)
        ):
            close = near_decision(self._row_probabilities(logits), self.decision, self.recheck_margin)
            if len(close):
                logits[close] = self._forward(encoded, lengths, close, None, None)
        return logits

    def document_probabilities(
        self, row_logits: np.ndarray, encoded: EncodedDocuments, scale: float = 1.0
    ) -> np.ndarray:
        """(R, K) row logits -> (N, K) probabilities per text, windows pooled. `scale` multiplies the logits first
        (undoes a calibrated model's folded temperature)."""
        probabilities = self._row_probabilities(row_logits * scale if scale != 1.0 else row_logits)
        count = len(encoded.content_lengths)
        return pool_documents(probabilities, encoded.documents, count, self.pooling, softmax=not self.multi_label)

    def labels_of(self, probabilities: np.ndarray) -> np.ndarray:
        """(N,) the decision's label ids (multi-label: the most probable class)."""
        if self.multi_label:
            return probabilities.argmax(axis=1).astype(np.int64)
        return self.decision.predict(probabilities)

    def _row_probabilities(self, logits: np.ndarray) -> np.ndarray:
        return to_probabilities(logits, self.multi_label)

    def logits(self, texts: Sequence[str], on_batch: Progress = None) -> np.ndarray:
        """(texts) -> (N, K) float32 logits, batched as `infer` but with no fp32 recheck (no label is decided)."""
        encoded = self.encode(texts)
        logits = self.row_logits(encoded, on_batch, recheck=False)
        return pool_documents(logits, encoded.documents, len(texts), "mean", softmax=False)  # windows: the mean

    def padded_batches(self, texts: Sequence[str]) -> list[dict[str, np.ndarray]]:
        """The batches `infer` feeds the backend for `texts`, longest first (int8 export calibration)."""
        encoded = self.encode(texts)
        lengths = encoded.row_lengths
        order = np.argsort(-lengths, kind="stable")
        return [self._pad(encoded, lengths, batch) for batch in self._my_batches(order, lengths[order])]

    def _pad(self, encoded: EncodedDocuments, lengths: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
        pad_id = self.tokenizer.pad_token_id or 0
        input_ids, attention_mask = pad_arrays(
            [encoded.rows[row] for row in rows], lengths[rows], pad_id, self.max_length
        )
        batch = {"input_ids": input_ids, "attention_mask": attention_mask}
        if encoded.token_types is not None:
            types = [encoded.token_types[row] for row in rows]
            batch[SEGMENT_IDS] = pad_arrays(types, lengths[rows], 0, self.max_length)[0]
        return batch

    def _my_batches(self, order: np.ndarray, sorted_lengths: np.ndarray) -> list[np.ndarray]:
        """This process's share of the length-sorted batches: every n-th whole batch."""
        process_index, num_processes = self.shard
        cuts = sorted_batches(sorted_lengths, self.max_length, self.batch_size, self.max_batch_tokens)
        return [order[cut] for number, cut in enumerate(cuts) if number % num_processes == process_index]

    def _forward(
        self,
        encoded: EncodedDocuments,
        lengths: np.ndarray,
        rows: np.ndarray,
        compute_dtype: torch.dtype | None,
        on_batch: Progress,
    ) -> np.ndarray:
        """Logits (len(rows), K) of the given rows, in the order of `rows`. Longest first, so a batch size too big
        for memory fails at once; each batch is padded only to its own longest row (exact: padding is masked)."""
        logits = np.empty((len(rows), len(self.labels)), dtype=np.float32)
        order = np.argsort(-lengths[rows], kind="stable")  # positions within `rows`
        mine = self._my_batches(order, lengths[rows][order])
        with self.backend.running(compute_dtype):
            for batch in mine:
                logits[batch] = self.backend.logits(self._pad(encoded, lengths, rows[batch]))  # (B, K)
                if on_batch is not None:
                    on_batch(len(batch))
        if self.shard[1] > 1:
            logits = self._gather_batches(logits, mine)
        return logits

    def _gather_batches(self, logits: np.ndarray, mine: list[np.ndarray]) -> np.ndarray:
        """Give every process the rows the others computed (whole batches: the same numbers as one process)."""
        from accelerate.utils import gather_object

        positions = np.concatenate(mine or [np.empty(0, dtype=np.int64)])
        for their_positions, values in gather_object([(positions, logits[positions])]):
            logits[their_positions] = values
        return logits

    def label_texts(
        self,
        texts: Sequence[str | None],
        on_batch: Progress = None,
        empty_error: str | Callable[[int], str] = "empty text",
    ) -> LabelledTexts:
        """`infer` on the rows that have text; the others stay in place, unlabelled, with `empty_error` (or what it
        returns for the row's position)."""
        has_text = np.fromiter((bool(text and text.strip()) for text in texts), dtype=bool, count=len(texts))
        kept = np.flatnonzero(has_text)
        label_ids = np.full(len(texts), -1, dtype=np.int64)
        probabilities = np.full((len(texts), len(self.labels)), np.nan, dtype=np.float32)
        kept_texts = [texts[index] for index in kept]
        encoded = self.encode(kept_texts)
        kept_ids, kept_probabilities = self._infer_encoded(encoded, kept_texts, on_batch)
        label_ids[kept] = kept_ids
        probabilities[kept] = kept_probabilities
        why = empty_error if callable(empty_error) else lambda _: empty_error
        errors = ["" if ok else why(row) for row, ok in enumerate(has_text)]
        result = LabelledTexts(label_ids, probabilities, errors, unknown=encoded.unknown)
        if self.multi_label:
            result.label_sets = np.zeros((len(texts), len(self.labels)), dtype=bool)
            result.label_sets[kept] = self.decision.predict(kept_probabilities)
        if self.decision.kind == KIND_FLAG:
            result.low_confidence = np.zeros(len(texts), dtype=bool)
            result.low_confidence[kept] = self.decision.low_confidence(kept_probabilities)
        return result

    def joined_labels(self, label_sets: np.ndarray) -> list[str]:
        return [self.label_separator.join(name for name, on in zip(self.labels, row) if on) for row in label_sets]


def texts_progress(on_batch: Progress, texts: int, rows: int) -> Progress:
    """`on_batch` told texts done, not model rows (a long text is several windows): in proportion to the rows."""
    if on_batch is None or rows == texts:
        return on_batch
    done = {"rows": 0, "texts": 0}

    def update(batch_rows: int) -> None:
        done["rows"] += batch_rows
        texts_now = done["rows"] * texts // rows
        on_batch(texts_now - done["texts"])
        done["texts"] = texts_now

    return update


def load_decision(model_dir: Path, labels: list[str], multi_label: bool) -> tuple[Decision, str]:
    with reraised_as(PredictError, RunDirError):
        record = read_decision(model_dir)
    separator = DataConfig().label_separator
    if record is None:
        return default_decision(labels, multi_label), separator
    try:
        decision = Decision.from_dict(record, labels)
    except ValueError as error:
        raise PredictError(f"{Path(model_dir) / DECISION_FILE}: {error}") from None
    return decision, str(record.get("label_separator") or separator)


def near_decision(probabilities: np.ndarray, decision: Decision, margin: float) -> np.ndarray:
    """Rows whose label could flip within `margin` of probability: the two best classes, or a threshold, that close."""
    if decision.kind in (KIND_BINARY, KIND_MULTI_LABEL):
        columns = slice(1, 2) if decision.kind == KIND_BINARY else slice(None)
        distance = np.abs(probabilities[:, columns] - decision.vector()[None, columns])
        return np.flatnonzero((distance < margin).any(axis=1))
    top_two = np.sort(probabilities, axis=1)[:, -2:]  # (R, 2)
    close = top_two[:, 1] - top_two[:, 0] < margin
    if decision.kind == KIND_FLAG:
        top = probabilities.argmax(axis=1)
        close |= np.abs(top_two[:, 1] - decision.vector()[top]) < margin
    return np.flatnonzero(close)


def pad_arrays(
    token_ids: Sequence[Sequence[int]], lengths: np.ndarray, pad_id: int, max_length: int
) -> tuple[np.ndarray, np.ndarray]:
    """Pad a batch to its longest row rounded up to a multiple of 8: (B, T) int64 ids and mask."""
    width = padded_width(int(lengths.max()), max_length)
    input_ids = pad_ids(token_ids, width, pad_id)  # (B, T)
    attention_mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)  # (B, T)
    return input_ids, attention_mask


def _check_options(source: ModelSource, batch_size: int, max_batch_tokens: Any, max_length: int | None) -> None:
    if batch_size < 1:
        raise PredictError(f"batch size must be positive, got {batch_size}")
    if max_batch_tokens not in (None, "auto") and (not isinstance(max_batch_tokens, int) or max_batch_tokens < 1):
        raise PredictError(f"max batch tokens must be a positive integer, 'auto' or None, got {max_batch_tokens!r}")
    if max_length is None and source.max_length is None and source.run_dir is not None:
        # Another length than training's would change the predictions of long texts: do not guess.
        raise PredictError(
            f"run {source.run_dir} records no tokenization.max_length (no metrics.json: did it finish?); pass --max-length"
        )


def _known_cpu(device: str) -> bool:
    """Whether `device` is the CPU, known without importing torch: "cpu", or "auto" where torch sees no GPU."""
    return device == "cpu" or (device == "auto" and torch_sees_no_gpu())


def _resolved(device: str) -> torch.device:
    with reraised_as(PredictError, HardwareError):
        return resolve_device(device)


def _choose_backend(source: ModelSource, backend: str, precision: str, device_type: str) -> ExportChoice:
    if backend in BACKEND_RUNTIMES and precision != "auto":
        raise PredictError(
            f"--precision {precision} applies to the torch backend; leave it at auto with --backend {backend}"
        )
    if backend == "auto" and precision != "auto":
        return ExportChoice(None, None, f"--precision {precision} asked for (a PyTorch setting)")
    with reraised_as(PredictError, ExportError):
        return choose_export(source.run_dir, source.model_dir, backend, device_type)


def _load_torch(source: ModelSource, device: torch.device) -> tuple[torch.nn.Module, Any, Any, Backend]:
    """(PyTorch model on `device`, tokenizer, config, backend)."""
    model, tokenizer = load_model_and_tokenizer(source.model_dir)
    model.to(device)
    return model, tokenizer, model.config, TorchBackend(model, device)


def _load_export(source: ModelSource, choice: ExportChoice) -> tuple[Any, Any, Backend]:
    """(config, tokenizer, backend) of a verified export; never the PyTorch model, nor torch."""
    with reraised_as(PredictError, ExportError):
        engine = open_backend(choice.variant, choice.path)
    config, tokenizer = load_config_and_tokenizer(source.model_dir, sorted(engine.inputs))
    return config, tokenizer, engine


def _fixed_length(tokenizer: Any, config: Any, asked: int | None) -> int:
    """The length texts are cut or windowed to: `asked` (the option, else the run's), else the model's limit."""
    limit = length_limit(tokenizer, config_max_positions(config))
    length = asked or limit
    if length > limit:
        raise PredictError(f"max length {length} exceeds the model's limit of {limit} tokens")
    if length < 2:
        raise PredictError(f"max length must be at least 2 ([CLS] and [SEP]), got {length}")
    return length


def as_predictor(model: str | Path | Predictor, **options: Any) -> Predictor:
    return model if isinstance(model, Predictor) else Predictor.from_path(model, **options)
