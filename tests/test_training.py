"""The training loop's contracts: gradient accumulation is exact, resume is exact, the schedule is planned right."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from pipeline import finetune
from pipeline.config import TrainConfig
from pipeline.training import plan_steps
from tests.helpers import reset_accelerate

ENCODER = [
    "model.kind=encoder",
    "model.encoder.hidden_size=32",
    "model.encoder.num_layers=2",
    "model.encoder.num_heads=2",
    "model.encoder.intermediate_size=64",
]


def _weights(path):
    return load_file(str(path))


def _max_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


@pytest.mark.slow  # three fine-tuning runs
def test_gradient_accumulation_matches_one_big_batch_including_a_short_last_window(tiny_run_config):
    # 60 rows: batches of 8 end with a batch of 4; batches of 2 in windows of 4 end with a window of 2 batches.
    common = ["data.max_train_samples=60", "train.epochs=1", "train.mixed_precision=no",
              "train.group_by_length=false", "train.learning_rate=1e-3", "train.warmup_ratio=0"]
    big = finetune.run(tiny_run_config("run.name=big", "train.per_device_batch_size=8",
                                       "train.gradient_accumulation_steps=1", *common))
    reset_accelerate()
    accumulated = finetune.run(tiny_run_config("run.name=accumulated", "train.per_device_batch_size=2",
                                               "train.gradient_accumulation_steps=4", *common))
    reset_accelerate()
    finetune.run(tiny_run_config("run.name=small", "train.per_device_batch_size=2",
                                         "train.gradient_accumulation_steps=1", *common))

    assert big["training"]["global_steps"] == accumulated["training"]["global_steps"] == 8
    assert big["training"]["effective_batch_size"] == accumulated["training"]["effective_batch_size"] == 8
    runs = tiny_run_config().run_dir.parent
    weights = {name: _weights(runs / name / "model" / "model.safetensors") for name in ("big", "accumulated", "small")}
    equivalent = _max_difference(weights["big"], weights["accumulated"])
    different = _max_difference(weights["big"], weights["small"])
    assert equivalent < 1e-5
    assert different > 100 * equivalent  # the comparison can tell training runs apart


@pytest.mark.slow  # two fine-tuning runs
def test_resume_continues_exactly_where_the_checkpoint_left_off(tiny_run_config):
    # 40 rows in batches of 4 with 2 accumulation steps: 5 optimizer steps an epoch. The checkpoint at step 4 is
    # mid-epoch; the resumed run must skip the batches already seen, cross into epoch 1, and restore dropout RNG.
    common = ["data.max_train_samples=40", "train.per_device_batch_size=4", "train.gradient_accumulation_steps=2",
              "train.max_steps=8", "train.save_every_steps=4", "train.eval_every_steps=4",
              "model.encoder.dropout=0.1", "train.learning_rate=1e-3", "train.log_every_steps=1", *ENCODER]
    straight = finetune.run(tiny_run_config("run.name=straight", *common))
    straight_dir = tiny_run_config("run.name=straight").run_dir
    straight_final = _weights(straight_dir / "checkpoints" / "step_8" / "model.safetensors")

    # Simulate a crash right after the step-4 checkpoint: later state is gone, the best model so far stays.
    resumed_dir = straight_dir.parent / "resumed"
    shutil.copytree(straight_dir, resumed_dir)
    shutil.rmtree(resumed_dir / "checkpoints" / "step_8")
    (resumed_dir / "metrics.json").unlink()
    reset_accelerate()
    resumed = finetune.run(tiny_run_config("run.name=resumed", "train.resume=true", *common))

    resumed_final = _weights(resumed_dir / "checkpoints" / "step_8" / "model.safetensors")
    assert _max_difference(straight_final, resumed_final) < 1e-6
    assert resumed["training"]["global_steps"] == 8
    assert resumed["test"]["accuracy"] == straight["test"]["accuracy"]
    straight_history = (straight_dir / "history.jsonl").read_text().splitlines()
    resumed_history = (resumed_dir / "history.jsonl").read_text().splitlines()
    assert len(resumed_history) == len(straight_history)
    for a, b in zip(straight_history, resumed_history):
        a, b = json.loads(a), json.loads(b)
        assert a["step"] == b["step"]
        for key in ("loss", "eval_accuracy"):
            if key in a:
                assert b[key] == pytest.approx(a[key], abs=1e-5)


def test_resume_without_checkpoint_is_a_clear_error(tiny_run_config, capsys):
    config = tiny_run_config("run.name=nothing_saved", "train.resume=true", "train.max_steps=1")
    with pytest.raises(finetune.RunError, match="no run to resume"):
        finetune.run(config)


def test_plan_counts_a_shorter_last_window():
    plan = plan_steps(batches_per_epoch=10, config=TrainConfig(epochs=2, gradient_accumulation_steps=4))
    assert (plan.steps_per_epoch, plan.total_steps) == (3, 6)  # windows of 4, 4, 2 batches
    assert plan_steps(10, TrainConfig(max_steps=7, warmup_ratio=0.5)).total_steps == 7
    assert plan_steps(10, TrainConfig(max_steps=7, warmup_ratio=0.5)).warmup_steps == 4
