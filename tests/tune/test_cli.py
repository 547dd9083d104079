"""python -m pipeline.tune end to end on the tiny BERT: a search killed after its first trial resumes to --trials
finished trials in study.db, writes best.yaml (which runs), trials.csv, the report, and each trial's tracker files."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.helpers import MINILM_CONFIG, OFFLINE_ENVIRONMENT, REPO_ROOT, tiny_run_overrides

pytest.importorskip("optuna")

SPACE = (
    "tune.space={train.learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}, train.per_device_batch_size: [16, 32]}"
)


def tune_command(tmp_path, tiny_bert_dir, train_csv, test_csv, *extra: str) -> list[str]:
    overrides = tiny_run_overrides(tmp_path, tiny_bert_dir, train_csv, test_csv)
    overrides += [SPACE, f"tune.output_dir={tmp_path / 'studies'}", "train.eval_every_steps=4", "tune.startup_trials=1"]
    overrides += ["train.report_to=[tensorboard, mlflow]", "data.max_train_samples=200", "data.max_eval_samples=100"]
    return [sys.executable, "-m", "pipeline.tune", "--config", str(MINILM_CONFIG), "--study", "s", *extra, *overrides]


def environment() -> dict[str, str]:
    env = {**os.environ, **OFFLINE_ENVIRONMENT, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


@pytest.mark.slow
def test_a_killed_search_resumes_to_its_trials_and_leaves_a_best_config_that_runs(
    tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv
):
    command = tune_command(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv, "--trials", "3")
    study = tmp_path / "studies" / "s"
    process = subprocess.Popen(command, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while not (study / "trial_000" / "metrics.json").exists() and process.poll() is None:
        assert time.monotonic() < deadline, "the first trial did not finish in 5 minutes"
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)  # a real kill, during the second trial
    output = process.communicate(timeout=120)[0]
    assert process.returncode != 0, output
    assert not (study / "best.yaml").exists()

    again = subprocess.run(command + ["--resume"], env=environment(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    with sqlite3.connect(study / "study.db") as db:
        states = [state for (state,) in db.execute("SELECT state FROM trials ORDER BY number")]
    assert states.count("COMPLETE") + states.count("PRUNED") == 3, states
    assert set(states) <= {"COMPLETE", "PRUNED", "FAIL"}, states  # the interrupted trial is failed, not left running
    with open(study / "trials.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(states) and {"train.learning_rate", "train.per_device_batch_size"} <= set(rows[0])
    report = (study / "report.html").read_text()
    assert "history.png" in report and (study / "history.png").stat().st_size > 0
    assert "test accuracy" in again.stdout

    # best.yaml runs as it is, as a run of its own beside the others
    best = subprocess.run(
        [sys.executable, "-m", "pipeline.finetune", "--config", str(study / "best.yaml"), "eval.predict_speed_rows=0"],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert best.returncode == 0, best.stderr[-3000:]
    assert (tmp_path / "runs" / "s_best" / "metrics.json").exists()

    # each trial's trackers: TensorBoard events and an MLflow run with the config as parameters
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(study / "trial_000" / "tensorboard" / "trial_000"))
    events.Reload()
    assert "eval/accuracy" in events.Tags()["scalars"] and "train/loss" in events.Tags()["scalars"]
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{study / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("s").experiment_id])
    trial_0 = next(run for run in runs if run.info.run_name == "trial_000")
    assert trial_0.data.params["run.name"] == "trial_000"
    assert "test/accuracy" in trial_0.data.metrics and "eval/accuracy" in trial_0.data.metrics


@pytest.mark.slow
def test_a_study_folder_of_another_config_is_refused_naming_the_keys(
    tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv
):
    command = tune_command(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv, "--trials", "1")
    first = subprocess.run(command + ["tune.pruner=none"], env=environment(), capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-3000:]
    again = subprocess.run(
        command + ["--resume", "train.weight_decay=0.5"], env=environment(), capture_output=True, text=True
    )
    assert again.returncode == 2
    assert "another config; keys that differ: train.weight_decay, tune.pruner" in again.stderr
    fresh = subprocess.run(command + ["tune.pruner=none"], env=environment(), capture_output=True, text=True)
    assert fresh.returncode == 2 and "--resume continues it" in fresh.stderr


@pytest.mark.slow
def test_a_search_under_accelerate_launch_runs_every_trial_on_both_processes(
    tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv
):
    from tests.train.test_distributed import accelerate_launch

    command = tune_command(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv, "--trials", "3")
    command = [*accelerate_launch(2), *command[1:]]  # `-m pipeline.tune ...` under accelerate launch
    env = {**environment(), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    study = tmp_path / "studies" / "s"
    with sqlite3.connect(study / "study.db") as db:
        states = [state for (state,) in db.execute("SELECT state FROM trials ORDER BY number")]
    assert len(states) == 3 and "FAIL" not in states, (states, result.stderr[-5000:])
    finished = [number for number, state in enumerate(states) if state == "COMPLETE"]  # pruned ones stop early
    assert finished, states
    for number in finished:
        metrics = json.loads((study / f"trial_{number:03d}" / "metrics.json").read_text())
        assert metrics["training"]["num_processes"] == 2
