"""train.report_to: tracker names checked, the config flattened, TensorBoard events and an MLflow run in a SQLite
file written through accelerate and read back, and a tracker that fails to start is a warning."""

from __future__ import annotations

import logging

import pytest
from accelerate import Accelerator

from pipeline.config.schema import ConfigError
from pipeline.train import trackers
from pipeline.train.trackers import flatten, log_test_metrics, start_trackers, tracker_names


def test_auto_takes_the_installed_trackers_and_says_so(monkeypatch, caplog):
    monkeypatch.setattr(trackers, "installed", lambda module: module == "tensorboard")
    with caplog.at_level(logging.INFO, logger="pipeline.train.trackers"):
        assert tracker_names("auto", announce=True) == ["tensorboard"]
    assert "Trackers: tensorboard (train.report_to: auto" in caplog.text
    assert tracker_names("none") == []


def test_an_unknown_or_missing_tracker_is_an_error_naming_it(monkeypatch):
    with pytest.raises(ConfigError, match="train.report_to: unknown tracker 'tensorbored'"):
        tracker_names(["tensorbored"])
    monkeypatch.setattr(trackers, "installed", lambda module: False)
    with pytest.raises(ConfigError, match=r'train.report_to: wandb is not installed: pip install -e "\.\[wandb\]"'):
        tracker_names(["wandb"])


def test_flatten_makes_dotted_keys_of_plain_values():
    flat = flatten({"train": {"learning_rate": 1e-4, "distill": {"teacher": None}}, "data": {"text_columns": ["a"]}})
    assert flat == {"train.learning_rate": 1e-4, "train.distill.teacher": "null", "data.text_columns": '["a"]'}


@pytest.mark.slow  # MLflow creating its SQLite store: over a minute on a busy 2-core CPU
def test_tensorboard_and_mlflow_files_hold_the_config_and_the_scalars(tmp_path, fresh_accelerate_state, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    run_dir = tmp_path / "runs" / "first"
    accelerator = Accelerator(cpu=True)
    start_trackers(accelerator, ["tensorboard", "mlflow"], run_dir, {"train.learning_rate": 3e-5, "run.name": "first"})
    accelerator.log({"eval/accuracy": 0.5}, step=10)
    log_test_metrics(accelerator, {"accuracy": 0.75, "confusion_matrix": [[1]]}, step=20)
    accelerator.end_training()

    events = EventAccumulator(str(run_dir / "tensorboard" / "first"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("test/accuracy")] == [(20, 0.75)]
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("runs").experiment_id])
    assert run.info.run_name == "first" and run.info.status == "FINISHED"
    assert run.data.params == {"train.learning_rate": "3e-05", "run.name": "first"}
    assert run.data.metrics == {"eval/accuracy": 0.5, "test/accuracy": 0.75}


def test_a_tracker_that_fails_to_start_is_a_warning_and_the_run_goes_on(tmp_path, fresh_accelerate_state, caplog):
    pytest.importorskip("tensorboard")
    (tmp_path / "run" / "tensorboard").mkdir(parents=True)
    (tmp_path / "run" / "tensorboard" / "run").write_text("a file where the event folder goes")
    accelerator = Accelerator(cpu=True)
    with caplog.at_level(logging.WARNING, logger="pipeline.train.trackers"):
        start_trackers(accelerator, ["tensorboard"], tmp_path / "run", {})
    assert accelerator.trackers == []
    (line,) = [record.getMessage() for record in caplog.records]
    assert line.startswith("Tracker tensorboard did not start, so this run is not logged to it:") and "\n" not in line
    accelerator.log({"eval/accuracy": 0.5}, step=1)  # no tracker: nothing to do, no error
