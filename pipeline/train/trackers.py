"""Experiment trackers (`train.report_to`) through accelerate's trackers: which ones, started on the main process
with the run's name and its resolved config as hyperparameters; one that fails to start is a warning, not a failure.

    names = tracker_names(config.train.report_to)     # ConfigError for an unknown or missing tracker
    start_trackers(accelerator, names, run_dir, flatten(config_values))
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelerate import Accelerator
from accelerate.tracking import LOGGER_TYPE_TO_CLASS, GeneralTracker, MLflowTracker, TensorBoardTracker

from pipeline.common.errors import one_line
from pipeline.common.extras import extra_install, installed
from pipeline.config.schema import ConfigError
from pipeline.run.directory import RunDir

logger = logging.getLogger(__name__)

# The trackers train.report_to names, each with the module it needs and the extra that installs it.
TRACKER_MODULES = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb", "trackio": "trackio"}
# What `auto` takes, where installed: the two that write local files and need no account.
AUTO_TRACKERS = ("tensorboard", "mlflow")
# MLflow's store when MLFLOW_TRACKING_URI is unset: a SQLite file beside the run directories, offline.
MLFLOW_DB = "mlflow.db"


def tracker_names(setting: str | list[str], announce: bool = False) -> list[str]:
    """train.report_to as tracker names (`auto`'s said at INFO when `announce`); a name unknown or not installed is
    a ConfigError."""
    if setting == "none":
        return []
    if setting == "auto":
        names = [name for name in AUTO_TRACKERS if installed(TRACKER_MODULES[name])]
        if announce:
            logger.info(
                f"Trackers: {', '.join(names) or 'none'} (train.report_to: auto, the installed of tensorboard and mlflow)"
            )
        return names
    for name in setting:
        if name not in TRACKER_MODULES:
            raise ConfigError(f"train.report_to: unknown tracker {name!r} (known: {', '.join(TRACKER_MODULES)}, none)")
        if not installed(TRACKER_MODULES[name]):
            raise ConfigError(f"train.report_to: {name} is not installed: {extra_install(name)}")
    return list(dict.fromkeys(setting))


def flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config as {dotted key: value}, every value a number, a boolean or text (what trackers accept)."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{dotted}."))
        elif isinstance(value, (bool, int, float, str)):
            flat[dotted] = value
        else:  # null, lists and empty mappings as their JSON text
            flat[dotted] = json.dumps(value)
    return flat


def mlflow_uri(output_dir: Path) -> str:
    """MLFLOW_TRACKING_URI when set; else a SQLite file in the folder of run directories."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{output_dir.resolve() / MLFLOW_DB}"


def _build(name: str, run_dir: Path) -> GeneralTracker:
    """An accelerate tracker for this run, not yet started."""
    if name == "tensorboard":
        return TensorBoardTracker(run_dir.name, RunDir(run_dir).tensorboard_dir)
    if name == "mlflow":
        import mlflow  # an optional extra

        mlflow.set_tracking_uri(mlflow_uri(run_dir.parent))
        # The experiment is the folder of run directories (`runs`, or a study): its runs are compared together.
        return MLflowTracker(experiment_name=run_dir.resolve().parent.name, run_name=run_dir.name)
    tracker_class = LOGGER_TYPE_TO_CLASS[name]
    if tracker_class.requires_logging_directory:
        return tracker_class(run_dir.name, str(run_dir))
    return tracker_class(run_dir.name)


def start_trackers(accelerator: Accelerator, names: list[str], run_dir: Path, hyperparameters: dict[str, Any]) -> None:
    """Start each tracker on the main process and store the hyperparameters; accelerator.log then reaches them."""
    if not accelerator.is_main_process:
        return
    for name in names:
        try:
            tracker = _build(name, Path(run_dir))
            tracker.start()
            tracker.store_init_configuration(hyperparameters)
        except Exception as error:  # any library's failure (a server down, a locked file): the run matters more
            logger.warning(f"Tracker {name} did not start, so this run is not logged to it: {one_line(error)}")
            continue
        accelerator.trackers.append(tracker)


def log_test_metrics(accelerator: Accelerator, metrics: Mapping[str, Any], step: int) -> None:
    """The final test metrics (the numbers only) to every tracker, at the last step."""
    scalars = {f"test/{key}": value for key, value in metrics.items() if isinstance(value, (int, float))}
    accelerator.log(scalars, step=step)
