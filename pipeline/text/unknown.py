"""How much of some texts is the unknown token ([UNK]): counted on the pass that tokenized them, and the one warning
that the vocabulary lacks their script, as training, pipeline.evaluate, pipeline.predict and the report give it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import Any

import numpy as np


def unknown_counts(content: Sequence[tuple[list[int], list[int] | None]], tokenizer: Any) -> list[int] | None:
    """How many of each text's token ids (both segments of a pair) are the unknown token; None for a tokenizer
    without one (byte-level BPE). Per text, so that mostly-unknown texts can be told from a few [UNK] spread over many."""
    unknown_id = tokenizer.unk_token_id
    if unknown_id is None:
        return None
    return [first.count(unknown_id) + (second or []).count(unknown_id) for first, second in content]


# Above this share of [UNK] tokens the vocabulary does not cover the texts' script, and nothing else says so.
UNKNOWN_TOKEN_WARNING = 0.05
# A text more than MOSTLY_UNKNOWN [UNK] is mostly unread; above UNKNOWN_ROWS_WARNING of texts so, the same warning is
# given whatever the token share (in mixed data long English rows hold the token share low).
MOSTLY_UNKNOWN = 0.5
UNKNOWN_ROWS_WARNING = 0.05


@dataclass(frozen=True)
class UnknownTokens:
    """How much of some texts is the unknown token: totals that add up over chunks of texts."""

    tokens: int  # the texts' own tokens, special tokens aside
    unknown: int  # of which the unknown token
    texts: int
    mostly_unknown: int  # texts more than MOSTLY_UNKNOWN of whose tokens are the unknown token

    @classmethod
    def of_content(cls, content_lengths: np.ndarray, unknown_counts: np.ndarray | None) -> UnknownTokens | None:
        if unknown_counts is None:
            return None
        return cls(
            int(content_lengths.sum()),
            int(unknown_counts.sum()),
            len(content_lengths),
            int(np.count_nonzero(unknown_counts > MOSTLY_UNKNOWN * content_lengths)),
        )

    def __add__(self, other: UnknownTokens) -> UnknownTokens:
        return UnknownTokens(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other))))

    @property
    def token_share(self) -> float:
        return self.unknown / max(self.tokens, 1)

    @property
    def text_share(self) -> float:
        return self.mostly_unknown / max(self.texts, 1)

    def warning(self, whose: str, tokenizer: Any) -> str | None:
        return unknown_tokens_warning(
            self.token_share, self.text_share, whose, tokenizer.name_or_path, tokenizer.unk_token
        )


def unknown_tokens_warning(
    token_share: float | None, text_share: float | None, whose: str, tokenizer_name: str, unk_token: str | None = None
) -> str | None:
    """The one warning that the vocabulary lacks the texts' script, when either share is over its threshold; else
    None. `whose`: the texts, possessive ("train's"). An older record gives None for the share of texts."""
    if token_share is None or (token_share <= UNKNOWN_TOKEN_WARNING and (text_share or 0.0) <= UNKNOWN_ROWS_WARNING):
        return None
    unknown = f"the unknown token {unk_token}" if unk_token else "the unknown token"
    mostly = f"more than {MOSTLY_UNKNOWN:.0%} {unk_token or 'unknown'}"
    texts = "" if text_share is None else f", and {100 * text_share:.1f}% of its texts are {mostly}"
    return f"{100 * token_share:.1f}% of {whose} tokens are {unknown}{texts}: the vocabulary of {tokenizer_name} lacks much of these texts' script (emoji, or a language it was not trained on), so the model reads little of them; use a tokenizer and model made for this language (e.g. bert-base-multilingual-cased or xlm-roberta-base)"
