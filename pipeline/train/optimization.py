"""The optimizer (`build_optimizer`) and the step plan (`plan_steps`) of the training loop."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pipeline.config.schema import TrainConfig


def build_optimizer(
    model: torch.nn.Module, config: TrainConfig, new_parameters: frozenset[str] = frozenset()
) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only: biases and LayerNorm weights (all 1-D) are not decayed. The
    parameters named in `new_parameters` (a new head on a pretrained model) learn at train.head_learning_rate."""
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    head_learning_rate = config.head_learning_rate or config.learning_rate
    groups = [
        {
            "params": [p for name, p in named if (name in new_parameters) == new and (p.ndim >= 2) == decayed],
            "weight_decay": config.weight_decay if decayed else 0.0,
            "lr": head_learning_rate if new else config.learning_rate,
        }
        for new in (False, True)
        for decayed in (True, False)
    ]
    groups = [group for group in groups if group["params"]]
    try:
        # The fused kernel does the whole update in one pass over memory (CUDA, and CPU since torch 2.4).
        return torch.optim.AdamW(groups, lr=config.learning_rate, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(groups, lr=config.learning_rate)


@dataclass
class StepPlan:
    batches_per_epoch: int
    steps_per_epoch: int
    total_steps: int
    warmup_steps: int


def plan_steps(batches_per_epoch: int, config: TrainConfig) -> StepPlan:
    """Optimizer steps: the last window of an epoch may hold fewer than gradient_accumulation_steps batches."""
    steps_per_epoch = math.ceil(batches_per_epoch / config.gradient_accumulation_steps)
    total_steps = config.max_steps or math.ceil(config.epochs * steps_per_epoch)
    return StepPlan(batches_per_epoch, steps_per_epoch, total_steps, math.ceil(config.warmup_ratio * total_steps))


def linear_schedule(optimizer: torch.optim.Optimizer, plan: StepPlan) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up, then linear decay to 0 at the plan's last step (as transformers'
    get_linear_schedule_with_warmup), read from `plan` at every step: a time budget may set the steps mid-run."""

    def factor(step: int) -> float:
        if step < plan.warmup_steps:
            return step / max(1, plan.warmup_steps)
        return max(0.0, (plan.total_steps - step) / max(1, plan.total_steps - plan.warmup_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
