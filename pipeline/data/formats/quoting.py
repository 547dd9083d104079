"""How a CSV/TSV file's double quotes are read (data.quoting), and the watch for a quote joining rows."""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterable, Iterator

from pipeline.data.formats.header import blank_record
from pipeline.data.lines import LineSource

logger = logging.getLogger("pipeline.data.load")


def reads_quotes(
    lines: LineSource, quoting: str, option: str, detect_with: str | None, skip_first: bool = False
) -> bool:
    """Whether double quotes enclose fields; `auto`: yes, unless a `detect_with` file's start shows none quoted."""
    if quoting != "auto":
        return quoting == "csv"
    sign = _unquoted_sign(lines, detect_with, skip_first) if detect_with is not None else None
    if sign is None:
        return True
    line, what = sign
    logger.info(
        f"{lines.name}, line {line}: {what}, so the file does not quote its fields: read with quotes as text ({option}: auto)"
    )
    return False


def _unquoted_sign(lines: LineSource, delimiter: str, skip_first: bool) -> tuple[int, str] | None:
    """The line within a file's start, and what there shows the file quotes nothing; None when nothing does."""
    # A last line cut off by the head may end inside a quoted field: csv reports the end of data then.
    head = (line + "\n" for line in lines.head_text().split("\n"))
    reader = csv.reader(without_separator_line(head) if skip_first else head, delimiter=delimiter, strict=True)
    watch, previous_end = RowsInOneField(delimiter), 0
    try:
        for record in reader:
            if watch.joins_rows(record):
                return previous_end + 1, f"a quoted field takes in the line break and {delimiter!r} between rows"
            previous_end = reader.line_num
    except csv.Error as error:
        # csv's words for a closing quote followed by text: "'\t' expected after '"'".
        if "expected after" in str(error):
            return reader.line_num, "a field goes on after its closing double quote"
    return None


# Records a comma- or semicolon-separated file must show unquoted before rows joined into one are suspected.
CSV_UNQUOTED_ROWS = 100
# A column's values are kept, to tell rows read as one, while at most this many (a label column's classes).
FEW_VALUES = 200


class RowsInOneField:
    """Watches an unquoted-looking file read with quotes for a text's quote joining rows into one record."""

    def __init__(self, delimiter: str):
        self.delimiter = delimiter
        self.width: int | None = None  # the first non-blank record's
        self.quotes = False  # a field held the delimiter or a line break: the file quotes
        self.unquoted = 0  # records read so far, none quoting
        self.suspect_after = CSV_UNQUOTED_ROWS if delimiter in ",;" else 0
        self.rows = 0  # records after the first as wide as it, whose values `values` holds
        self.values: list[tuple[int, set[str]]] = []

    def joins_rows(self, record: list[str]) -> bool:
        """Whether this record is rows of a file that quotes nothing, read as one."""
        if self.quotes or not record:
            return False
        # Fields joined back: with quotes read as text, a line's fields are its delimiters plus one.
        joined = self.delimiter.join(record)
        holds_delimiter, breaks = joined.count(self.delimiter) >= len(record), "\n" in joined
        if holds_delimiter and breaks and self.unquoted >= self.suspect_after and self._rows(joined):
            return True
        self.quotes = holds_delimiter or breaks
        self.unquoted += 1
        if self.width is None and not blank_record(record):
            self.width, self.values = len(record), [(column, set()) for column in range(len(record))]
        elif len(record) == self.width:
            self._note(record)
        return False

    def _note(self, record: list[str]) -> None:
        """A row's values added to those of the columns still kept."""
        self.rows += 1
        crowded = False
        for column, seen in self.values:
            seen.add(record[column])
            crowded |= len(seen) > FEW_VALUES
        if crowded:
            self.values = [(column, seen) for column, seen in self.values if len(seen) <= FEW_VALUES]

    def _rows(self, joined: str) -> bool:
        """Whether each line of a record is a row as wide as the first with a known value in a repeating column."""
        repeating = [(column, seen) for column, seen in self.values if len(seen) < self.rows]
        lines = [line.split(self.delimiter) for line in joined.split("\n")]
        return all(
            len(cells) == self.width and any(cells[column] in seen for column, seen in repeating) for cells in lines
        )


def without_separator_line(lines: Iterable[str]) -> Iterator[str]:
    """The lines with the first (Excel's `sep=` line) read as empty, so the rest keep their numbers."""
    iterator = iter(lines)
    if next(iterator, None) is not None:
        yield "\n"
    yield from iterator
