"""The command line, `python -m pipeline.report RUN [RUN ...] [--output DIR]`. Its per-run tools (--model-card,
--upgrade-model, --measure-speed) are parsed here and run by `pipeline.report.tools`, which loads PyTorch."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from pipeline.report.write import default_output_dir, write_report
from pipeline.run.directory import REPORT_HTML, REPORT_MARKDOWN, RunDirError, RunDirWarning


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
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


def wants_tools(argv: Sequence[str]) -> bool:
    """Whether the command line asks for a per-run tool rather than a report, as argparse reads it (abbreviated
    flags included)."""
    return _asks_for_tools(parse_args(argv))


def _asks_for_tools(args: argparse.Namespace) -> bool:
    return bool(args.model_card or args.upgrade_model or args.measure_speed)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if _asks_for_tools(args):
        raise SystemExit(
            "error: --model-card, --upgrade-model and --measure-speed run through pipeline.report.tools.main"
        )
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
