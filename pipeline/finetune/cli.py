"""`python -m pipeline.finetune`: the command line, its logging, and its exit codes."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from pathlib import Path

import datasets
import transformers

from pipeline.common import clock
from pipeline.common.errors import one_line
from pipeline.common.io import interrupted_exit_code, terminated_as_interrupt
from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError, PipelineConfig
from pipeline.data.label_scheme import UnknownLabels, leave_out_hint
from pipeline.data.load import DataError
from pipeline.finetune.runner import run
from pipeline.report import ReportError
from pipeline.run.directory import RunDirError
from pipeline.train.loop import TrainingDiverged
from pipeline.train.start import RunError

logger = logging.getLogger("pipeline")


CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


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
