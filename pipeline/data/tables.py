"""Opening a table: the one reader of CSV, TSV, JSON Lines, Parquet and fastText files (optionally gzip-compressed;
a text file alone in a zip archive too) and Excel workbooks. Its format comes from the setting, the file's name or
its start; formats.READERS reads it.

    with open_table("emails.csv.gz", column_names=None, chunk_size=10_000) as table:
        columns = resolve_columns(table.header, ["subject", "body"], table.name, "data.text_columns")
        for chunk in table.chunks:
            texts = [spec.text_of([record[i] for i in columns]) for record in chunk.records]

Stage 1 reads a whole file through it (local.py) and prediction streams it chunk by chunk (predict/), so a row
becomes exactly the same text in training and in prediction (text.TextSpec), by construction. Every error is a
`DataError` naming the file and the line (CSV, TSV, JSON Lines, fastText: the 1-based physical line, header
included) or record (Parquet, a JSON array: the 1-based position) or row (an Excel sheet: the row number Excel
shows) and, where it applies, the column.
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
    ".xlsm": "xlsx",  # a workbook with macros: its cells are read as any workbook's
}
# Reading settings of text files (data.* keys; pipeline.predict's options of the same names), which a workbook, whose
# cells are neither decoded nor split, does not have; and the one setting a workbook has that no other file has. Given
# with a file they do not describe, they are named in a warning rather than silently ignored (settings_not_read).
TEXT_FILE_SETTINGS = ("encoding", "delimiter", "quoting", "label_prefix")
WORKBOOK_SETTINGS = ("sheet",)
# The setting that only a JSON file has: the key of one object that holds the list of records (data.json_field).
JSON_SETTINGS = ("json_field",)
# The settings that describe a file's layout, which a folder of class folders does not have: by their data.* names,
# which pipeline.predict's options share (the format's own setting is data.file_format there, --format here).
LAYOUT_SETTINGS = ("column_names", "delimiter", "quoting", "label_prefix", *WORKBOOK_SETTINGS, *JSON_SETTINGS)
logger = logging.getLogger(__name__)


class UnknownFormatError(DataError):
    """A file whose format neither its name nor its start tells: a caller that knows what such files hold (a text
    file of one text per line, labels elsewhere) may add how to read them."""


def resolve_format(path: str, explicit: str | None, option: str, formats: Sequence[str] = FORMATS) -> str:
    """An explicit format wins; otherwise the file name tells (a trailing .gz is looked through); stdin is CSV.
    `formats`: those the caller handles (prediction writes fewer than it reads), the only ones an unknown name's
    hint offers."""
    if explicit and explicit != "auto":
        return explicit
    if path == STANDARD_INPUT:
        return "csv"
    name = Path(path).name.lower().removesuffix(".gz")
    kind = EXTENSIONS.get(Path(name).suffix)
    if kind is None:
        endings = sorted(ending for ending, format_ in EXTENSIONS.items() if format_ in formats)
        raise UnknownFormatError(
            f"{path}: cannot tell the file format from its name (known endings: {', '.join(endings)}, "
            f"optionally + .gz); set {option} to {', '.join(formats)}"
        )
    return kind


def settings_not_read(file_format: str) -> tuple[tuple[str, ...], str]:
    """The reading settings that do not describe a file of this format (TEXT_FILE_SETTINGS, WORKBOOK_SETTINGS,
    JSON_SETTINGS), and what the file is, as a warning naming them says."""
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
    """Open a file ('-': stdin) and read its header; iterate `table.chunks` for the rows (all in one chunk when
    `chunk_size` is None). `column_names` names the columns of a header-less CSV/TSV file or sheet; `settings` are
    the other ReadOptions (quoting, delimiter, label_prefix, sheet, json_field and the options that name them). The
    options name the settings that an error message tells the user to change."""
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
    """The format by resolve_format, and by the file's start where its name cannot tell it. A workbook (`workbook`:
    told by its content) is one whatever its name. fastText files have no ending of their own (.txt, .train, .valid),
    so a file whose name tells no format is read as fastText when its first lines all start with the label prefix; a
    CSV/TSV file whose first lines all do is refused, naming the format: read as one column of text (a plain text file
    of one text per line is read so), every text would hold its labels."""
    if workbook and explicit in (None, "auto"):
        return "xlsx"
    try:
        kind = resolve_format(path, explicit, option)
    except DataError:
        if not starts_like_fasttext(lines, label_prefix):
            raise
        logger.info("%s: its first lines start with %s, read as fastText (%s: auto)", lines.name, label_prefix, option)
        return "fasttext"
    if kind in DELIMITERS and starts_like_fasttext(lines, label_prefix):
        raise DataError(
            f"{lines.name}: its first lines start with {label_prefix}, as a fastText file's do ({label_prefix}sports "
            f"Some text), not a {kind.upper()} file's; set {option} to fasttext"
        )
    return kind


def format_read(path: str, explicit: str | None) -> str:
    """The format a file was read as, by its settings and name alone (a finished run's files may be gone): that of
    resolve_format, or fastText for a name of no known ending, the one format _format_of reads such a name as."""
    try:
        return resolve_format(path, explicit, "data.file_format")
    except DataError:
        return "fasttext"


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
