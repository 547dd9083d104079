"""Texts longer than the fixed length: truncation (head, tail, head+tail) or overlapping windows, and the pooling
of window scores back into one score per document. Training, evaluation and prediction all encode through
`encode_documents`, so a document becomes the same rows in each.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.config.reading import PAIR_MARK
from pipeline.data.text import segments_of
from pipeline.text.unknown import UnknownTokens, unknown_counts

TOKENIZE_BATCH_SIZE = 1000
# The model input that holds each token's segment (0: a pair's first text, 1: its second), as transformers names it.
SEGMENT_IDS = "token_type_ids"


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
        """The rule as config.yaml's tokenizer settings, which `from_settings` reads back."""
        return dataclasses.asdict(self)

    @property
    def is_plain_head(self) -> bool:
        """The classic rule (keep the first tokens), as the fast tokenizer's own truncation keeps them."""
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
    """Window starts every `width - stride` tokens, the last aligned to the end; beyond `max_chunks`, the first
    max_chunks - 1 and the last, so that both ends are read."""
    if length <= width:
        return [0]
    step = width - stride
    starts = list(range(0, length - width, step)) + [length - width]
    if len(starts) > max_chunks:
        starts = starts[: max_chunks - 1] + [starts[-1]]
    return starts


def content_rows(ids: Sequence[int], width: int, rule: LongTextRule) -> list[list[int]]:
    if rule.long_text == "chunk":
        return [
            list(ids[start : start + width])
            for start in window_starts(len(ids), width, rule.chunk_stride, rule.max_chunks)
        ]
    return [truncate(ids, width, rule)]


@dataclass(frozen=True)
class EncodedDocuments:
    rows: list[list[int]]  # token ids of every row, special tokens included, no padding
    documents: np.ndarray  # (R,) the document each row belongs to
    content_lengths: np.ndarray  # (D,) untruncated, less the special tokens around one text (content_length)
    unknown_counts: np.ndarray | None  # (D,) content tokens that are the unknown token; None: the tokenizer has none
    token_types: list[list[int]] | None = None  # segment ids of every row when any document is a pair

    @property
    def unknown(self) -> UnknownTokens | None:
        return UnknownTokens.of_content(self.content_lengths, self.unknown_counts)

    @property
    def row_lengths(self) -> np.ndarray:
        """(R,) tokens per row."""
        return np.fromiter(map(len, self.rows), dtype=np.int64, count=len(self.rows))


# A text far longer than its rows read is cut, before tokenizing, to this many characters a token read from each end
# (a huge pasted log is otherwise slow and memory-hungry). Generous; a piece that still yields too few tokens is
# tokenized whole instead, so the rows never change.
CUT_CHARS_PER_TOKEN = 16


@dataclass(frozen=True)
class TokensRead:
    """How many content tokens of a text its rows can read from its start and from its end, each one more than a row
    keeps there, so that a text cut to them is still longer than the width: truncated, and counted so."""

    head: int
    tail: int

    @classmethod
    def of(cls, rule: LongTextRule, width: int) -> TokensRead:
        """For rows of `width` content tokens, truncated (truncate) or windowed (window_starts) by `rule`."""
        if rule.long_text == "chunk":  # past max_chunks windows: the first max_chunks - 1, one a step, and the last
            return cls((rule.max_chunks - 1) * (width - rule.chunk_stride) + width + 1, width + 1)
        if rule.truncation == "tail":
            return cls(0, width + 1)
        if rule.truncation == "head_tail":
            head = round(width * rule.head_fraction)
            return cls(head + 1, width - head + 1)
        return cls(width + 1, 0)

    def ends(self, text: str) -> tuple[str, str] | None:
        """The text's start and end that hold what its rows read, or None where it is not far longer than that.
        Cut at whitespace, which every tokenizer here splits on, so that each end tokenizes as it does within the
        whole: the start ends before a space, the end begins with one (byte-level BPE reads ' word' as one token)."""
        head_chars, tail_chars = self.head * CUT_CHARS_PER_TOKEN, self.tail * CUT_CHARS_PER_TOKEN
        if len(text) <= 2 * (head_chars + tail_chars):
            return None
        head_stop = _first_space(text, range(head_chars - 1, -1, -1)) if self.head else 0
        tail_start = _first_space(text, range(len(text) - tail_chars, len(text))) if self.tail else len(text)
        if head_stop < 0 or tail_start < 0:  # no space to cut at: one long "word", which a cut would change
            return None
        return text[:head_stop], text[tail_start:]


def _first_space(text: str, indices: range) -> int:
    """The first of `indices` where `text` holds whitespace; -1 where none does."""
    return next((index for index in indices if text[index].isspace()), -1)


def reads_of(tokenizer: Any, max_length: int, rule: LongTextRule) -> TokensRead:
    """What rows of `max_length` tokens read of a single text. A pair's sides are always tokenized whole:
    truncate_pair shares the width by which side is longer, which a cut could change."""
    return TokensRead.of(rule, max_length - tokenizer.num_special_tokens_to_add(pair=False))


def content_ids(
    tokenizer: Any, texts: Sequence[str], reads: Sequence[TokensRead | None] | None = None
) -> list[list[int]]:
    """Each text's token ids without special tokens or truncation. With `reads`, a text far longer than that is
    tokenized from its two ends only (TokensRead.ends): same rows, and a count that is a lower bound over the width."""
    texts = list(texts)
    ends = {index: cut for index, read in enumerate(reads or ()) if read and (cut := read.ends(texts[index]))}
    batch = ["" if index in ends else text for index, text in enumerate(texts)]
    ids = _tokenize(tokenizer, batch + [piece for cut in ends.values() for piece in cut])
    result, whole = ids[: len(texts)], []
    for number, index in enumerate(ends):
        head, tail = ids[len(texts) + 2 * number], ids[len(texts) + 2 * number + 1]
        if len(head) >= reads[index].head and len(tail) >= reads[index].tail:
            result[index] = head + tail
        else:  # too few tokens in a piece (whitespace, markup the tokenizer drops): the whole text after all
            whole.append(index)
    for index, row in zip(whole, _tokenize(tokenizer, [texts[index] for index in whole]) if whole else ()):
        result[index] = row
    return result


def _tokenize(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    return tokenizer(
        texts,
        add_special_tokens=False,
        truncation=False,
        return_attention_mask=False,
        return_token_type_ids=False,
        verbose=False,  # lengths beyond the model's limit are expected here: they are cut or windowed after
    )["input_ids"]


def content_ids_by_segment(
    tokenizer: Any, texts: Sequence[str], read: TokensRead | None = None
) -> list[tuple[list[int], list[int] | None]]:
    """Each text's (first, second) content token ids; second is None for a single text. With `read` (reads_of), a
    single text is tokenized only as far as its rows read it."""
    parts = [segments_of(text) for text in texts]
    firsts = content_ids(tokenizer, [segments[0] for segments in parts], [read if len(p) == 1 else None for p in parts])
    paired = [index for index, segments in enumerate(parts) if len(segments) == 2]
    seconds: list[list[int] | None] = [None] * len(parts)
    if paired:
        for index, ids in zip(paired, content_ids(tokenizer, [parts[index][1] for index in paired])):
            seconds[index] = ids
    return list(zip(firsts, seconds))


@dataclass(frozen=True)
class KeptContent:
    """Texts' content token ids (content_ids_by_segment) in flat int32 arrays (lists of Python ints take 9x the
    memory). Under `max_length: auto`, train's rows are built from what the count kept, not a second tokenizer pass."""

    ids: np.ndarray  # (total,) int32: each text's first segment, then its second (a pair), text after text
    bounds: np.ndarray  # (N + 1,) int64: text i's ids are ids[bounds[i]:bounds[i + 1]]
    seconds: np.ndarray  # (N,) int64: where text i's second segment starts within its ids; -1 for a single text

    @classmethod
    def of(cls, content: Sequence[tuple[list[int], list[int] | None]]) -> KeptContent:
        segments = [part for first, second in content for part in ((first,) if second is None else (first, second))]
        ids = np.fromiter(itertools.chain.from_iterable(segments), dtype=np.int32, count=sum(map(len, segments)))
        bounds = np.zeros(len(content) + 1, dtype=np.int64)
        np.cumsum([len(first) + len(second or ()) for first, second in content], out=bounds[1:])
        seconds = np.array([-1 if second is None else len(first) for first, second in content], dtype=np.int64)
        return cls(ids, bounds, seconds)

    @classmethod
    def join(cls, parts: Sequence[KeptContent]) -> KeptContent:
        starts = np.cumsum([0, *(part.ids.size for part in parts[:-1])])
        bounds = [np.zeros(1, dtype=np.int64), *(part.bounds[1:] + start for part, start in zip(parts, starts))]
        return cls(
            np.concatenate([part.ids for part in parts] or [np.zeros(0, np.int32)]),
            np.concatenate(bounds),
            np.concatenate([part.seconds for part in parts] or [np.zeros(0, np.int64)]),
        )

    def __len__(self) -> int:
        return len(self.seconds)

    def part(self, start: int, stop: int) -> KeptContent:
        """Texts start..stop (views, not copies)."""
        bounds = self.bounds[start : stop + 1]
        return KeptContent(self.ids[bounds[0] : bounds[-1]], bounds - bounds[0], self.seconds[start:stop])

    def content(self, start: int, stop: int) -> list[tuple[list[int], list[int] | None]]:
        base = int(self.bounds[start])
        flat = self.ids[base : int(self.bounds[stop])].tolist()  # one conversion, then slices of one list
        content = []
        for begin, end, second in zip(
            (self.bounds[start:stop] - base).tolist(),
            (self.bounds[start + 1 : stop + 1] - base).tolist(),
            self.seconds[start:stop].tolist(),
        ):
            split = end if second < 0 else begin + second
            content.append((flat[begin:split], None if second < 0 else flat[split:end]))
        return content


def pair_extra_tokens(tokenizer: Any) -> int:
    """Special tokens a pair has beyond those around one text (BERT's middle [SEP]: 1; RoBERTa's </s></s>: 2)."""
    return tokenizer.num_special_tokens_to_add(pair=True) - tokenizer.num_special_tokens_to_add(pair=False)


def content_length(first: list[int], second: list[int] | None, pair_extra: int) -> int:
    """A document's length less the special tokens around one text: a pair counts its middle separator, so that
    a pair is too long exactly when this exceeds what a single text may hold."""
    return len(first) if second is None else len(first) + len(second) + pair_extra


@dataclass(frozen=True)
class Part:
    ids: list[int]
    types: list[int]


@dataclass(frozen=True)
class Template:
    """Where the tokenizer puts its special tokens around one text or a pair, and each part's segment id, read off
    its own encodings so that every checkpoint (BERT, RoBERTa, ...) gets its own layout."""

    prefix: Part
    suffix: Part
    first_type: int
    middle: Part | None = None  # pairs only
    second_type: int = 0

    @property
    def special_count(self) -> int:
        return len(self.prefix.ids) + len(self.suffix.ids) + (len(self.middle.ids) if self.middle else 0)

    def row(self, first: list[int], second: list[int] | None = None) -> Part:
        parts = [self.prefix, Part(first, [self.first_type] * len(first))]
        if second is not None:
            if self.middle is None:
                raise ValueError("a pair given to the template of one text (template_of(tokenizer, pair=True))")
            parts += [self.middle, Part(second, [self.second_type] * len(second))]
        parts.append(self.suffix)
        return Part([i for part in parts for i in part.ids], [t for part in parts for t in part.types])


def template_of(tokenizer: Any, pair: bool = False) -> Template:
    """The tokenizer's template for one text, or a pair, read off its encoding of one-word texts."""
    words = ["a", "b"] if pair else ["a"]
    encoded = tokenizer(*words, add_special_tokens=True, return_token_type_ids=True)
    ids, types = encoded["input_ids"], encoded.get(SEGMENT_IDS) or [0] * len(encoded["input_ids"])
    cuts, position = [], 0
    for word in words:
        content = tokenizer(word, add_special_tokens=False)["input_ids"]
        start = _find(ids, content, position)
        cuts.append((start, start + len(content)))
        position = start + len(content)

    def part(start: int, stop: int) -> Part:
        return Part(list(ids[start:stop]), list(types[start:stop]))

    (first_start, first_stop), (second_start, second_stop) = cuts[0], cuts[-1]
    prefix, suffix = part(0, first_start), part(second_stop, len(ids))
    if not pair:
        return Template(prefix, suffix, types[first_start])
    return Template(prefix, suffix, types[first_start], part(first_stop, second_start), types[second_start])


def _find(ids: Sequence[int], content: Sequence[int], position: int) -> int:
    for start in range(position, len(ids) - len(content) + 1):
        if list(ids[start : start + len(content)]) == list(content):
            return start
    raise ValueError("cannot tell where the tokenizer puts its special tokens")


# What a pair longer than the fixed length keeps (truncate_pair), as messages and the model card say it.
PAIR_CUT = "the start of both texts (the longer one cut at its end)"


def truncate_pair(first: list[int], second: list[int], width: int) -> tuple[list[int], list[int]]:
    """At most `width` content tokens of a pair, cut as the fast tokenizers' "longest_first" cuts, so that
    pipeline.predict and transformers.pipeline read a long pair alike."""
    if len(first) + len(second) <= width:
        return first, second
    half = width // 2
    if min(len(first), len(second)) <= half:
        keep_first = len(first) if len(first) <= len(second) else width - len(second)
    else:
        keep_first = width - half if len(first) > len(second) else half
    return first[:keep_first], second[: width - keep_first]


def encode_documents(
    tokenizer: Any, texts: Sequence[str], max_length: int, rule: LongTextRule, kept: KeptContent | None = None
) -> EncodedDocuments:
    """Every document's rows (truncated or windowed by the rule; a pair is one row cut by truncate_pair), with the
    texts' untruncated lengths and unknown tokens from the same pass. With `kept`, the texts are not tokenized again."""
    single = template_of(tokenizer)
    pair = template_of(tokenizer, pair=True) if has_pairs(texts) else None
    pair_extra = pair_extra_tokens(tokenizer)
    rows: list[list[int]] = []
    types: list[list[int]] = []
    documents: list[int] = []
    lengths: list[int] = []
    unknown: list[int] = []
    keep_types = pair is not None and reads_segments(tokenizer)
    read = reads_of(tokenizer, max_length, rule)
    for start in range(0, len(texts), TOKENIZE_BATCH_SIZE):
        stop = min(start + TOKENIZE_BATCH_SIZE, len(texts))
        if kept is not None:
            content = kept.content(start, stop)
        else:
            content = content_ids_by_segment(tokenizer, texts[start:stop], read)
        unknown += unknown_counts(content, tokenizer) or []  # None: the tokenizer has no unknown token
        for offset, (first, second) in enumerate(content):
            lengths.append(content_length(first, second, pair_extra))
            if second is None:
                windows = content_rows(first, max_length - single.special_count, rule)
                encoded = [single.row(window) for window in windows]
            else:
                encoded = [pair.row(*truncate_pair(first, second, max_length - pair.special_count))]
            for row in encoded:
                rows.append(row.ids)
                if keep_types:
                    types.append(row.types)
                documents.append(start + offset)
    return EncodedDocuments(
        rows,
        np.asarray(documents, dtype=np.int64),
        np.asarray(lengths, dtype=np.int64),
        None if tokenizer.unk_token_id is None else np.asarray(unknown, dtype=np.int64),
        types if keep_types else None,
    )


def pad_ids(rows: Sequence[Sequence[int]], width: int, pad_id: int, dtype: type = np.int64) -> np.ndarray:
    """(R, width) of `dtype`: each row's ids, then `pad_id`."""
    padded = np.full((len(rows), width), pad_id, dtype=dtype)
    for index, row in enumerate(rows):
        padded[index, : len(row)] = row
    return padded


def reads_segments(tokenizer: Any) -> bool:
    """Whether the model takes segment ids (BERT does; DistilBERT and RoBERTa read a pair by its separators alone)."""
    return SEGMENT_IDS in tokenizer.model_input_names


def has_pairs(texts: Sequence[str]) -> bool:
    return any(PAIR_MARK in text for text in texts)


def pool_documents(
    row_scores: np.ndarray, documents: np.ndarray, num_documents: int, pooling: str, softmax: bool = True
) -> np.ndarray:
    """(R, K) window probabilities -> (D, K): the mean over a document's windows, or the per-class max (renormalised
    for a softmax). Probabilities, not logits, so that one confident window is not drowned by the others' logits."""
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
