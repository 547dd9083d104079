"""Training losses: `build_loss(config.train, class_counts)(logits, batch)` -> a scalar SUM over the batch's rows.

A sum, not a mean: the loop divides by the rows of the whole accumulation window, which keeps accumulation and
several processes exact for any per-row loss. For the same reason class weights multiply each row's loss and the
sum is divided by rows, not by the weights (PyTorch's weighted mean differs from micro-batch to micro-batch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from pipeline.config.schema import ConfigError
from pipeline.data.labels import ClassCounts


@dataclass
class CrossEntropySum:
    """Cross-entropy on gold class ids, summed over the batch; with `weights` (C,), each row's term times its class's
    weight."""

    weights: torch.Tensor | None = None

    def __call__(self, logits: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        weights = None if self.weights is None else self.weights.to(logits.device)
        return F.cross_entropy(logits.float(), batch["labels"], weight=weights, reduction="sum")  # scalar


@dataclass
class FocalSum:
    """Focal loss (Lin et al. 2017): each row's cross-entropy times (1 - p_true)^gamma (and its class weight)."""

    gamma: float
    weights: torch.Tensor | None = None

    def __call__(self, logits: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        labels = batch["labels"]
        log_true = F.log_softmax(logits.float(), dim=-1).gather(1, labels[:, None]).squeeze(1)  # (B,)
        per_row = -log_true * (1.0 - log_true.exp()).clamp(min=0.0).pow(self.gamma)  # (B,)
        if self.weights is not None:
            per_row = per_row * self.weights.to(logits.device)[labels]
        return per_row.sum()  # scalar


@dataclass
class BinaryCrossEntropySum:
    """Multi-label: a sigmoid per class, binary cross-entropy summed over rows and classes; `pos_weight` (C,) scales
    each class's positive term; `gamma` > 0 makes it the sigmoid focal loss."""

    pos_weight: torch.Tensor | None = None
    gamma: float = 0.0

    def __call__(self, logits: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        logits, targets = logits.float(), batch["labels"].float()  # (B, C), (B, C)
        pos_weight = None if self.pos_weight is None else self.pos_weight.to(logits.device)
        per_entry = F.binary_cross_entropy_with_logits(logits, targets, pos_weight=pos_weight, reduction="none")
        if self.gamma:
            probabilities = torch.sigmoid(logits)
            p_true = targets * probabilities + (1.0 - targets) * (1.0 - probabilities)
            per_entry = per_entry * (1.0 - p_true).pow(self.gamma)
        return per_entry.sum()  # scalar


def resolve_class_weights(config: object, counts: ClassCounts | None) -> dict[str, float] | None:
    """train.class_weights as one weight per class (multi-label: BCE pos_weight), or None for "none". balanced:
    n_rows / (n_classes x count); multi-label: negatives / positives; 1 for a class without rows. A mapping names
    classes (others get 1)."""
    setting = config.class_weights
    if setting == "none":
        return None
    if counts is None:
        raise ConfigError("train.class_weights: needs the train split's class counts")
    if isinstance(setting, dict):
        unknown = [name for name in setting if name not in counts.names]
        if unknown:
            raise ConfigError(
                f"train.class_weights.{unknown[0]}: no such class (classes: {', '.join(counts.names[:20])})"
            )
        return {name: float(setting.get(name, 1.0)) for name in counts.names}
    if counts.multi_label:
        return {
            name: (counts.rows - count) / count if count else 1.0 for name, count in zip(counts.names, counts.counts)
        }
    classes = len(counts.names)
    return {name: counts.rows / (classes * count) if count else 1.0 for name, count in zip(counts.names, counts.counts)}


@dataclass
class DistillationLoss:
    """Knowledge distillation (Hinton et al. 2015), summed over the batch's rows: alpha * KL(teacher_T || student_T)
    * T^2 + (1 - alpha) * cross-entropy(gold); a row without a gold label (-1) takes the soft term alone, weight 1."""

    alpha: float
    temperature: float

    def __call__(self, logits: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        logits, labels = logits.float(), batch["labels"]
        soft = self.soft_per_row(logits, batch["teacher_logits"].float())  # (B,)
        labelled = labels >= 0  # (B,)
        hard = F.cross_entropy(logits, labels.clamp(min=0), reduction="none") * labelled  # (B,)
        weight = torch.where(labelled, torch.full_like(soft, self.alpha), torch.ones_like(soft))  # (B,)
        return (weight * soft).sum() + (1.0 - self.alpha) * hard.sum()  # scalar

    def soft_per_row(self, logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
        """(B, C), (B, C) -> (B,) KL(teacher_T || student_T) * T^2."""
        t = self.temperature
        student_log = F.log_softmax(logits / t, dim=-1)
        teacher_log = F.log_softmax(teacher_logits / t, dim=-1)
        return (teacher_log.exp() * (teacher_log - student_log)).sum(dim=-1) * t * t


def build_loss(
    config: object, counts: ClassCounts | None = None
) -> CrossEntropySum | FocalSum | BinaryCrossEntropySum | DistillationLoss:
    """The loss train.* asks for: distillation with a teacher; else cross-entropy or focal (binary for multi-label),
    class-weighted as train.class_weights says."""
    distill = getattr(config, "distill", None)
    if distill is not None and distill.teacher:
        return DistillationLoss(distill.alpha, distill.temperature)
    weights = resolve_class_weights(config, counts)
    tensor = None if weights is None else torch.tensor(list(weights.values()), dtype=torch.float32)  # (C,)
    gamma = config.focal_gamma if config.loss == "focal" else 0.0
    if counts is not None and counts.multi_label:
        return BinaryCrossEntropySum(tensor, gamma)
    return FocalSum(gamma, tensor) if gamma else CrossEntropySum(tensor)
