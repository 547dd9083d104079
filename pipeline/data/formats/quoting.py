"""How a CSV/TSV file's double quotes are read (data.quoting: auto, csv, none), and the watch for a quote that
is a text's, which would join rows into one field.
"""

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
    """Whether double quotes enclose fields (`csv`: a quoted field may hold delimiters, line breaks and doubled
    quotes) or are text like any other character (`none`, pandas' quoting=csv.QUOTE_NONE).

    `auto` reads quotes, as every CSV writer writes them, except in a file separated by `detect_with` (a tab, or
    data.delimiter's character) whose start (HEAD_BYTES) holds a field that opens with a double quote and goes on
    after its closing one (`"Free" entry`), or one whose closing quote, on a later line, takes in the rows between
    (RowsInOneField). No quoting writer writes either, so such a file quotes nothing: much tab-separated text is
    written so (GLUE's train.tsv files, the SMS Spam Collection), a text that starts with a quote and all. A file
    whose quotes are all well formed is read with quotes, so a quoted file (pandas' to_csv(sep="\t")) is never read
    as unquoted; an unquoted one whose first such text lies further on stops there, with an error naming the setting.
    Comma- and semicolon-separated files (detect_with None) are left out: a CSV file that quotes nothing cannot hold a
    comma in a text, and one that fails to parse is more likely quoted badly than not at all. `skip_first`: the first
    line is Excel's `sep=` line, no row.
    """
    if quoting != "auto":
        return quoting == "csv"
    sign = _unquoted_sign(lines, detect_with, skip_first) if detect_with is not None else None
    if sign is None:
        return True
    line, what = sign
    logger.info(
        "%s, line %d: %s, so the file does not quote its fields: read with quotes as text (%s: auto)",
        lines.name,
        line,
        what,
        option,
    )
    return False


def _unquoted_sign(lines: LineSource, delimiter: str, skip_first: bool) -> tuple[int, str] | None:
    """The line, within the start of a file whose fields `delimiter` separates, and what there shows that the file
    quotes nothing, read as csv reads quotes: a field that opens with a double quote and goes on after its closing
    one, or rows read as one (RowsInOneField); None when there is none."""
    # Split as LineSource splits (at newlines only); a last line cut off by the head may end inside a quoted field,
    # which csv reports as the end of data, never as text after a closing quote.
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
        return (
            (reader.line_num, "a field goes on after its closing double quote")
            if "expected after" in str(error)
            else None
        )
    return None


# Records a comma- or semicolon-separated file must have shown without a quoted delimiter or line break before one of
# its records is taken for rows read as one (RowsInOneField): a review's text over several lines, its commas as many
# on each line as a row has, is that record's shape too, and a file that quotes shows it within its first rows.
CSV_UNQUOTED_ROWS = 100
# A column's values are kept, to tell rows read as one, while there are at most this many (a label column's classes).
FEW_VALUES = 200


class RowsInOneField:
    """Watches the records of a file read with quotes for a quote that is a text's (a sentence that opens one,
    `"We came here to win.`), which csv reads as opening a quoted field: when a later line closes it before a
    delimiter (`That is what we did."\tBusiness`), the lines between are one record, which the width check passes
    where the quote opened and closed in the same column, and a row is lost without a word.

    Such a record's field holds the delimiter and a line break, and each of its lines, with quotes read as text, is a
    row as wide as the first record (the header) that holds, in a column whose values repeat (a label's: FEW_VALUES),
    a value the rows before held there (`Business`). A text over several lines with as many delimiters on each line
    as a row has (a review as pandas quotes it: `pos,"Great food!\nService was slow, though."`) has the shape, but
    pieces of text where the labels would be. Only a file that has quoted nothing before it is suspected: a field
    that held a delimiter or a line break shows that the file quotes (pandas, Excel), and checking stops there. A
    tab (or an "@") in a text over several lines is rare; commas are not, so a comma- or semicolon-separated file is
    suspected only after CSV_UNQUOTED_ROWS records that quoted nothing.
    """

    def __init__(self, delimiter: str):
        self.delimiter = delimiter
        self.width: int | None = None  # the first non-blank record's: the header's, or the given column names'
        self.quotes = False  # a field held the delimiter or a line break: the file quotes
        self.unquoted = 0  # records read so far, none quoting
        self.suspect_after = CSV_UNQUOTED_ROWS if delimiter in ",;" else 0
        self.rows = 0  # records after the first as wide as it, whose values `values` holds
        # (column, its values) for the columns of FEW_VALUES or fewer so far: a text's or an id's is soon dropped,
        # and a large file that quotes nothing costs a set insertion a row (its label column's).
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
        """A row's values added to those of the columns still kept; a column past FEW_VALUES is no longer kept."""
        self.rows += 1
        crowded = False
        for column, seen in self.values:
            seen.add(record[column])
            crowded |= len(seen) > FEW_VALUES
        if crowded:
            self.values = [(column, seen) for column, seen in self.values if len(seen) <= FEW_VALUES]

    def _rows(self, joined: str) -> bool:
        """Whether each line of a record's fields joined back is a row as wide as the first record, holding a value
        seen before in a column whose values repeat (fewer values than rows: a label's, where texts mostly differ)."""
        repeating = [(column, seen) for column, seen in self.values if len(seen) < self.rows]
        lines = [line.split(self.delimiter) for line in joined.split("\n")]
        return all(
            len(cells) == self.width and any(cells[column] in seen for column, seen in repeating) for cells in lines
        )


def without_separator_line(lines: Iterable[str]) -> Iterator[str]:
    """The lines with the first (Excel's `sep=` line) read as an empty one, which is no row: the lines after it keep
    their numbers."""
    iterator = iter(lines)
    if next(iterator, None) is not None:
        yield "\n"
    yield from iterator
