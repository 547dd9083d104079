"""The validation schedule and the time-budget arithmetic (pipeline/train/schedule.py): pure functions of costs."""

import pytest

from pipeline.train.schedule import Costs, after_training_seconds, passes_in, steps_within, validation_steps


def test_passes_cost_at_most_the_budget_share_and_end_on_the_last_step():
    # 1 s a step, 10 s a pass, 10%: 1,000 steps afford 10 passes, every 100 steps.
    costs = Costs(step_seconds=1.0, pass_seconds=10.0, budget=0.1)
    steps = validation_steps(0, 1000, steps_per_epoch=1000, costs=costs)
    assert steps == tuple(range(100, 1001, 100))
    assert len(steps) * costs.pass_seconds <= costs.budget * 1000 * costs.step_seconds


def test_a_costly_pass_still_runs_once_per_epoch():
    # A pass as dear as 500 steps: the budget affords none, but the best checkpoint is chosen once an epoch.
    steps = validation_steps(0, 300, steps_per_epoch=100, costs=Costs(1.0, 500.0, 0.1))
    assert steps == (100, 200, 300)


def test_a_cheap_pass_runs_at_most_once_a_step_and_planning_again_starts_from_now():
    assert validation_steps(0, 5, 5, Costs(1.0, 0.001, 0.1)) == (1, 2, 3, 4, 5)
    # Planned again at step 40 of 100: the passes left are spread over the 60 steps left, the last at 100.
    again = validation_steps(40, 100, 100, Costs(1.0, 3.0, 0.1))
    assert again == (70, 100) and validation_steps(100, 100, 100, Costs(1.0, 3.0, 0.1)) == ()


def test_uneven_spacing_stays_strictly_increasing():
    steps = validation_steps(0, 7, 7, Costs(1.0, 0.2, 0.1))  # 3 passes over 7 steps
    assert steps == (3, 5, 7)


@pytest.mark.parametrize(("every", "passes"), [("auto", 10), (None, 2), (300, 4)])
def test_passes_in_a_run_follow_the_setting(every, passes):
    assert passes_in(1000, 500, every, Costs(1.0, 10.0, 0.1)) == passes


def test_steps_within_is_the_most_that_fits_and_never_more_than_allowed():
    costs = Costs(step_seconds=0.5, pass_seconds=2.0, budget=0.1)
    steps = steps_within(100.0, most=10_000, steps_per_epoch=50, every=None, costs=costs)
    # once an epoch (50 steps, 25 s, then a 2 s pass): 3 whole epochs cost 81 s, then 34 steps and a pass 19 s
    assert steps == 184

    def cost(n):
        return n * costs.step_seconds + passes_in(n, 50, None, costs) * costs.pass_seconds

    assert cost(steps) <= 100.0 < cost(steps + 1)
    assert steps_within(1e9, most=300, steps_per_epoch=50, every="auto", costs=costs) == 300
    assert steps_within(0.0, most=300, steps_per_epoch=50, every="auto", costs=costs) == 1  # a model needs a step


def test_after_training_keeps_the_scoring_and_a_reserve():
    assert after_training_seconds(600.0, rows_after=1000, row_seconds=0.01) == pytest.approx(10.0 + 30.0)
    assert after_training_seconds(60.0, rows_after=0, row_seconds=0.01) == pytest.approx(10.0)  # the floor
