"""How much of some texts is the unknown token ([UNK]): counted on the pass that tokenized them, and the one warning
that the vocabulary lacks their script, as training, pipeline.evaluate, pipeline.predict and the report give it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def unknown_counts(content: Sequence[tuple[list[int], list[int] | None]], tokenizer: Any) -> list[int] | None:
    """How many of each text's token ids (both segments of a pair) are the unknown token ([UNK]); None for a
    tokenizer without one (byte-level BPE). Per text, so that texts read as little but [UNK] can be told from a few
    [UNK] spread over many texts (UnknownTokens)."""
    unknown_id = tokenizer.unk_token_id
    if unknown_id is None:
        return None
    return [first.count(unknown_id) + (second or []).count(unknown_id) for first, second in content]


# Above this share of the texts' tokens being the unknown token ([UNK]) the vocabulary does not cover their script
# (Thai, emoji, or Chinese with an English uncased BERT): the model reads little but [UNK], and nothing else says so.
# English news has about 0.01%. Training measures train, pipeline.evaluate its file, pipeline.predict its input.
UNKNOWN_TOKEN_WARNING = 0.05
# A text more than this share of whose own tokens are [UNK] is mostly unread. Above UNKNOWN_ROWS_WARNING of the texts
# being so, the same warning is given whatever the share of tokens: in mixed data (short Chinese rows among long
# English and HTML ones) the English tokens hold the token share near 3% while one row in eleven reads as [UNK]
# alone. English news has no such row; one text in twenty unread is worth saying.
MOSTLY_UNKNOWN = 0.5
UNKNOWN_ROWS_WARNING = 0.05


@dataclass(frozen=True)
class UnknownTokens:
    """How much of some texts is the unknown token: totals that add up over chunks of texts (prediction counts a
    whole input chunk by chunk), from the counts of the pass that tokenized them."""

    tokens: int  # the texts' own tokens, special tokens aside
    unknown: int  # of which the unknown token
    texts: int
    mostly_unknown: int  # texts more than MOSTLY_UNKNOWN of whose tokens are the unknown token

    @classmethod
    def of_content(cls, content_lengths: np.ndarray, unknown_counts: np.ndarray | None) -> UnknownTokens | None:
        """From each text's content tokens and how many of them are unknown (None: the tokenizer has no unknown
        token, and so gives None)."""
        if unknown_counts is None:
            return None
        return cls(
            int(content_lengths.sum()),
            int(unknown_counts.sum()),
            len(content_lengths),
            int(np.count_nonzero(unknown_counts > MOSTLY_UNKNOWN * content_lengths)),
        )

    def __add__(self, other: UnknownTokens) -> UnknownTokens:
        return UnknownTokens(
            self.tokens + other.tokens,
            self.unknown + other.unknown,
            self.texts + other.texts,
            self.mostly_unknown + other.mostly_unknown,
        )

    @property
    def token_share(self) -> float:
        return self.unknown / max(self.tokens, 1)

    @property
    def text_share(self) -> float:
        return self.mostly_unknown / max(self.texts, 1)

    def warning(self, whose: str, tokenizer: Any) -> str | None:
        """unknown_tokens_warning for these texts, read by `tokenizer`."""
        return unknown_tokens_warning(
            self.token_share, self.text_share, whose, tokenizer.name_or_path, tokenizer.unk_token
        )


def unknown_tokens_warning(
    token_share: float | None, text_share: float | None, whose: str, tokenizer_name: str, unk_token: str | None = None
) -> str | None:
    """The one warning that the vocabulary lacks the texts' script, as training (of train), pipeline.evaluate (of its
    file), pipeline.predict (of all its input) and the report say it: when either share is over its threshold
    (UNKNOWN_TOKEN_WARNING, UNKNOWN_ROWS_WARNING); else None, as for a tokenizer without an unknown token (None).
    `whose`: the texts, possessive ("train's"). A record that predates the share of texts gives None for it."""
    if token_share is None or (token_share <= UNKNOWN_TOKEN_WARNING and (text_share or 0.0) <= UNKNOWN_ROWS_WARNING):
        return None
    unknown = f"the unknown token {unk_token}" if unk_token else "the unknown token"
    mostly = f"more than {MOSTLY_UNKNOWN:.0%} {unk_token or 'unknown'}"
    texts = "" if text_share is None else f", and {100 * text_share:.1f}% of its texts are {mostly}"
    return (
        f"{100 * token_share:.1f}% of {whose} tokens are {unknown}{texts}: the vocabulary of {tokenizer_name} lacks "
        "much of these texts' script (emoji, or a language it was not trained on), so the model reads little of "
        "them; use a tokenizer and model made for this language (e.g. bert-base-multilingual-cased or xlm-roberta-base)"
    )
