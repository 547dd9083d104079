"""The command line, `python -m pipeline.report RUN [RUN ...] [--output DIR]`: arguments, messages, exit code."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from pipeline.report.write import default_output_dir, write_report
from pipeline.rundir import REPORT_HTML, REPORT_MARKDOWN, RunDirError, RunDirWarning


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.report",
        description=(f"Write {REPORT_MARKDOWN} and a self-contained {REPORT_HTML} comparing one or more run "
                     "directories."),
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directory, e.g. runs/ag_news_bert")
    parser.add_argument("--output", "-o", type=Path, default=None,
                        help="output folder (default: reports/<run names joined by _vs_>)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
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
