"""The fixed length rows are padded to (the setting, or chosen under `auto`), and the widths and batches that rows
of known lengths are cut into, which training, evaluation and prediction share."""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from pipeline.config.schema import ConfigError
from pipeline.text.windows import PAIR_CUT, LongTextRule, window_starts

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from pipeline.config.schema import TokenizerConfig

logger = logging.getLogger(__name__)

# The hardware-friendly granularity for sequence lengths (tensor-core tiles, vector widths).
LENGTH_MULTIPLE = 8
# BERT's learned position table has 512 rows; most checkpoints report this as model_max_length.
BERT_POSITION_LIMIT = 512
# Lengths `auto` weighs against each other when long texts are chunked.
CHUNK_LENGTHS = (64, 128, 256, 512)


def length_limit(tokenizer: PreTrainedTokenizerBase, model_max_positions: int | None = None) -> int:
    """The longest sequence the tokenizer and the model can take (tokenizers report 1e30 when unset)."""
    tokenizer_limit = int(min(tokenizer.model_max_length, 10**9))
    return min(BERT_POSITION_LIMIT, tokenizer_limit, model_max_positions or BERT_POSITION_LIMIT)


def truncated_share(lengths: np.ndarray, max_length: int) -> float:
    """The share of texts longer than the fixed length: truncated, or read as windows."""
    return float(np.mean(lengths > max_length)) if len(lengths) else 0.0


def padded_width(longest: int, max_length: int) -> int:
    """A batch's width: its longest row rounded up to a multiple of 8, never beyond the fixed length."""
    return min(LENGTH_MULTIPLE * math.ceil(max(longest, 1) / LENGTH_MULTIPLE), max(max_length, longest))


def sorted_batches(
    sorted_lengths: np.ndarray, fixed_length: int, max_rows: int, max_tokens: int | None = None
) -> list[slice]:
    """Consecutive batches over rows sorted longest first: at most `max_rows` rows and, with `max_tokens`, at most
    that many tokens at the batch's padded width (a CPU is fastest while a batch's activations stay in its caches)."""
    batches, start = [], 0
    while start < len(sorted_lengths):
        count = max_rows
        if max_tokens is not None:
            width = padded_width(int(sorted_lengths[start]), fixed_length)
            count = max(1, min(max_rows, max_tokens // width))
        batches.append(slice(start, start + count))
        start += count
    return batches


def choose_max_length(lengths: np.ndarray, max_truncated_fraction: float, limit: int) -> int:
    """The shortest multiple of 8 leaving at most `max_truncated_fraction` of texts longer than it, capped at `limit`."""
    if len(lengths) == 0:
        raise ValueError("cannot choose a length from an empty split")
    # At most `allowed` texts may be longer than the length, so it must reach the (allowed+1)-th longest text.
    allowed = math.floor(max_truncated_fraction * len(lengths) + 1e-9)
    needed = int(np.sort(lengths)[len(lengths) - 1 - min(allowed, len(lengths) - 1)])
    rounded = LENGTH_MULTIPLE * math.ceil(needed / LENGTH_MULTIPLE)
    return max(LENGTH_MULTIPLE, min(rounded, limit - limit % LENGTH_MULTIPLE))


def fixed_length(
    config: TokenizerConfig,
    rule: LongTextRule,
    train_lengths: np.ndarray | None,
    limit: int,
    tokenizer: PreTrainedTokenizerBase,
    seconds_per_window: Callable[[int], float] | None,
) -> int:
    """The setting, or under `auto` chosen from `train_lengths` (train's untruncated lengths)."""
    special = tokenizer.num_special_tokens_to_add(pair=False)
    if config.max_length == "auto" and rule.long_text == "chunk" and seconds_per_window is not None:
        length = choose_chunk_length(
            train_lengths - special, rule, limit, special, config.max_truncated_fraction, seconds_per_window
        )
    elif config.max_length == "auto":
        length = choose_max_length(train_lengths, config.max_truncated_fraction, limit)
    elif config.max_length > limit:
        raise ConfigError(f"tokenizer.max_length: {config.max_length} exceeds the model's limit of {limit} tokens")
    else:
        length = config.max_length
    if rule.long_text == "chunk" and rule.chunk_stride >= length - special:
        raise ConfigError(
            f"tokenizer.chunk_stride: {rule.chunk_stride} must be smaller than a window's {length - special} content tokens"
        )
    return length


def choose_chunk_length(
    content_lengths: np.ndarray,
    rule: LongTextRule,
    limit: int,
    special: int,
    max_truncated_fraction: float,
    seconds_per_window: Callable[[int], float],
) -> int:
    """With chunking, the length whose training pass over train costs least on this device (windows x measured
    seconds per window), among those that cut at most `max_truncated_fraction` of documents to max_chunks windows:
    counting only the windows kept, a short length would look cheapest because it reads less. When none keeps the
    budget, the longest (it cuts fewest), with a warning."""
    candidates = [length for length in CHUNK_LENGTHS if length <= limit and length - special > rule.chunk_stride]
    costs, cut = {}, {}
    for length in candidates:
        width = length - special
        needed = np.array([len(window_starts(int(n), width, rule.chunk_stride, sys.maxsize)) for n in content_lengths])
        costs[length] = int(np.minimum(needed, rule.max_chunks).sum()) * seconds_per_window(length)
        cut[length] = float(np.mean(needed > rule.max_chunks)) if len(needed) else 0.0
    within = [length for length in candidates if cut[length] <= max_truncated_fraction]
    if within:
        chosen = min(within, key=costs.get)
    else:
        chosen = max(candidates)
        logger.warning(
            f"Every chunk length cuts more than {100 * max_truncated_fraction:.1f}% of train's documents (tokenizer.max_truncated_fraction) to tokenizer.max_chunks={rule.max_chunks} windows, losing the text between their first windows and their last; {chosen}, the longest, cuts fewest ({100 * cut[chosen]:.1f}%). Options: a larger tokenizer.max_chunks, or accept it with a larger max_truncated_fraction"
        )
    costs_text = ", ".join(f"{length}: {costs[length]:.0f} s ({cut[length]:.1%} cut)" for length in candidates)
    logger.info(
        f"Chunk length by training cost on this device, among those cutting at most {100 * max_truncated_fraction:.1f}% of train's documents to {rule.max_chunks} windows: {costs_text} -> {chosen}"
    )
    return chosen


def log_length(
    config: TokenizerConfig, rule: LongTextRule, max_length: int, truncated: dict[str, float], limit: int, pairs: bool
) -> None:
    setting = "auto" if config.max_length == "auto" else "configured"
    shares = ", ".join(f"{name} {share:.2%}" for name, share in truncated.items())
    logger.info(f"Fixed length {max_length} ({setting}); longer than it: {shares}")
    if truncated.get("train", 0.0) > config.max_truncated_fraction and rule.long_text == "truncate":
        # Sentence pairs are cut one way only (the end of the longer text): a larger length is their one option.
        options = ""
        if not pairs:
            head_tail = "" if rule.truncation == "head_tail" else ", tokenizer.truncation=head_tail"
            options = f"{head_tail}, or tokenizer.long_text=chunk (docs/long-texts.md)"
        kept, what = (PAIR_CUT, "pairs") if pairs else (rule.kept_part, "texts")
        logger.warning(
            f"Fixed length {max_length} truncates {100 * truncated['train']:.1f}% of train, above the {100 * config.max_truncated_fraction:.1f}% budget (tokenizer.max_truncated_fraction): the model reads only {kept} of those {what}. Options: a larger tokenizer.max_length (the model takes up to {limit}){options}"
        )
