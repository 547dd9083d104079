"""The training loop's pace: when it validates (`train.eval_every_steps`), and under `train.time_budget` how many
steps it trains. Planned once the first steps are timed, and again after every validation pass at measured costs
(pipeline/train/schedule.py does the arithmetic)."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import torch
from accelerate import Accelerator
from accelerate.utils import broadcast

from pipeline.config.schema import TrainConfig
from pipeline.train.optimization import StepPlan
from pipeline.train.schedule import EVAL_ROW_COST_ESTIMATE, Costs, after_training_seconds, steps_within
from pipeline.train.schedule import validation_steps as spaced_steps

logger = logging.getLogger("pipeline.train.loop")

# Optimizer steps timed before the run's duration is estimated and its schedule planned.
ESTIMATE_AFTER_STEPS = 5


@dataclass(frozen=True)
class TimeBudget:
    """train.time_budget: the whole run's `seconds`, ending at `ends_at` (time.perf_counter); `rows_after`: the rows
    scored after training (whole validation split, test, prediction-speed sample)."""

    seconds: float
    ends_at: float
    rows_after: int


@dataclass
class PaceRecord:
    """What metrics.json `training` says of the pace: validation passes and their seconds, the rows a pass scored
    during training, and the budget and the steps it allowed."""

    validation_passes: int = 0
    validation_seconds: float = 0.0
    validation_rows: int = 0
    time_budget_seconds: float | None = None
    time_budget_steps: int | None = None


class Pacer:
    def __init__(
        self,
        config: TrainConfig,
        plan: StepPlan,
        accelerator: Accelerator,
        pass_rows: int,
        effective_batch_size: int,
        budget: TimeBudget | None,
    ):
        self.config, self.plan, self.accelerator, self.budget = config, plan, accelerator, budget
        self.effective_batch_size = effective_batch_size
        self.most_steps = plan.total_steps  # train.epochs or train.max_steps: a budget never trains longer
        self.due: tuple[int, ...] = ()  # auto: the steps at which to validate, once planned
        self.planned_at = plan.total_steps  # the step of the first plan
        self.pass_seconds: float | None = None  # the last validation pass during training, timed
        self.record = PaceRecord(validation_rows=pass_rows)
        if budget is not None:
            self.record.time_budget_seconds = budget.seconds
        self.steps_timed = 0
        self.warned = False  # that the budget cannot be met
        self.started = (0, 0.0)  # (global step, train seconds) when this process began training

    def begin(self, global_step: int, train_seconds: float) -> None:
        self.started = (global_step, train_seconds)

    def is_due(self, global_step: int, end_of_epoch: bool) -> bool:
        every = self.config.eval_every_steps
        if global_step == self.plan.total_steps:
            return True
        if every == "auto":  # until planned (the plan's own step included), once an epoch
            return global_step in self.due or (end_of_epoch and global_step <= self.planned_at)
        return global_step % every == 0 if every else end_of_epoch

    def after_step(self, global_step: int, train_seconds: float) -> bool:
        """True when the first steps have just been timed and the plan made (the loop announces the estimate)."""
        self.steps_timed = global_step - self.started[0]
        if self.steps_timed != ESTIMATE_AFTER_STEPS or global_step >= self.plan.total_steps:
            return False
        self._plan(global_step, self._step_seconds(train_seconds))
        self.planned_at = global_step
        return True

    def passed(self, seconds: float, global_step: int, train_seconds: float) -> None:
        """A validation pass took `seconds`: counted, and planned from again unless training is over (the final pass
        may score the whole split, not the rows the passes between steps score)."""
        self.record.validation_passes += 1
        self.record.validation_seconds += seconds
        if global_step >= self.plan.total_steps:
            return
        self.pass_seconds = seconds
        if self.steps_timed >= ESTIMATE_AFTER_STEPS:
            self._plan(global_step, self._step_seconds(train_seconds))

    def _step_seconds(self, train_seconds: float) -> float:
        return (train_seconds - self.started[1]) / max(self.steps_timed, 1)

    def _plan(self, global_step: int, step_seconds: float) -> None:
        pass_seconds = self.pass_seconds
        if pass_seconds is None:  # not timed yet: a forward pass costs about a third of a training step, per row
            row_seconds = step_seconds / self.effective_batch_size * EVAL_ROW_COST_ESTIMATE
            pass_seconds = self.record.validation_rows * row_seconds
        left = self.budget.ends_at - time.perf_counter() if self.budget is not None else 0.0
        # Every process plans from the main process's figures: they must validate and stop at the same steps.
        step_seconds, pass_seconds, left = self._shared(step_seconds, pass_seconds, left)
        costs = Costs(step_seconds, pass_seconds, self.config.eval_budget)
        if self.budget is not None:
            self._fit_budget(global_step, costs, left)
        if self.config.eval_every_steps == "auto":
            self.due = spaced_steps(global_step, self.plan.total_steps, self.plan.steps_per_epoch, costs)

    def _shared(self, *figures: float) -> list[float]:
        if self.accelerator.num_processes == 1:
            return list(figures)
        values = torch.tensor(figures, dtype=torch.float64, device=self.accelerator.device)
        return broadcast(values, from_process=0).tolist()

    def _fit_budget(self, global_step: int, costs: Costs, seconds_left: float) -> None:
        """Set the steps (and warm-up) so that training, validation and what follows end within the budget."""
        row_seconds = costs.pass_seconds / max(self.record.validation_rows, 1)
        after = after_training_seconds(self.budget.seconds, self.budget.rows_after, row_seconds)
        seconds = seconds_left - after
        if seconds < costs.step_seconds and not self.warned:  # the final evaluation alone overruns: say so, once
            self.warned = True
            logger.warning(
                f"train.time_budget ({format_duration(self.budget.seconds)}) cannot be met at the measured speed: "
                f"{format_duration(max(seconds_left, 0))} are left and scoring the {self.budget.rows_after:,} validation, "
                f"test and speed rows after training takes about {format_duration(after)}; the run trains one more step "
                "and overruns (fewer test rows with data.max_eval_samples, or a larger budget, fit it)"
            )
        most = self.most_steps - global_step
        steps = global_step + steps_within(
            seconds, most, self.plan.steps_per_epoch, self.config.eval_every_steps, costs
        )
        if steps != self.plan.total_steps:
            self.plan.total_steps = steps
            self.plan.warmup_steps = math.ceil(self.config.warmup_ratio * steps)
        self.record.time_budget_steps = steps

    def budget_summary(self, rows_unit: str, rows_per_epoch: int) -> str:
        """The budget and what it allowed, for the log and the report."""
        steps = self.plan.total_steps
        epochs = steps / max(self.plan.steps_per_epoch, 1)
        rows = min(steps * self.effective_batch_size, math.ceil(epochs * rows_per_epoch))
        capped = " (the most train.epochs or train.max_steps allows)" if steps == self.most_steps else ""
        return (
            f"time budget {format_duration(self.budget.seconds)}: {steps} optimizer steps{capped}, "
            f"{epochs:.2f} epochs, about {rows:,} {rows_unit}"
        )


def format_duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"
