"""`python -m pipeline.audit --model RUN --input FILE [--output label_issues.csv] [data.KEY=VALUE ...]`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline.audit.file import audit_file
from pipeline.common.errors import DataError, one_line
from pipeline.common.io import check_can_write
from pipeline.config.schema import ConfigError
from pipeline.predict import PredictError
from pipeline.run.directory import RunDirError


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.audit",
        description="List the rows of a labelled file whose given label a trained run's model and the TF-IDF "
        "baseline contradict, and near duplicates with conflicting labels.",
    )
    parser.add_argument("--model", required=True, type=Path, help="run directory (runs/<name>)")
    parser.add_argument("--input", required=True, help="labelled file, read as the run read its training data")
    parser.add_argument("--output", type=Path, default=Path("label_issues.csv"), help="CSV to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the baseline's cross-validation folds")
    parser.add_argument(
        "overrides", nargs="*", metavar="data.KEY=VALUE", help="how to read the file, e.g. data.label_column=topic"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        check_can_write(args.output)
        done = audit_file(args.model, args.input, args.output, args.overrides, args.seed)
    except (ConfigError, DataError, PredictError, RunDirError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 2
    splits = done.audit.record.splits or {}
    figures = splits.get("input", {})
    print(
        f"{figures.get('flagged', 0)} of {done.rows} rows flagged, {figures.get('near_duplicates', 0)} in near "
        f"duplicates with conflicting labels: {args.output}"
    )
    return 0
