"""The raw rows of one split as read (SplitRows), and the split names and hints every reader of splits shares."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.common.errors import DataError
from pipeline.data.formats.table import and_more, in_sheet
from pipeline.data.text import resolve_columns

if TYPE_CHECKING:  # a type only: `pipeline.predict` reads files without loading pandas
    import pandas as pd

SPLITS = ("train", "validation", "test")
FILE_KEYS = {"train": "data.train_file", "validation": "data.validation_file", "test": "data.test_file"}


@dataclass(frozen=True)
class SplitRows:
    """The raw rows of one split, with what is needed to point a user at one of them."""

    frame: pd.DataFrame
    source: str  # the file path as configured, or "Hub dataset 'name' split 'train'"
    origin: str  # the config key the rows came from, e.g. "data.train_file" or "data.hub_name"
    unit: str = "record"  # how rows are numbered: "line", "record", "row" (a sheet's) or "file" (named by path)
    numbers: list[int | str] | None = None  # each row's number or file path; None: records 1, 2, ...
    quoting: str | None = None  # a CSV/TSV file's double quotes as read: "csv" or "none" (data.quoting resolved)
    missing_column_hint: str = ""
    files_per_class: dict[str, int] | None = None  # a folder of class folders: the files read from each class folder
    class_files: dict[str, str] | None = None  # a folder of class files: each class's file (read_class_folders)
    delimiter: str | None = None  # a CSV/TSV file's field delimiter as read (Table.delimiter)
    sheet: str | None = None  # an Excel workbook's sheet read (Table.sheet)
    class_names: dict[str, list[str]] | None = None  # a Parquet file's ClassLabel columns (Table.class_names)
    # The rows that repeated the header, left out of `frame`, for removed_rows.csv; None when there were none.
    repeated_headers: SplitRows | None = None

    def number(self, row: int) -> int | str:
        """The row's 1-based line in its file, its record number, or its file's path in a folder."""
        return self.numbers[row] if self.numbers is not None else row + 1

    def and_more(self, rows: list[int]) -> str:
        """ " (and 3 more: lines 7, 9, 12)" after the first of `rows` is named; "" for one row."""
        return and_more(self.unit, [self.number(row) for row in rows])

    def subset(self, rows: list[int]) -> SplitRows:
        """These rows only, each keeping the line or record number it has in the file."""
        frame = self.frame.iloc[rows].reset_index(drop=True)
        numbers = [self.number(row) for row in rows]
        return dataclasses.replace(self, frame=frame, numbers=numbers)

    def where(self, row: int) -> str:
        return f"{in_sheet(self.source, self.sheet)}, {self.unit} {self.number(row)}"

    def column(self, name: str, key: str) -> list[Any]:
        """The values of a configured column (found as text.resolve_columns finds it), naming `key` if absent."""
        try:
            (position,) = resolve_columns([str(c) for c in self.frame.columns], [name], self.source, key)
        except DataError as error:
            raise DataError(f"{error}{self.missing_column_hint}") from None
        return self.frame.iloc[:, position].tolist()


# Labels in another file, or leading each line (TREC): one command away from a TSV file.
SEPARATE_LABELS_HINT = (
    "labels in a separate file (tweet_eval's train_text.txt and train_labels.txt) are not read: join them line by "
    "line (paste train_labels.txt train_text.txt > train.tsv) and read that with data.column_names=[label, text]; a "
    "label leading each line before a space (TREC's 'DESC:manner How did ...') becomes a column once a tab replaces "
    "that space (sed 's/ /\\t/' train.txt > train.tsv)"
)
