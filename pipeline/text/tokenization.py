"""Stage 2: the checkpoint's own tokenizer, every row padded to one fixed length:
`tokenize_splits(splits, load_tokenizer(config.tokenizer), config.tokenizer, cache_root)`.

Each split gets `input_ids`, `attention_mask`, `length` (real tokens, for length grouping and padding trim) and its
labels (with chunking, `document`; with pairs, `token_type_ids`). One tokenizer pass builds the rows and measures
the untruncated lengths; under `max_length: auto`, train's count keeps its ids so that it too is tokenized once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.data.splits import column_values, label_column, labels_of
from pipeline.run.directory import first_line
from pipeline.text.lengths import fixed_length, length_limit, log_length, truncated_share
from pipeline.text.unknown import UnknownTokens, unknown_counts, unknown_tokens_warning
from pipeline.text.windows import (
    SEGMENT_IDS,
    TOKENIZE_BATCH_SIZE,
    EncodedDocuments,
    KeptContent,
    LongTextRule,
    TokensRead,
    content_ids_by_segment,
    content_length,
    encode_documents,
    has_pairs,
    pad_ids,
    pair_extra_tokens,
    reads_of,
    reads_segments,
    windows_summary,
)

if TYPE_CHECKING:  # prediction imports the length rules below without paying for `datasets` at start-up
    from datasets import Dataset, DatasetDict
    from transformers import PreTrainedTokenizerBase

    from pipeline.config.schema import TokenizerConfig

logger = logging.getLogger(__name__)

# Bump when what is cached, or how the length is chosen, changes: old entries are then ignored.
CACHE_FORMAT = 9


@dataclass
class TokenizationInfo:
    max_length: int
    max_length_setting: int | str
    truncated_fraction: dict[str, float]
    from_cache: bool
    from_cache_by_process: list[bool] | None = None
    # long_text chunk: windows per document (mean, p95, max) of each split.
    windows_per_document: dict[str, dict] | None = None
    # Share of each split's tokens (special tokens aside) that are the unknown token; None: the tokenizer has none.
    unknown_token_share: dict[str, float | None] | None = None
    # Share of each split's texts mostly (MOSTLY_UNKNOWN) unknown tokens; None: as above.
    mostly_unknown_share: dict[str, float | None] | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class TokenizerNotFound(OSError):
    """tokenizer.name_or_path holds no usable (fast) tokenizer; an OSError, as for any checkpoint not found."""


def load_tokenizer(config: TokenizerConfig) -> PreTrainedTokenizerBase:
    """The checkpoint's own fast tokenizer, whatever its kind (BERT WordPiece, RoBERTa byte-level BPE, ...)."""
    from transformers import AutoTokenizer

    name = config.name_or_path
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, use_fast=True)
    except (ValueError, KeyError, TypeError) as error:  # e.g. a folder with no tokenizer files and no config
        raise TokenizerNotFound(f"no tokenizer found in '{name}' ({first_line(error)})") from None
    if not getattr(tokenizer, "is_fast", False):
        raise TokenizerNotFound(f"'{name}' has no fast tokenizer (tokenizer.json or a convertible vocabulary)")
    # transformers 5 builds an empty tokenizer for a model folder without tokenizer files: every word would be unknown.
    if len(tokenizer.get_vocab()) <= len(set(tokenizer.all_special_ids)):
        raise TokenizerNotFound(
            f"'{name}' has no tokenizer files (tokenizer.json, vocab.txt, vocab.json + merges.txt, ...), only a "
            "model config; point tokenizer.name_or_path at the folder or Hub name that holds the tokenizer"
        )
    return tokenizer


@dataclass(frozen=True)
class TokenCounts:
    lengths: np.ndarray  # (N,) tokens per text, special tokens ([CLS]/[SEP], <s>/</s>) included, untruncated
    unknown: UnknownTokens | None  # how much of the texts is the unknown token; None: the tokenizer has none

    @classmethod
    def of_content(
        cls, content_lengths: np.ndarray, unknown_counts: np.ndarray | None, tokenizer: PreTrainedTokenizerBase
    ) -> TokenCounts:
        content_lengths = np.asarray(content_lengths, dtype=np.int64)
        lengths = content_lengths + tokenizer.num_special_tokens_to_add(pair=False)
        return cls(lengths, UnknownTokens.of_content(content_lengths, unknown_counts))

    @classmethod
    def of_encoding(cls, encoded: EncodedDocuments, tokenizer: PreTrainedTokenizerBase) -> TokenCounts:
        return cls.of_content(encoded.content_lengths, encoded.unknown_counts, tokenizer)

    @classmethod
    def join(cls, parts: Sequence[TokenCounts]) -> TokenCounts:
        unknown = None if parts[0].unknown is None else sum((part.unknown for part in parts[1:]), parts[0].unknown)
        return cls(np.concatenate([part.lengths for part in parts]), unknown)

    @property
    def unknown_share(self) -> float | None:
        return None if self.unknown is None else self.unknown.token_share

    @property
    def mostly_unknown_share(self) -> float | None:
        return None if self.unknown is None else self.unknown.text_share


def count_tokens(texts: list[str], tokenizer: PreTrainedTokenizerBase) -> TokenCounts:
    """Each text's untruncated length in tokens, and the share of unknown tokens."""
    return count_and_keep_tokens(texts, tokenizer, keep_up_to=0)[0]


# Under `auto`, train's content ids are kept from its count up to this many tokens (256 MiB); a larger train is
# tokenized again instead, since its untruncated texts may hold many times the tokens its rows keep.
KEEP_CONTENT_TOKENS = 64 * 2**20


def count_and_keep_tokens(
    texts: list[str], tokenizer: PreTrainedTokenizerBase, keep_up_to: int, read: TokensRead | None = None
) -> tuple[TokenCounts, KeptContent | None]:
    """count_tokens, and the texts' content ids if they hold at most `keep_up_to` tokens (else None). With `read`
    (windows.reads_of), a text is counted only as far as such rows read it."""
    lengths: list[int] = []
    unknown: list[int] = []
    pair_extra = pair_extra_tokens(tokenizer)
    kept: list[KeptContent] | None = [] if keep_up_to > 0 else None
    kept_tokens = 0
    for start in range(0, len(texts), TOKENIZE_BATCH_SIZE):
        content = content_ids_by_segment(tokenizer, texts[start : start + TOKENIZE_BATCH_SIZE], read)
        lengths.extend(content_length(first, second, pair_extra) for first, second in content)
        unknown += unknown_counts(content, tokenizer) or []  # None: the tokenizer has no unknown token
        if kept is not None:
            kept.append(KeptContent.of(content))
            kept_tokens += kept[-1].ids.size
            kept = kept if kept_tokens <= keep_up_to else None
    unknown_array = None if tokenizer.unk_token_id is None else np.asarray(unknown, dtype=np.int64)
    counts = TokenCounts.of_content(np.asarray(lengths, dtype=np.int64), unknown_array, tokenizer)
    return counts, None if kept is None else KeptContent.join(kept)


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """A hash of everything that decides the tokens: the fast tokenizer's serialised state and its init settings."""
    digest = hashlib.sha256(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        state = json.loads(backend.to_str())
        for transient in ("truncation", "padding"):  # set by each call, not part of what the tokenizer is
            state.pop(transient, None)
        digest.update(json.dumps(state, sort_keys=True).encode())
    else:
        digest.update(repr(sorted(tokenizer.get_vocab().items())).encode())
    # Settings a slow tokenizer applies in Python (not paths: the same tokenizer saved elsewhere is the same).
    settings = {
        key: tokenizer.init_kwargs.get(key) for key in ("do_lower_case", "strip_accents", "tokenize_chinese_chars")
    }
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def texts_fingerprint(texts: Sequence[str]) -> str:
    """A hash of the texts, in order (a NUL after each, so that no two lists of texts run together alike)."""
    digest = hashlib.sha256(f"{len(texts)}|".encode())
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def _cache_key(splits: DatasetDict, tokenizer: PreTrainedTokenizerBase, config: TokenizerConfig, limit: int) -> str:
    digest = hashlib.sha256()
    settings = (
        f"v{CACHE_FORMAT}|{config.max_length}|{config.max_truncated_fraction}|{limit}|"
        f"{LongTextRule.from_settings(config).cache_key()}|segments {reads_segments(tokenizer)}|"
    )
    digest.update(settings.encode())
    digest.update(tokenizer_fingerprint(tokenizer).encode())
    for name in sorted(splits):
        digest.update(f"|{name}|{texts_fingerprint(column_values(splits[name], 'text'))}|".encode())
        labels = labels_of(splits[name])  # class ids, or multi-hot rows
        digest.update(labels.astype(np.int64 if labels.ndim == 1 else np.float32).tobytes())
    return digest.hexdigest()[:24]


# Texts encoded at a time: a block's rows are Python lists until packed into int32 arrays, so this bounds memory.
ENCODE_BLOCK_TEXTS = 10 * TOKENIZE_BATCH_SIZE


def _encode_split(
    split: Dataset,
    tokenizer: PreTrainedTokenizerBase,
    max_length: int,
    rule: LongTextRule,
    name: str,
    kept: KeptContent | None = None,
) -> tuple[Dataset, dict | None, TokenCounts]:
    """The split's rows padded to `max_length`, its windows summary (chunking) and its token counts, from one
    tokenizer pass (or from `kept`)."""
    from datasets import Dataset
    from tqdm.auto import tqdm

    texts = column_values(split, "text")
    starts = range(0, max(len(texts), 1), ENCODE_BLOCK_TEXTS)  # an empty split is one empty block
    ids, types, lengths, documents, counts = [], [], [], [], []  # per block
    with tqdm(total=len(texts), desc=f"Tokenizing {name}", unit=" texts", disable=len(starts) < 2) as progress:
        for start in starts:
            block = texts[start : start + ENCODE_BLOCK_TEXTS]
            part = None if kept is None else kept.part(start, start + len(block))
            encoded = encode_documents(tokenizer, block, max_length, rule, part)
            ids.append(pad_ids(encoded.rows, max_length, tokenizer.pad_token_id or 0, np.int32))  # (R, T)
            # (R, T) segment ids; None: no pair in the block (all 0)
            types.append(None if encoded.token_types is None else pad_ids(encoded.token_types, max_length, 0, np.int8))
            lengths.append(encoded.row_lengths)  # (R,) real tokens per row
            documents.append(encoded.documents + start)  # (R,) the split's row (text) each row comes from
            counts.append(TokenCounts.of_encoding(encoded, tokenizer))
            progress.update(len(block))
    documents, lengths = np.concatenate(documents), np.concatenate(lengths)
    labels_name = label_column(split.column_names)
    labels = column_values(split, labels_name)
    columns = {
        "input_ids": np.concatenate(ids),  # (R, T)
        "attention_mask": (np.arange(max_length)[None, :] < lengths[:, None]).astype(np.int8),  # (R, T)
        "length": lengths,
        # a text read as several windows repeats its label on each
        labels_name: labels if len(documents) == len(texts) else [labels[document] for document in documents.tolist()],
    }
    if any(part is not None for part in types):
        columns[SEGMENT_IDS] = np.concatenate(
            [np.zeros_like(i, np.int8) if t is None else t for i, t in zip(ids, types)]
        )
    if rule.long_text != "chunk":
        return Dataset.from_dict(columns), None, TokenCounts.join(counts)
    columns["document"] = documents
    return Dataset.from_dict(columns), windows_summary(documents, len(split)), TokenCounts.join(counts)


def tokenize_splits(
    splits: DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    config: TokenizerConfig,
    cache_root: Path | None,
    model_max_positions: int | None = None,
    seconds_per_window: Callable[[int], float] | None = None,
) -> tuple[DatasetDict, TokenizationInfo]:
    """Tokenize every split to one fixed length, or reuse the on-disk cache. `seconds_per_window(length)` (measured
    training cost of one row) lets `auto` choose a chunk length by cost."""
    limit = length_limit(tokenizer, model_max_positions)
    rule = LongTextRule.from_settings(config)
    cache_dir = None
    if config.cache and cache_root is not None:
        cache_dir = Path(cache_root) / "tokenized" / _cache_key(splits, tokenizer, config, limit)
        if (cache_dir / "dataset_dict.json").exists() and (cache_dir / "info.json").exists():
            return _read_cache(cache_dir, splits, tokenizer, config, rule, limit)

    train_lengths, train_content = None, None
    if config.max_length == "auto":
        # Read as far as rows of the longest length could (`auto` chooses at most that), so the kept ids build
        # train's rows at whatever length is chosen.
        counts, train_content = count_and_keep_tokens(
            column_values(splits["train"], "text"), tokenizer, KEEP_CONTENT_TOKENS, reads_of(tokenizer, limit, rule)
        )
        train_lengths = counts.lengths
    max_length = fixed_length(config, rule, train_lengths, limit, tokenizer, seconds_per_window)
    encoded = {
        name: _encode_split(split, tokenizer, max_length, rule, name, train_content if name == "train" else None)
        for name, split in splits.items()
    }
    del train_content
    truncated = {name: truncated_share(counts.lengths, max_length) for name, (_, _, counts) in encoded.items()}
    log_length(config, rule, max_length, truncated, limit, has_pairs(column_values(splits["train"], "text")))

    from datasets import DatasetDict

    tokenized = DatasetDict({name: dataset for name, (dataset, _, _) in encoded.items()})
    windows = {name: summary for name, (_, summary, _) in encoded.items() if summary is not None}
    info = TokenizationInfo(
        max_length,
        config.max_length,
        truncated,
        from_cache=False,
        windows_per_document=windows or None,
        unknown_token_share={name: counts.unknown_share for name, (_, _, counts) in encoded.items()},
        mostly_unknown_share={name: counts.mostly_unknown_share for name, (_, _, counts) in encoded.items()},
    )
    _warn_unknown_tokens(info, tokenizer)
    if cache_dir is not None:
        _write_cache(tokenized, info, cache_dir)
    return tokenized, info


def _warn_unknown_tokens(info: TokenizationInfo, tokenizer: PreTrainedTokenizerBase) -> None:
    warning = unknown_tokens_warning(
        (info.unknown_token_share or {}).get("train"),
        (info.mostly_unknown_share or {}).get("train"),
        "train's",
        tokenizer.name_or_path,
        tokenizer.unk_token,
    )
    if warning:
        logger.warning("%s", warning)


def _write_cache(tokenized: DatasetDict, info: TokenizationInfo, cache_dir: Path) -> None:
    """Save to a temporary folder, then rename: a half-written cache is never read back."""
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cache_dir.name}.", dir=cache_dir.parent))
    try:
        tokenized.save_to_disk(str(staging))
        (staging / "info.json").write_text(json.dumps(info.to_dict()))
        staging.rename(cache_dir)
    except OSError:
        # Another process may have filled the same entry first: theirs is as good as ours.
        if not (cache_dir / "info.json").exists():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _read_cache(
    cache_dir: Path,
    splits: DatasetDict,
    tokenizer: PreTrainedTokenizerBase,
    config: TokenizerConfig,
    rule: LongTextRule,
    limit: int,
) -> tuple[DatasetDict, TokenizationInfo]:
    """A cache entry's splits and info, logging what a fresh run logs."""
    from datasets import load_from_disk

    tokenized = load_from_disk(str(cache_dir))
    saved = json.loads((cache_dir / "info.json").read_text())
    info = TokenizationInfo(**{**saved, "from_cache": True, "from_cache_by_process": None})
    logger.info(f"Tokenized splits loaded from cache {cache_dir} (max_length {info.max_length})")
    pairs = has_pairs(column_values(splits["train"], "text"))
    log_length(config, rule, info.max_length, info.truncated_fraction, limit, pairs)
    _warn_unknown_tokens(info, tokenizer)
    return tokenized, info
