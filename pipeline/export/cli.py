"""`python -m pipeline.export --model runs/<name> [--quantize int8] [--no-openvino]`: export, verify, record, print
the parity table. Bad input is one line on stderr, exit 1; an export refused by verification is kept aside, exit 3.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from pipeline.common.errors import one_line
from pipeline.export.convert import DEFAULT_BATCH_SIZE, DEFAULT_MAX_ROWS, DEFAULT_ROUNDS, QUANTIZE_CHOICES, export_run
from pipeline.export.verify import format_record
from pipeline.predict.cli import positive_int
from pipeline.run.exports import MIN_VERIFICATION_ROWS, STATUS_REFUSED, ExportError

EXIT_REFUSED = 3


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.export",
        description="Export a run's model to ONNX (optionally int8), verify it against PyTorch on the run's "
        "validation rows, and record it in runs/<name>/onnx/ for `pipeline.predict --backend auto|onnx`.",
    )
    add = parser.add_argument
    add("--model", required=True, help="run directory (runs/<name>) or its model/ folder")
    add("--format", choices=["onnx"], default="onnx", help="export format (onnx, the default and only one)")
    add("--quantize", choices=QUANTIZE_CHOICES, help="also write a dynamically quantized int8 model")
    add(
        "--max-rows",
        type=positive_int,
        default=DEFAULT_MAX_ROWS,
        help=f"verify on at most this many rows (default {DEFAULT_MAX_ROWS}): a seeded sample of the validation rows, "
        "or all of them topped up with the run's test and train texts; below "
        f"{MIN_VERIFICATION_ROWS:,} no export is chosen by --backend auto",
    )
    batch_help = f"rows per forward pass while verifying (default {DEFAULT_BATCH_SIZE})"
    add("--batch-size", type=positive_int, default=DEFAULT_BATCH_SIZE, help=batch_help)
    rounds_help = f"timed passes per backend; the best counts (default {DEFAULT_ROUNDS})"
    add("--rounds", type=positive_int, default=DEFAULT_ROUNDS, help=rounds_help)
    add("--no-optimize", action="store_true", help="skip ONNX Runtime's transformer graph optimizer")
    openvino_help = "skip the OpenVINO models (made by default when the optional extra 'openvino' is installed)"
    add("--no-openvino", action="store_true", help=openvino_help)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        record = export_run(
            args.model,
            args.quantize,
            max_rows=args.max_rows,
            batch_size=args.batch_size,
            optimize=not args.no_optimize,
            openvino=False if args.no_openvino else None,
            rounds=args.rounds,
        )
    except ExportError as error:
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted; the previous export (if any) is unchanged", file=sys.stderr)
        return 130
    print(format_record(record))
    refused = {name: entry for name, entry in record["variants"].items() if entry["status"] == STATUS_REFUSED}
    for name, entry in refused.items():
        print(f"refused {name}: {entry['reason']} (kept aside in {entry['file']}, never used)", file=sys.stderr)
    return EXIT_REFUSED if refused else 0
