"""The four stages of one run: data and tokens (prepare), training (train), evaluation (evaluate), and the record of
what they did (build_record)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import gather_object
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from pipeline import distill, models
from pipeline.common import clock, hardware
from pipeline.common.io import replace_directory
from pipeline.config.load import to_dict, with_absolute_paths
from pipeline.config.schema import PipelineConfig, batch_token_budget
from pipeline.config.train_config import duration_seconds
from pipeline.data.load import LoadedData, load_data
from pipeline.export.convert import export_in_run
from pipeline.models import load_classifier
from pipeline.models.cls_only import restrict_last_layer_to_cls
from pipeline.predict.backend import Backend
from pipeline.predict.runtime import open_backend
from pipeline.run import directory as rundir
from pipeline.run.directory import RunDir
from pipeline.run.exports import choose_export
from pipeline.run.record import RunRecord, Timings
from pipeline.scoring.decide import Scoring, calibrate_and_decide, unfold_earlier_calibration
from pipeline.scoring.evaluation import export_logits, predict_logits
from pipeline.scoring.thresholds import check_setting
from pipeline.text.batching import TokenizedRows
from pipeline.text.tokenization import TokenizationInfo, load_tokenizer, tokenize_splits
from pipeline.text.windows import reads_segments
from pipeline.train.loop import Trainer, TrainResult, seconds_per_row
from pipeline.train.losses import resolve_class_weights
from pipeline.train.pacing import TimeBudget
from pipeline.train.start import RunError
from pipeline.train.trackers import flatten

logger = logging.getLogger("pipeline")


def load_pretrained(key: str, name: str, load):
    """Run `load`; a checkpoint that cannot be found or fetched becomes an error naming the config key."""
    try:
        return load()
    except (OSError, ValueError, KeyError) as error:  # missing files or weights, an unknown architecture
        raise RunError(
            f"{key}: cannot load '{name}' ({rundir.first_line(error)}). Give a local folder written by save_pretrained, or a Hub name with the Hub reachable (see docs/offline.md)"
        ) from None


def save_model_dir(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: Path, decision: dict[str, Any] | None = None
) -> None:
    """model/ is replaced in one rename, so a crash mid-save leaves the previous best model intact; `decision`
    (stage 4's, with the temperature folded into these weights) goes in with them."""

    def fill(staging: Path) -> None:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if decision is not None:
            rundir.write_decision(staging, decision)

    replace_directory(path, fill)


@dataclass
class Prepared:
    """Stages 1 and 2, ready to train on."""

    data: LoadedData
    labels: list[str]
    tokenizer: PreTrainedTokenizerBase
    model: PreTrainedModel
    # Parameters the pretrained checkpoint did not have (the new head): they learn at train.head_learning_rate.
    new_parameters: frozenset[str]
    rows: dict[str, TokenizedRows]
    tokenization: TokenizationInfo
    # Distillation's record for metrics.json (teacher, alpha, T, transfer set); None without a teacher.
    distill: dict[str, Any] | None = None
    # Whether the last layer computes the [CLS] token only (model.last_layer_cls_only, and the model allows it).
    last_layer_cls_only: bool = False


def prepare(config: PipelineConfig, accelerator: Accelerator, timings: Timings, teacher: Any = None) -> Prepared:
    """Stage 1 (data) and 2 (tokenizer, model, fixed-length tokens). The main process goes first, so that
    downloads and caches are made once and reused by the others. With a `teacher` (distill.resolve_teacher), train
    also gets the transfer rows and every row the teacher's logits (pipeline/distill/)."""
    tick = time.perf_counter()
    with accelerator.main_process_first():
        data = load_data(config.data, config.run.seed)
    labels = data.labels
    # Settings that name classes are checked now, not after training.
    check_setting(config.eval.threshold, labels, data.multi_label)
    resolve_class_weights(config.train, data.class_counts)
    if teacher is not None:
        distill.check_teacher(teacher, labels, config.data)
    timings.data_seconds = time.perf_counter() - tick
    tick = time.perf_counter()
    with accelerator.main_process_first():
        tokenizer = load_pretrained(
            "tokenizer.name_or_path", config.tokenizer.name_or_path, lambda: load_tokenizer(config.tokenizer)
        )
        segments = bool(config.data.text_pair_columns) and reads_segments(tokenizer)
        model, new_parameters = load_pretrained(
            "model.name_or_path",
            config.model.name_or_path,
            lambda: models.build_model(config.model, labels, tokenizer, data.multi_label, pairs=segments),
        )
        if segments:
            models.require_segments(model, "model.name_or_path")
        cls_only = config.model.last_layer_cls_only and restrict_last_layer_to_cls(model)
        timings.model_load_seconds = time.perf_counter() - tick
        tick = time.perf_counter()
        splits, transfer_counts = distill.with_transfer_split(config, data, tokenizer.mask_token)
        tokenized, tokenization = tokenize_splits(
            splits,
            tokenizer,
            config.tokenizer,
            Path(config.data.cache_dir).expanduser(),
            models.max_positions(model),
            lambda length: seconds_per_row(model, accelerator, length),
        )
        timings.tokenize_seconds = time.perf_counter() - tick
        if teacher is not None:  # the main process labels (or finds the cache); the others read its cache
            tick = time.perf_counter()
            student_train, distill_record = distill.student_rows(
                config, splits, tokenized, labels, teacher, transfer_counts
            )
            if config.train.distill.init_embeddings:  # every process alike: the projection is deterministic
                distill_record["init_embeddings"] = distill.init_student_embeddings(model, teacher, tokenizer)
            timings.teacher_seconds = time.perf_counter() - tick
    # Every process but the first should have found the main process's cache: recorded, so that it can be checked.
    tokenization.from_cache_by_process = gather_object([tokenization.from_cache])
    rows = {name: TokenizedRows(split) for name, split in tokenized.items() if name in data.splits}
    if teacher is None:
        distill_record = None
    else:
        rows["train"] = student_train
    return Prepared(data, labels, tokenizer, model, new_parameters, rows, tokenization, distill_record, cls_only)


# After each validation: (step, metrics); it may raise to stop the run (pipeline.tune's pruning).
OnValidation = Callable[[int, dict[str, float]], None]


def train(
    config: PipelineConfig,
    prepared: Prepared,
    accelerator: Accelerator,
    timings: Timings,
    started: float,
    on_validation: OnValidation | None = None,
) -> tuple[TrainResult, int]:
    """Stage 3: the best model by train.selection_metric on validation is saved into model/ on every improvement.
    Its seconds go into `timings`: the loop's phases, and the rest (optimizer, loader, trackers, logging) as its
    set-up. `started`: time.perf_counter() when the run began, which a train.time_budget counts from."""
    tick = time.perf_counter()
    run = RunDir(config.run_dir)
    trainer = Trainer(
        prepared.model,
        prepared.rows["train"],
        prepared.rows["validation"],
        config.train,
        accelerator,
        run.path,
        seed=config.run.seed,
        label_names=prepared.labels,
        eval_batch_size=config.eval.batch_size,
        save_best=lambda best: save_model_dir(best, prepared.tokenizer, run.model_dir),
        quick_config_hint=quick_settings_hint(config),
        eval_pooling=config.eval.chunk_pooling,
        class_counts=prepared.data.class_counts,
        new_parameters=prepared.new_parameters,
        # The label audit's training dynamics: the train split's own rows only, not a distillation's transfer set.
        record_dynamics=config.eval.label_audit != "off" and prepared.distill is None,
        eval_batch_tokens=batch_token_budget(config.eval.max_batch_tokens, accelerator.device.type),
        hyperparameters=flatten(with_absolute_paths(to_dict(config))),
        on_validation=on_validation,
        validation_sample=config.eval.validation_sample_rows,
        time_budget=time_budget(config, prepared, started),
    )
    result = trainer.run()
    apart = ("train_seconds", "validation_seconds", "best_model_save_seconds", "checkpoint_seconds")
    for key in (*apart, "validation_pass_seconds"):
        setattr(timings, key, getattr(trainer.timings, key))
    timings.train_setup_seconds = time.perf_counter() - tick - sum(getattr(timings, key) or 0.0 for key in apart)
    return result, accelerator.unwrap_model(trainer.model).num_parameters()


def time_budget(config: PipelineConfig, prepared: Prepared, started: float) -> TimeBudget | None:
    """train.time_budget as the loop plans with it: when it ends, and the rows scored after training."""
    seconds = duration_seconds(config.train.time_budget)
    if seconds is None:
        return None
    rows = prepared.rows
    rows_after = len(rows["validation"]) + len(rows["test"]) + config.eval.predict_speed_rows
    return TimeBudget(seconds, started + seconds, rows_after)


def quick_settings_hint(config: PipelineConfig) -> str:
    """Settings of the user's own config that shorten a long run."""
    length = config.tokenizer.max_length
    shorter = f", tokenizer.max_length={max(64, length // 2)}" if isinstance(length, int) and length > 64 else ""
    return f"fewer steps with train.max_steps=..., or data.max_train_samples=...{shorter}"


@dataclass
class Evaluated:
    """Stage 4's outcome: its scoring, the rows it predicted, the export made in it (export.json's content, or None)
    and the export backend that ran the test pass (None: PyTorch)."""

    scoring: Scoring
    rows_scored: int
    export: dict[str, Any] | None = None
    test_backend: str | None = None


def evaluate(
    config: PipelineConfig,
    prepared: Prepared,
    accelerator: Accelerator,
    timings: Timings,
    validation_logits: torch.Tensor | None = None,
) -> Evaluated:
    """Stage 4 on the best model as saved (calibrated, thresholds chosen on validation), so what is evaluated is what
    users load. `validation_logits`: the training loop's scoring of those weights, reused. Its seconds go into
    `timings` (the test pass and the export apart from the rest)."""
    accelerator.wait_for_everyone()
    tick = time.perf_counter()
    run = RunDir(config.run_dir)
    best_model = load_classifier(run.model_dir)
    unfold_earlier_calibration(best_model, run.model_dir)  # resumed after stage 4 had calibrated it
    if prepared.last_layer_cls_only:  # scored as it was trained and validated
        restrict_last_layer_to_cls(best_model)
    best_model = accelerator.prepare_model(best_model, evaluation_mode=True)
    budget = batch_token_budget(config.eval.max_batch_tokens, accelerator.device.type)

    def score(name: str) -> torch.Tensor:
        return predict_logits(best_model, prepared.rows[name], accelerator, config.eval.batch_size, budget)

    test_pass = TestPass(config, prepared, accelerator, timings, lambda: score("test"))
    scoring = calibrate_and_decide(
        # Without accelerate's autocast wrapper: the fold is checked, and the model saved, in full precision.
        config,
        score("validation") if validation_logits is None else validation_logits,
        test_pass,  # once calibrated and saved: the weights users load
        prepared.rows,
        prepared.labels,
        accelerator.unwrap_model(best_model, keep_fp32_wrapper=False),
        lambda model, decision: save_model_dir(model, prepared.tokenizer, run.model_dir, decision),
        accelerator.is_main_process,
        prepared.tokenization.max_length,
    )
    accelerator.wait_for_everyone()
    # The export made in it is a phase of its own: stage 4 is calibration and the test pass.
    timings.eval_seconds = time.perf_counter() - tick - (timings.export_seconds or 0.0)
    timings.calibration_seconds = timings.eval_seconds - (timings.test_seconds or 0.0)
    scored = ("validation", "test") if validation_logits is None else ("test",)
    rows_scored = sum(len(prepared.rows[name]) for name in scored)
    return Evaluated(scoring, rows_scored, test_pass.export, test_pass.backend)


class TestPass:
    """Stage 4's test pass (calibrate_and_decide's `score_test`). With eval.export, the saved model is exported and
    verified first, and the test split runs on what `--backend auto` then chooses: the scores are those of the model
    users will run, and a faster export makes a faster pass. Under several processes the pass stays on PyTorch,
    shared between them; the export is the main process's."""

    def __init__(
        self, config: PipelineConfig, prepared: Prepared, accelerator: Accelerator, timings: Timings, on_torch
    ):
        self.config, self.prepared, self.accelerator, self.timings = config, prepared, accelerator, timings
        self.on_torch: Callable[[], torch.Tensor] = on_torch
        self.export: dict[str, Any] | None = None
        self.backend: str | None = None  # the export backend that ran it; None: PyTorch

    def __call__(self) -> torch.Tensor:
        if self.config.eval.export != "none":
            with clock.timed(self.timings, "export_seconds"):
                if self.accelerator.is_main_process:
                    splits, length = self.prepared.data.splits, self.prepared.tokenization.max_length
                    self.export = export_in_run(
                        self.config, length, splits["validation"], splits["train"], splits["test"]
                    )
                self.accelerator.wait_for_everyone()
        with clock.timed(self.timings, "test_seconds"):
            engine = self._chosen_export()
            if engine is None:
                return self.on_torch()
            self.backend = engine.name
            logger.info(f"Test pass on {engine.name} ({engine.path.name}), the export --backend auto runs")
            budget = batch_token_budget(self.config.eval.max_batch_tokens, "cpu")
            return export_logits(
                engine.logits, engine.inputs, self.prepared.rows["test"], self.config.eval.batch_size, budget
            )

    def _chosen_export(self) -> Backend | None:
        if self.export is None or self.accelerator.num_processes > 1:
            return None
        run = RunDir(self.config.run_dir)
        choice = choose_export(run.path, run.model_dir, "auto", self.accelerator.device.type)
        return None if choice.variant is None else open_backend(choice.variant, choice.path)


def model_source(config: PipelineConfig) -> str:
    """What the model started from, as config.yaml records it: a local folder absolute, a Hub id as written."""
    if config.model.kind == "encoder":
        return "from scratch"
    return with_absolute_paths(to_dict(config))["model"]["name_or_path"]


def build_record(
    config: PipelineConfig,
    prepared: Prepared,
    training: TrainResult,
    scoring: Scoring,
    timings: Timings,
    eval_rows: int,
    num_parameters: int,
    started_at: str,
    device: dict[str, Any],
) -> RunRecord:
    """metrics.json (pipeline.run.record) from stages 1-4; `device`: hardware.device_info and the CPU threads."""
    finished_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return RunRecord.from_dict(
        {
            "run": {
                "name": config.run.name,
                "model_kind": config.model.kind,
                "model_name_or_path": model_source(config),
                "num_parameters": num_parameters,
                "started_at": started_at,
                "finished_at": finished_at,
            },
            "labels": prepared.labels,
            **{split: result.metrics for split, result in scoring.results.items()},
            "best": {
                "step": training.state.best_step,
                "metric": training.selection_metric,
                f"validation_{training.selection_metric}": training.state.best_score,
            },
            "data": prepared.data.summary,
            "tokenization": prepared.tokenization.to_dict(),
            "timings": timings,
            "throughput": {
                "train_samples_per_second": training.samples_per_second,
                "eval_samples_per_second": eval_rows / timings.eval_seconds,  # rows predicted by stage 4
            },
            "training": training_record(config, prepared, training, device["num_processes"]),
            "device": device,
            "versions": hardware.library_versions(),
            **({"distill": prepared.distill} if prepared.distill is not None else {}),
            "calibration": scoring.calibration,
            "thresholds": scoring.thresholds,
        }
    )


def training_record(config: PipelineConfig, prepared: Prepared, training: TrainResult, processes: int) -> dict:
    """metrics.json `training`: how stage 3 ran."""
    return {
        "global_steps": training.state.global_step,
        # Rows trained on, counted batch by batch (a short last batch counts its own rows), over every process.
        "samples_seen": training.state.samples_seen,
        "epochs_completed": training.epochs_completed,
        "effective_batch_size": training.effective_batch_size,
        "mixed_precision": training.mixed_precision,
        "fast_dropout_modules": training.fast_dropout_modules,
        "last_layer_cls_only": prepared.last_layer_cls_only,
        "num_processes": processes,
        "stopped_early": training.stopped_early,
        "loss": config.train.loss,
        **({"focal_gamma": config.train.focal_gamma} if config.train.loss == "focal" else {}),
        # Per class (multi-label: BCE pos_weight); null: unweighted.
        "class_weights": resolve_class_weights(config.train, prepared.data.class_counts),
        # What learned at train.head_learning_rate (the pretrained checkpoint lacked it); empty: nothing did.
        "head_parameters": sorted(prepared.new_parameters),
        # Validation passes and their seconds; train.time_budget and the steps it allowed (pipeline/train/pacing.py).
        **(dataclasses.asdict(training.pace) if training.pace is not None else {}),
    }
