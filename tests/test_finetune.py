"""End to end: stages 1-4 on a few hundred real AG News rows with a tiny random BERT, into a run directory.

Two runs serve the tests: a short one (a few optimizer steps) in the default tier, which checks that every stage runs
and that the run directory is complete and consistent, and a full one (slow tier) that must also learn.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import transformers
import yaml

from pipeline import finetune
from pipeline.common import hardware
from pipeline.config.load import load_config
from pipeline.run.record import RunRecord
from tests.helpers import MINILM_CONFIG, OFFLINE_ENVIRONMENT, REPO_ROOT, reset_accelerate, tiny_run_overrides

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


RUNS = {
    # Long enough to learn: the slow tier.
    "full": [
        "run.name=e2e",
        "data.max_train_samples=600",
        "train.epochs=6",
        "train.per_device_batch_size=16",
        "train.learning_rate=1e-3",
        "train.eval_every_steps=50",
    ],
    # Every stage and every file, in a few optimizer steps: the default tier.
    "quick": [
        "run.name=quick",
        "data.max_train_samples=200",
        "train.max_steps=6",
        "train.per_device_batch_size=16",
        "train.learning_rate=1e-3",
        "train.eval_every_steps=3",
        "train.log_every_steps=3",
    ],
}


@pytest.fixture(scope="module")
def trained_runs(tiny_run_config):
    """Runs by kind, each trained once per module, when a test first asks for it (training is the expensive part)."""
    done = {}

    def get(kind: str):
        if kind not in done:
            reset_accelerate()
            config = tiny_run_config(*RUNS[kind])
            done[kind] = config, finetune.run(config)
        return done[kind]

    return get


@pytest.fixture(scope="module", params=["quick", pytest.param("full", marks=pytest.mark.slow)])
def finished_run(request, trained_runs):
    """A finished run, short (default tier) or full (slow tier): the checks below hold for both."""
    return trained_runs(request.param)


@pytest.fixture(scope="module")
def full_run(trained_runs):
    """The run that trained long enough to learn (only slow tests use it)."""
    return trained_runs("full")


@pytest.fixture(scope="module")
def tiny_run_config(tmp_path_factory, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv):
    """Module-scoped twin of the conftest fixture, so one run serves every test in this file."""
    reset_accelerate()
    base = tiny_run_overrides(tmp_path_factory.mktemp("e2e"), tiny_bert_dir, ag_news_train_csv, ag_news_test_csv)
    yield lambda *overrides: load_config(MINILM_CONFIG, base + list(overrides))
    reset_accelerate()


@pytest.mark.slow
def test_run_learns_well_above_chance(full_run):
    _, metrics = full_run
    # Chance is 0.25 on four balanced classes; a 2-layer random (not pretrained) BERT on 600 rows reaches 0.45-0.55
    # depending on which rows the seeded sample draws, so 0.4 is far above chance without riding the noise.
    assert metrics["validation"]["accuracy"] > 0.4
    assert metrics["test"]["accuracy"] > 0.4
    assert metrics["test"]["num_samples"] == 200
    assert metrics["labels"] == LABELS


def test_run_directory_holds_every_file_and_each_loads(finished_run):
    config, metrics = finished_run
    run_dir = config.run_dir
    for name in [
        "config.yaml",
        "history.jsonl",
        "metrics.json",
        "test_predictions.csv",
        "report.md",
        "report.html",
        "confusion_matrix.png",
        "model/config.json",
        "model/model.safetensors",
        "model/tokenizer.json",
    ]:
        assert (run_dir / name).is_file(), name

    assert metrics["device"]["cpu_threads"] >= 1 and metrics["device"]["cpu_threads_reason"]
    assert metrics["device"]["freed_memory_kept"] is (hardware.glibc() is not None)
    reloaded_config = load_config(run_dir / "config.yaml")
    assert reloaded_config == config
    saved_model = yaml.safe_load((run_dir / "config.yaml").read_text())["model"]["name_or_path"]
    assert metrics["run"]["model_name_or_path"] == saved_model

    assert json.loads((run_dir / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert [r["step"] for r in history] == sorted(r["step"] for r in history)
    assert any("eval_accuracy" in r for r in history) and any("loss" in r for r in history)
    assert history[-1]["step"] == metrics["training"]["global_steps"]
    # The tiny checkpoint has a 2-class head, so the 4-class one is new and learned at its own rate.
    assert metrics["training"]["head_parameters"] == ["classifier.bias", "classifier.weight"]
    assert (
        "| head learning rate | 0.01 (new parameters: classifier.bias, classifier.weight) |"
        in (run_dir / "model" / "README.md").read_text()
    )

    with open(run_dir / "test_predictions.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 200
    accuracy = np.mean([row["label"] == row["predicted"] for row in rows])
    assert accuracy == pytest.approx(metrics["test"]["accuracy"])

    with open(run_dir / "removed_rows.csv", newline="") as handle:
        removed = list(csv.DictReader(handle))
    removed_counts = {split: sum(row["split"] == split for row in removed) for split in ("train", "validation", "test")}
    assert removed_counts == metrics["data"]["duplicates"]["removed"]
    assert metrics["data"]["incomplete_rows"] == {"setting": "error", "removed": {"train": 0, "test": 0}}

    assert (run_dir / "confusion_matrix.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.sum(metrics["test"]["confusion_matrix"]) == 200
    assert "World" in (run_dir / "report.md").read_text()
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["train"]["learning_rate"] == pytest.approx(1e-3)


def test_samples_seen_counts_the_rows_trained_on(finished_run):
    """metrics.json counts rows as trained, batch by batch: the full run's 600 rows in batches of 16 end each epoch
    on a batch of 8, which steps times the batch size would count as 16; the quick run's six steps are full."""
    config, metrics = finished_run
    training = metrics["training"]
    if config.train.max_steps is None and not training["stopped_early"]:
        expected = metrics["data"]["sizes"]["train"] * config.train.epochs
        assert expected < training["global_steps"] * training["effective_batch_size"]
    else:
        expected = training["global_steps"] * training["effective_batch_size"]
    assert training["samples_seen"] == expected


def test_the_model_folder_records_how_the_run_reads_its_texts(finished_run, tmp_path):
    """model/decision.json holds the run's text rule and its resolved length (tokenizer.max_length is auto here),
    so the folder copied out of the run reads texts as the run does."""
    from pipeline.predict import resolve_model_source

    config, metrics = finished_run
    by_run = resolve_model_source(config.run_dir)
    by_folder = resolve_model_source(shutil.copytree(config.run_dir / "model", tmp_path / "model"))
    assert config.tokenizer.max_length == "auto"
    assert by_folder.max_length == by_run.max_length == metrics["tokenization"]["max_length"]
    assert by_folder.text_spec == by_run.text_spec and by_folder.text_spec.columns == ("title", "description")
    # The names of the run's header-less files, which prediction reads (or names for) an input laid out so.
    assert by_folder.column_names == by_run.column_names == ("class_index", "title", "description")
    assert (by_folder.long_text, by_folder.pooling, by_folder.reading_recorded) == (
        by_run.long_text,
        by_run.pooling,
        True,
    )


def test_reloaded_model_predicts_exactly_as_before_saving(finished_run):
    """metrics.json's validation scores are the best evaluation's in training: stage 4 reuses its logits (that they
    are exactly what the saved weights give is tests/train/test_loop.py's check)."""
    config, metrics = finished_run
    history = [json.loads(line) for line in (config.run_dir / "history.jsonl").read_text().splitlines()]
    best = [r for r in history if r.get("step") == metrics["best"]["step"] and "eval_accuracy" in r][-1]
    assert best["eval_accuracy"] == metrics["validation"]["accuracy"]
    # The saved model is then calibrated (its temperature folded in: same argmax, another loss); the loss it had
    # before that is recorded under calibration.
    assert best["eval_loss"] == pytest.approx(metrics["calibration"]["loss"]["validation"]["before"], abs=1e-6)


@pytest.mark.slow
def test_saved_model_loads_in_transformers_pipeline_with_class_names(full_run):
    config, _ = full_run
    with open(config.run_dir / "test_predictions.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))[:32]
    classify = transformers.pipeline("text-classification", model=str(config.run_dir / "model"), device="cpu")
    outputs = classify([row["text"] for row in rows], truncation=True, max_length=128)
    assert {output["label"] for output in outputs} <= set(LABELS)
    agreement = np.mean([output["label"] == row["predicted"] for output, row in zip(outputs, rows)])
    # The run evaluates under bf16 autocast where the CPU has it, the pipeline in fp32: near-ties may flip.
    assert agreement >= 0.9


@pytest.mark.slow  # a second fine-tuning run
def test_second_identical_run_reuses_tokenized_cache(full_run, tiny_run_config):
    reset_accelerate()
    config = tiny_run_config("run.name=again", "data.max_train_samples=600", "train.max_steps=2")
    metrics = finetune.run(config)
    assert metrics["tokenization"]["from_cache"] is True
    assert metrics["tokenization"]["max_length"] == full_run[1]["tokenization"]["max_length"]


def test_existing_run_directory_is_not_overwritten_silently(finished_run, capsys):
    config, _ = finished_run
    code = finetune.main(
        ["--config", str(MINILM_CONFIG), f"run.output_dir={config.run.output_dir}", f"run.name={config.run.name}"]
    )
    assert code == 2
    assert "already holds a run" in capsys.readouterr().err


def test_unknown_key_and_wrong_type_exit_nonzero_naming_the_key(capsys):
    assert finetune.main(["train.learnin_rate=3e-5"]) == 2
    assert "train.learnin_rate" in capsys.readouterr().err
    assert finetune.main(["train.epochs=many"]) == 2
    assert "train.epochs" in capsys.readouterr().err


def test_missing_model_or_data_exit_nonzero_naming_the_key(tmp_path, ag_news_train_csv, ag_news_test_csv, capsys):
    common = [
        "--config",
        str(MINILM_CONFIG),
        f"run.output_dir={tmp_path}",
        f"data.cache_dir={tmp_path / 'cache'}",
        f"data.test_file={ag_news_test_csv}",
        "data.max_train_samples=50",
        "data.max_eval_samples=50",
    ]
    reset_accelerate()
    assert finetune.main([*common, f"data.train_file={tmp_path / 'nope.csv'}"]) == 2
    assert "data.train_file" in capsys.readouterr().err
    reset_accelerate()
    assert (
        finetune.main(
            [
                *common,
                f"data.train_file={ag_news_train_csv}",
                f"model.name_or_path={tmp_path / 'no_model'}",
                f"tokenizer.name_or_path={tmp_path / 'no_model'}",
            ]
        )
        == 2
    )
    assert "tokenizer.name_or_path" in capsys.readouterr().err
    reset_accelerate()


@pytest.mark.slow  # two fine-tuning runs
def test_two_runs_with_different_precision_in_one_process(tiny_run_config):
    """As a notebook does: accelerate's process-wide state must not leak from one run into the next."""
    first = finetune.run(tiny_run_config("run.name=bf16", "train.max_steps=1", "train.mixed_precision=bf16"))
    second = finetune.run(tiny_run_config("run.name=fp32", "train.max_steps=1", "train.mixed_precision=no"))
    assert (first["training"]["mixed_precision"], second["training"]["mixed_precision"]) == ("bf16", "no")


def test_timings_cover_the_run_phase_by_phase(finished_run):
    """Every phase is timed: what no phase covers (`other`) is a sliver of the run, and the phases add up to it."""
    config, metrics = finished_run
    timings = RunRecord.from_dict(metrics).timings
    history = (config.run_dir / "history.jsonl").read_text().splitlines()
    phases = [getattr(timings, key) for key, _ in timings.PHASES]
    assert sum(seconds or 0.0 for seconds in phases) == pytest.approx(timings.total_seconds)
    assert 0 <= timings.other_seconds < 0.05 * timings.total_seconds + 0.5
    assert timings.startup_seconds is None  # run() called in-process: no start-up of its own
    assert len(timings.validation_pass_seconds) == sum('"eval_loss"' in line for line in history) > 0
    assert sum(timings.validation_pass_seconds) == pytest.approx(timings.validation_seconds, abs=0.01)
    assert timings.eval_seconds == pytest.approx(timings.test_seconds + timings.calibration_seconds)
    assert min(timings.train_seconds, timings.test_seconds, timings.outputs_seconds, timings.model_load_seconds) > 0


def test_the_prediction_speed_is_the_test_pass_rate_at_no_cost(finished_run):
    """eval.predict_speed_rows: 0 (the default): no pass of its own; the test pass's texts over its seconds."""
    _, metrics = finished_run
    record = RunRecord.from_dict(metrics)
    assert record.timings.predict_speed_seconds is None
    test_rows = record.test.num_samples
    assert record.throughput.predict_rows_timed == test_rows
    assert record.throughput.predict_rows_per_second == pytest.approx(test_rows / record.timings.test_seconds)
    precision = "bf16" if record.training.mixed_precision == "bf16" else "fp32"
    assert record.throughput.predict_backend == f"torch-{precision}"


@pytest.mark.slow  # a fresh interpreter: its imports alone take seconds
def test_timings_sum_to_the_process_wall_time(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv):
    """`python -m pipeline.finetune` timed from outside: metrics.json's phases, start-up included, sum to it."""
    overrides = tiny_run_overrides(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv)
    command = [sys.executable, "-m", "pipeline.finetune", "--config", str(MINILM_CONFIG), *overrides, *RUNS["quick"]]
    environment = {**os.environ, **OFFLINE_ENVIRONMENT, "PYTHONPATH": str(REPO_ROOT)}
    tick = time.perf_counter()
    result = subprocess.run(command, env=environment, capture_output=True, text=True, cwd=tmp_path)
    wall = time.perf_counter() - tick
    assert result.returncode == 0, result.stderr[-2000:]
    timings = RunRecord.from_dict(json.loads((tmp_path / "runs" / "quick" / "metrics.json").read_text())).timings
    covered = sum(getattr(timings, key) or 0.0 for key, _ in timings.PHASES if key != "other_seconds")
    assert covered == pytest.approx(wall, rel=0.02)
    assert timings.total_seconds == pytest.approx(wall, rel=0.02) and timings.startup_seconds > 0.5
    assert f"({timings.split})" in result.stdout.splitlines()[-1]


@pytest.mark.slow  # a fresh process or a real-sized fit: about 7-10 s on 2 cores
def test_the_command_starts_without_matplotlib_or_the_export_runtimes():
    """Matplotlib, scikit-learn and the export runtimes load where a figure, a metric or an export needs them."""
    heavy = ("matplotlib", "sklearn", "onnxruntime", "openvino")
    code = f"import sys\nimport pipeline.finetune\nprint(sorted(name for name in {heavy!r} if name in sys.modules))"
    environment = {**os.environ, **OFFLINE_ENVIRONMENT, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_the_last_console_line_leads_with_the_selection_metric():
    single = {"best": {"metric": "accuracy"}, "test": {"accuracy": 0.9, "macro_f1": 0.85, "num_samples": 200}}
    assert RunRecord.from_dict(single).headline_scores == "accuracy 0.9000, macro-F1 0.8500 on 200 rows"
    multi = {
        "best": {"metric": "micro_f1"},
        "test": {"accuracy": 0.4, "macro_f1": 0.6, "micro_f1": 0.7, "num_samples": 50},
    }
    assert (
        RunRecord.from_dict(multi).headline_scores
        == "micro-F1 0.7000, subset accuracy 0.4000, macro-F1 0.6000 on 50 rows"
    )


def test_metrics_name_a_local_model_folder_by_its_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "models" / "mine").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    local = load_config(MINILM_CONFIG, ["model.name_or_path=models/mine"])
    assert finetune.model_source(local) == str(tmp_path / "models" / "mine")
    assert finetune.model_source(load_config(MINILM_CONFIG, ["model.name_or_path=org/hub-model"])) == "org/hub-model"
    assert finetune.model_source(load_config(MINILM_CONFIG, ["model.kind=encoder"])) == "from scratch"
