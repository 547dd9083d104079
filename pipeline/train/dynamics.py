"""Training dynamics for the label audit: each training row's class probabilities as the loop saw them, from the
logits it computes anyway (no extra forward pass), averaged over the epochs (Swayamdipta et al. 2020's
confidence; Pleiss et al. 2020's margin follows from it).

A row is scored before the step that learns from it, so in the first epoch its probabilities are out of sample.
Under several processes each one keeps its own rows; they are gathered once, at the end of training, and a row
that a process saw twice in one epoch (accelerate pads the last batch with repeats) counts once (`merge`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object


@dataclass
class Seen:
    """One process's record: per training batch, the epoch, the rows' indices and their probabilities."""

    epochs: list[int] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)  # (B,) int64 row indices of the train split
    probabilities: list[np.ndarray] = field(default_factory=list)  # (B, C) float32


def merge(records: list[Seen], num_rows: int, num_classes: int) -> np.ndarray:
    """(N, C) each row's probabilities averaged over the epochs it was seen in, each (epoch, row) counted once
    whichever processes saw it; NaN for a row never seen (a run resumed after its only epoch, say)."""
    total = np.zeros((num_rows, num_classes), dtype=np.float64)
    times = np.zeros(num_rows, dtype=np.int64)
    counted: set[tuple[int, int]] = set()
    # Batch by batch across the processes, as they stepped together: accelerate's padding repeats sit in an epoch's
    # last batch, so the row's own earlier batch is the one that counts.
    for batch in range(max((len(record.rows) for record in records), default=0)):
        for record in (record for record in records if batch < len(record.rows)):
            epoch, rows, probabilities = record.epochs[batch], record.rows[batch], record.probabilities[batch]
            for row, row_probabilities in zip(rows.tolist(), probabilities):
                if (epoch, row) not in counted:
                    counted.add((epoch, row))
                    total[row] += row_probabilities
                    times[row] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / times[:, None]).astype(np.float32)


class TrainingDynamics:
    """Collects what `Trainer` sees; `result` gathers it (a collective: every process calls it)."""

    def __init__(self, num_rows: int, enabled: bool):
        self.num_rows, self.enabled, self.seen = num_rows, enabled, Seen()

    def add(self, rows: torch.Tensor, logits: torch.Tensor, epoch: int) -> None:
        if not self.enabled:
            return
        probabilities = torch.softmax(logits.detach().float(), dim=-1)
        self.seen.epochs.append(epoch)
        self.seen.rows.append(rows.detach().cpu().numpy().astype(np.int64))
        self.seen.probabilities.append(probabilities.cpu().numpy())

    def result(self, accelerator: Accelerator, num_classes: int) -> np.ndarray | None:
        """(N, C) mean probabilities per training row (merge), on every process; None when not collected."""
        if not self.enabled:
            return None
        records = gather_object([self.seen]) if accelerator.num_processes > 1 else [self.seen]
        return merge(records, self.num_rows, num_classes)
