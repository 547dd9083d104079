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
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState, GradientState
from accelerate.utils import ProjectConfiguration
from tqdm.auto import tqdm
from transformers import PreTrainedModel

from pipeline.common.clock import timed
from pipeline.common.hardware import resolve_mixed_precision
from pipeline.config.schema import TrainConfig, run_length_setting
from pipeline.data.labels import ClassCounts
from pipeline.run.directory import RunDir
from pipeline.run.record import Timings
from pipeline.scoring.evaluation import predict_logits, result_from_logits, selection_metric
from pipeline.text.batching import TokenizedRows, model_inputs, training_loader
from pipeline.train.checkpoints import History, TrainingState, restore_checkpoint, save_checkpoint
from pipeline.train.dropout import use_fast_dropout
from pipeline.train.dynamics import TrainingDynamics
from pipeline.train.losses import build_loss
from pipeline.train.meter import RunningMeter, progress_score
from pipeline.train.optimization import StepPlan, build_optimizer, linear_schedule, plan_steps
from pipeline.train.pacing import Pacer, PaceRecord, TimeBudget, format_duration
from pipeline.train.sample import draw_sample
from pipeline.train.trackers import start_trackers, tracker_names

logger = logging.getLogger(__name__)


def create_accelerator(config: TrainConfig, run_dir: Path) -> Accelerator:
    use_cuda = torch.cuda.is_available()
    if int(os.environ.get("WORLD_SIZE", "1")) == 1:
        # accelerate's process-wide singletons refuse a second Accelerator with other settings (a notebook running
        # two configs); a single-process run owns the process, so it starts clean. Launched runs are left alone.
        AcceleratorState._reset_state(True)
        GradientState._reset_state()
    tracker_names(config.report_to)  # an unknown or missing tracker fails now, before any work; Trainer.run starts them
    return Accelerator(
        mixed_precision=resolve_mixed_precision(config.mixed_precision, use_cuda),
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        # Explicit CPU backend: lets several CPU processes (torchrun --cpu) form one gloo group, not each run alone.
        cpu=not use_cuda,
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
    # (N, C) each training row's probabilities as training saw them, per epoch averaged (the label audit); or None.
    train_dynamics: np.ndarray | None = None
    # Validation passes and their seconds; under train.time_budget, the budget and the steps it allowed.
    pace: PaceRecord | None = None

    @property
    def samples_per_second(self) -> float:
        return self.state.samples_seen / max(self.state.train_seconds, 1e-9)

    @property
    def epochs_completed(self) -> float:
        return epochs_completed(self.state, self.plan)


def describe_rows(train_rows: TokenizedRows) -> tuple[str, str]:
    """The unit of training rows and an epoch's count: "1,200 samples", or "3,480 windows of 1,200 documents" when
    long texts were chunked."""
    unit = "samples" if train_rows.documents is None else "windows"
    per_epoch = f"{len(train_rows):,} {unit}"
    if train_rows.documents is not None:
        per_epoch += f" of {train_rows.num_documents:,} documents"
    return unit, per_epoch


def epochs_completed(state: TrainingState, plan: StepPlan) -> float:
    return state.epoch + state.batches_seen_in_epoch / plan.batches_per_epoch


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
        hyperparameters: dict[str, Any] | None = None,
        on_validation: Callable[[int, dict[str, float]], None] | None = None,
        record_dynamics: bool = False,
        validation_sample: int | None = None,
        time_budget: TimeBudget | None = None,
    ):
        self.config = config
        self.accelerator = accelerator
        self.run_dir = RunDir(run_dir)
        self.validation_rows = validation_rows
        # eval.validation_sample_rows: what passes between steps score; the final pass scores the whole split.
        self.sample = draw_sample(validation_rows, validation_sample, seed)
        self.label_names = label_names
        self.eval_batch_size = eval_batch_size
        self.eval_batch_tokens = eval_batch_tokens
        self.save_best = save_best
        self.quick_config_hint = quick_config_hint
        self.eval_pooling = eval_pooling
        self.selection_metric = selection_metric(config.selection_metric, validation_rows.multi_label, class_counts)
        self.best_validation_logits: torch.Tensor | None = None
        # hyperparameters: what trackers store (the resolved config, flattened). on_validation: called on every process
        # after each validation with (step, metrics and "selected"); it may raise to stop the run (pipeline.tune prunes).
        self.hyperparameters, self.on_validation = hyperparameters or {}, on_validation
        self.history = History(self.run_dir, enabled=accelerator.is_main_process)
        self.dynamics = TrainingDynamics(len(train_rows), record_dynamics and not train_rows.multi_label)
        # This process's steps, validation passes, saves and checkpoints (metrics.json timings).
        self.timings = Timings(train_seconds=0.0)
        self._prepare_training(model, train_rows, new_parameters, class_counts, seed, time_budget)

    def _prepare_training(
        self,
        model: PreTrainedModel,
        train_rows: TokenizedRows,
        new_parameters: frozenset[str],
        class_counts: ClassCounts | None,
        seed: int,
        time_budget: TimeBudget | None,
    ) -> None:
        """The loader, optimizer, schedule, loss and pace: what the steps run with, prepared by accelerate."""
        config, accelerator = self.config, self.accelerator
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
        self.scheduler = linear_schedule(self.optimizer, self.plan)
        self.state = TrainingState()
        self.loss = build_loss(config, class_counts)
        self.window_samples = 0  # samples in the current accumulation window, this process
        self.rows_unit, self.rows_per_epoch = describe_rows(train_rows)
        self.train_rows = len(train_rows)
        self.pacer = Pacer(
            config, self.plan, accelerator, len(self.sample.rows), self.effective_batch_size, time_budget
        )

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

    def _validate(self, epoch_float: float, final: bool = False) -> bool:
        """One validation pass, timed: of the sample between steps; of the whole split at the end, whose logits stage 4
        then reuses instead of scoring the same weights again (the sample's rows of it choose, as before)."""
        tick = time.perf_counter()
        with self._timed_pass():
            rows = self.validation_rows if final else self.sample.rows
            logits = predict_logits(self.model, rows, self.accelerator, self.eval_batch_size, self.eval_batch_tokens)
            if final and not self.sample.is_whole:
                stopping = self._record_validation(logits[torch.as_tensor(self.sample.windows)], epoch_float, logits)
            else:
                stopping = self._record_validation(logits, epoch_float)
        # The pace counts the pass with its save: both are what a pass costs the run.
        self.pacer.passed(time.perf_counter() - tick, self.state.global_step, self.state.train_seconds)
        return stopping

    @contextlib.contextmanager
    def _timed_pass(self) -> Iterator[None]:
        """One validation pass's seconds into timings, the best-model save it triggers apart."""
        timings, tick, saves = self.timings, time.perf_counter(), self.timings.best_model_save_seconds or 0.0
        yield
        seconds = time.perf_counter() - tick - ((timings.best_model_save_seconds or 0.0) - saves)
        timings.validation_seconds = (timings.validation_seconds or 0.0) + seconds
        timings.validation_pass_seconds = [*(timings.validation_pass_seconds or []), round(seconds, 3)]

    def _record_validation(
        self, logits: torch.Tensor, epoch_float: float, whole_logits: torch.Tensor | None = None
    ) -> bool:
        """Log the metrics of `logits` (of the sample's rows), keep the model (and the whole split's logits, which
        finetune's evaluation reuses, where there are) if it is the best so far; True when early stopping triggers."""
        result = result_from_logits(logits, self.sample.rows, self.label_names, self.eval_pooling)
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
        scalars = {key: value for key, value in result.metrics.items() if isinstance(value, (int, float))}
        self.accelerator.log(
            {**{f"eval/{k}": v for k, v in scalars.items()}, "eval/loss": result.loss}, state.global_step
        )
        if self.on_validation is not None:
            self.on_validation(state.global_step, {**scalars, "loss": result.loss, "selected": score})
        if is_better(score, result.loss, state.best_score, state.best_loss):
            state.best_score, state.best_loss, state.best_step = score, result.loss, state.global_step
            state.evals_without_improvement = 0
            self.best_validation_logits = logits if self.sample.is_whole else whole_logits
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

    def _announce_plan(self) -> None:
        """After the first steps: the time training will take, and what a time budget allowed."""
        self.progress.total = self.plan.total_steps  # a time budget may have set it
        self.progress.refresh()
        if self.pacer.budget is not None:
            self.accelerator.print(
                f"Planned to the {self.pacer.budget_summary(self.rows_unit, self.train_rows)}; validation "
                f"{'as scheduled by train.eval_budget' if self.config.eval_every_steps == 'auto' else 'as configured'}"
            )
        seconds_per_step = (self.state.train_seconds - self.pacer.started[1]) / max(self.pacer.steps_timed, 1)
        remaining = seconds_per_step * (self.plan.total_steps - self.state.global_step)
        message = (
            f"Training will take about {format_duration(remaining)} more at the measured "
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
        names = tracker_names(config.report_to, announce=accelerator.is_main_process)
        start_trackers(accelerator, names, self.run_dir.path, self.hyperparameters)
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
        self.pacer.begin(state.global_step, state.train_seconds)
        # A checkpoint is saved after its step's validation, so a run resumed at its last step has validated already.
        self.evaluated_at_step = state.global_step if config.resume else -1
        stopped_early = False
        self.model.train()
        while state.global_step < plan.total_steps and not stopped_early:
            stopped_early = self._run_epoch()
        self.progress.close()

        if self.evaluated_at_step != state.global_step and state.global_step > 0 and not stopped_early:
            self._validate(epochs_completed(self.state, self.plan), final=True)
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
            train_dynamics=self.dynamics.result(accelerator, len(self.label_names)),
            pace=self.pacer.record,
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
            self.dynamics.add(batch["row_index"], logits, self.state.epoch)
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
        if self.pacer.after_step(state.global_step, state.train_seconds):
            self._announce_plan()
        if state.global_step % config.log_every_steps == 0 or state.global_step == self.plan.total_steps:
            self._log_training(epochs)

        end_of_epoch = state.batches_seen_in_epoch == self.plan.batches_per_epoch
        stopped_early = False
        if self.pacer.is_due(state.global_step, end_of_epoch):
            patience_exhausted = self._validate(epochs, final=state.global_step == self.plan.total_steps)
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
