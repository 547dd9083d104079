"""A table being read (Table): its header and numbered chunks of rows, as every format's reader returns it, and
the settings a reader reads it by (ReadOptions).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.common.errors import shorten
from pipeline.config.reading import FASTTEXT_LABEL_PREFIX
from pipeline.data.lines import BYTE_ORDER_MARK, LineSource


@dataclass(frozen=True)
class ReadOptions:
    """How a file is read (open_table's arguments), and the settings that an error tells the user to change."""

    column_names: Sequence[str] | None = None  # a header-less CSV/TSV file's or sheet's columns
    chunk_size: int | None = None  # rows per chunk; None: all in one
    quoting: str = "auto"  # how a CSV/TSV file's double quotes are read (delimited.QUOTINGS)
    quoting_option: str = "data.quoting"
    delimiter: str | None = None  # what separates a CSV/TSV file's fields (None: its format's)
    delimiter_option: str = "data.delimiter"
    label_prefix: str = FASTTEXT_LABEL_PREFIX  # what marks a fastText file's labels
    sheet: str | None = None  # an Excel workbook's sheet (None: its first)
    sheet_option: str = "data.sheet"
    json_field: str | None = None  # the key of a JSON file's one object that holds the records' list
    json_field_option: str = "data.json_field"


@dataclass
class Chunk:
    """Consecutive rows: their values in header order, and the line (or record) number where each starts."""

    records: list[list[Any]]
    numbers: list[int] | list[str]  # a folder's (pipeline/data/folders.py): each file's path in it


@dataclass
class Table:
    """A table being read: its header, how rows are numbered, and a generator of chunks (which raises DataError
    on a malformed row when it reaches it)."""

    name: str
    format: str
    header: list[str]
    unit: str  # "line", "record" or (a workbook's sheet) "row"
    chunks: Iterator[Chunk]
    lines: LineSource | None = None  # for progress: bytes read so far of a text file
    # How a CSV/TSV file's double quotes are read, `auto` resolved for this file: "csv" or "none" (QUOTINGS); None
    # for the formats without quoting (JSON Lines, Parquet).
    quoting: str | None = None
    # The one character between a CSV/TSV file's fields, as read (data.delimiter, or the format's: a comma, a semicolon
    # the first line shows, a tab); None for the other formats.
    delimiter: str | None = None
    # Rows in all, where known before reading them (a folder: its files); else progress estimates them from `lines`.
    row_count: int | None = None
    sheet: str | None = None  # the worksheet read, of an Excel workbook (data.sheet, or its first)
    # The class names of columns a Parquet file stores as ClassLabel ids (a file `datasets` wrote: its schema's
    # metadata), a list of ClassLabel's too (multi-label); None for the other formats, or where none is recorded.
    class_names: dict[str, list[str]] | None = None
    # Added to the error about a column the rows lack: what the file most likely is instead (a JSON object holding
    # the records' list: sniff.records_field_hint).
    missing_column_hint: str = ""
    # The row a CSV/TSV file's or a sheet's header was read from, as written (or the given column names of one without
    # a header): a later row equal to it is that header again (repeats_header); None for the formats without one.
    header_row: list[str] | None = None

    def where(self, number: int | str) -> str:
        return f"{in_sheet(self.name, self.sheet)}, {self.unit} {number}"

    def repeats_header(self, record: Sequence[Any]) -> bool:
        """Whether a row is the header row again, every cell as written (`cat a.csv b.csv` repeats b.csv's header
        between the two files' rows): no data, which read as a row became a class named after the label column's
        name in training and a labelled row in prediction. A file without a header repeats only the given column
        names, exactly; a data row that merely holds the column names' words differs in some cell."""
        if self.header_row is None or len(record) != len(self.header_row):
            return False
        # The second file's byte-order mark (Excel's "CSV UTF-8") sits before its header, mid-file, as a character.
        first = record[0].removeprefix(BYTE_ORDER_MARK) if isinstance(record[0], str) else record[0]
        return [first, *record[1:]] == self.header_row


def and_more(unit: str, numbers: Sequence[int | str]) -> str:
    """ " (and 3 more: lines 7, 9, 12)" after the first of `numbers` (lines, records, rows) is named; "" for one."""
    if len(numbers) < 2:
        return ""
    shown = ", ".join(str(number) for number in numbers[1:6])
    units = unit if len(numbers) == 2 else f"{unit}s"
    return f" (and {len(numbers) - 1:,} more: {units} {shown}{', ...' if len(numbers) > 6 else ''})"


# What a row that repeats its file's header row is, as removed_rows.csv, the report and prediction's error cell say.
REPEATED_HEADER = "the header row again (files joined with cat?)"


def repeated_header_warning(where: str, header_row: Sequence[str], more: str, outcome: str) -> str:
    """The one warning about a file's rows that repeat its header row (Table.repeats_header): `where` the first is,
    `more` the others (and_more), and `outcome`, what the reader's caller did with them."""
    names = shorten(", ".join(header_row), 80)
    return f"{where}: the header row ({names}) again, as files joined with cat repeat it{more}; {outcome}"


def in_sheet(name: str, sheet: str | None) -> str:
    """A file as errors name it, with the worksheet read where it is a workbook ("book.xlsx, sheet 'Train'"), so
    that a row number leads to the sheet it counts in."""
    return f"{name}, sheet {sheet!r}" if sheet else name


def batched(rows: Iterator[tuple[int, list[Any]]], chunk_size: int | None) -> Iterator[Chunk]:
    chunk = Chunk([], [])
    for number, record in rows:
        chunk.records.append(record)
        chunk.numbers.append(number)
        if chunk_size is not None and len(chunk.records) == chunk_size:
            yield chunk
            chunk = Chunk([], [])
    if chunk.records:
        yield chunk
