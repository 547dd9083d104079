"""Opening a table: the one reader of CSV, TSV, JSON Lines, Parquet and fastText files (optionally gzipped or alone
in a zip archive) and Excel workbooks, so a row becomes the same text in training and prediction.

    with open_table("emails.csv.gz", column_names=None, chunk_size=10_000) as table:
        for chunk in table.chunks: ...

Errors are `DataError`s naming the file and its line, record or row.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from pipeline.common.errors import DataError
from pipeline.config.reading import DEFAULT_ENCODING, STANDARD_INPUT
from pipeline.data.formats import READERS
from pipeline.data.formats.delimited import DELIMITERS
from pipeline.data.formats.fasttext import starts_like_fasttext
from pipeline.data.formats.table import ReadOptions, Table
from pipeline.data.lines import STDIN_NAME, LineSource
from pipeline.data.sniff import check_content, unwrap

FORMATS = tuple(READERS)
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",  # a workbook with macros
}
# Settings a workbook does not have, and the reverse: named in a warning when given (settings_not_read).
TEXT_FILE_SETTINGS = ("encoding", "delimiter", "quoting", "label_prefix")
WORKBOOK_SETTINGS = ("sheet",)
JSON_SETTINGS = ("json_field",)
# The settings that describe a file's layout, which a folder does not have (data.* names, shared by predict).
LAYOUT_SETTINGS = ("column_names", "delimiter", "quoting", "label_prefix", *WORKBOOK_SETTINGS, *JSON_SETTINGS)
logger = logging.getLogger(__name__)


class UnknownFormatError(DataError):
    """A file whose format neither its name nor its start tells; a caller may add how to read it."""


def resolve_format(path: str, explicit: str | None, option: str, formats: Sequence[str] = FORMATS) -> str:
    """The explicit format, else the file name's (.gz looked through); stdin is CSV."""
    if explicit and explicit != "auto":
        return explicit
    if path == STANDARD_INPUT:
        return "csv"
    name = Path(path).name.lower().removesuffix(".gz")
    kind = EXTENSIONS.get(Path(name).suffix)
    if kind is None:
        endings = sorted(ending for ending, format_ in EXTENSIONS.items() if format_ in formats)
        raise UnknownFormatError(
            f"{path}: cannot tell the file format from its name (known endings: {', '.join(endings)}, optionally + .gz); set {option} to {', '.join(formats)}"
        )
    return kind


def settings_not_read(file_format: str) -> tuple[tuple[str, ...], str]:
    """The reading settings that do not describe a file of this format, and what the file is."""
    if file_format == "xlsx":
        return TEXT_FILE_SETTINGS + JSON_SETTINGS, "an Excel workbook"
    if file_format == "jsonl":
        return WORKBOOK_SETTINGS, "read as jsonl"
    return WORKBOOK_SETTINGS + JSON_SETTINGS, f"read as {file_format}"


@contextlib.contextmanager
def open_table(
    path: str,
    file_format: str | None = None,
    column_names: Sequence[str] | None = None,
    encoding: str = DEFAULT_ENCODING,
    chunk_size: int | None = None,
    format_option: str = "data.file_format",
    encoding_option: str = "data.encoding",
    **settings: Any,
) -> Iterator[Table]:
    """Open a file ('-': stdin) and its header; `table.chunks` yields the rows (one chunk when `chunk_size` None)."""
    options = ReadOptions(column_names=column_names, chunk_size=chunk_size, **settings)
    with _open_bytes(path) as (raw, size), contextlib.ExitStack() as stack:
        lines = LineSource(raw, STDIN_NAME if path == STANDARD_INPUT else path, encoding, size, encoding_option)
        lines, named, workbook = unwrap(lines, path, stack)
        kind = _format_of(lines, named, file_format, format_option, options.label_prefix, workbook)
        check_content(lines, workbook, kind, format_option)
        yield READERS[kind](lines, options, stack)


def _format_of(
    lines: LineSource, path: str, explicit: str | None, option: str, label_prefix: str, workbook: bool
) -> str:
    """The format by resolve_format, else fastText where the first lines start with the label prefix."""
    if workbook and explicit in (None, "auto"):
        return "xlsx"
    try:
        kind = resolve_format(path, explicit, option)
    except DataError:
        if not starts_like_fasttext(lines, label_prefix):
            raise
        logger.info(f"{lines.name}: its first lines start with {label_prefix}, read as fastText ({option}: auto)")
        return "fasttext"
    if kind in DELIMITERS and starts_like_fasttext(lines, label_prefix):
        raise DataError(
            f"{lines.name}: its first lines start with {label_prefix}, as a fastText file's do ({label_prefix}sports Some text), not a {kind.upper()} file's; set {option} to fasttext"
        )
    return kind


def format_of_name(path: str, explicit: str | None = None) -> str | None:
    """The format a file's settings and name give (a trailing .gz looked through), or None."""
    try:
        return resolve_format(path, explicit, "data.file_format")
    except UnknownFormatError:
        return None


def format_read(path: str, explicit: str | None) -> str:
    """The format a file was read as, by its settings and name alone (a finished run's files may be gone)."""
    return format_of_name(path, explicit) or "fasttext"


@contextlib.contextmanager
def _open_bytes(path: str) -> Iterator[tuple[IO[bytes], int | None]]:
    if path == STANDARD_INPUT:
        yield sys.stdin.buffer, None
        return
    file = Path(path).expanduser()
    if not file.exists():
        raise DataError(f"file not found: {path} (looked for {file.resolve()})")
    if file.is_dir():
        raise DataError(f"{path} is a directory, not a file")
    try:
        handle = open(file, "rb")  # noqa: SIM115 -- closed below; only open() maps to this error
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    with handle:
        size = file.stat().st_size
        if size == 0:
            raise DataError(f"{path} is empty")
        yield handle, size
