"""Fine-tune a text classifier: data -> tokenization -> training -> evaluation, into one run directory.

    python -m pipeline.finetune --config configs/ag_news_bert.yaml [section.key=value ...]
    accelerate launch -m pipeline.finetune --config ...        # several GPUs or nodes, same code

An earlier run under the same name is replaced only once this one has loaded its data, tokenizer and model: a typo
in a path never costs the earlier run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import torch
import transformers
from accelerate import Accelerator
from accelerate.utils import gather_object, set_seed
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from pipeline import distill, models
from pipeline.card.write import write_model_card
from pipeline.common import clock, hardware
from pipeline.common.errors import one_line
from pipeline.common.io import interrupted_exit_code, replace_directory, terminated_as_interrupt
from pipeline.config.load import load_config, to_dict, with_absolute_paths
from pipeline.config.schema import ConfigError, PipelineConfig, batch_token_budget
from pipeline.data.label_scheme import UnknownLabels, leave_out_hint
from pipeline.data.load import DataError, LoadedData, load_data
from pipeline.export.convert import export_after_training
from pipeline.models import load_classifier
from pipeline.models.cls_only import restrict_last_layer_to_cls
from pipeline.predict.speed import end_of_run_speed
from pipeline.report import ReportError, plot_confusion_matrix, write_report
from pipeline.run import directory as rundir
from pipeline.run import ownership
from pipeline.run.directory import RunDir, RunDirError
from pipeline.run.record import Baseline, RunRecord, Timings
from pipeline.scoring.baseline import run_baseline
from pipeline.scoring.decide import Scoring, calibrate_and_decide, unfold_earlier_calibration
from pipeline.scoring.evaluation import EvalResult, predict_logits, write_predictions
from pipeline.scoring.thresholds import check_setting
from pipeline.text.batching import TokenizedRows
from pipeline.text.tokenization import TokenizationInfo, load_tokenizer, tokenize_splits
from pipeline.text.windows import reads_segments
from pipeline.train.loop import Trainer, TrainingDiverged, TrainResult, create_accelerator, seconds_per_row
from pipeline.train.losses import resolve_class_weights
from pipeline.train.start import RunError, check_run_dir, start_run_dir

logger = logging.getLogger("pipeline")

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "ag_news_bert.yaml"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.finetune",
        description="Fine-tune BERT (or the from-scratch encoder) and evaluate it; writes runs/<run.name>/.",
    )
    parser.add_argument("--config", type=Path, default=None, help=f"YAML config (default: {DEFAULT_CONFIG.name})")
    parser.add_argument(
        "overrides", nargs="*", metavar="section.key=value", help="override any setting, e.g. train.learning_rate=3e-5"
    )
    return parser.parse_args(argv)


def resolve_config(args: argparse.Namespace) -> PipelineConfig:
    default = DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None
    return load_config(args.config or default, args.overrides)


# ---------------------------------------------------------------------------------------------------------------
# Stages


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


def train(
    config: PipelineConfig, prepared: Prepared, accelerator: Accelerator, timings: Timings
) -> tuple[TrainResult, int]:
    """Stage 3: the best model by train.selection_metric on validation is saved into model/ on every improvement.
    Its seconds go into `timings`: the loop's phases, and the rest (optimizer, loader, trackers, logging) as its set-up."""
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
        eval_batch_tokens=batch_token_budget(config.eval.max_batch_tokens, accelerator.device),
    )
    result = trainer.run()
    apart = ("train_seconds", "validation_seconds", "best_model_save_seconds", "checkpoint_seconds")
    for key in (*apart, "validation_pass_seconds"):
        setattr(timings, key, getattr(trainer.timings, key))
    timings.train_setup_seconds = time.perf_counter() - tick - sum(getattr(timings, key) or 0.0 for key in apart)
    return result, accelerator.unwrap_model(trainer.model).num_parameters()


def quick_settings_hint(config: PipelineConfig) -> str:
    """Settings of the user's own config that shorten a long run."""
    length = config.tokenizer.max_length
    shorter = f", tokenizer.max_length={max(64, length // 2)}" if isinstance(length, int) and length > 64 else ""
    return f"fewer steps with train.max_steps=..., or data.max_train_samples=...{shorter}"


def evaluate(
    config: PipelineConfig,
    prepared: Prepared,
    accelerator: Accelerator,
    timings: Timings,
    validation_logits: torch.Tensor | None = None,
) -> tuple[Scoring, int]:
    """Stage 4 on the best model as saved (calibrated, thresholds chosen on validation), so what is evaluated is what
    users load. `validation_logits`: the training loop's scoring of those weights, reused. Returns the scoring and the
    rows it predicted; its seconds go into `timings` (the test pass apart from the rest)."""
    accelerator.wait_for_everyone()
    tick = time.perf_counter()
    run = RunDir(config.run_dir)
    best_model = load_classifier(run.model_dir)
    unfold_earlier_calibration(best_model, run.model_dir)  # resumed after stage 4 had calibrated it
    if prepared.last_layer_cls_only:  # scored as it was trained and validated
        restrict_last_layer_to_cls(best_model)
    best_model = accelerator.prepare_model(best_model, evaluation_mode=True)

    def score(name: str) -> torch.Tensor:
        budget = batch_token_budget(config.eval.max_batch_tokens, accelerator.device)
        return predict_logits(best_model, prepared.rows[name], accelerator, config.eval.batch_size, budget)

    def score_test() -> torch.Tensor:
        with clock.timed(timings, "test_seconds"):
            return score("test")

    scored = ("validation", "test") if validation_logits is None else ("test",)
    scoring = calibrate_and_decide(
        # Without accelerate's autocast wrapper: the fold is checked, and the model saved, in full precision.
        config,
        score("validation") if validation_logits is None else validation_logits,
        score_test,  # once calibrated: the weights users load
        prepared.rows,
        prepared.labels,
        accelerator.unwrap_model(best_model, keep_fp32_wrapper=False),
        lambda model, decision: save_model_dir(model, prepared.tokenizer, run.model_dir, decision),
        accelerator.is_main_process,
        prepared.tokenization.max_length,
    )
    accelerator.wait_for_everyone()
    timings.eval_seconds = time.perf_counter() - tick
    timings.calibration_seconds = timings.eval_seconds - (timings.test_seconds or 0.0)
    return scoring, sum(len(prepared.rows[name]) for name in scored)


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
    }


def set_cpu_threads(setting: int | None, accelerator: Accelerator) -> dict[str, Any]:
    """On a CPU, PyTorch's threads per process (hardware.cpu_threads), stated and recorded; nothing on a GPU."""
    if accelerator.device.type != "cpu":
        return {}
    threads, reason = hardware.cpu_threads(setting)
    torch.set_num_threads(threads)
    accelerator.print(f"CPU threads: {threads} per process ({reason})")
    return {"cpu_threads": threads, "cpu_threads_reason": reason}


def run(config: PipelineConfig, started: float | None = None) -> dict[str, Any]:
    """Stages 1-4 for one config; returns metrics.json's content. `started`: when the process started, on the
    perf_counter clock (clock.process_start), so that timings count the start-up; None: from this call."""
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    start = time.perf_counter() if started is None else started
    timings = Timings(startup_seconds=None if started is None else time.perf_counter() - started)
    with clock.timed(timings, "setup_seconds"):
        accelerator = create_accelerator(config.train, config.run_dir)
        if accelerator.is_main_process:  # before this process claims it: the other ranks would see its own lock
            ownership.refuse_if_in_use(config.run_dir)
        check_run_dir(config)
        teacher = distill.resolve_teacher(config.train.distill) if config.train.distill.teacher else None
    claim = ownership.claimed(config.run_dir) if accelerator.is_main_process else contextlib.nullcontext()
    keep_memory = config.train.keep_freed_memory and accelerator.device.type == "cpu"
    with claim, hardware.torch_threads_restored(), hardware.freed_memory_kept(keep_memory) as memory_kept:
        with clock.timed(timings, "setup_seconds"):
            accelerator.wait_for_everyone()  # every process samples the load at once, none of them busy yet
            threads = set_cpu_threads(config.train.cpu_threads, accelerator)
            set_seed(config.run.seed)
        prepared = prepare(config, accelerator, timings, teacher)
        with clock.timed(timings, "setup_seconds"):
            if accelerator.is_main_process:
                start_run_dir(config, prepared.data)
            accelerator.wait_for_everyone()
        training, num_parameters = train(config, prepared, accelerator, timings)
        scoring, eval_rows = evaluate(config, prepared, accelerator, timings, training.best_validation_logits)
        timings.close(time.perf_counter() - start)  # closed again at the end; metrics.json is written before it
        device = {**hardware.device_info(accelerator.device, accelerator.num_processes), **threads}
        device["freed_memory_kept"] = memory_kept
        record = build_record(
            config, prepared, training, scoring, timings, eval_rows, num_parameters, started_at, device
        )
        if accelerator.is_main_process:
            finish_run(config, prepared, record, scoring.results["test"], start)
        accelerator.wait_for_everyone()
    # Closes the trackers and, under several processes, the process group: nothing collective may follow.
    accelerator.end_training()
    if config.eval.export != "none" and accelerator.is_main_process:  # ONNX export, verified (pipeline.export)
        splits = prepared.data.splits
        with clock.timed(timings, "export_seconds"):
            export_after_training(config, splits["validation"], splits["train"], splits["test"], report=False)
    if accelerator.is_main_process:
        close_timings(config, record, start, report_again=config.eval.export != "none")
    return record.to_dict()


def close_timings(config: PipelineConfig, record: RunRecord, start: float, report_again: bool) -> None:
    """metrics.json rewritten with the whole process timed (the outputs and the export, which follow its first
    writing, included), and the run's last line, which shows the split. `report_again`: the report is written again
    (after an export, so that it shows it), with the timings up to it."""
    run, timings = RunDir(config.run_dir), record.timings
    if report_again:
        timings.close(time.perf_counter() - start)
        run.write_record(record)
        with clock.timed(timings, "outputs_seconds"):
            write_report([run.path], run.path)
    timings.close(time.perf_counter() - start)
    run.write_record(record)
    print(
        f"Test {record.headline_scores}; trained at {record.throughput.train_samples_per_second:.1f} samples/s; total {record.timings.total_seconds:.0f} s ({record.timings.split}). Run directory: {run.path}"
    )


def finish_run(config: PipelineConfig, prepared: Prepared, record: RunRecord, test: EvalResult, start: float) -> None:
    """Main process, after stage 4: the TF-IDF baseline and the prediction path's speed added to the record, then
    metrics.json (timed up to it), the test predictions, reports and model card written."""
    timings = record.timings
    with clock.timed(timings, "baseline_seconds"):  # on one CPU thread (nothing collective runs meanwhile)
        baseline = run_baseline(config.eval.baseline, prepared.data.splits, prepared.labels)
    record.baseline = Baseline.from_dict(baseline) if baseline is not None else None
    if config.eval.predict_speed_rows:
        split = prepared.data.splits["test"]
        texts = split.select(range(min(len(split), config.eval.predict_speed_rows)))["text"]
        with clock.timed(timings, "predict_speed_seconds"):
            record.throughput.update(end_of_run_speed(config.run_dir, texts, prepared.tokenization.max_length))
    timings.close(time.perf_counter() - start)
    with clock.timed(timings, "outputs_seconds"):
        write_outputs(config, record, test, prepared.data.splits["test"])


def write_outputs(config: PipelineConfig, record: RunRecord, test: EvalResult, test_split: datasets.Dataset) -> None:
    run = RunDir(config.run_dir)
    run.write_record(record)
    if config.eval.save_predictions:
        write_predictions(run.predictions_path, test, test_split, record.labels, config.data.label_separator)
    if "confusion_matrix" in test.metrics:  # multi-label tasks have per-class counts instead
        plot_confusion_matrix(
            test.metrics["confusion_matrix"],
            record.labels,
            run.confusion_matrix_path,
            title=f"{config.run.name} (test)",
        )
    write_report([run.path], run.path)
    write_model_card(run.path)


def setup_logging() -> None:
    """Progress and info from the first process only; the others report warnings and errors."""
    is_first_process = os.environ.get("RANK", "0") == "0"
    logging.basicConfig(
        level=logging.INFO if is_first_process else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    if not is_first_process:
        datasets.disable_progress_bars()
        transformers.logging.set_verbosity_error()


def main(argv: list[str] | None = None) -> int:
    started = clock.process_start()
    setup_logging()
    # The libraries' millions of objects live until exit: frozen, the collector's full passes skip them.
    gc.freeze()
    args = parse_args(argv)
    try:
        config = resolve_config(args)
        with terminated_as_interrupt():  # `kill` unwinds as Ctrl-C does: temporary files go, the lock is released
            run(config, started)
    except UnknownLabels as error:  # a validation or test file's class that train lacks: how to leave its rows out
        print(f"error: {error}{leave_out_hint(config.data, error.labels)}", file=sys.stderr)
        return 2
    except (ConfigError, DataError, RunError, RunDirError, ReportError, TrainingDiverged) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a file not found; a read-only folder or a full disk (io.OutputError names the output)
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        print(
            "error: interrupted; the same command with train.resume=true continues from the run's last checkpoint",
            file=sys.stderr,
        )
        return interrupted_exit_code(interrupt)
    return 0


if __name__ == "__main__":
    clock.exit_without_teardown(main())
