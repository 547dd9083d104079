"""The per-run tools of `python -m pipeline.report` (--model-card, --upgrade-model, --measure-speed), apart from the
report because they load PyTorch and transformers, which a report never needs (`__main__` picks one or the other)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

from pipeline.card.write import warn_if_not_portable, write_model_card
from pipeline.models.upgrade import UpgradeError, upgrade_model_dir
from pipeline.predict import PredictError
from pipeline.predict.speed import record_run_speed
from pipeline.report.cli import parse_args
from pipeline.run.directory import RunDirError, RunDirWarning


def main(argv: Sequence[str] | None = None) -> int:
    """--model-card / --upgrade-model / --measure-speed: one line per path on stdout, one-line errors and warnings on
    stderr."""
    args = parse_args(argv)
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
