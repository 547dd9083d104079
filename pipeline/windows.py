"""Texts longer than the fixed length: which tokens a row keeps (head, tail, head+tail), or overlapping windows
that each become a row, and the pooling of window scores back into one score per document.

    rule = LongTextRule.from_settings(config.tokenizer)
    encoded = encode_documents(tokenizer, texts, max_length, rule)    # encoded.rows: token ids with [CLS]/[SEP]
    probabilities = pool_documents(window_probabilities, encoded.documents, len(texts), "mean")

Training, evaluation and prediction all encode through `encode_documents`, so a document becomes the same rows
in each. Windows are `max_length` tokens including the special tokens; consecutive windows overlap by
`chunk_stride` tokens; beyond `max_chunks` windows a document keeps its first `max_chunks - 1` windows and its
last one, so that both its start and its end are read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

TOKENIZE_BATCH_SIZE = 1000


@dataclass(frozen=True)
class LongTextRule:
    truncation: str = "head"  # head | tail | head_tail
    head_fraction: float = 0.25  # head_tail: the share of the kept tokens taken from the start
    long_text: str = "truncate"  # truncate | chunk
    chunk_stride: int = 32  # chunk: tokens shared by consecutive windows
    max_chunks: int = 16  # chunk: windows per document at most

    @classmethod
    def from_settings(cls, settings: Any) -> LongTextRule:
        """From a TokenizerConfig, or the `tokenizer` mapping of a run's config.yaml (defaults for missing keys)."""
        get = settings.get if isinstance(settings, dict) else lambda key, default: getattr(settings, key, default)
        defaults = cls()
        return cls(**{key: get(key, getattr(defaults, key)) for key in vars(defaults)})

    def to_settings(self) -> dict[str, Any]:
        """The rule as config.yaml's tokenizer settings, which `from_settings` reads back (model/decision.json)."""
        return dataclasses.asdict(self)

    @property
    def is_plain_head(self) -> bool:
        """The classic rule (keep the first tokens): tokenized by the fast tokenizer's own truncation."""
        return self.truncation == "head" and self.long_text == "truncate"

    @property
    def kept_part(self) -> str:
        """What truncation keeps of a text longer than the fixed length."""
        return {"tail": "the end", "head_tail": "the start and the end"}.get(self.truncation, "the start")

    @property
    def dropped_part(self) -> str:
        """What truncation drops of a text longer than the fixed length."""
        return {"tail": "the start", "head_tail": "the middle"}.get(self.truncation, "the end")

    def cache_key(self) -> str:
        return f"{self.truncation}|{self.head_fraction}|{self.long_text}|{self.chunk_stride}|{self.max_chunks}"


def truncate(ids: Sequence[int], width: int, rule: LongTextRule) -> list[int]:
    """At most `width` content tokens of one text, by the rule's truncation."""
    if len(ids) <= width:
        return list(ids)
    if rule.truncation == "tail":
        return list(ids[len(ids) - width :])
    if rule.truncation == "head_tail":
        head = round(width * rule.head_fraction)
        return list(ids[:head]) + list(ids[len(ids) - (width - head) :])
    return list(ids[:width])


def window_starts(length: int, width: int, stride: int, max_chunks: int) -> list[int]:
    """Start offsets of the windows over `length` content tokens: every `width - stride` tokens, the last one
    aligned to the end; beyond `max_chunks`, the first max_chunks - 1 and the last."""
    if length <= width:
        return [0]
    step = width - stride
    starts = list(range(0, length - width, step)) + [length - width]
    if len(starts) > max_chunks:
        starts = starts[: max_chunks - 1] + [starts[-1]]
    return starts


def content_rows(ids: Sequence[int], width: int, rule: LongTextRule) -> list[list[int]]:
    """One document's rows of content tokens (special tokens not yet added)."""
    if rule.long_text == "chunk":
        return [
            list(ids[start : start + width])
            for start in window_starts(len(ids), width, rule.chunk_stride, rule.max_chunks)
        ]
    return [truncate(ids, width, rule)]


@dataclass(frozen=True)
class EncodedDocuments:
    """What one tokenization pass over documents gives: the rows the model reads and what there was to read."""

    rows: list[list[int]]  # token ids of every row, special tokens included, no padding
    documents: np.ndarray  # (R,) the document each row belongs to
    content_lengths: np.ndarray  # (D,) each document's length in content tokens, before truncation or windows
    unknown_tokens: int | None  # content tokens that are the unknown token; None: the tokenizer has none

    @property
    def row_lengths(self) -> np.ndarray:
        """(R,) tokens per row."""
        return np.fromiter(map(len, self.rows), dtype=np.int64, count=len(self.rows))


def content_ids(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Each text's token ids without special tokens and without truncation: the one tokenizer call that rows and
    token counts are both built from."""
    return tokenizer(
        list(texts),
        add_special_tokens=False,
        truncation=False,
        return_attention_mask=False,
        return_token_type_ids=False,
        verbose=False,  # lengths beyond the model's limit are expected here: they are cut or windowed after
    )["input_ids"]


def unknown_count(content: Sequence[Sequence[int]], tokenizer: Any) -> int | None:
    """How many of these token ids are the unknown token ([UNK]); None for a tokenizer without one (byte-level BPE)."""
    unknown_id = tokenizer.unk_token_id
    return None if unknown_id is None else sum(ids.count(unknown_id) for ids in content)


def encode_documents(tokenizer: Any, texts: Sequence[str], max_length: int, rule: LongTextRule) -> EncodedDocuments:
    """Every document's rows (truncated by the rule, or its windows) with their special tokens, and what the texts
    held: their untruncated lengths and unknown tokens, measured on the same pass (pipeline.evaluate records them)."""
    prefix, suffix = special_tokens_around(tokenizer)
    width = max_length - len(prefix) - len(suffix)
    rows: list[list[int]] = []
    documents: list[int] = []
    lengths: list[int] = []
    unknown: int | None = 0 if tokenizer.unk_token_id is not None else None
    for start in range(0, len(texts), TOKENIZE_BATCH_SIZE):
        content = content_ids(tokenizer, texts[start : start + TOKENIZE_BATCH_SIZE])
        if unknown is not None:
            unknown += unknown_count(content, tokenizer)
        for offset, ids in enumerate(content):
            lengths.append(len(ids))
            for window in content_rows(ids, width, rule):
                rows.append(prefix + window + suffix)
                documents.append(start + offset)
    return EncodedDocuments(rows, np.asarray(documents, dtype=np.int64), np.asarray(lengths, dtype=np.int64), unknown)


def special_tokens_around(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after one text ([CLS] .. [SEP] for BERT, <s> .. </s> for
    RoBERTa), read off its own encoding of a one-word text."""
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    content = tokenizer("a", add_special_tokens=False)["input_ids"]
    for start in range(len(with_special) - len(content) + 1):
        if with_special[start : start + len(content)] == content:
            return with_special[:start], with_special[start + len(content) :]
    raise ValueError("cannot tell where the tokenizer puts its special tokens")


def pool_documents(
    row_scores: np.ndarray, documents: np.ndarray, num_documents: int, pooling: str, softmax: bool = True
) -> np.ndarray:
    """(R, K) window probabilities -> (D, K) document probabilities: the mean over a document's windows, or the
    per-class max (renormalised to sum to one for a softmax). Pooling probabilities rather than logits keeps one
    confident window from being drowned by the others' large negative logits, and works for every backend."""
    if len(documents) == num_documents and np.array_equal(documents, np.arange(num_documents)):
        return row_scores
    pooled = np.zeros((num_documents, row_scores.shape[1]), dtype=row_scores.dtype)
    if pooling == "max":
        np.maximum.at(pooled, documents, row_scores)
        return pooled / pooled.sum(axis=1, keepdims=True) if softmax else pooled
    np.add.at(pooled, documents, row_scores)
    counts = np.bincount(documents, minlength=num_documents).astype(row_scores.dtype)
    return pooled / counts[:, None]


def windows_summary(documents: np.ndarray, num_documents: int) -> dict[str, float]:
    """Windows per document: mean, 95th percentile and max (what chunking costs)."""
    counts = np.bincount(documents, minlength=num_documents)
    return {"mean": float(counts.mean()), "p95": float(np.percentile(counts, 95)), "max": int(counts.max())}
