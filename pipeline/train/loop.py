"""Stage 3: the one training loop, on accelerate, for BERT and the from-scratch encoder alike:
`Trainer(model, train_rows, validation_rows, config.train, accelerator, run_dir, ...).run()`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState, GradientState
from accelerate.utils import ProjectConfiguration
from tqdm.auto import tqdm
from transformers import PreTrainedModel, get_linear_schedule_with_warmup

from pipeline.common.clock import timed
from pipeline.common.extras import installed
from pipeline.common.hardware import resolve_mixed_precision
from pipeline.config.schema import TrainConfig, run_length_setting
from pipeline.data.labels import ClassCounts
from pipeline.run.directory import RunDir
from pipeline.run.record import Timings
from pipeline.scoring.evaluation import predict_logits, result_from_logits, selection_metric
from pipeline.text.batching import TokenizedRows, model_inputs, training_loader
from pipeline.train.checkpoints import History, TrainingState, restore_checkpoint, save_checkpoint
from pipeline.train.dropout import use_fast_dropout
from pipeline.train.losses import build_loss
from pipeline.train.meter import RunningMeter, progress_score
from pipeline.train.optimization import StepPlan, build_optimizer, plan_steps

logger = logging.getLogger(__name__)

# Optimizer steps timed before the run's duration is estimated.
ESTIMATE_AFTER_STEPS = 5


def create_accelerator(config: TrainConfig, run_dir: Path) -> Accelerator:
    use_cuda = torch.cuda.is_available()
    if int(os.environ.get("WORLD_SIZE", "1")) == 1:
        # accelerate's process-wide singletons refuse a second Accelerator with other settings (a notebook running
        # two configs); a single-process run owns the process, so it starts clean. Launched runs are left alone.
        AcceleratorState._reset_state(True)
        GradientState._reset_state()
    return Accelerator(
        mixed_precision=resolve_mixed_precision(config.mixed_precision, use_cuda),
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        # Explicit CPU backend: lets several CPU processes (torchrun --cpu) form one gloo group, not each run alone.
        cpu=not use_cuda,
        log_with="tensorboard" if installed("tensorboard") else None,
        project_config=ProjectConfiguration(project_dir=str(run_dir), logging_dir=str(RunDir(run_dir).tensorboard_dir)),
    )


@dataclass
class TrainResult:
    state: TrainingState
    plan: StepPlan
    effective_batch_size: int
    mixed_precision: str
    stopped_early: bool
    # Dropout modules drawing masks through pipeline.train.dropout (0: torch's dropout; none on a GPU).
    fast_dropout_modules: int = 0
    # The validation logits (N, C) of the best model, when this process scored it (not a resumed run's earlier best).
    best_validation_logits: torch.Tensor | None = None
    selection_metric: str = "accuracy"

    @property
    def samples_per_second(self) -> float:
        return self.state.samples_seen / max(self.state.train_seconds, 1e-9)

    @property
    def epochs_completed(self) -> float:
        return epochs_completed(self.state, self.plan)


def epochs_completed(state: TrainingState, plan: StepPlan) -> float:
    return state.epoch + state.batches_seen_in_epoch / plan.batches_per_epoch


def _format_duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


class Trainer:
    """Holds what one training run shares between its steps; `run()` is the loop."""

    def __init__(
        self,
        model: PreTrainedModel,
        train_rows: TokenizedRows,
        validation_rows: TokenizedRows,
        config: TrainConfig,
        accelerator: Accelerator,
        run_dir: Path,
        seed: int,
        label_names: list[str],
        eval_batch_size: int,
        save_best: Callable[[PreTrainedModel], None],
        quick_config_hint: str = "",
        eval_pooling: str = "mean",
        class_counts: ClassCounts | None = None,
        new_parameters: frozenset[str] = frozenset(),
        eval_batch_tokens: int | None = None,
    ):
        self.config = config
        self.accelerator = accelerator
        self.run_dir = RunDir(run_dir)
        self.validation_rows = validation_rows
        self.label_names = label_names
        self.eval_batch_size = eval_batch_size
        self.eval_batch_tokens = eval_batch_tokens
        self.save_best = save_best
        self.quick_config_hint = quick_config_hint
        self.eval_pooling = eval_pooling
        self.selection_metric = selection_metric(config.selection_metric, validation_rows.multi_label, class_counts)
        self.best_validation_logits: torch.Tensor | None = None
        self.history = History(self.run_dir, enabled=accelerator.is_main_process)
        # This process's steps, validation passes, saves and checkpoints (metrics.json timings).
        self.timings = Timings(train_seconds=0.0)

        window = config.gradient_accumulation_steps * accelerator.num_processes  # batches per optimizer step
        self.effective_batch_size = config.per_device_batch_size * window
        loader = training_loader(
            train_rows, config.per_device_batch_size, seed, config.group_by_length, config.trim_padding, window
        )
        self.batch_sampler = loader.batch_sampler
        # On the CPU, bernoulli_ was a fifth of the step (pipeline/train/dropout.py); a GPU's dropout is fused already.
        self.fast_dropout_modules = (
            use_fast_dropout(model) if config.fast_dropout and accelerator.device.type == "cpu" else 0
        )
        optimizer = build_optimizer(model, config, new_parameters)
        self.model, self.optimizer, self.loader = accelerator.prepare(model, optimizer, loader)
        self.plan = plan_steps(len(self.loader), config)
        # Stepped once per optimizer step by this loop (not prepared: accelerate would step it once per process).
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, self.plan.warmup_steps, self.plan.total_steps)
        self.state = TrainingState()
        self.loss = build_loss(config, class_counts)
        self.window_samples = 0  # samples in the current accumulation window, this process
        # "1,200 samples", or "3,480 windows of 1,200 documents" when long texts were chunked
        self.rows_unit = "samples" if train_rows.documents is None else "windows"
        self.rows_per_epoch = f"{len(train_rows):,} {self.rows_unit}"
        if train_rows.documents is not None:
            self.rows_per_epoch += f" of {train_rows.num_documents:,} documents"

    def _window_total(self, local_samples: int) -> int:
        """Rows in this optimizer window over all processes; only an epoch's last window may split unevenly, so only
        there do the processes add theirs up (one collective an epoch)."""
        processes = self.accelerator.num_processes
        last_of_epoch = self.state.batches_seen_in_epoch + 1 == self.plan.batches_per_epoch
        if processes == 1 or not last_of_epoch:
            return local_samples * processes
        count = torch.tensor(local_samples, device=self.accelerator.device)
        return int(self.accelerator.reduce(count, reduction="sum").item())

    def _rescale_short_window(self, window_total: int) -> None:
        """Make the update the mean over the rows actually in this window: a full window is the exact mean already
        (loss / per_device_batch_size, accelerate / accumulation, DDP mean); a short last window is rescaled here."""
        if window_total == self.effective_batch_size:
            return
        factor = self.effective_batch_size / window_total
        for parameter in self.model.parameters():
            if parameter.grad is not None:
                parameter.grad.mul_(factor)

    def _validate(self, epoch_float: float) -> bool:
        with self._timed_pass():
            logits = predict_logits(
                self.model, self.validation_rows, self.accelerator, self.eval_batch_size, self.eval_batch_tokens
            )
            return self._record_validation(logits, epoch_float)

    @contextlib.contextmanager
    def _timed_pass(self) -> Iterator[None]:
        """One validation pass's seconds into timings, the best-model save it triggers apart."""
        timings, tick, saves = self.timings, time.perf_counter(), self.timings.best_model_save_seconds or 0.0
        yield
        seconds = time.perf_counter() - tick - ((timings.best_model_save_seconds or 0.0) - saves)
        timings.validation_seconds = (timings.validation_seconds or 0.0) + seconds
        timings.validation_pass_seconds = [*(timings.validation_pass_seconds or []), round(seconds, 3)]

    def _record_validation(self, logits: torch.Tensor, epoch_float: float) -> bool:
        """Log the metrics, keep the model (and its logits, which finetune's evaluation reuses) if it is the best so
        far; True when early stopping triggers."""
        result = result_from_logits(logits, self.validation_rows, self.label_names, self.eval_pooling)
        state = self.state
        accuracy = result.metrics["accuracy"]
        score = result.metrics[self.selection_metric]
        self.history.append(
            {
                "step": state.global_step,
                "epoch": round(epoch_float, 4),
                "elapsed_seconds": round(state.train_seconds, 3),
                "eval_loss": result.loss,
                "eval_accuracy": accuracy,
                "eval_macro_f1": result.metrics["macro_f1"],
                f"eval_{self.selection_metric}": score,
            }
        )
        self.accelerator.log({"eval/accuracy": accuracy, "eval/loss": result.loss}, step=state.global_step)
        if is_better(score, result.loss, state.best_score, state.best_loss):
            state.best_score, state.best_loss, state.best_step = score, result.loss, state.global_step
            state.evals_without_improvement = 0
            self.best_validation_logits = logits
            if self.accelerator.is_main_process:
                with timed(self.timings, "best_model_save_seconds"):
                    self.save_best(self.accelerator.unwrap_model(self.model))
            self.accelerator.wait_for_everyone()
        else:
            state.evals_without_improvement += 1
        patience = self.config.early_stopping_patience
        return patience is not None and state.evals_without_improvement >= patience

    def _warn_if_undecided(self) -> None:
        """The selection metric was the same at every evaluation (a multi-label micro-F1 of 0 while no class yet
        scores above 0.5): it told no checkpoint from another, so the validation loss chose; say so."""
        key = f"eval_{self.selection_metric}"
        evaluations = [record[key] for record in self.history.records if key in record]
        scores = set(evaluations)
        if len(evaluations) < 2 or len(scores) > 1 or scores == {1.0} or not self.accelerator.is_main_process:
            return  # a perfect score at every evaluation leaves nothing to move
        run_length = run_length_setting(self.config.epochs, self.config.max_steps)
        logger.warning(
            f"Validation {self.selection_metric} was {scores.pop():.4f} at every one of {len(evaluations)} evaluations, so the model kept (step {self.state.best_step}) is the one with the lowest validation loss; more {run_length} or a higher train.learning_rate lets the scores move"
        )

    def _announce_estimate(self, seconds_per_step: float) -> None:
        remaining = seconds_per_step * (self.plan.total_steps - self.state.global_step)
        message = (
            f"Training will take about {_format_duration(remaining)} more at the measured "
            f"{self.effective_batch_size / seconds_per_step:.1f} {self.rows_unit}/s "
            f"({self.plan.total_steps} steps; {self.rows_per_epoch} per epoch)"
        )
        if remaining > 60 * self.config.warn_if_longer_than_minutes and self.quick_config_hint:
            message += f"; to shorten it: {self.quick_config_hint}"
        self.accelerator.print(message)

    def run(self) -> TrainResult:
        config, accelerator, state, plan = self.config, self.accelerator, self.state, self.plan
        if config.resume:
            restore_checkpoint(accelerator, self.run_dir, state, self.scheduler, self.history)
        else:
            self.history.start_fresh()
        accelerator.init_trackers("tensorboard")
        accelerator.print(
            f"Training {plan.total_steps} optimizer steps ({plan.steps_per_epoch} per epoch); effective batch {self.effective_batch_size} = {config.per_device_batch_size} per device x {config.gradient_accumulation_steps} accumulation steps x {accelerator.num_processes} processes; mixed precision: {accelerator.mixed_precision}"
        )
        self.progress = tqdm(
            total=plan.total_steps,
            initial=state.global_step,
            desc="Training",
            unit="step",
            disable=not accelerator.is_local_main_process,
            dynamic_ncols=True,
        )
        self.meter = RunningMeter(accelerator.device, state.global_step, state.train_seconds)
        # A checkpoint is saved after its step's validation, so a run resumed at its last step has validated already.
        self.evaluated_at_step = state.global_step if config.resume else -1
        stopped_early = False
        self.model.train()
        while state.global_step < plan.total_steps and not stopped_early:
            stopped_early = self._run_epoch()
        self.progress.close()

        if self.evaluated_at_step != state.global_step and state.global_step > 0 and not stopped_early:
            self._validate(epochs_completed(self.state, self.plan))
        self._warn_if_undecided()
        if stopped_early:
            accelerator.print(
                f"Early stopping at step {state.global_step}: no better validation {self.selection_metric} (nor the same at a lower loss) in {config.early_stopping_patience} evaluations (best {state.best_score:.4f} at step {state.best_step})"
            )
        return TrainResult(
            state=state,
            plan=plan,
            effective_batch_size=self.effective_batch_size,
            mixed_precision=accelerator.mixed_precision,
            stopped_early=stopped_early,
            fast_dropout_modules=self.fast_dropout_modules,
            best_validation_logits=self.best_validation_logits,
            selection_metric=self.selection_metric,
        )

    def _run_epoch(self) -> bool:
        """Train from the current position to the end of the epoch (or of training); True on early stopping."""
        state = self.state
        # accelerate's loader re-sets its sampler's epoch from its own count, which starts at 0 in a resumed run.
        self.loader.set_epoch(state.epoch)
        self.batch_sampler.set_epoch(state.epoch)
        loader = self.loader
        if state.batches_seen_in_epoch:
            loader = self.accelerator.skip_first_batches(self.loader, state.batches_seen_in_epoch)
        tick = time.perf_counter()
        for batch in loader:
            stepped = self._train_on_batch(batch)
            if not stepped:
                continue
            now = time.perf_counter()
            state.train_seconds += now - tick
            self.timings.train_seconds += now - tick  # this process's share (state's counts every resumed one)
            stopped_early = self._after_optimizer_step()
            tick = time.perf_counter()  # evaluation and checkpoints do not count as training time
            if stopped_early:
                return True
            if state.global_step >= self.plan.total_steps:
                return False
        return False

    def _train_on_batch(self, batch: dict[str, torch.Tensor]) -> bool:
        """Forward and backward one micro-batch; step the optimizer when its window is complete (returns True)."""
        config, accelerator = self.config, self.accelerator
        batch_size = batch["labels"].shape[0]
        with accelerator.accumulate(self.model):
            logits = self.model(**model_inputs(batch)).logits  # (B, C)
            loss_sum = self.loss(logits, batch)  # summed over the micro-batch's rows
            # accelerate divides by the accumulation steps; this makes the window's gradient a mean (_rescale_short_window).
            accelerator.backward(loss_sum / config.per_device_batch_size)
            self.window_samples += batch_size
            if accelerator.sync_gradients:
                self._rescale_short_window(self._window_total(self.window_samples))
                self.window_samples = 0
                if config.max_grad_norm > 0:
                    accelerator.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)
                self.optimizer.step()
                if not accelerator.optimizer_step_was_skipped:
                    self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
        self.meter.add(loss_sum.detach(), logits.detach(), batch["labels"])
        self.state.batches_seen_in_epoch += 1
        self.state.samples_seen += batch_size * accelerator.num_processes
        return accelerator.sync_gradients

    def _after_optimizer_step(self) -> bool:
        """Bookkeeping after each optimizer step: log, evaluate, checkpoint. True when early stopping triggers."""
        config, state = self.config, self.state
        state.global_step += 1
        self.progress.update(1)
        epochs = epochs_completed(self.state, self.plan)
        if state.global_step == ESTIMATE_AFTER_STEPS < self.plan.total_steps and not config.resume:
            self._announce_estimate(state.train_seconds / state.global_step)
        if state.global_step % config.log_every_steps == 0 or state.global_step == self.plan.total_steps:
            self._log_training(epochs)

        end_of_epoch = state.batches_seen_in_epoch == self.plan.batches_per_epoch
        evaluation_due = (
            state.global_step % config.eval_every_steps == 0 if config.eval_every_steps else end_of_epoch
        ) or state.global_step == self.plan.total_steps
        stopped_early = False
        if evaluation_due:
            patience_exhausted = self._validate(epochs)
            # Running out of patience on the last planned step is not stopping early: every step was done.
            stopped_early = patience_exhausted and state.global_step < self.plan.total_steps
            self.evaluated_at_step = state.global_step
            self.progress.set_postfix({f"val_{self.selection_metric}": f"{state.best_score:.4f}"}, refresh=False)
        if end_of_epoch:
            state.epoch += 1
            state.batches_seen_in_epoch = 0
        if config.save_every_steps and state.global_step % config.save_every_steps == 0:
            trainer_state = {"state": state.state_dict(), "scheduler": self.scheduler.state_dict()}
            with timed(self.timings, "checkpoint_seconds"):
                save_checkpoint(self.accelerator, self.run_dir, state.global_step, trainer_state)
        return stopped_early

    def _log_training(self, epochs: float) -> None:
        record = {
            "step": self.state.global_step,
            "epoch": round(epochs, 4),
            "elapsed_seconds": round(self.state.train_seconds, 3),
            **self.meter.read_and_reset(self.state.global_step, self.state.train_seconds, self.effective_batch_size),
            "learning_rate": self.scheduler.get_last_lr()[0],
        }
        if not math.isfinite(record["loss"]):
            self.progress.close()
            best = "no model was saved"
            if self.state.best_step:
                best = f"the best model so far (step {self.state.best_step}) is in {self.run_dir.model_dir}"
            raise TrainingDiverged(
                f"training diverged by step {self.state.global_step}: the loss is {record['loss']} (learning rate {record['learning_rate']:.3g}); lower train.learning_rate (now {self.config.learning_rate:g}) or keep train.max_grad_norm on; {best}"
            )
        self.history.append(record)
        self.accelerator.log({f"train/{k}": v for k, v in record.items() if k != "step"}, step=record["step"])
        self.progress.set_postfix(
            {
                "loss": f"{record['loss']:.4f}",
                **progress_score(record, self.selection_metric),
                "samples_s": f"{record['samples_per_second']:.1f}",
            }
        )


def is_better(score: float, loss: float, best_score: float, best_loss: float | None) -> bool:
    """A higher selection score, or the same at a lower loss: scores often tie (multi-label micro-F1 stays 0 at
    first; accuracy on a small split moves in steps of 1/N) while the loss still tells the better model."""
    return score > best_score or (score == best_score and best_loss is not None and loss < best_loss)


def seconds_per_row(model: torch.nn.Module, accelerator: Accelerator, length: int, batch_size: int = 8) -> float:
    """Measured seconds to train one row of `length` tokens here (what `auto` weighs to choose a chunk length)."""
    input_ids = torch.full((batch_size, length), 100, dtype=torch.long, device=accelerator.device)
    mask = torch.ones_like(input_ids)
    model.to(accelerator.device).train()
    timings = []
    with torch.random.fork_rng(devices=[]):  # dropout draws here must not shift the run's random stream
        for _ in range(3):  # the first call pays one-off costs; the best of the other two is the cost
            tick = time.perf_counter()
            with accelerator.autocast():
                logits = model(input_ids=input_ids, attention_mask=mask).logits
            logits.float().sum().backward()
            timings.append(time.perf_counter() - tick)
    model.zero_grad(set_to_none=True)
    return min(timings[1:]) / batch_size


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite: the run stops, keeping the best model saved so far."""
