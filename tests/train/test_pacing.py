"""The loop's pace (pipeline/train/pacing.py): validation planned from measured costs, and a run that fits its
time budget."""

import json
import time
from types import SimpleNamespace

import pytest
import torch

from pipeline import finetune
from pipeline.config.schema import TrainConfig
from pipeline.train.optimization import StepPlan
from pipeline.train.pacing import ESTIMATE_AFTER_STEPS, Pacer, TimeBudget
from tests.helpers import reset_accelerate

ONE_PROCESS = SimpleNamespace(num_processes=1)


def _pacer(budget=None, **settings):
    config = TrainConfig(warmup_ratio=0.1, **settings)
    plan = StepPlan(batches_per_epoch=100, steps_per_epoch=100, total_steps=300, warmup_steps=30)
    return Pacer(config, plan, ONE_PROCESS, pass_rows=320, effective_batch_size=32, budget=budget), plan


def test_auto_validates_once_an_epoch_until_planned_then_as_the_measured_costs_allow():
    pacer, _ = _pacer()
    assert pacer.is_due(100, end_of_epoch=True) and not pacer.is_due(50, end_of_epoch=False)
    # 1 s a step: a pass of 320 rows is estimated at 320 / 32 / 3 = 3.3 s, so 10% of 295 steps affords 8 passes.
    assert pacer.after_step(ESTIMATE_AFTER_STEPS, train_seconds=5.0)
    assert len(pacer.due) == 8 and pacer.due[-1] == 300
    # The first pass measured 20 s: from step 42, 10% of 258 s affords one pass, but each epoch keeps one.
    assert not pacer.after_step(42, train_seconds=42.0)
    pacer.passed(20.0, global_step=42, train_seconds=42.0)
    assert pacer.due == (128, 214, 300)
    assert pacer.is_due(128, end_of_epoch=False) and not pacer.is_due(100, end_of_epoch=True)
    assert (pacer.record.validation_passes, pacer.record.validation_seconds) == (1, 20.0)


def test_an_epoch_ending_on_the_planning_step_still_gets_its_pass():
    config = TrainConfig()
    plan = StepPlan(batches_per_epoch=5, steps_per_epoch=5, total_steps=50, warmup_steps=0)
    pacer = Pacer(config, plan, ONE_PROCESS, pass_rows=320, effective_batch_size=32, budget=None)
    assert pacer.after_step(ESTIMATE_AFTER_STEPS, train_seconds=5.0)
    assert pacer.is_due(5, end_of_epoch=True) and 5 not in pacer.due
    assert not pacer.is_due(10, end_of_epoch=True) or 10 in pacer.due


def test_a_fixed_interval_and_once_an_epoch_are_kept_as_before():
    pacer, _ = _pacer(eval_every_steps=40)
    assert pacer.is_due(80, False) and not pacer.is_due(100, True) and pacer.is_due(300, False)
    pacer, _ = _pacer(eval_every_steps=None)
    assert pacer.is_due(100, True) and not pacer.is_due(40, False)


def test_a_time_budget_sets_the_steps_and_the_warm_up_to_fit():
    # 100 s left after 5 s of steps; 1 s a step; the end keeps 1,000 rows at 1/96 s and a reserve of 10 s.
    budget = TimeBudget(seconds=120.0, ends_at=time.perf_counter() + 100.0, rows_after=1000)
    pacer, plan = _pacer(budget)
    pacer.after_step(ESTIMATE_AFTER_STEPS, train_seconds=5.0)
    passes = len(pacer.due)
    spent = (plan.total_steps - ESTIMATE_AFTER_STEPS) * 1.0 + passes * 320 / 32 / 3
    assert 60 < plan.total_steps < 300 and spent <= 100.0 - 10.0 - 1000 / 96
    assert plan.warmup_steps == round(0.1 * plan.total_steps + 0.499)  # ceil
    assert pacer.record.time_budget_steps == plan.total_steps and pacer.record.time_budget_seconds == 120.0
    # A budget larger than the run trains what train.epochs allows, no more.
    roomy, plan = _pacer(TimeBudget(1e6, time.perf_counter() + 1e6, 1000))
    roomy.after_step(ESTIMATE_AFTER_STEPS, train_seconds=5.0)
    assert plan.total_steps == 300 and "the most train.epochs or train.max_steps allows" in roomy.budget_summary(
        "samples", 3200
    )


def test_the_final_whole_pass_gives_stage_4_the_whole_splits_logits_and_the_sample_chooses(tiny_bert_dir, tmp_path):
    """Between steps a pass scores 4 of the 16 validation rows; the pass at the last step scores all 16, and those
    logits are what the saved best model gives on the whole split, so stage 4 need not score it again."""
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, BertForSequenceClassification

    from pipeline.scoring.evaluation import predict_logits
    from pipeline.text.batching import TokenizedRows
    from pipeline.train.loop import Trainer, create_accelerator

    reset_accelerate()
    lengths = [4 + i % 9 for i in range(16)]
    rows = TokenizedRows(
        Dataset.from_dict(
            {
                "input_ids": [
                    [101] + [2000 + 7 * i + j for j in range(n - 2)] + [102] + [0] * (16 - n)
                    for i, n in enumerate(lengths)
                ],
                "attention_mask": [[1] * n + [0] * (16 - n) for n in lengths],
                "label": [i % 2 for i in range(16)],
                "length": lengths,
            }
        )
    )
    config = TrainConfig(per_device_batch_size=4, max_steps=8, learning_rate=1e-2, eval_every_steps=4, report_to="none")
    accelerator = create_accelerator(config, tmp_path)
    saved = []

    def save_best(best) -> None:
        saved.append(tmp_path / f"best_{len(saved)}")
        best.save_pretrained(saved[-1])

    model = BertForSequenceClassification.from_pretrained(tiny_bert_dir)
    trainer = Trainer(
        model, rows, rows, config, accelerator, tmp_path, 0, ["a", "b"], 8, save_best, validation_sample=4
    )
    result = trainer.run()
    assert len(trainer.sample.rows) == 4 and result.pace.validation_passes == 2 and result.pace.validation_rows == 4
    if result.state.best_step == 8:  # the final pass chose its model: its whole-split logits are kept for stage 4
        reloaded = accelerator.prepare_model(
            AutoModelForSequenceClassification.from_pretrained(saved[-1]), evaluation_mode=True
        )
        assert torch.equal(result.best_validation_logits, predict_logits(reloaded, rows, accelerator, 8))
    else:  # a sample pass chose it: stage 4 scores the whole split itself
        assert result.best_validation_logits is None
    reset_accelerate()


@pytest.mark.slow  # a whole run
def test_a_run_validates_a_sample_between_steps_and_the_whole_split_at_the_end(tiny_run_config):
    # 400 train rows in batches of 8: 50 steps; validation passes score 30 of the validation rows until the end.
    config = tiny_run_config(
        "run.name=paced", "train.per_device_batch_size=8", "eval.validation_sample_rows=30", "eval.baseline=none"
    )
    record = finetune.run(config)
    training = record["training"]
    assert config.train.eval_every_steps == "auto" and training["validation_rows"] == 30
    history = [json.loads(line) for line in (config.run_dir / "history.jsonl").read_text().splitlines()]
    passes = [entry for entry in history if "eval_loss" in entry]
    assert len(passes) == training["validation_passes"] >= 1 and passes[-1]["step"] == training["global_steps"]
    assert training["validation_seconds"] > 0
    assert record["validation"]["num_samples"] > 30  # stage 4 scores the whole split


@pytest.mark.slow  # a run of about 20 s
def test_a_run_with_a_time_budget_finishes_within_it(tiny_run_config):
    # Up to 100 epochs of 400 rows would take minutes; 20 s is the whole run, start-up and evaluation included.
    config = tiny_run_config(
        "run.name=budget", "train.epochs=100", "train.time_budget=20s", "train.per_device_batch_size=8"
    )
    started = time.perf_counter()
    record = finetune.run(config)
    elapsed = time.perf_counter() - started
    training = record["training"]
    assert elapsed <= 20.0 * 1.1
    assert training["time_budget_seconds"] == 20.0 and training["global_steps"] == training["time_budget_steps"]
    assert 5 < training["global_steps"] < 100 * 50
