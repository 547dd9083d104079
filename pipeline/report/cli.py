"""The command line, `python -m pipeline.report RUN [RUN ...] [--output DIR]`, and its per-run tools (--model-card,
--upgrade-model, --measure-speed)."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from pipeline.card.write import warn_if_not_portable, write_model_card
from pipeline.models.upgrade import UpgradeError, upgrade_model_dir
from pipeline.predict import PredictError
from pipeline.predict.speed import record_run_speed
from pipeline.report.write import default_output_dir, write_report
from pipeline.run.directory import REPORT_HTML, REPORT_MARKDOWN, RunDirError, RunDirWarning


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.report",
        description=f"Write {REPORT_MARKDOWN} and a self-contained {REPORT_HTML} comparing one or more run directories.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory, e.g. runs/ag_news_bert")
    parser.add_argument(
        "--output", "-o", type=Path, default=None, help="output folder (default: reports/<run names joined by _vs_>)"
    )
    parser.add_argument(
        "--model-card",
        action="store_true",
        help="instead of a report, (re)write each RUN's model/README.md, its Hugging Face model card",
    )
    parser.add_argument(
        "--upgrade-model",
        action="store_true",
        help="instead of a report, re-save each from-scratch encoder (RUN, or a model folder) with its modelling code and auto_map, so it loads with trust_remote_code=True anywhere",
    )
    parser.add_argument(
        "--measure-speed",
        action="store_true",
        help="instead of a report, time each RUN's prediction path on its test texts and record rows/s in its metrics.json (throughput.predict_rows_per_second), for older runs",
    )
    return parser.parse_args(argv)


def _model_tools(args: argparse.Namespace) -> int:
    """--model-card / --upgrade-model: one line per path on stdout, one-line errors and warnings on stderr."""
    errors: tuple[type[Exception], ...] = (RunDirError, OSError)
    if args.measure_speed:
        errors += (PredictError,)
    if args.upgrade_model:
        errors += (UpgradeError,)
    status = 0
    for path in args.runs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RunDirWarning)
            try:
                if args.upgrade_model:
                    print(upgrade_model_dir(path))
                if args.model_card:
                    print(write_model_card(path))
                    warn_if_not_portable(path)
                if args.measure_speed:
                    print(f"{path}: {record_run_speed(path):.1f} prediction rows/s")
            except errors as error:
                print(f"error: {error}", file=sys.stderr)
                status = 1
        for warning in caught:
            print(f"warning: {warning.message}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.model_card or args.upgrade_model or args.measure_speed:
        return _model_tools(args)
    output_dir = args.output if args.output is not None else default_output_dir(args.runs)
    # Warnings become one-line messages: Python's default format adds a source line meant for developers.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RunDirWarning)
        try:
            paths = write_report(args.runs, output_dir)
        except (RunDirError, OSError) as error:
            paths, failure = (), error
        else:
            failure = None
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    if failure is not None:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0
