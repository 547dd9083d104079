"""One trial: the study's next parameters, run as a normal run directory in the study folder, told back to the study
as its best validation score, pruned, or failed with its error. Under `accelerate launch` every process runs each
trial: the main process alone talks to the study and shares its decisions (group.py)."""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pipeline import finetune
from pipeline.common.errors import one_line
from pipeline.config.schema import ConfigError
from pipeline.run.record import RunRecord
from pipeline.tune.group import Group
from pipeline.tune.space import Parameter, trial_config
from pipeline.tune.study import StudyFolder, this_worker, trial_name

logger = logging.getLogger(__name__)


class Pruned(Exception):
    """Raised by the validation hook when the pruner stops a trial."""


@dataclass
class Search:
    """What every trial of one search shares."""

    folder: StudyFolder
    config_path: Path | None
    overrides: list[str]
    space: list[Parameter]
    metric: str  # tune.metric ("auto": the run's own selection metric)
    group: Group


@dataclass
class TrialOutcome:
    number: int
    state: str  # "complete", "pruned" or "fail"
    value: float | None
    seconds: float
    error: str | None = None


def trial_overrides(search: Search, number: int) -> list[str]:
    """Where the trial's run goes, and what it skips: the baseline, the speed test and the export (never chosen on)."""
    settings = [f"run.output_dir={search.folder.path}", f"run.name={trial_name(number)}", "run.overwrite=true"]
    settings += ["eval.baseline=none", "eval.predict_speed_rows=0", "eval.export=none"]
    if search.metric != "auto":  # the model kept is the one the search scores
        settings.append(f"train.selection_metric={search.metric}")
    return settings


def pruning_hook(trial: Any, group: Group):
    """After each validation: report the selection metric; stop the trial (every process) when the pruner says so."""

    def on_validation(step: int, metrics: dict[str, float]) -> None:
        prune = False
        if trial is not None:
            trial.report(metrics["selected"], step)
            prune = trial.should_prune()
        if group.agree(prune):
            raise Pruned(f"pruned at step {step} (validation {metrics['selected']:.4f})")

    return on_validation


def next_trial(study: Any, search: Search) -> tuple[Any, int, dict[str, Any]] | None:
    """The main process asks the study; every process gets the trial's number and parameters."""
    trial, shared = None, None
    if search.group.is_main:
        trial = study.ask()
        trial.set_user_attr("worker", this_worker())
        shared = {"number": trial.number, "params": {p.key: p.suggest(trial) for p in search.space}}
    shared = search.group.share(shared)
    return trial, shared["number"], shared["params"]


def run_trial(study: Any, search: Search) -> TrialOutcome:
    import optuna  # the `tune` extra

    trial, number, params = next_trial(study, search)
    logger.info(f"Trial {number}: {params}")
    tick = time.perf_counter()
    state, value, error = "fail", None, None
    try:
        config = trial_config(search.config_path, search.overrides + trial_overrides(search, number), params)
        search.group.before_run()
        record = RunRecord.from_dict(
            finetune.run(config, on_validation=pruning_hook(trial, search.group), keep_process_group=True)
        )
        state, value = "complete", float(record.best.score)
    except Pruned as reason:
        state, error = "pruned", str(reason)
    except KeyboardInterrupt:
        _tell(study, trial, optuna.trial.TrialState.FAIL, None, "interrupted", time.perf_counter() - tick)
        raise
    except ConfigError:
        raise  # the config itself: every trial would fail alike
    except Exception as failure:  # out of memory, a diverging loss: recorded, and the search goes on
        error = one_line(failure)
        logger.warning(f"Trial {number} failed: {error}")
    finally:
        _free_memory()
    seconds = time.perf_counter() - tick
    states = {"complete": optuna.trial.TrialState.COMPLETE, "pruned": optuna.trial.TrialState.PRUNED}
    _tell(study, trial, states.get(state, optuna.trial.TrialState.FAIL), value, error, seconds)
    return TrialOutcome(number, state, value, seconds, error)


def _tell(study: Any, trial: Any, state: Any, value: float | None, error: str | None, seconds: float) -> None:
    if trial is None:  # not the main process
        return
    trial.set_user_attr("seconds", round(seconds, 2))
    if error:
        trial.set_user_attr("error", error)
    study.tell(trial, value if value is not None else None, state=state)


def _free_memory() -> None:
    """What a trial held (its model, optimizer, a failed allocation) is released before the next one."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
