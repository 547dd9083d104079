"""When the training loop validates (`train.eval_every_steps: auto`) and how many steps fit a time budget
(`train.time_budget`): pure functions of measured costs, so that the loop only measures and asks."""

from __future__ import annotations

import math
from dataclasses import dataclass

# Before the first validation pass is timed, one validation row is taken to cost this share of one training row: a
# forward pass without the backward one (measured 1/3.9 for MiniLM on AG News, issue 41; 1/3 errs on the safe side).
EVAL_ROW_COST_ESTIMATE = 1 / 3
# Held back from a time budget for what follows the last validation and is not timed in the loop: the baseline,
# the reports and plots, the model card (measured about 5% of a 5-minute MiniLM run; benchmarks/README.md).
AFTER_TRAINING_RESERVE = 0.05
AFTER_TRAINING_RESERVE_MIN_SECONDS = 10.0


@dataclass(frozen=True)
class Costs:
    """What the loop measured: seconds per optimizer step and per validation pass (of the rows it scores during
    training); `budget`: the share of training time validation may cost (train.eval_budget)."""

    step_seconds: float
    pass_seconds: float
    budget: float


def validation_steps(start: int, total: int, steps_per_epoch: int, costs: Costs) -> tuple[int, ...]:
    """The steps after `start`, up to `total`, at which to validate: evenly spaced, the last at `total`, as many as
    cost at most `costs.budget` of the training time left, and never fewer than one per epoch (the best checkpoint is
    chosen among them)."""
    remaining = total - start
    if remaining <= 0:
        return ()
    affordable = math.floor(costs.budget * remaining * costs.step_seconds / max(costs.pass_seconds, 1e-9))
    per_epoch = math.ceil(remaining / max(steps_per_epoch, 1))
    passes = min(remaining, max(1, per_epoch, affordable))
    # ceil(k * remaining / passes): strictly increasing since remaining >= passes, and the last is `total`.
    return tuple(start - (-k * remaining // passes) for k in range(1, passes + 1))


def passes_in(steps: int, steps_per_epoch: int, every: int | str | None, costs: Costs) -> int:
    """Validation passes in a run of `steps` optimizer steps: every `every` steps (and at the end), once an epoch
    (None), or as `validation_steps` spaces them ("auto")."""
    if steps <= 0:
        return 0
    if every == "auto":
        return len(validation_steps(0, steps, steps_per_epoch, costs))
    spacing = every or steps_per_epoch
    return math.ceil(steps / spacing)


def steps_within(seconds: float, most: int, steps_per_epoch: int, every: int | str | None, costs: Costs) -> int:
    """The most optimizer steps, at most `most` and at least 1 (a run must train to have a model), whose training
    and validation passes take at most `seconds` at the measured costs."""

    def cost(steps: int) -> float:
        return steps * costs.step_seconds + passes_in(steps, steps_per_epoch, every, costs) * costs.pass_seconds

    low, high = 1, max(most, 1)
    if cost(high) <= seconds:
        return high
    while low < high:  # the cost grows with the steps: the largest that fits, by bisection
        middle = (low + high + 1) // 2
        if cost(middle) <= seconds:
            low = middle
        else:
            high = middle - 1
    return low


def after_training_seconds(budget_seconds: float, rows_after: int, row_seconds: float) -> float:
    """Seconds a budgeted run keeps for after training: scoring `rows_after` rows at `row_seconds` each (the whole
    validation split, test and the prediction-speed sample), and a reserve for the baseline and the reports."""
    reserve = max(AFTER_TRAINING_RESERVE * budget_seconds, AFTER_TRAINING_RESERVE_MIN_SECONDS)
    return rows_after * row_seconds + reserve
