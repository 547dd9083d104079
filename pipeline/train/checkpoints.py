"""What a training run persists across restarts: the loop's progress (`TrainingState`), history.jsonl (`History`)
and the checkpoints (saved atomically, the newest intact one restored). The loop's own state and the scheduler go
into a JSON file, not accelerate's pickled custom states, so a received run directory cannot run code on resume.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from accelerate import Accelerator

from pipeline.common.errors import one_line
from pipeline.run import directory as rundir
from pipeline.run.directory import RunDir

# Resuming is reported as part of training: log lines keep the loop's name.
logger = logging.getLogger("pipeline.train.loop")

# Checkpoints kept on disk; older ones are deleted once a newer one is complete.
CHECKPOINTS_KEPT = 2


@dataclass
class TrainingState:
    global_step: int = 0
    epoch: int = 0
    batches_seen_in_epoch: int = 0
    samples_seen: int = 0
    train_seconds: float = 0.0
    best_score: float = -1.0  # of the validation metric that selects (evaluation.selection_metric)
    # The best model's validation loss, which breaks ties of best_score; None before one is kept (and in older
    # checkpoints). JSON has no infinity.
    best_loss: float | None = None
    best_step: int = 0
    evals_without_improvement: int = 0

    def state_dict(self) -> dict:
        return asdict(self)

    def load_state_dict(self, state: dict) -> None:
        for key, value in state.items():
            setattr(self, "best_score" if key == "best_accuracy" else key, value)  # checkpoints before best_score


class History:
    """history.jsonl: one JSON object per logged step, written by the main process only."""

    def __init__(self, run_dir: RunDir, enabled: bool):
        self.run_dir = run_dir
        self.path = run_dir.history_path
        self.enabled = enabled
        self.records: list[dict] = []

    def resume_at(self, global_step: int) -> None:
        """Drop records past the checkpoint we resume from: those steps are about to be redone."""
        if self.path.exists():  # a truncated last line (killed while writing it) is dropped
            records = self.run_dir.read_history()
            self.records = [record for record in records if record.get("step", 0) <= global_step]
        if self.enabled:
            self.path.write_text("".join(json.dumps(record) + "\n" for record in self.records))

    def start_fresh(self) -> None:
        if self.enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("")

    def append(self, record: dict) -> None:
        self.records.append(record)
        if self.enabled:
            with self.path.open("a") as handle:
                handle.write(json.dumps(record) + "\n")


def save_checkpoint(accelerator: Accelerator, run_dir: RunDir, global_step: int, trainer_state: dict) -> Path:
    """Save into a staging folder and rename it when complete, so a crash never leaves a half checkpoint."""
    final = run_dir.checkpoint_path(global_step)
    staging = final.with_name(f".{final.name}.partial")
    if accelerator.is_main_process:
        shutil.rmtree(staging, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(staging))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        (staging / rundir.TRAINER_STATE_FILE).write_text(json.dumps(trainer_state))
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)
        for old in run_dir.checkpoints()[:-CHECKPOINTS_KEPT]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def restore_checkpoint(
    accelerator: Accelerator, run_dir: RunDir, state: TrainingState, scheduler: Any, history: History
) -> None:
    """Load the newest intact checkpoint into accelerate's objects, `state`, `scheduler` and `history`; a damaged
    one (a crash while writing it) falls back to the one before, saying so."""
    checkpoints = run_dir.checkpoints()
    if not checkpoints:
        raise FileNotFoundError(
            f"train.resume=true but {run_dir.checkpoints_dir} holds no checkpoint (set train.save_every_steps to write some, or drop train.resume)"
        )
    for checkpoint in reversed(checkpoints):
        try:
            saved = json.loads((checkpoint / rundir.TRAINER_STATE_FILE).read_text())
            accelerator.load_state(str(checkpoint))
        except Exception as error:
            detail = one_line(error)[:200]
            logger.warning(
                f"Checkpoint {checkpoint} cannot be loaded ({type(error).__name__}: {detail}); trying the one before"
            )
            continue
        state.load_state_dict(saved["state"])
        scheduler.load_state_dict(saved["scheduler"])
        history.resume_at(state.global_step)
        logger.info(f"Resumed from {checkpoint} at step {state.global_step} (epoch {state.epoch})")
        return
    raise FileNotFoundError(f"train.resume=true but no checkpoint in {run_dir.checkpoints_dir} is intact")
