"""Training losses: what the one training loop minimises, as a function of (logits, batch).

    loss = build_loss(config.train, class_counts)      # chosen by the config
    total = loss(logits, batch)                           # (B, C), batch dict -> scalar SUM over the batch's rows

Every loss returns a sum over the rows of the batch, not a mean: the loop divides by the rows of the whole
accumulation window (and processes), which keeps gradient accumulation and several processes exact for any
per-row loss, weighted or not.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F


class CrossEntropySum:
    """Cross-entropy on gold class ids, summed over the batch."""

    def __call__(self, logits: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(logits.float(), batch["labels"], reduction="sum")  # scalar


def build_loss(config: object) -> CrossEntropySum:
    """The loss the config asks for (train.* settings)."""
    return CrossEntropySum()
