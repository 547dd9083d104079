"""Fine-tune a text classifier: data -> tokenization -> training -> evaluation, into one run directory.

    python -m pipeline.finetune --config configs/ag_news_bert.yaml [section.key=value ...]
    accelerate launch -m pipeline.finetune --config ...        # several GPUs or nodes, same code

With no --config, runs configs/ag_news_bert.yaml (bert-base-uncased on AG News from the Hub).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import shutil
import sys
import time
from pathlib import Path

import datasets
import transformers
from accelerate import Accelerator
from accelerate.utils import gather_object, set_seed
from transformers import AutoModelForSequenceClassification, PreTrainedModel, PreTrainedTokenizerBase

from pipeline import hardware, models, rundir
from pipeline.batching import TokenizedRows
from pipeline.config import ConfigError, PipelineConfig, load_config, save_config
from pipeline.data import DataError, load_splits
from pipeline.evaluation import EvalResult, evaluate_split
from pipeline.io import replace_directory
from pipeline.report import ReportError, plot_confusion_matrix, write_report
from pipeline.rundir import RunDir, write_test_predictions
from pipeline.tokenization import TokenizationInfo, load_tokenizer, tokenize_splits
from pipeline.training import Trainer, TrainResult, create_accelerator

logger = logging.getLogger("pipeline")

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "ag_news_bert.yaml"
QUICK_CONFIG = "configs/ag_news_quick.yaml"


class RunError(RuntimeError):
    """The run cannot start as configured (e.g. it would overwrite an earlier run)."""


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
    path = args.config
    if path is None and DEFAULT_CONFIG.exists():
        path = DEFAULT_CONFIG
    return load_config(path, args.overrides)


def prepare_run_dir(config: PipelineConfig, is_main_process: bool) -> Path:
    run_dir = config.run_dir
    if rundir.holds_run(run_dir) and not config.train.resume:
        if not config.run.overwrite:
            raise RunError(
                f"{run_dir} already holds a run; choose another run.name, or set run.overwrite=true "
                "(or train.resume=true to continue from its last checkpoint)"
            )
        if is_main_process:  # stale checkpoints would otherwise be picked up by a later resume
            shutil.rmtree(run_dir)
    return run_dir


def load_pretrained(key: str, name: str, load):
    """Run `load`; a checkpoint that cannot be found or fetched becomes an error naming the config key."""
    try:
        return load()
    except OSError as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise RunError(
            f"{key}: cannot load '{name}' ({first_line}). Give a local folder written by save_pretrained, "
            "or a Hub name with the Hub reachable (see README 'Running offline')"
        ) from None


def save_model_dir(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: Path) -> None:
    """model/ is replaced in one rename, so a crash mid-save leaves the previous best model intact."""

    def fill(staging: Path) -> None:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)

    replace_directory(path, fill)


def build_metrics(
    config: PipelineConfig,
    labels: list[str],
    results: dict[str, EvalResult],
    tokenization: TokenizationInfo,
    training: TrainResult,
    timings: dict[str, float],
    eval_samples_per_second: float,
    num_parameters: int,
    started_at: str,
    accelerator: Accelerator,
) -> dict:
    return {
        "run": {
            "name": config.run.name,
            "model_kind": config.model.kind,
            "model_name_or_path": config.model.name_or_path if config.model.kind == "bert" else "from scratch",
            "num_parameters": num_parameters,
            "started_at": started_at,
            "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        },
        "labels": labels,
        **{split: result.metrics for split, result in results.items()},
        "best": {"step": training.state.best_step, "validation_accuracy": training.state.best_accuracy},
        "tokenization": tokenization.to_dict(),
        "timings": timings,
        "throughput": {
            "train_samples_per_second": training.samples_per_second,
            "eval_samples_per_second": eval_samples_per_second,
        },
        "training": {
            "global_steps": training.state.global_step,
            "epochs_completed": training.epochs_completed,
            "effective_batch_size": training.effective_batch_size,
            "mixed_precision": training.mixed_precision,
            "num_processes": accelerator.num_processes,
            "stopped_early": training.stopped_early,
        },
        "device": hardware.device_info(accelerator.device, accelerator.num_processes),
        "versions": hardware.library_versions(),
    }


def run(config: PipelineConfig) -> dict:
    """Stages 1-4 for one config; returns metrics.json's content."""
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    start = time.perf_counter()
    accelerator = create_accelerator(config.train, config.run_dir)
    run_dir = prepare_run_dir(config, accelerator.is_main_process)
    accelerator.wait_for_everyone()
    set_seed(config.run.seed)
    cache_root = Path(config.data.cache_dir).expanduser()

    # Stage 1. The main process goes first so that downloads and caches are made once and reused by the others.
    with accelerator.main_process_first():
        splits = load_splits(config.data, config.run.seed)
    labels = splits["train"].features["label"].names
    data_seconds = time.perf_counter() - start

    with accelerator.main_process_first():
        tokenizer = load_pretrained("tokenizer.name_or_path", config.tokenizer.name_or_path, lambda: load_tokenizer(config.tokenizer))
        model = load_pretrained(
            "model.name_or_path", config.model.name_or_path, lambda: models.build_model(config.model, labels, tokenizer)
        )
        # Stage 2.
        tick = time.perf_counter()
        tokenized, tokenization = tokenize_splits(
            splits, tokenizer, config.tokenizer, cache_root, models.max_positions(model)
        )
        tokenize_seconds = time.perf_counter() - tick
    # Every process but the first should have found the main process's cache: recorded, so that it can be checked.
    tokenization.from_cache_by_process = gather_object([tokenization.from_cache])
    rows = {name: TokenizedRows(split) for name, split in tokenized.items()}
    if accelerator.is_main_process:
        save_config(config, RunDir(run_dir).config_path)

    # Stage 3.
    trainer = Trainer(
        model,
        rows["train"],
        rows["validation"],
        config.train,
        accelerator,
        run_dir,
        seed=config.run.seed,
        label_names=labels,
        eval_batch_size=config.eval.batch_size,
        save_best=lambda best: save_model_dir(best, tokenizer, RunDir(run_dir).model_dir),
        quick_config_hint=QUICK_CONFIG,
    )
    training = trainer.run()
    num_parameters = accelerator.unwrap_model(trainer.model).num_parameters()
    del trainer

    # Stage 4, on the best model as saved: what is evaluated is exactly what users will load.
    accelerator.wait_for_everyone()
    best_model = accelerator.prepare_model(
        AutoModelForSequenceClassification.from_pretrained(RunDir(run_dir).model_dir), evaluation_mode=True
    )
    tick = time.perf_counter()
    results = {
        name: evaluate_split(best_model, rows[name], accelerator, config.eval.batch_size, labels)
        for name in ("validation", "test")
    }
    eval_seconds = time.perf_counter() - tick
    eval_samples = len(rows["validation"]) + len(rows["test"])
    timings = {
        "data_seconds": data_seconds,
        "tokenize_seconds": tokenize_seconds,
        "train_seconds": training.state.train_seconds,
        "eval_seconds": eval_seconds,
        "total_seconds": time.perf_counter() - start,
    }
    metrics = build_metrics(
        config, labels, results, tokenization, training, timings, eval_samples / eval_seconds,
        num_parameters, started_at, accelerator,
    )
    if accelerator.is_main_process:
        write_outputs(run_dir, metrics, results["test"], splits["test"]["text"], labels, config)
    accelerator.wait_for_everyone()
    # Closes the trackers and, under several processes, the process group: nothing collective may follow.
    accelerator.end_training()
    return metrics


def write_outputs(run_dir: Path, metrics: dict, test: EvalResult, texts: list[str], labels: list[str], config) -> None:
    run = RunDir(run_dir)
    run.write_metrics(metrics)
    if config.eval.save_predictions:
        write_test_predictions(run.predictions_path, texts, test.labels, test.probabilities, labels)
    plot_confusion_matrix(
        test.metrics["confusion_matrix"], labels, run.confusion_matrix_path, title=f"{config.run.name} (test)"
    )
    write_report([run_dir], run_dir)
    summary = metrics["test"]
    print(
        f"Test accuracy {summary['accuracy']:.4f}, macro-F1 {summary['macro_f1']:.4f} on {summary['num_samples']} rows; "
        f"trained at {metrics['throughput']['train_samples_per_second']:.1f} samples/s; "
        f"total {metrics['timings']['total_seconds']:.0f} s. Run directory: {run_dir}"
    )


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
    setup_logging()
    args = parse_args(argv)
    try:
        config = resolve_config(args)
        run(config)
    except (ConfigError, DataError, RunError, ReportError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
