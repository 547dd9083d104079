"""The study: its folder (`study.yaml`, the config it searches; `study.db`, Optuna's SQLite storage), the sampler
and the pruner. A folder written by another config is refused, naming the keys that differ."""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.common.io import atomic_write_text
from pipeline.config.load import to_dict, with_absolute_paths
from pipeline.config.schema import ConfigError, PipelineConfig
from pipeline.train.trackers import flatten

logger = logging.getLogger(__name__)

STUDY_CONFIG = "study.yaml"
STUDY_DB = "study.db"


@dataclass
class StudyFolder:
    path: Path

    @property
    def config_path(self) -> Path:
        return self.path / STUDY_CONFIG

    @property
    def storage_url(self) -> str:
        return f"sqlite:///{(self.path / STUDY_DB).resolve()}"

    def trial_dir(self, number: int) -> Path:
        return self.path / trial_name(number)


def trial_name(number: int) -> str:
    return f"trial_{number:03d}"


def searched_config(config: PipelineConfig) -> dict[str, Any]:
    """What makes two searches one study: the whole config but the run's name and folder, flattened."""
    values = flatten(with_absolute_paths(to_dict(config)))
    return {key: value for key, value in values.items() if key not in ("run.name", "run.output_dir", "run.overwrite")}


def claim_folder(folder: StudyFolder, config: PipelineConfig, resume: bool) -> None:
    """A new study folder gets study.yaml; an existing one must be resumed, and by the same config."""
    searched = searched_config(config)
    if folder.config_path.exists():
        if not resume:
            raise ConfigError(f"{folder.path} holds a study already; --resume continues it, or choose another --study")
        earlier = yaml.safe_load(folder.config_path.read_text(encoding="utf-8")) or {}
        differing = sorted(key for key in set(earlier) | set(searched) if earlier.get(key) != searched.get(key))
        if differing:
            raise ConfigError(
                f"{folder.config_path}: this study was written by another config; keys that differ: {', '.join(differing)}"
            )
        return
    folder.path.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder.config_path, yaml.safe_dump(searched, sort_keys=True))


def make_pruner(config: PipelineConfig) -> Any:
    import optuna  # the `tune` extra

    tune = config.tune
    if tune.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=tune.startup_trials, n_warmup_steps=tune.warmup_steps)
    if tune.pruner == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_early_stopping_rate=0)
    return optuna.pruners.NopPruner()


def open_study(name: str, storage: str, config: PipelineConfig) -> Any:
    """The Optuna study (created, or loaded when it exists): TPE seeded by run.seed, maximising."""
    import optuna

    sampler = optuna.samplers.TPESampler(seed=config.run.seed, n_startup_trials=config.tune.startup_trials)
    return optuna.create_study(
        study_name=name,
        storage=storage,
        sampler=sampler,
        pruner=make_pruner(config),
        direction="maximize",
        load_if_exists=True,
    )


def this_worker() -> str:
    """host:pid, recorded on each trial: a trial left running by a process of this host that is gone was killed."""
    return f"{socket.gethostname()}:{os.getpid()}"


def fail_abandoned_trials(study: Any) -> list[int]:
    """Mark FAIL the running trials whose process, on this host, is gone (a killed search); their numbers."""
    import optuna

    host = socket.gethostname()
    abandoned = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        worker_host, _, pid = str(trial.user_attrs.get("worker", "")).partition(":")
        if worker_host == host and pid.isdigit() and not _alive(int(pid)):
            study._storage.set_trial_user_attr(trial._trial_id, "error", "interrupted: its process was killed")
            study._storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.FAIL)
            abandoned.append(trial.number)
    return abandoned


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def finished_count(study: Any) -> int:
    """Trials that ran to their end, completed or pruned: what --trials counts."""
    import optuna

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return len(study.get_trials(deepcopy=False, states=states))
