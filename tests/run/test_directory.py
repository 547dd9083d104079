"""The run directory (pipeline/run/directory.py): its readers report damage naming the file; its writers round-trip."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
import yaml

from pipeline.config.load import load_config, save_config
from pipeline.config.schema import PipelineConfig
from pipeline.run.directory import (
    LOCK_FILE,
    RunDir,
    RunDirError,
    RunDirWarning,
    holds_run,
    is_model_dir,
    is_run_dir,
)
from pipeline.run.predictions import write_test_predictions
from pipeline.run.record import FORMAT_VERSION, RunRecord

LABELS = ["World", "Sports", "Business", "Sci/Tech"]
GOOD_METRICS = {"labels": LABELS, "test": {"accuracy": 0.75}}


def run_dir(tmp_path: Path, name: str = "run") -> RunDir:
    path = tmp_path / name
    path.mkdir()
    return RunDir(path)


# ---------------------------------------------------------------------------------------------------------------
# metrics.json


def test_read_record_returns_what_was_written(tmp_path):
    run = run_dir(tmp_path)
    record = RunRecord.from_dict(GOOD_METRICS)
    run.write_record(record)
    assert run.read_record() == record and run.read_record().test.accuracy == 0.75
    assert json.loads(run.metrics_path.read_text()) == {"format_version": FORMAT_VERSION, **GOOD_METRICS}
    assert run.metrics_path == tmp_path / "run" / "metrics.json"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the file is empty"),
        ("  \n\n", "the file is empty"),
        ('{\n  "labels": ["a"],\n  "test": {"accuracy": 0.5,,}\n}\n', "invalid JSON at line 3"),
        ('{"labels": ["a"], "test": {"accuracy"', "invalid JSON at line 1"),
        ('["World", "Sports"]', "expected a JSON object"),
        ('{"test": {"accuracy": 0.5}}', "'labels'"),
        ('{"labels": [], "test": {"accuracy": 0.5}}', "'labels'"),
        ('{"labels": "World", "test": {"accuracy": 0.5}}', "'labels'"),
        ('{"labels": ["a", "b"]}', "'test.accuracy' is missing"),
        ('{"labels": ["a", "b"], "test": {"accuracy": "high"}}', "'test.accuracy' is missing"),
    ],
)
def test_damaged_metrics_raise_naming_the_file(tmp_path, content, message):
    run = run_dir(tmp_path)
    run.metrics_path.write_text(content)
    with pytest.raises(RunDirError) as caught:
        run.read_record()
    assert str(caught.value).startswith(f"{run.metrics_path}: ")
    assert message in str(caught.value)


def test_metrics_without_test_are_accepted_when_not_required(tmp_path):
    run = run_dir(tmp_path)
    run.metrics_path.write_text(json.dumps({"labels": LABELS}))
    assert run.read_record(require_test=False).labels == LABELS
    with pytest.raises(RunDirError, match="test.accuracy"):
        run.read_record()


def test_missing_or_undecodable_metrics_name_the_file(tmp_path):
    run = run_dir(tmp_path)
    with pytest.raises(RunDirError, match=re.escape(f"{run.metrics_path}: cannot be read")):
        run.read_record()
    run.metrics_path.write_bytes(b'{"labels": ["Caf\xe9"]}')
    with pytest.raises(RunDirError, match=re.escape(f"{run.metrics_path}: not UTF-8 text")):
        run.read_record()


# ---------------------------------------------------------------------------------------------------------------
# history.jsonl


def history_lines(count: int) -> list[str]:
    return [json.dumps({"step": 10 * (i + 1), "loss": 1.0 / (i + 1)}) for i in range(count)]


def test_read_history_reads_every_line_and_skips_blank_ones(tmp_path):
    run = run_dir(tmp_path)
    lines = history_lines(4)
    run.history_path.write_text("\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]) + "\n")
    notes: list[str] = []
    assert run.read_history(notes) == [json.loads(line) for line in lines]
    assert notes == []


def test_truncated_last_history_line_is_skipped_with_a_note(tmp_path):
    run = run_dir(tmp_path)
    run.history_path.write_text("\n".join(history_lines(3)) + '\n{"step": 40, "lo')
    notes: list[str] = []
    with pytest.warns(RunDirWarning, match="line 4 is truncated"):
        records = run.read_history(notes)
    assert [record["step"] for record in records] == [10, 20, 30]
    assert len(notes) == 1 and str(run.history_path) in notes[0] and "line 4" in notes[0]


def test_bad_history_line_in_the_middle_is_an_error_naming_file_and_line(tmp_path):
    run = run_dir(tmp_path)
    lines = history_lines(4)
    lines[1] = lines[1][:12]
    run.history_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RunDirError, match=re.escape(f"{run.history_path}: line 2 is not valid JSON")):
        run.read_history()


def test_history_line_that_is_not_an_object_is_an_error(tmp_path):
    run = run_dir(tmp_path)
    run.history_path.write_text(history_lines(1)[0] + "\n[1, 2]\n" + history_lines(1)[0] + "\n")
    with pytest.raises(RunDirError, match="line 2 is not a JSON object"):
        run.read_history()


def test_missing_history_is_empty_with_a_note(tmp_path):
    run = run_dir(tmp_path)
    notes: list[str] = []
    with pytest.warns(RunDirWarning, match="history.jsonl: missing"):
        assert run.read_history(notes) == []
    assert len(notes) == 1


# ---------------------------------------------------------------------------------------------------------------
# Checkpoints and what a folder is


def test_checkpoints_are_completed_step_folders_in_numeric_order(tmp_path):
    run = run_dir(tmp_path)
    assert run.checkpoints() == []  # no checkpoints folder at all
    for name in (
        "step_10",
        "step_2",
        "step_100",
        "step_40_backup",
        ".step_3.partial",
        "step_",
        "step_x",
        "checkpoint_50",
        "Step_7",
    ):
        (run.checkpoints_dir / name).mkdir(parents=True)
    (run.checkpoints_dir / "step_500").write_text("a file, not a checkpoint")
    assert run.checkpoints() == [run.checkpoint_path(2), run.checkpoint_path(10), run.checkpoint_path(100)]
    assert run.checkpoint_path(7) == tmp_path / "run" / "checkpoints" / "step_7"


def test_is_run_dir_needs_a_saved_model_and_the_config(tmp_path):
    run = run_dir(tmp_path)
    assert not is_run_dir(run.path) and not holds_run(run.path)
    run.config_path.write_text("run: {}\n")
    assert holds_run(run.path) and not is_run_dir(run.path)
    run.model_dir.mkdir()
    assert not is_model_dir(run.model_dir) and not is_run_dir(run.path)  # an empty model folder is not a model
    (run.model_dir / "config.json").write_text("{}")
    assert is_model_dir(run.model_dir) and is_run_dir(run.path)
    assert not is_run_dir(tmp_path / "nowhere") and not holds_run(tmp_path / "nowhere")


def test_a_run_that_has_only_started_holds_a_run(tmp_path):
    run = run_dir(tmp_path)
    run.history_path.write_text(history_lines(1)[0] + "\n")
    assert holds_run(run.path) and not is_run_dir(run.path)
    with pytest.raises(RunDirError, match="metrics.json is missing, so the run has not finished — it stopped"):
        run.check_finished()


def saved_run(root: Path, name: str = "run") -> RunDir:
    """A run directory as an interrupted run leaves it: its config.yaml and history, no metrics.json or model/."""
    config = load_config(None, ["data.source=files", "data.train_file=unused.csv", f"run.output_dir={root}"])
    config.run.name = name
    root.mkdir(exist_ok=True)
    run = run_dir(root, name)
    save_config(config, run.config_path)
    run.history_path.write_text(history_lines(1)[0] + "\n")
    return run


def command_config(command: str) -> PipelineConfig:
    """The config the suggested `python -m pipeline.finetune --config FILE KEY=VALUE ...` command would run."""
    words = shlex.split(command)
    assert words[:4] == ["python", "-m", "pipeline.finetune", "--config"], command
    return load_config(words[4], words[5:])


def test_an_unfinished_run_says_whether_it_is_still_training_and_how_to_go_on(tmp_path):
    run = saved_run(tmp_path / "runs")
    with pytest.raises(RunDirError) as stopped:
        run.check_finished()
    message = str(stopped.value)
    assert "it stopped (interrupted, or it failed) without a checkpoint" in message and "train.resume" not in message
    assert command_config(message.split("train it again: ")[1]).run.overwrite is True

    (run.checkpoints_dir / "step_3").mkdir(parents=True)
    (run.checkpoints_dir / "step_6").mkdir()
    with pytest.raises(RunDirError, match=r"continue it from its last checkpoint \(step_6\): python -m pipeline"):
        run.check_finished()
    resumed = command_config(run.unfinished().split("(step_6): ")[1])
    assert resumed.train.resume and resumed.run_dir == run.path

    (run.path / LOCK_FILE).write_text(str(os.getppid()))  # a live process other than this one holds it
    assert run.unfinished() == (
        f"{run.path}: metrics.json is missing, so the run has not finished — it is still training (process "
        f"{os.getppid()} holds it); wait for it to finish"
    )


def test_the_command_that_resumes_a_moved_run_names_its_new_place(tmp_path):
    run = saved_run(tmp_path / "runs", "first")
    (run.checkpoints_dir / "step_3").mkdir(parents=True)
    assert "run.output_dir" not in run.unfinished()  # where it was trained: config.yaml says so
    moved = RunDir(tmp_path / "moved" / "second")
    moved.path.parent.mkdir()
    run.path.rename(moved.path)
    command = moved.unfinished().split("(step_3): ")[1]
    assert "run.output_dir=" in command and "run.name=second" in command
    assert command_config(command).run_dir == moved.path


def test_check_finished_says_what_the_folder_is_instead(tmp_path):
    with pytest.raises(RunDirError, match="does not exist"):
        RunDir(tmp_path / "nowhere").check_finished()
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(RunDirError, match="not a directory"):
        RunDir(tmp_path / "file.txt").check_finished()
    runs = tmp_path / "runs"
    for name in ("bert", "encoder"):
        (runs / name).mkdir(parents=True)
        RunDir(runs / name).write_record(RunRecord.from_dict(GOOD_METRICS))
        (runs / name / "config.yaml").write_text(yaml.safe_dump({"run": {"name": name}}))
        RunDir(runs / name).check_finished()
    with pytest.raises(RunDirError, match="not a run directory .*inside it: bert, encoder"):
        RunDir(runs).check_finished()
    (runs / "bert" / "config.yaml").unlink()
    with pytest.raises(RunDirError, match="config.yaml is missing"):
        RunDir(runs / "bert").check_finished()


def test_read_config_reads_the_mapping_and_names_bad_yaml(tmp_path):
    run = run_dir(tmp_path)
    run.config_path.write_text("run:\n  name: x\ntrain:\n  learning_rate: 0.001\n")
    assert run.read_config() == {"run": {"name": "x"}, "train": {"learning_rate": 0.001}}
    run.config_path.write_text("run:\n  name: x\n  bad: [unclosed\n")
    with pytest.raises(RunDirError, match=re.escape(str(run.config_path)) + ": invalid YAML at line"):
        run.read_config()
    run.config_path.write_text("- just\n- a list\n")
    with pytest.raises(RunDirError, match="expected a mapping"):
        run.read_config()


# ---------------------------------------------------------------------------------------------------------------
# test_predictions.csv


TRICKY_TEXTS = ['Quote "here", a comma', "Line one\nline two", "NA", "null", "  padded  ", "Café 😀", "", "plain"]


def test_predictions_round_trip(tmp_path):
    run = run_dir(tmp_path)
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 4, len(TRICKY_TEXTS))
    logits = rng.normal(size=(len(TRICKY_TEXTS), 4))
    probabilities = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(np.float32)
    write_test_predictions(run.predictions_path, TRICKY_TEXTS, gold, probabilities, LABELS)
    assert [p.name for p in run.path.iterdir()] == ["test_predictions.csv"]  # written atomically

    frame = run.read_predictions()
    columns = list(frame.columns)
    assert columns[:4] == ["text", "label", "predicted", "score"]
    assert columns[-len(LABELS) :] == [f"prob_{name}" for name in LABELS]  # one per class, in label order
    assert frame["text"].tolist() == TRICKY_TEXTS  # "NA", "null", "" and the padding stay as written
    assert frame["label"].tolist() == [LABELS[i] for i in gold]
    assert frame["predicted"].tolist() == [LABELS[i] for i in probabilities.argmax(axis=1)]
    np.testing.assert_allclose(frame["score"], probabilities.max(axis=1), atol=5e-7)
    np.testing.assert_allclose(frame[[f"prob_{name}" for name in LABELS]].to_numpy(), probabilities, atol=5e-7)
    assert frame["score"].dtype == float


def test_missing_predictions_are_none_with_a_note(tmp_path):
    run = run_dir(tmp_path)
    notes: list[str] = []
    with pytest.warns(RunDirWarning, match="test_predictions.csv: missing"):
        assert run.read_predictions(notes) is None
    assert len(notes) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the file is empty"),
        ("text,label,score\nx,World,0.5\n", "missing column(s) predicted"),
        ("text,label,predicted,score\nx,World,World,0.5\ny,World,Sports,high\n", "not a number in data row 2"),
    ],
)
def test_damaged_predictions_raise_naming_the_file(tmp_path, content, message):
    run = run_dir(tmp_path)
    run.predictions_path.write_text(content)
    with pytest.raises(RunDirError) as caught:
        run.read_predictions()
    assert str(caught.value).startswith(f"{run.predictions_path}: ")
    assert message in str(caught.value)
