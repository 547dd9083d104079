"""What prediction adds to each row, and writing rows out (CSV/TSV or JSON Lines) to a file renamed into place
when complete, to stdout, or through to a device or pipe.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from pipeline.common.io import CsvRows, atomic_path, check_can_write
from pipeline.config.reading import normalise_name
from pipeline.data.formats.delimited import DELIMITERS
from pipeline.data.tables import resolve_format
from pipeline.predict.predictor import LabelledTexts
from pipeline.predict.source import PredictError
from pipeline.run.directory import PREDICTION_LOW_CONFIDENCE, PROBABILITY_PREFIX
from pipeline.scoring.thresholds import KIND_FLAG

# The columns prediction adds after the input's own, in this order; prob_<class> columns go before `error`.
LABEL_COLUMN, LABEL_ID_COLUMN, SCORE_COLUMN, ERROR_COLUMN = "label", "label_id", "score", "error"
LABELS_COLUMN = "labels"
PROBABILITY_FORMAT = "%.6g"
OUTPUT_FORMATS = ("csv", "tsv", "jsonl")


def output_columns(
    labels: Sequence[str], probabilities: bool, prefix: str = "", multi_label: bool = False, flags: bool = False
) -> list[str]:
    """label, label_id, score, [prob_<class>...], [low_confidence], error -- each behind `prefix` (e.g. "pred_");
    multi-label: labels, [prob_<class>...], error."""
    probability_columns = [f"{PROBABILITY_PREFIX}{name}" for name in labels] if probabilities else []
    if multi_label:
        names = [LABELS_COLUMN, *probability_columns, ERROR_COLUMN]
    else:
        flag_columns = [PREDICTION_LOW_CONFIDENCE] if flags else []
        names = [LABEL_COLUMN, LABEL_ID_COLUMN, SCORE_COLUMN, *probability_columns, *flag_columns, ERROR_COLUMN]
    return [prefix + name for name in names]


def predictor_columns(predictor: Any, probabilities: bool, prefix: str = "") -> list[str]:
    """The columns `predictor` adds: its labels, and whether it is multi-label or flags low confidence."""
    return output_columns(
        predictor.labels, probabilities, prefix, predictor.multi_label, predictor.decision.kind == KIND_FLAG
    )


def check_no_clash(available: Sequence[str], added: Sequence[str], where: str, option: str = "--prefix") -> None:
    """Our columns must not shadow input columns (a gold `label` column is common): a reader would see two."""
    taken = {normalise_name(column) for column in available}
    clashes = [column for column in added if normalise_name(column) in taken]
    if clashes:
        names = ", ".join(repr(c) for c in clashes)
        raise PredictError(
            f"{where} already has {'columns' if len(clashes) > 1 else 'column'} {names}, which prediction adds; name the added columns differently with {option} (e.g. pred_)"
        )


def added_values(
    result: LabelledTexts, labels: Sequence[str], probabilities: bool, separator: str | None
) -> list[list[Any]]:
    """Per row, the values of output_columns (multi-label classes joined by `separator`, a list when None); None
    where a row has no label."""
    scores = result.scores().tolist()
    rows = []
    for index, label_id in enumerate(result.label_ids.tolist()):
        found = label_id >= 0
        if result.label_sets is not None:
            chosen = [name for name, on in zip(labels, result.label_sets[index]) if on]
            values = [(chosen if separator is None else separator.join(chosen)) if found else None]
        else:
            values = [labels[label_id], label_id, scores[index]] if found else [None, None, None]
        if probabilities:
            values += result.probabilities[index].tolist() if found else [None] * len(labels)
        if result.low_confidence is not None:
            values.append(bool(result.low_confidence[index]) if found else None)
        rows.append(values + [result.errors[index]])
    return rows


def output_format(path: str, explicit: str | None, input_format: str) -> str:
    """--output-format; else by the output's name; for stdout the input's format when it can be written."""
    if explicit:
        return explicit
    if writes_through(path):  # stdout, a device or a pipe: no name to read a format from
        return input_format if input_format in OUTPUT_FORMATS else "csv"
    kind = resolve_format(path, None, "--output-format", OUTPUT_FORMATS)
    if kind not in OUTPUT_FORMATS:
        raise PredictError(f"{path}: prediction writes {', '.join(OUTPUT_FORMATS)} (optionally .gz), not {kind}")
    return kind


class DelimitedWriter:
    """CSV/TSV rows as io.CsvRows writes them; input fields are written back unchanged."""

    keeps_lists = False  # a multi-label row's classes are one field, joined by data.label_separator

    def __init__(self, handle: IO[str], kind: str):
        self._rows = CsvRows(handle, delimiter=DELIMITERS[kind])

    def write_header(self, header: Sequence[str]) -> None:
        self._rows.writerow([str(name) for name in header])

    def write_rows(self, header: Sequence[str], records: list[list[Any]], added: list[list[Any]]) -> None:
        for record, extra in zip(records, added):
            self._rows.writerow([_field(value) for value in record] + [_added_field(value) for value in extra])


def _field(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _added_field(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return PROBABILITY_FORMAT % value  # six significant digits: stable against float noise between batchings
    return str(value)


class JsonLinesWriter:
    """One JSON object per row: the input record's fields, then the added ones (numbers as numbers)."""

    keeps_lists = True  # a multi-label row's classes are a JSON list, as a list column of the training data is

    def __init__(self, handle: IO[str]):
        self._handle = handle
        self._added: list[str] = []

    def write_header(self, header: Sequence[str]) -> None:
        pass  # every record names its fields

    def write_rows(self, header: Sequence[str], records: list[list[Any]], added: list[list[Any]]) -> None:
        names = list(header)
        for record, extra in zip(records, added):
            row = dict(zip(names[: len(record)], record))
            row.update(zip(names[len(record) :], (_json_number(value) for value in extra)))
            self._handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def _json_number(value: Any) -> Any:
    return float(PROBABILITY_FORMAT % value) if isinstance(value, float) else value


def make_writer(handle: IO[str], kind: str) -> DelimitedWriter | JsonLinesWriter:
    return JsonLinesWriter(handle) if kind == "jsonl" else DelimitedWriter(handle, kind)


def writes_through(path: str) -> bool:
    """Stdout, a device (/dev/null), a FIFO or a socket: written as it is, never replaced by a regular file."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode  # follows a symlink: a link to /dev/null writes through too
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_output(path: str, overwrite: bool, input_path: str | None = None) -> None:
    """Before any work: never replace an existing file silently, nor the input even with --overwrite, nor write into
    an input folder (a document of the next run), nor through a symlink (it would be replaced)."""
    if writes_through(path):
        return
    if is_inside_folder(path, input_path):
        raise PredictError(
            f"output {path} is inside the input folder {input_path}, whose files a later run would read as documents; write it outside that folder"
        )
    if is_same_file(path, input_path):
        raise PredictError(f"output {path} is the input file {input_path}; write the labelled rows to another file")
    target = Path(path)
    if target.is_symlink():
        raise PredictError(f"output {path} is a symbolic link; give the path it points to ({os.path.realpath(path)})")
    if target.is_dir():
        raise PredictError(f"output is a directory, not a file: {path}")
    if target.exists() and not overwrite:
        raise PredictError(f"output file {path} already exists; pass --overwrite to replace it")
    # The output's folder is made after the model has loaded: one that cannot be written is named now.
    check_can_write(path, "output")


def is_inside_folder(path: str, folder: str | None) -> bool:
    if folder is None or folder == "-" or not Path(folder).is_dir():
        return False
    return Path(folder).resolve() in Path(path).resolve().parents


def is_same_file(path: str, other: str | None) -> bool:
    """Whether two names reach one existing file (another spelling, a symlink or a hard link)."""
    if other is None or other == "-":
        return False
    try:
        return os.path.samefile(path, other)
    except OSError:  # either does not exist (yet): not one file
        return False


@contextlib.contextmanager
def open_output(path: str, overwrite: bool) -> Iterator[IO[str]]:
    """Stdout or a non-regular file: written through. Otherwise a temporary file beside `path`, renamed onto it
    only if the block succeeds."""
    if path == "-":
        handle = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
        try:
            yield handle
            handle.flush()
        finally:
            handle.detach()  # leave sys.stdout open for the caller
        return
    if writes_through(path):
        with open(path, "w", encoding="utf-8", newline="") as handle:
            yield handle
        return
    with atomic_path(path) as temp_path:
        opener = gzip.open if path.lower().endswith(".gz") else open
        with opener(temp_path, "wt", encoding="utf-8", newline="") as handle:
            yield handle
        if Path(path).exists() and not overwrite:  # it appeared while we worked: still never clobber it
            raise PredictError(f"output file {path} appeared while predicting; pass --overwrite to replace it")
