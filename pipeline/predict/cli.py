"""`python -m pipeline.predict`: stream a table through a model and write every row back, labelled.

Validates everything cheap first (output, input, columns), then loads the model and streams chunk by chunk.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.common import hardware
from pipeline.common.errors import DataError, one_line, shorten
from pipeline.common.io import interrupted_exit_code, terminated_as_interrupt
from pipeline.config.options import add_file_options, batch_tokens, file_settings, flag, option_name, positive_int
from pipeline.config.reading import DEFAULT_ENCODING, FASTTEXT_LABEL_PREFIX, STANDARD_INPUT, TEXT_COLUMN
from pipeline.config.schema import MAX_BATCH_TOKENS
from pipeline.data.decoding import decoding
from pipeline.data.folders import is_folder, open_folder_table
from pipeline.data.formats.header import looks_like_data
from pipeline.data.formats.table import REPEATED_HEADER, Table, and_more, repeated_header_warning
from pipeline.data.lines import HEAD_BYTES, EncodingError
from pipeline.data.tables import LAYOUT_SETTINGS, open_table, settings_not_read
from pipeline.data.text import TextSpec
from pipeline.predict.output import (
    OUTPUT_FORMATS,
    added_values,
    check_no_clash,
    check_output,
    make_writer,
    open_output,
    output_format,
    predictor_columns,
)
from pipeline.predict.predictor import DEFAULT_BATCH_SIZE, DEFAULT_RECHECK_MARGIN, Predictor
from pipeline.predict.source import ModelSource, PredictError, empty_text_errors, model_classes, resolve_model_source
from pipeline.run.exports import BACKEND_RUNTIMES, BACKENDS
from pipeline.text.unknown import UnknownTokens

DEFAULT_CHUNK_SIZE = 10_000
# The file options whose default the model or the input decides (the run's columns; the format by the file's name).
MODEL_DECIDES = ("text_columns", "text_pair_columns", "text_separator", "file_format")
# What prediction adds to a file option's help (pipeline/config/options.py): where its value comes from.
PREDICT_NOTES = {
    **dict.fromkeys(("delimiter", "sheet", "json_field"), "not taken from the run"),
    "label_prefix": f"default {FASTTEXT_LABEL_PREFIX}; kept as the input's label column; not taken from the run",
    "quoting": 'a field that goes on after its closing quote ("Free" entry); like --encoding, not taken from the run',
    "text_columns": "comma-separated; default: those the model was trained with; 'text' for a model folder that does "
    "not record them",
    "text_pair_columns": "comma-separated; default: those the model was trained with, its data.text_pair_columns",
    "text_separator": "default: what the model was trained with; ' ' for a model folder that does not record it",
    "column_names": "comma-separated, e.g. class_index,title,description",
    "file_format": "default: auto; csv for '-'",
    "encoding": f"default {DEFAULT_ENCODING}, not the run's data.encoding: each file UTF-8, or Windows-1252 where it "
    "holds no UTF-8, as training reads; a file that mixes both stops with an error naming its lines; output is always "
    "utf-8",
    "decode_errors": "default strict; not taken from the run",
}
# An input file's layout options (argparse names), which a folder does not have.
FILE_LAYOUT_OPTIONS = ("format", *LAYOUT_SETTINGS)
COLUMN_OPTIONS = (flag("text_columns"), flag("text_pair_columns"))

logger = logging.getLogger(__name__)


# A row repeating the header is kept in its place, unlabelled, so the output lines up row for row with the input.
REPEATED_HEADER_ERROR = f"{REPEATED_HEADER}: not labelled"


@dataclass
class RunSummary:
    rows: int = 0
    rows_without_text: int = 0
    repeated_headers: list[int | str] = field(default_factory=list)
    rows_flagged: int = 0
    seconds: float = 0.0
    backend: str = ""  # printed after a successful run, not before an error
    # Warned of once after the last chunk (a chunk may hold none of the unreadable rows). None: no unknown token.
    unknown: UnknownTokens | None = None


def predict_table(
    predictor: Predictor, table: Table, writer: Any, added: list[str], probabilities: bool, progress: Any
) -> RunSummary:
    """Stream chunks through the model: read, label, write; memory stays one chunk deep."""
    summary = RunSummary()
    started = time.perf_counter()
    spec = predictor.text_spec
    columns = spec.positions(table.header, table.name, COLUMN_OPTIONS)
    header = table.header + added
    if writer is not None:
        writer.write_header(header)
    for chunk in table.chunks:
        summary.rows += len(chunk.records)
        _update_total_estimate(progress, table, summary.rows)
        values = [[record[column] for column in columns] for record in chunk.records]
        repeats = {row for row, record in enumerate(chunk.records) if table.repeats_header(record)}
        texts = [None if row in repeats else spec.text_of(parts) for row, parts in enumerate(values)]
        result = predictor.label_texts(
            texts, on_batch=progress.update, empty_error=_why_unlabelled(spec, values, repeats)
        )
        without_text = sum(1 for error in result.errors if error)
        summary.rows_without_text += without_text - len(repeats)
        summary.repeated_headers += [chunk.numbers[row] for row in sorted(repeats)]
        if result.low_confidence is not None:
            summary.rows_flagged += int(result.low_confidence.sum())
        if result.unknown is not None:
            summary.unknown = result.unknown if summary.unknown is None else summary.unknown + result.unknown
        progress.update(without_text)
        if writer is not None:
            separator = None if writer.keeps_lists else predictor.label_separator
            writer.write_rows(header, chunk.records, added_values(result, predictor.labels, probabilities, separator))
    summary.seconds = time.perf_counter() - started
    return summary


def _why_unlabelled(spec: TextSpec, values: list[list[Any]], repeats: set[int]) -> Callable[[int], str]:
    """The error cell of each unlabelled row of a chunk, by its position."""
    empty = empty_text_errors(spec, values)
    return lambda row: REPEATED_HEADER_ERROR if row in repeats else empty(row)


def _update_total_estimate(progress: Any, table: Table, rows_read: int) -> None:
    """Rows expected in all, from the share of the file's bytes read so far: gives tqdm its ETA."""
    lines = table.lines
    position = lines.position() if lines is not None else 0
    if lines is not None and lines.size and position > 0:
        progress.total = max(rows_read, round(rows_read * lines.size / position))
        progress.refresh()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return _parser().parse_args(argv)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.predict",
        description="Label the rows of a CSV, TSV, JSON Lines, Parquet or fastText file, an Excel workbook's sheet, "
        "or the files of a folder, "
        "with a trained text classifier. Output: every input row, in order and unchanged, then label, label_id, "
        "score, [prob_<class>...], [low_confidence], error (a multi-label model: labels, [prob_<class>...], error).",
    )
    _add_file_arguments(parser.add_argument)
    _add_inference_arguments(parser.add_argument)
    _add_output_arguments(parser.add_argument)
    return parser


def _add_file_arguments(add: Any) -> None:
    add("--model", required=True, help="run directory (runs/<name>) or saved Hugging Face model directory")
    add(
        "--input",
        required=True,
        help="CSV/TSV/JSON Lines/fastText (optionally .gz) or Parquet file; an Excel workbook (.xlsx: its first "
        "sheet, or --sheet; with the optional extra excel); '-' for stdin; or a folder: of files, "
        "each one row of the columns text (the whole file, decoded with --encoding) and id (its name), in name "
        "order; or of class folders (aclImdb/test/pos/0_9.txt), read as training reads it, whose rows keep their "
        "label column (then add --prefix pred_)",
    )
    add("--output", required=True, help="CSV/TSV/JSON Lines file to write (.gz compresses); '-' for stdout")
    head = f"auto reads as none a TSV file whose first {HEAD_BYTES // 1024} KiB (from a pipe, what has arrived) hold "
    add_file_options(add, {**PREDICT_NOTES, "quoting": head + PREDICT_NOTES["quoting"]}, unset=MODEL_DECIDES)
    add(
        "--output-format",
        choices=OUTPUT_FORMATS,
        help="output format (default: by the output's extension; for '-' the input's format, or csv where prediction "
        "does not write it: an Excel workbook's, Parquet's, fastText's or a folder's predictions)",
    )


def _add_inference_arguments(add: Any) -> None:
    add("--batch-size", type=positive_int, default=DEFAULT_BATCH_SIZE, help="rows per forward pass, at most")
    add(
        "--max-batch-tokens",
        type=batch_tokens,
        default="auto",
        help=f"tokens per forward pass, at most (rows x padded width); auto (default): {MAX_BATCH_TOKENS} on a CPU, no "
        "cap on a GPU; 0: no cap",
    )
    add("--chunk-size", type=positive_int, default=DEFAULT_CHUNK_SIZE, help="rows read, labelled and written at a time")
    add(
        "--max-length",
        type=positive_int,
        help="tokens per text (default: the training length; the tokenizer's limit for a model folder that does "
        "not record it)",
    )
    add(
        "--device",
        default="auto",
        help="cpu, cuda, cuda:<index> or auto (default): a visible GPU, except under --backend onnx/openvino (the CPU)",
    )
    add(
        "--precision",
        choices=hardware.INFERENCE_PRECISIONS,
        default="auto",
        help="PyTorch's: auto (default): bf16 (a bf16 copy of the weights) where the hardware has native bf16, else fp32",
    )
    add(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="auto (default): the run's export (python -m pipeline.export) that verification found fastest, when "
        "faster than PyTorch on the CPU, else PyTorch; torch; onnx-fp32 (or onnx), onnx-int8, openvino, "
        "openvino-int8: that verified export, an error if there is none",
    )
    add(
        "--recheck-margin",
        type=float,
        default=DEFAULT_RECHECK_MARGIN,
        help=f"in bf16, rows whose two best classes are closer than this in probability are recomputed in fp32 "
        f"(default {DEFAULT_RECHECK_MARGIN}; 0 turns it off)",
    )


def _add_output_arguments(add: Any) -> None:
    add("--probabilities", action="store_true", help="add a prob_<class> column per class")
    add(
        "--prefix",
        default="",
        help="put this before the added columns' names, e.g. pred_ when the input already has a label column",
    )
    add(
        "--overwrite",
        action="store_true",
        help="replace the output file if it exists (never a symlink, never the input)",
    )
    add("--no-progress", action="store_true", help="no progress bar (it is off anyway when stderr is not a terminal)")


def run(args: argparse.Namespace) -> RunSummary:
    process_index, num_processes = distributed_shard()
    if num_processes > 1 and args.input == STANDARD_INPUT:
        raise PredictError("under several processes every process reads the input: give a file, not '-'")
    if process_index == 0:
        check_output(args.output, args.overwrite, args.input)
    source = (
        resolve_model_source(args.model)
        .with_text_columns(args.text_columns)
        .with_text_pair_columns(args.text_pair_columns)
        .with_text_separator(args.text_separator)
    )
    try:
        with decoding(args.decode_errors, option="--encoding"):
            return _predict_file(args, source, process_index, num_processes)
    except EncodingError as error:
        raise EncodingError(f"{error}{source.encoding_hint(args.encoding)}") from None


def _predict_file(args: argparse.Namespace, source: ModelSource, process_index: int, num_processes: int) -> RunSummary:
    from tqdm import tqdm

    folder = args.input != STANDARD_INPUT and is_folder(args.input)
    column_names = args.column_names if folder else _input_column_names(args, source)
    classes = model_classes(source.model_dir) if folder else None  # which files are class files, not documents
    with _open_input(args, folder, column_names, classes) as table:
        if not folder:
            _warn_file_options(args, *settings_not_read(table.format))
        try:
            source.text_spec.positions(table.header, table.name, COLUMN_OPTIONS)
        except DataError as error:
            hint = _FOLDER_COLUMNS_HINT if folder else table.missing_column_hint + source.missing_columns_hint()
            raise DataError(f"{error}{hint}") from None
        out_format = output_format(args.output, args.output_format, table.format)
        options = {key: getattr(args, key) for key in ("precision", "batch_size", "max_length", "recheck_margin")}
        predictor = Predictor.from_source(
            source,
            device=distributed_device(args.device, num_processes, args.backend),
            max_batch_tokens=args.max_batch_tokens or None,
            backend=args.backend,
            **options,
        )
        predictor.shard = (process_index, num_processes)
        added = predictor_columns(predictor, args.probabilities, args.prefix)
        check_no_clash(table.header, added, table.name)
        progress = tqdm(
            total=table.row_count,  # None: estimated from the bytes read
            unit=" rows",
            file=sys.stderr,
            dynamic_ncols=True,
            desc="Predicting",
            disable=True if args.no_progress or process_index > 0 else None,  # None: off when not a terminal
        )
        # Only the main process writes; the others compute their share of each chunk and hand it over.
        output = open_output(args.output, args.overwrite) if process_index == 0 else contextlib.nullcontext(None)
        with progress, output as handle:
            writer = make_writer(handle, out_format) if handle is not None else None
            summary = predict_table(predictor, table, writer, added, args.probabilities, progress)
            summary.backend = predictor.describe_backend()
            progress.total = progress.n
        unknown = summary.unknown and summary.unknown.warning("the input's", predictor.tokenizer)
        if unknown and process_index == 0:  # every process reads every row: one says it
            logger.warning(unknown)
        if summary.repeated_headers and process_index == 0:
            numbers = summary.repeated_headers
            outcome = "not labelled, kept in its place in the output with the error column saying so"
            more = and_more(table.unit, numbers)
            logger.warning(repeated_header_warning(table.where(numbers[0]), table.header_row or [], more, outcome))
    return summary


def _input_column_names(args: argparse.Namespace, source: ModelSource) -> list[str] | None:
    """--column-names; else the run's data.column_names where the input's first row is plainly data, not a header
    (no text columns named, as many fields as the names, a number or text among them). Never for stdin."""
    names = source.column_names
    if args.column_names or not names or args.input == STANDARD_INPUT:
        return args.column_names
    with _open_input(args, False, None) as table:  # its header only: no row is read past the first
        header, first_row, file_format, name = table.header, table.header_row, table.format, table.name
    spec = source.text_spec
    if _has_columns(spec, header) or not _has_columns(spec, names) or len(header) != len(names):
        return None
    if first_row is None or not looks_like_data(first_row, file_format):  # as written: an empty cell, not "Unnamed"
        return None
    logger.warning(
        f"{name}: its first row ({shorten(', '.join(first_row), 60)}) is data, not a header naming "
        f"{', '.join(spec.input_columns)}: read without a header row, as the run's training files were, by their "
        f"data.column_names (--column-names {','.join(names)}); pass --column-names to name the columns otherwise"
    )
    return list(names)


def _has_columns(spec: TextSpec, header: Sequence[str]) -> bool:
    try:
        spec.positions(header, "", COLUMN_OPTIONS)
    except DataError:
        return False
    return True


_FOLDER_COLUMNS_HINT = (
    f"; a folder's text is each file's whole text (a class file's: each line), the column {TEXT_COLUMN}: pass "
    f"--text-columns {TEXT_COLUMN}"
)


def _open_input(
    args: argparse.Namespace, folder: bool, column_names: list[str] | None, classes: list[str] | None = None
) -> contextlib.AbstractContextManager[Table]:
    """The input as a Table streamed in chunks: a file, or a folder file by file."""
    if folder:
        _warn_file_options(args, FILE_LAYOUT_OPTIONS, "a folder")
        return contextlib.nullcontext(
            open_folder_table(
                args.input, args.encoding, args.chunk_size, "--input", encoding_option="--encoding", classes=classes
            )
        )
    settings = file_settings(args)
    reading = {name: settings[name] for name in ("quoting", "delimiter", "label_prefix", "sheet", "json_field")}
    options = ("file_format", "quoting", "delimiter", "sheet", "json_field", "encoding")
    named = {f"{option_name(name)}_option": flag(name) for name in options}
    return open_table(
        args.input, settings["file_format"], column_names, settings["encoding"], args.chunk_size, **reading, **named
    )


def _warn_file_options(args: argparse.Namespace, names: Sequence[str], what: str) -> None:
    """Warn of options set that do not describe the input, `what` it is, rather than silently ignore them."""
    parser = _parser()
    given = [name for name in names if getattr(args, name) != parser.get_default(name)]
    if given:
        options = ", ".join(f"--{name.replace('_', '-')}" for name in given)
        logger.warning(f"{args.input} (--input) is {what}, which these file options do not describe: {options}")


def distributed_shard() -> tuple[int, int]:
    """(process index, number of processes) under `accelerate launch` / `torchrun`; (0, 1) otherwise."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 0, 1
    import torch
    from accelerate import PartialState

    # Without a GPU, ask for the CPU (gloo) backend explicitly, or each process would run alone.
    state = PartialState(cpu=not torch.cuda.is_available())
    return state.process_index, state.num_processes


def distributed_device(device: str, num_processes: int, backend: str) -> str:
    """With several processes on GPUs, `auto` means this process's own GPU, not the first one; under an export
    backend it stays `auto`, which runs exports on the CPU."""
    if num_processes <= 1 or device != "auto" or backend in BACKEND_RUNTIMES or hardware.torch_sees_no_gpu():
        return device
    import torch

    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if torch.cuda.is_available() else device


def _quiet_libraries() -> None:
    """Library warnings and progress bars would break the one-line error contract and clutter stderr. transformers
    reads its settings when imported, which the PyTorch path alone does: set here, they cost no import."""
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # transformers' own bars follow the Hub's setting
    if "transformers" in sys.modules:  # imported before main() (a test, a notebook): tell it directly
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    logging.getLogger("torch").setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None) -> None:
    """The command. Errors print one line on stderr and exit non-zero."""
    args = parse_args(argv)
    _quiet_libraries()
    try:
        # The command owns its process: glibc may keep freed memory for the next batches.
        with terminated_as_interrupt(), hardware.freed_memory_kept():
            summary = run(args)
    except KeyboardInterrupt as interrupt:
        _fail("interrupted; no output was written", interrupted_exit_code(interrupt))
    except BrokenPipeError:  # the reader of stdout went away (e.g. `| head`): nothing more to say
        with contextlib.suppress(OSError):
            sys.stderr.close()
        raise SystemExit(1) from None
    except (PredictError, DataError, OSError) as error:  # OSError: disk full, permission denied while writing
        _fail(one_line(error), 1)
    if os.environ.get("RANK", "0") == "0":  # under several processes the main one reports
        _report(summary, args.output)


def _fail(message: str, code: int) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(code) from None


def _report(summary: RunSummary, output: str) -> None:
    rate = summary.rows / summary.seconds if summary.seconds > 0 else 0.0
    if summary.backend:
        print(summary.backend, file=sys.stderr)
    destination = "stdout" if output == "-" else output
    notes = {
        "flagged low-confidence, below their class's threshold (see the low_confidence column)": summary.rows_flagged,
        "had no text, left unlabelled (see the error column)": summary.rows_without_text,
        "repeated the header row, left unlabelled (see the error column)": len(summary.repeated_headers),
    }
    note = "".join(f"; {_rows(count)} {what}" for what, count in notes.items() if count)
    print(f"labelled {_rows(summary.rows)} -> {destination} ({rate:.0f} rows/s){note}", file=sys.stderr)


def _rows(count: int) -> str:
    return f"{count} row{'' if count == 1 else 's'}"
