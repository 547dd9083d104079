"""The run directory before training: checked before any work (`check_run_dir`), replaced and started only once the
new run has loaded its data, tokenizer and model (`start_run_dir`), so a typo in a path never costs the earlier run."""

from __future__ import annotations

import logging
from typing import Any

from pipeline.common.io import atomic_write_csv, check_can_write
from pipeline.config.load import save_config, to_dict, with_absolute_paths
from pipeline.config.schema import PipelineConfig
from pipeline.data.load import LoadedData
from pipeline.data.splits import write_removed_rows
from pipeline.run import directory as rundir
from pipeline.run import ownership
from pipeline.run.directory import RunDir
from pipeline.run.record import METRICS_FILE

logger = logging.getLogger("pipeline")

# Settings a resumed run may change: they alter neither the weights nor the data (resume is exact otherwise);
# the run directory itself may have been moved or renamed.
RESUME_MAY_CHANGE = (
    "eval.",
    "train.resume",
    "run.overwrite",
    "run.name",
    "run.output_dir",
    "train.log_every_steps",
    "train.warn_if_longer_than_minutes",
    "data.cache_dir",
    "tokenizer.cache",
    "train.calibrate",  # calibration happens after training
)


class RunError(RuntimeError):
    """The run cannot start as configured (e.g. it would overwrite an earlier run)."""


def check_run_dir(config: PipelineConfig) -> None:
    """Refuse, before any work, a run that would clobber an earlier one, resume what cannot be resumed or write
    where it cannot."""
    run = RunDir(config.run_dir)
    if config.train.resume:
        if not run.path.is_dir():
            raise RunError(f"train.resume=true but there is no run to resume at {run.path}; drop train.resume")
        if not run.checkpoints():
            holds = ", ".join(sorted(child.name for child in run.path.iterdir())) or "nothing"
            raise RunError(
                f"train.resume=true but {run.path} holds no checkpoint (it holds: {holds}); start again with run.overwrite=true (set train.save_every_steps to make a run resumable)"
            )
        check_resume_config(run, config)
        if run.metrics_path.is_file():
            logger.warning(
                f"{run.path} has finished training: resuming evaluates its last checkpoint again under the eval.* settings given now and rewrites {METRICS_FILE}, model/ and the reports"
            )
    elif rundir.holds_run(run.path) and not config.run.overwrite:
        hint = " (or train.resume=true to continue from its last checkpoint)" if run.checkpoints() else ""
        raise RunError(f"{run.path} already holds a run; choose another run.name, or set run.overwrite=true{hint}")
    check_can_write(run.path, "run directory", inside=True)


def check_resume_config(run: RunDir, config: PipelineConfig) -> None:
    """A resumed run is exact only under the same settings: name every other key that changed."""
    saved = _flatten(with_absolute_paths(run.read_config(), resolve_links=True))
    current = _flatten(with_absolute_paths(to_dict(config), resolve_links=True))
    changed = sorted(
        key
        for key in saved.keys() | current.keys()
        if saved.get(key) != current.get(key) and not key.startswith(RESUME_MAY_CHANGE)
    )
    if changed:
        details = "; ".join(f"{key}: {saved.get(key)!r} -> {current.get(key)!r}" for key in changed[:6])
        raise RunError(
            f"train.resume=true under a changed config would not continue the same run ({details}); resume with the settings in {run.config_path}, or start a new run"
        )


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def start_run_dir(config: PipelineConfig, data: LoadedData) -> None:
    """Main process, once data, tokenizer and model have loaded: replace an earlier run, record config and split."""
    run = RunDir(config.run_dir)
    if not config.train.resume:
        if config.run.overwrite and rundir.holds_run(run.path):
            ownership.clear_for_overwrite(run.path)
        save_config(config, run.config_path)
    for leftover in ownership.clean_staging_leftovers(run.path):
        logger.info(f"Removed {leftover}, left by an interrupted run")
    split_rows = [[split, row_id] for split, ids in data.row_ids().items() for row_id in ids]
    atomic_write_csv(run.path / rundir.SPLITS_FILE, ["split", "row_id"], split_rows)
    write_removed_rows(run.path / rundir.REMOVED_ROWS_FILE, data.removed)
