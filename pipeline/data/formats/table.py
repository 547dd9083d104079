"""A table being read (Table): its header and numbered chunks of rows, and the settings it is read by (ReadOptions)."""

from __future__ import annotations

import itertools
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
    numbers: list[int] | list[str]  # a folder's: each file's path in it


@dataclass
class Table:
    """A table being read: its header, row numbering, and chunks (raising DataError on a malformed row)."""

    name: str
    format: str
    header: list[str]
    unit: str  # "line", "record" or (a workbook's sheet) "row"
    chunks: Iterator[Chunk]
    lines: LineSource | None = None  # for progress: bytes read so far of a text file
    quoting: str | None = None  # a CSV/TSV file's quotes, `auto` resolved: "csv" or "none"; else None
    delimiter: str | None = None  # a CSV/TSV file's delimiter as read; else None
    row_count: int | None = None  # rows in all where known before reading (a folder's files)
    sheet: str | None = None  # the worksheet read, of an Excel workbook
    # Class names of a Parquet file's ClassLabel columns (`datasets`' schema metadata); None where none is recorded.
    class_names: dict[str, list[str]] | None = None
    missing_column_hint: str = ""
    # The header row as written (or the given names): a later row equal to it is the header again; None: no header.
    header_row: list[str] | None = None

    def where(self, number: int | str) -> str:
        return f"{in_sheet(self.name, self.sheet)}, {self.unit} {number}"

    def repeats_header(self, record: Sequence[Any]) -> bool:
        """Whether a row is the header row again, every cell as written (`cat a.csv b.csv`): no data."""
        if self.header_row is None or len(record) != len(self.header_row):
            return False
        # The second file's byte-order mark sits before its header, mid-file, as a character.
        first = record[0].removeprefix(BYTE_ORDER_MARK) if isinstance(record[0], str) else record[0]
        return [first, *record[1:]] == self.header_row


def and_more(unit: str, numbers: Sequence[int | str]) -> str:
    """ " (and 3 more: lines 7, 9, 12)" after the first of `numbers` is named; "" for one."""
    if len(numbers) < 2:
        return ""
    shown = ", ".join(str(number) for number in numbers[1:6])
    units = unit if len(numbers) == 2 else f"{unit}s"
    return f" (and {len(numbers) - 1:,} more: {units} {shown}{', ...' if len(numbers) > 6 else ''})"


# A row repeating its file's header row, as removed_rows.csv, the report and prediction's error cell say.
REPEATED_HEADER = "the header row again (files joined with cat?)"


def repeated_header_warning(where: str, header_row: Sequence[str], more: str, outcome: str) -> str:
    """The one warning about rows repeating the header: `where` the first is, `more` the others, and `outcome`."""
    names = shorten(", ".join(header_row), 80)
    return f"{where}: the header row ({names}) again, as files joined with cat repeat it{more}; {outcome}"


def in_sheet(name: str, sheet: str | None) -> str:
    """A file as errors name it, with the sheet of a workbook ("book.xlsx, sheet 'Train'")."""
    return f"{name}, sheet {sheet!r}" if sheet else name


def batched(rows: Iterator[tuple[int, list[Any]]], chunk_size: int | None) -> Iterator[Chunk]:
    while batch := list(itertools.islice(rows, chunk_size or None)):
        yield Chunk([record for _, record in batch], [number for number, _ in batch])
