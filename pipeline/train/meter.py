"""What the training loop measures between log lines: loss, accuracy and (multi-label) F1 summed on the device, and
the score its progress bar shows."""

from __future__ import annotations

import torch


class RunningMeter:
    """Loss and accuracy summed on the device between logging steps: read (a host sync) only when logged."""

    def __init__(self, device: torch.device, global_step: int, train_seconds: float):
        self.device = device
        self._start(global_step, train_seconds)

    def _start(self, global_step: int, train_seconds: float) -> None:
        self.loss_sum = torch.zeros((), device=self.device)
        self.correct = torch.zeros((), device=self.device, dtype=torch.long)
        self.labelled = torch.zeros((), device=self.device, dtype=torch.long)  # rows with a gold label (distillation)
        self.class_counts: torch.Tensor | None = None  # multi-label: (3, C) true pos., false pos., false neg.
        self.samples = 0
        self.since = (global_step, train_seconds)

    def add(self, loss_sum: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor) -> None:
        self.loss_sum += loss_sum
        self.samples += labels.shape[0]
        if labels.ndim == 2:  # multi-label: a row is right when every class is (subset accuracy)
            predicted, gold = logits > 0, labels > 0.5
            self.correct += (predicted == gold).all(dim=-1).sum()
            counts = torch.stack([predicted & gold, predicted & ~gold, ~predicted & gold]).sum(dim=1)
            self.class_counts = counts if self.class_counts is None else self.class_counts + counts
            self.labelled += labels.shape[0]
        else:
            self.correct += (logits.argmax(dim=-1) == labels).sum()
            self.labelled += (labels >= 0).sum()

    def read_and_reset(self, global_step: int, train_seconds: float, effective_batch_size: int) -> dict[str, float]:
        steps, seconds = global_step - self.since[0], train_seconds - self.since[1]
        reading = {
            "loss": self.loss_sum.item() / max(self.samples, 1),
            "train_accuracy": self.correct.item() / max(self.labelled.item(), 1),
            **(f1_scores(self.class_counts.tolist()) if self.class_counts is not None else {}),
            "samples_per_second": steps * effective_batch_size / max(seconds, 1e-9),
        }
        self._start(global_step, train_seconds)
        return reading


def f1_scores(counts: list[list[int]]) -> dict[str, float]:
    """train_micro_f1 and train_macro_f1 from each class's [true positives], [false positives], [false negatives]. As
    in evaluation, macro-F1 averages the classes that occur or are predicted; with none, both are 0."""
    true_positives, false_positives, false_negatives = counts
    errors = [fp + fn for fp, fn in zip(false_positives, false_negatives)]
    micro = 2 * sum(true_positives) / max(2 * sum(true_positives) + sum(errors), 1)
    present = [2 * tp / (2 * tp + error) for tp, error in zip(true_positives, errors) if tp + error]
    return {"train_micro_f1": micro, "train_macro_f1": sum(present) / len(present) if present else 0.0}


def progress_score(record: dict[str, float], metric: str) -> dict[str, str]:
    """The training score the progress bar shows: accuracy, or for multi-label the selecting metric (subset accuracy
    stays near 0 for long on many classes and reads as broken)."""
    if "train_micro_f1" not in record:
        return {"acc": f"{record['train_accuracy']:.3f}"}
    if metric == "accuracy":
        return {"subset_acc": f"{record['train_accuracy']:.3f}"}
    return {metric: f"{record[f'train_{metric}']:.3f}"}
