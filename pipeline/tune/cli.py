"""`python -m pipeline.tune`: an Optuna search over the config's `tune.space`, resumable from its SQLite study.

python -m pipeline.tune --config configs/ag_news_minilm.yaml --trials 12 [--timeout 1h] [--study NAME]
python -m pipeline.tune --config ... --study NAME --resume          # continue a killed search, or add a worker
python -m pipeline.tune --config ... --storage postgresql://host/db  # workers on several machines, one study
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

from pipeline.common.errors import one_line
from pipeline.common.extras import extra_install, installed
from pipeline.common.io import interrupted_exit_code, terminated_as_interrupt
from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError, PipelineConfig
from pipeline.finetune import setup_logging
from pipeline.run.directory import RunDir, RunDirError
from pipeline.tune.group import Group
from pipeline.tune.objective import Search, run_trial
from pipeline.tune.outputs import (
    BEST_CONFIG,
    REPORT,
    TRIALS_TABLE,
    shown_parameters,
    trial_rows,
    write_best_config,
    write_report,
    write_trials_table,
)
from pipeline.tune.space import check_space, parse_space, trial_config
from pipeline.tune.study import StudyFolder, claim_folder, fail_abandoned_trials, finished_count, open_study

logger = logging.getLogger("pipeline.tune")

DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")
SECONDS_PER = {"": 1, "s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> float:
    match = DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90s, 30m or 1h")
    return float(match.group(1)) * SECONDS_PER[match.group(2)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipeline.tune", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=None, help="YAML config with a tune.space section")
    parser.add_argument("--trials", type=int, required=True, help="trials completed or pruned, in all (resumes count)")
    parser.add_argument("--timeout", type=parse_duration, default=None, help="no new trial after this: 90s, 30m, 1h")
    parser.add_argument("--study", default=None, help="the study's name and folder in tune.output_dir (run.name)")
    parser.add_argument("--resume", action="store_true", help="continue the study in its folder")
    parser.add_argument("--storage", default=None, help="an Optuna storage URL (default: sqlite study.db)")
    parser.add_argument("overrides", nargs="*", metavar="section.key=value", help="override any setting")
    return parser.parse_intermixed_args(argv)  # overrides may come before and after the flags


def prepare_search(args: argparse.Namespace) -> tuple[PipelineConfig, Search]:
    """The config and its space, checked before any trial: one line naming the key at fault."""
    config = load_config(args.config, args.overrides)
    space = parse_space(config.tune.space)
    check_space(args.config, args.overrides, space)
    if config.tune.metric != "auto":
        try:
            load_config(args.config, args.overrides + [f"train.selection_metric={config.tune.metric}"])
        except ConfigError as error:
            raise ConfigError(
                f"tune.metric: {config.tune.metric} is not a metric this run produces ({error})"
            ) from None
    if args.trials < 1:
        raise ConfigError(f"--trials: must be at least 1, got {args.trials}")
    folder = StudyFolder(Path(config.tune.output_dir) / (args.study or config.run.name))
    return config, Search(folder, args.config, list(args.overrides), space, config.tune.metric, Group(folder.path))


def keep_going(study: Any, args: argparse.Namespace, search: Search, started: float, attempts: int) -> bool:
    """The main process's decision, shared: --trials finished trials in the study, before --timeout, and at most
    twice --trials attempts by this process (failed trials count there, so a failing search ends)."""
    go = None
    if search.group.is_main:
        timed_out = args.timeout is not None and time.monotonic() - started > args.timeout
        go = finished_count(study) < args.trials and not timed_out and attempts < 2 * args.trials
    return bool(search.group.share(go))


def search(args: argparse.Namespace) -> int:
    config, plan = prepare_search(args)
    study = None
    if plan.group.is_main:
        claim_folder(plan.folder, config, args.resume)
        study = open_study(plan.folder.path.name, args.storage or plan.folder.storage_url, config)
        abandoned = fail_abandoned_trials(study)
        if abandoned:
            logger.warning(f"Trials {abandoned} were left running by a killed search: recorded as failed")
        if study.trials and not args.resume and args.storage:
            raise ConfigError(f"--storage holds study {study.study_name} already; --resume continues it")
    started, attempts = time.monotonic(), 0
    while keep_going(study, args, plan, started, attempts):
        outcome = run_trial(study, plan)
        attempts += 1
        logger.info(f"Trial {outcome.number}: {outcome.state}, score {outcome.value}, {outcome.seconds:.0f} s")
    plan.group.close()
    if plan.group.is_main:
        finish(study, config, args, plan)
    return 0


def finish(study: Any, config: PipelineConfig, args: argparse.Namespace, plan: Search) -> None:
    """best.yaml, trials.csv and report.html; the best trial's test score, read once, here."""
    rows = trial_rows(study)
    keys = [parameter.key for parameter in plan.space]
    write_trials_table(rows, keys, plan.folder.path / TRIALS_TABLE)
    summary = [f"{sum(r.state == s for r in rows)} {s}" for s in ("complete", "pruned", "fail")]
    if any(r.state == "complete" for r in rows):
        best = study.best_trial
        best_config = trial_config(args.config, args.overrides, best.params)
        write_best_config(
            best_config, plan.folder.path / BEST_CONFIG, f"{plan.folder.path.name}_best", config.run.output_dir
        )
        test = RunDir(plan.folder.trial_dir(best.number)).read_record().test
        summary = [
            f"best: trial {best.number}, validation {best.value:.4f}, with {shown_parameters(best.params)}",
            f"its test accuracy {test.accuracy:.4f} (the only test score the search reads)",
            *summary,
        ]
    else:
        summary.insert(0, "no trial completed: no best.yaml")
    write_report(plan.folder.path, f"Study {plan.folder.path.name}", rows, keys, summary, study)
    print("\n".join(summary) + f"\nStudy folder: {plan.folder.path} ({REPORT}, {TRIALS_TABLE}, {BEST_CONFIG})")


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    args = parse_args(argv)
    if not installed("optuna"):
        print(f"error: python -m pipeline.tune needs optuna, not installed: {extra_install('tune')}", file=sys.stderr)
        return 2
    try:
        with terminated_as_interrupt():
            return search(args)
    except (ConfigError, RunDirError) as error:
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        print("error: interrupted; the same command with --resume continues the study", file=sys.stderr)
        return interrupted_exit_code(interrupt)
