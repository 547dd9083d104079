"""Each file format's reader: how CSV/TSV (and the header rule, which an Excel sheet's rows share:
pipeline/data/workbooks.py), JSON Lines (or one JSON array of objects), Parquet and fastText's `__label__` lines become a
`Table` (pipeline/data/tables.py) of a header and numbered chunks of rows.

`open_table` picks the reader; every malformed row is a `DataError` naming the file and its line or record.
"""

from __future__ import annotations

import csv
import itertools
import json
import logging
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pipeline.common.errors import DataError, one_line, shorten
from pipeline.config.reading import LABEL_COLUMN, STANDARD_INPUT, TEXT_COLUMN, delimiter_problem, normalise_name
from pipeline.data.tables import DELIMITERS, Chunk, LineSource, Table, is_number_text, names_read_as_data

logger = logging.getLogger("pipeline.data.load")

# Python's csv module refuses fields over 128 KiB by default, but a long e-mail body is a valid CSV field.
CSV_FIELD_SIZE_LIMIT = min(sys.maxsize, 2**31 - 1)


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


# -- CSV / TSV --------------------------------------------------------------------------------------------------


def header_of(first_record: list[str], column_names: Sequence[str] | None, where: str) -> tuple[list[str], bool]:
    """The column names of a CSV/TSV file, and whether its first record is a header.

    Without `column_names` the first record is the header. With them, the first record is a header only if it
    repeats them (case and surrounding spaces ignored), so one config reads both a file with a header and one
    without.
    """
    if column_names is None:
        # Kept as written, so that prediction writes the header back unchanged (an empty name aside, which
        # becomes unnamed_column's); columns are looked up by tables.resolve_columns, which ignores case and
        # surrounding spaces.
        names = [name if name.strip() else unnamed_column(index) for index, name in enumerate(first_record)]
        normalised = [normalise_name(name) for name in names]
        if len(set(normalised)) < len(normalised):
            raise DataError(
                f"{where}: the header has repeated column names ({', '.join(n.strip() for n in names)}); "
                "if the file has no header, give the column names"
            )
        return names, True
    if [normalise_name(n) for n in first_record] == [normalise_name(n) for n in column_names]:
        return list(column_names), True
    _check_not_another_header(first_record, column_names, where)
    return list(column_names), False


def unnamed_column(index: int) -> str:
    """The name of a column whose header cell is empty, as pandas names it ("Unnamed: 2", counted from 0). A
    spreadsheet's export, or the SMS Spam Collection's `v1,v2,,,`, leaves the columns that hold a few stray cells
    unnamed; refusing such a header left no way to read the file, since given column names its first row is
    another header."""
    return f"Unnamed: {index}"


def _check_not_another_header(first_record: list[str], column_names: Sequence[str], where: str) -> None:
    """A first record that holds given column names without being exactly them (id,title,description where
    class_index,title,description were given, or the names in another order) is a header of its own, not data:
    read as data it would be labelled as a text and its names replaced by the given ones (id written back as
    class_index, title and description swapped). Two such cells, or one that is not a number (a data row may well
    hold 0 where the columns are named 0, 1, ...), make it a header."""
    given = {normalise_name(name) for name in column_names}
    named = [cell for cell in first_record if normalise_name(cell) in given]
    if len(named) >= 2 or not all(is_number_text(cell) for cell in named):
        raise DataError(
            f"{where}: the first row ({', '.join(shorten(cell, 30) for cell in first_record)}) is a header naming "
            f"{', '.join(named)}, but not as the given column names ({', '.join(column_names)}) do; leave the column "
            "names out to read the file by its own header"
        )


def delimited_table(
    lines: LineSource,
    kind: str,
    column_names: Sequence[str] | None,
    chunk_size: int | None,
    quoting: str = "auto",
    quoting_option: str = "data.quoting",
    given_delimiter: str | None = None,
    delimiter_option: str = "data.delimiter",
) -> Table:
    """A CSV/TSV file as a Table; `given_delimiter` (`delimiter_option`: data.delimiter) replaces the format's
    delimiter, and Excel's first line `sep=;` (excel_separator) does where it is not given."""
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_SIZE_LIMIT))  # process-wide, and only ever raised
    separator = excel_separator(lines)
    if given_delimiter is not None:
        delimiter = given_delimiter
    elif separator is not None:
        delimiter = separator
    elif kind == "csv":
        delimiter = csv_delimiter(lines, len(column_names) if column_names else None)
    else:
        delimiter = DELIMITERS[kind]
    if separator is not None:
        _say_separator_line(lines.name, separator, delimiter, delimiter_option)
    # Comma- (and a spreadsheet's semicolon-) separated files quote; texts rarely hold a tab or an "@", so files
    # separated so (TSV, the Financial PhraseBank's sentence@label) are often written unquoted, quote-led texts and all.
    detect_with = None if delimiter in ",;" else delimiter
    quoted = reads_quotes(lines, quoting, quoting_option, detect_with, separator is not None)
    reader = csv.reader(
        _without_separator_line(lines) if separator is not None else iter(lines),
        delimiter=delimiter,
        strict=True,
        quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
    )
    # Under auto, a file read with quotes is watched for a quote that is a text's, which would join rows.
    watch = RowsInOneField(delimiter) if quoted and quoting == "auto" else None
    records = _csv_records(reader, lines, kind, quoting_option if quoted else None, watch)
    hint = _width_hint(quoted, quoting_option)
    # A CSV file read as one column whose later rows split into several: its fields are separated by another
    # character than those csv_delimiter tells by the first line (TSV is told by its name or first line).
    unsplit = _unsplit_hint(delimiter_option) if kind == "csv" else ""
    header, rows, header_row, below_title = read_header(
        records, column_names, lines.name, "line", hint, f"{lines.name} is empty", unsplit
    )
    return Table(
        lines.name,
        kind,
        header,
        "line",
        batched(rows, chunk_size),
        lines,
        quoting="csv" if quoted else "none",
        delimiter=delimiter,
        missing_column_hint=below_title,
        header_row=header_row,
    )


# Excel's first line naming a CSV file's delimiter, which Excel writes and reads ("sep=;"): no row of the file.
EXCEL_SEPARATOR_LINE = re.compile(r"sep=(.)\r?")


def excel_separator(lines: LineSource) -> str | None:
    """The delimiter that a first line exactly `sep=X` names (Excel's; X one character that can separate fields),
    else None."""
    match = EXCEL_SEPARATOR_LINE.fullmatch(lines.head_text().split("\n", 1)[0])
    if match is None or delimiter_problem(match.group(1)) is not None:
        return None
    return match.group(1)


def _say_separator_line(name: str, separator: str, delimiter: str, delimiter_option: str) -> None:
    """An INFO line for a `sep=` line read, or a WARNING where the delimiter given (`delimiter_option`) is another."""
    if separator == delimiter:
        logger.info(
            "%s, line 1: sep=%s, Excel's line naming the delimiter: fields separated by %r", name, separator, delimiter
        )
        return
    logger.warning(
        "%s, line 1: sep=%s names %r as the delimiter, but %s gives %r: read with %r (the line skipped)",
        name,
        separator,
        separator,
        delimiter_option,
        delimiter,
        delimiter,
    )


def _without_separator_line(lines: Iterable[str]) -> Iterator[str]:
    """The lines with the first (Excel's `sep=` line) read as an empty one, which is no row: the lines after it keep
    their numbers."""
    iterator = iter(lines)
    if next(iterator, None) is not None:
        yield "\n"
    yield from iterator


def read_header(
    records: Iterator[tuple[int, list[str]]],
    column_names: Sequence[str] | None,
    name: str,
    unit: str,
    width_hint: str,
    empty: str,
    one_column_hint: str = "",
) -> tuple[list[str], Iterator[tuple[int, list[str]]], list[str], str]:
    """The header rule over (number, fields) records, a CSV/TSV file's or an Excel sheet's: the column names (the
    first non-blank record, or `column_names`: header_of), the data records, each checked to be as wide, the row
    that a repeat of the header equals (Table.header_row: the header's record as written, or the given names), and
    where the header seems to be when a title sits above it (header_below_title; "" when none does), for the error
    about a missing column. `unit` names a record's number in errors ("line", a sheet's "row"), `width_hint` says
    what a record of another width most likely holds, and `one_column_hint` what else it may mean when the names are
    one column; `empty` is the error for records that are all blank."""
    first = next((record for record in records if not _blank(record[1])), None)
    if first is None:
        raise DataError(empty)
    number, first_record = first
    header, is_header = header_of(first_record, column_names, f"{name}, {unit} {number}")
    names_from = f"the header on {unit} {number}" if is_header else "the given column names"
    pending = [] if is_header else [first]
    hint = f"{one_column_hint}; or {width_hint}" if one_column_hint and len(header) == 1 else width_hint
    header_row = list(first_record if is_header else header)
    title, below_title = None, ""
    if is_header and _filled(first_record) == 1:

        def title(ahead: list[tuple[int, list[str]]]) -> str:
            return header_below_title(first_record, number, ahead, unit)

        if len(first_record) > 1:  # a title padded with empty cells (Excel's CSV) reads as a header as wide as the rows
            pending = list(itertools.islice(records, TITLE_ROWS))
            below_title = title(pending)
    rows = _checked_width(_chain(pending, records), header, names_from, name, unit, hint, title)
    return header, rows, header_row, f"; {below_title}" if below_title else ""


# Records after a first record of one cell (a title: "Export from helpdesk 2024-03-01") among which the header is
# looked for: a blank row or two may lie between.
TITLE_ROWS = 5


def header_below_title(first_record: list[str], number: int, ahead: list[tuple[int, list[str]]], unit: str) -> str:
    """Where the header seems to be when the first record (on `number`), read as the header, is a title above it: one
    cell filled (of several words where it is the record's only cell: _one_column_name), and the next record with
    cells in it (within TITLE_ROWS of it, in `ahead`) holds two or more names (neither numbers nor texts:
    tables.names_read_as_data) and is as wide as the record after it. There is no setting that skips rows, so the rows
    above the header are to be deleted. "" where the first record is no such title."""
    filled = [(line, record) for line, record in ahead if _filled(record)]
    if _filled(first_record) != 1 or _one_column_name(first_record) or not filled or filled[0][0] - number > TITLE_ROWS:
        return ""
    (line, names), following = filled[0], filled[1:2]
    if _filled(names) < 2 or names_read_as_data(names) or any(len(record) != len(names) for _, record in following):
        return ""
    shown = shorten(", ".join(name for name in names if name.strip()), 80)
    return f"a title above the header? The header seems to be on {unit} {line} ({shown}): delete the {unit}s above it"


def _one_column_name(record: list[str]) -> bool:
    """Whether a record of one cell, unpadded, is one word: a one-column file's name (`text`), whose texts may hold
    an unquoted comma, more likely than a title (which has words; Excel's CSV pads one with commas)."""
    return len(record) == 1 and " " not in record[0].strip()


def _filled(record: list[str]) -> int:
    """How many of a record's cells hold more than spaces."""
    return sum(1 for cell in record if cell.strip())


# The delimiters a file named (or given as) CSV may be written with besides the comma, each told by a first line that
# lacks the characters listed (as the INFO line names them): a spreadsheet's "CSV" where the comma is the decimal mark
# (semicolons), and a tab-separated file saved under a .csv name (the name most tools give any table).
CSV_DELIMITERS = ((";", "semicolons", ",", "comma"), ("\t", "tabs", ",;", "comma or semicolon"))


def csv_delimiter(lines: LineSource, width: int | None) -> str:
    """ ",", ";" or a tab. A file whose first line lacks a delimiter's listed characters (CSV_DELIMITERS) but splits
    at it into several fields (into `width`, when the column names are given) is read with it, with an INFO line; any
    other is read with ",". Only the first line decides, so a semicolon or tab inside a text further down never
    does."""
    head = lines.head_text()
    first = next((line for line in head.splitlines() if line.strip()), "")
    for delimiter, name, lacked, lacked_names in CSV_DELIMITERS:
        if not any(character in first for character in lacked) and _splits_into_fields(first, delimiter, width):
            logger.info(
                "%s: fields separated by %s (its first line has no %s), read so", lines.name, name, lacked_names
            )
            return delimiter
    return ","


def _splits_into_fields(line: str, delimiter: str, width: int | None) -> bool:
    """Whether a line splits at `delimiter` into several fields, and into `width` of them when that is given."""
    if delimiter not in line:
        return False
    fields = len(next(csv.reader([line], delimiter=delimiter)))
    return fields >= 2 and (width is None or fields == width)


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
    reader = csv.reader(_without_separator_line(head) if skip_first else head, delimiter=delimiter, strict=True)
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
        if self.width is None and not _blank(record):
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


def _csv_records(
    reader: Any, lines: LineSource, kind: str, quoting_option: str | None, watch: RowsInOneField | None = None
) -> Iterator[tuple[int, list[str]]]:
    """(first line of the record, fields), every field the exact string in the file; an empty line has no field.
    `quoting_option`: the setting that reads quotes as text, when they are read as quoting; `watch`: what tells a
    record that is several rows of a file that quotes nothing (data.quoting: auto)."""
    previous_end = 0
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise DataError(
                f"{lines.name}, line {previous_end + 1}: malformed {kind.upper()} record "
                f"({_csv_error_detail(error, quoting_option)})"
            ) from None
        start, previous_end = previous_end + 1, reader.line_num
        if watch is not None and watch.joins_rows(record):
            raise DataError(_joined_rows_message(lines.name, start, previous_end, watch, quoting_option or ""))
        yield start, record  # an empty line is [], which _checked_width reads by the file's width


def _joined_rows_message(name: str, start: int, end: int, watch: RowsInOneField, quoting_option: str) -> str:
    """The error about lines `start` to `end` read as one record (RowsInOneField)."""
    return (
        f"{name}, line {start}: a double quote opens a field that closes on line {end}, taking in the line break and "
        f"{watch.delimiter!r} between rows (each of lines {start}-{end} is a row of {watch.width} fields with quotes "
        f"read as text); if the file does not quote its fields (a text may start with a quote), set {quoting_option} "
        "to none, or to csv to read the field as quoted"
    )


def _csv_error_detail(error: csv.Error, quoting_option: str | None) -> str:
    """What csv found, and what in a file causes it, in a user's words. `quoting_option`: the setting that reads
    quotes as text, when they were read as quoting (the only other errors csv raises are about quotes)."""
    message = str(error)
    if "new-line character seen in unquoted field" in message:  # csv's advice (universal-newline mode) is for code
        return "a carriage return inside a field that is not quoted: quote the field or remove the carriage return"
    # csv names the delimiter it expected: a TSV's tab, which one_line would print as a space.
    detail = one_line(message.replace("\t", "\\t"))
    if quoting_option is None:
        return detail
    return (
        f"{detail}; an unclosed quote? A field that starts with a double quote is read up to its closing quote; "
        f"if the file does not quote its fields (a text may start with a quote), set {quoting_option} to none"
    )


def _blank(record: list[str]) -> bool:
    """An empty line, or one of spaces."""
    return not record or (len(record) == 1 and not record[0].strip())


def _width_hint(quoted: bool, quoting_option: str) -> str:
    """What a row of the wrong width most likely holds, as its error says."""
    if quoted:
        return "a stray delimiter or quote?"
    return (
        f"a stray delimiter? Quotes were read as text ({quoting_option}); if the file quotes fields that hold "
        f"delimiters, set {quoting_option} to csv"
    )


def _unsplit_hint(delimiter_option: str) -> str:
    """What a CSV file whose names are one column, but whose rows are wider, most likely is: separated by another
    character, which `delimiter_option` gives."""
    return f"one column named: if a character other than a comma separates the fields, set {delimiter_option} to it"


def _checked_width(
    records: Iterator[tuple[int, list[str]]],
    header: list[str],
    names_from: str,
    name: str,
    unit: str,
    hint: str,
    title: Callable[[list[tuple[int, list[str]]]], str] | None = None,
) -> Iterator[tuple[int, list[str]]]:
    """The records, each as wide as the header. `title`: where the header seems to be when the first record read as
    the header is a title above it (header_below_title), asked of the first row that is wider, and the one after it,
    only once that row fails: a pipe's rows are read as they arrive."""
    empty_lines: list[int] = []
    first_row = True
    for line, record in records:
        # A line of spaces between rows of several columns is no row; in a one-column file it is a row whose text
        # is blank (`""`, or spaces), which prediction keeps and reports rather than silently dropping. So is an
        # empty line between its rows: a text file of one text per line (tweet_eval's test_text.txt) lines up with
        # its labels file only if every line is a row. Empty lines after the last row end the file; they are none.
        if len(header) > 1 and _blank(record):
            continue
        if not record:
            empty_lines.append(line)
            continue
        yield from ((empty, [""]) for empty in empty_lines)
        empty_lines.clear()
        if len(record) != len(header):
            below_title = title([(line, record), *itertools.islice(records, 1)]) if title and first_row else ""
            raise DataError(
                f"{name}, {unit} {line}: {len(record)} fields, expected {len(header)} as in {names_from} "
                f"({', '.join(header)}); {below_title or hint}"
            )
        first_row = False
        yield line, record


def _chain(first: list, rest: Iterator) -> Iterator:
    yield from first
    yield from rest


# -- JSON Lines -------------------------------------------------------------------------------------------------


def json_table(
    lines: LineSource, chunk_size: int | None, field: str | None = None, field_option: str = "data.json_field"
) -> Table:
    """JSON Lines (one object per line); a file that is one JSON array of objects is accepted too, and with `field`
    (`field_option`: data.json_field) one JSON object whose key `field` holds the list of records (SQuAD's
    {"version": ..., "data": [...]}, as HF datasets' load_dataset("json", field=...) reads it).

    The header is every key of the first chunk, in order of appearance; a key first seen in a later chunk is an
    error (the output's columns are fixed by then), which a whole-file read (chunk_size None) never meets.
    """
    objects = _field_records(lines, field, field_option) if field is not None else _json_objects(lines)
    first_batch = list(_take(objects, chunk_size))
    if not first_batch:
        raise DataError(
            f"{lines.name}: the list {field!r} ({field_option}) is empty" if field else f"{lines.name} is empty"
        )
    hint = ""
    if field is None:
        _refuse_table_as_one_object(first_batch[0][1], lines.name, field_option)
        # One record in the whole file (a first chunk of one, unless chunks are of one row): the file is one object.
        if len(first_batch) == 1 and chunk_size != 1:
            hint = records_field_hint(first_batch[0][1], field_option)
    unit = "record" if first_batch[0][0] < 0 else "line"  # a JSON array's objects are numbered as records
    header = list(dict.fromkeys(key for _, record in first_batch for key in record))
    rows = _json_rows(_chain(first_batch, objects), header, lines.name, unit)
    return Table(lines.name, "jsonl", header, unit, batched(rows, chunk_size), lines, missing_column_hint=hint)


def records_field_hint(record: dict, field_option: str) -> str:
    """What a file of one JSON object (read as one record) most likely holds when a key of it is a list of objects:
    the records, which `field_option` names; "" when no key's value is one."""
    keys = _record_list_keys(record)
    if not keys:
        return ""
    return (
        f"; the file is one JSON object whose {keys[0]!r} holds a list of objects: if those are the records, set "
        f"{field_option}={keys[0]}"
    )


def _record_list_keys(record: dict) -> list[str]:
    """The keys of a JSON object whose value is a non-empty list of objects: where records may be (data.json_field)."""
    return [
        key
        for key, value in record.items()
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value)
    ]


def _refuse_table_as_one_object(record: dict, name: str, field_option: str) -> None:
    """pandas' `DataFrame.to_json()` writes a whole table as one object: by default of columns ({"text": {"0": ...,
    "1": ...}}), or of rows by index, or split into columns and data. Read as a record it was one row whose text is
    the JSON of a whole column, and prediction labelled that row without a word."""
    values = list(record.values())
    # Columns orient: row indices inside ({"0": ..., "1": ...}); index orient: row indices outside. A record whose
    # fields are nested objects of their own ({"review": {"text": ...}}) is neither.
    by_column_or_index = (
        len(values) > 0
        and all(isinstance(value, dict) for value in values)
        and (_all_indices(record) or all(_all_indices(value) for value in values))
    )
    split = {"columns", "data"} <= set(record) and all(isinstance(value, list) for value in values)
    if by_column_or_index or split:
        raise DataError(
            f"{name}: the first record is a whole table in one JSON object (pandas' DataFrame.to_json() without "
            "orient='records'?), not one record per row; write it with df.to_json(path, orient='records', "
            "lines=True)"
        )
    # A file of splits, each a list of rows: clinc_oos's data_full.json ({"train": [[text, intent], ...], "val": ...}).
    first_rows = [value[0] for value in values if isinstance(value, list) and value]
    lists = all(isinstance(value, list) for value in values)
    if lists and first_rows and all(isinstance(row, (list, dict)) for row in first_rows):
        keys = ", ".join(repr(key) for key in list(record)[:6])
        # A list of objects is read as the records where a key names it (data.json_field); a list of lists is not.
        objects = _record_list_keys(record)
        read_one = f", or read one list of objects with {field_option}={objects[0]}" if objects else ""
        raise DataError(
            f"{name}: one JSON object whose keys ({keys}) each hold a list of rows (a file of splits, as clinc_oos's "
            "data_full.json), not one record per row; write each split as its own JSON Lines file, one object per "
            f'row ({{"text": ..., "label": ...}}){read_one}'
        )


def _all_indices(mapping: dict) -> bool:
    """Whether every key is a row index as pandas writes one ("0", "1", ...)."""
    return len(mapping) > 0 and all(str(key).isdigit() for key in mapping)


def _take(iterator: Iterator, count: int | None) -> Iterator:
    for index, item in enumerate(iterator):
        yield item
        if count is not None and index + 1 == count:
            return


def _json_objects(lines: LineSource) -> Iterator[tuple[int, dict]]:
    """(line number, object); for a JSON array, or one object written over several lines, (-record number, object)."""
    source = iter(lines)
    first = True
    for text in source:
        if not text.strip():
            continue
        if text.lstrip().startswith("["):
            yield from _json_records(_whole_json(text + "".join(source), lines.name), lines.name)
            return
        number = lines.line_number
        if first and text.lstrip().startswith("{") and _json_or_none(text) is None:
            # One object indented over several lines (json.dump(..., indent=2)): read whole, as an array is; a JSON
            # Lines file whose first line is broken fails on that line, as before.
            whole = _json_or_none(text + "".join(source))
            if isinstance(whole, dict):
                yield -1, whole
                return
        first = False
        yield number, _parse_json_line(text, number, lines.name)
    # (lines split on "\n" only: JSON strings may hold U+2028, which str.splitlines would split on)


def _json_or_none(text: str) -> Any:
    """The JSON value of `text`, or None where it is not valid JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _parse_json_line(text: str, line: int, name: str) -> dict:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(f"{name}, line {line}: not valid JSON ({error.msg}, column {error.colno})") from None
    if not isinstance(record, dict):
        raise DataError(f"{name}, line {line}: expected a JSON object with named fields, got {type(record).__name__}")
    return record


def _whole_json(content: str, name: str, setting: str = "") -> Any:
    """A whole file's one JSON value; an error names the line. `setting`: why the file must be one value."""
    try:
        return json.loads(content)
    except json.JSONDecodeError as error:
        raise DataError(f"{name}, line {error.lineno}: not valid JSON ({error.msg}){setting}") from None


def _json_records(records: Any, name: str) -> Iterator[tuple[int, dict]]:
    """The objects of a list of records, numbered (negated) by their position in it."""
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise DataError(f"{name}, record {index + 1}: expected a JSON object with named fields")
        yield -(index + 1), record


def _field_records(lines: LineSource, field: str, option: str) -> Iterator[tuple[int, dict]]:
    """The records of a file that is one JSON object whose key `field` (the setting `option`) holds their list."""
    reads = f"; {option} reads a file that is one JSON object holding a list of records"
    document = _whole_json("".join(lines), lines.name, f"{reads} (unset it for JSON Lines)")
    if not isinstance(document, dict):
        raise DataError(f"{lines.name}: the file is a JSON {_json_kind(document)}, not an object{reads}")
    if field not in document:
        keys = ", ".join(repr(key) for key in list(document)[:10])
        raise DataError(f"{lines.name}: no key {field!r} ({option}); the object's keys: {keys or 'none'}")
    records = document[field]
    if not isinstance(records, list):
        raise DataError(f"{lines.name}: {field!r} ({option}) holds a JSON {_json_kind(records)}, not a list of records")
    yield from _json_records(records, lines.name)


def _json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words."""
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return kinds.get(type(value), "null")


def _json_rows(
    objects: Iterator[tuple[int, dict]], header: list[str], name: str, unit: str
) -> Iterator[tuple[int, list]]:
    known = set(header)
    for number, record in objects:
        number = -number if number < 0 else number
        extra = [key for key in record if key not in known]
        if extra:
            raise DataError(
                f"{name}, {unit} {number}: key {extra[0]!r} does not appear in the first rows read; "
                "give every record the same keys (or read more rows per chunk)"
            )
        yield number, [record.get(key) for key in header]


# -- Parquet ----------------------------------------------------------------------------------------------------


def parquet_table(lines: LineSource, path: str, chunk_size: int | None) -> Table:
    import pyarrow.parquet as pq

    if path == STANDARD_INPUT or lines.compressed:
        raise DataError(f"{lines.name}: Parquet is read from an uncompressed file, not a stream or .gz")
    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises several unrelated types for a damaged file
        raise DataError(f"{path}: not a readable Parquet file ({type(error).__name__}: {one_line(error)})") from None
    header = [str(name) for name in parquet.schema_arrow.names]
    chunks = _parquet_chunks(parquet, header, path, chunk_size)
    return Table(
        lines.name, "parquet", header, "record", chunks, class_names=class_label_names(parquet.schema_arrow.metadata)
    )


def class_label_names(metadata: dict[bytes, bytes] | None) -> dict[str, list[str]] | None:
    """The class names of each ClassLabel column (or list of ClassLabel) that the `datasets` library recorded in a
    Parquet file's schema metadata (`Dataset.to_parquet`, the Hub's own Parquet files): the ids alone are stored, and
    read without these names a run's classes were 0, 1, 2, ... Metadata it cannot read names none."""
    try:
        features = json.loads((metadata or {}).get(b"huggingface", b"{}"))["info"]["features"]
    except (ValueError, KeyError, TypeError):
        return None
    names = {}
    for column, feature in features.items() if isinstance(features, dict) else ():
        if isinstance(feature, list) and len(feature) == 1:  # an older writer's list of one feature
            feature = feature[0]
        elif isinstance(feature, dict) and isinstance(feature.get("feature"), dict):  # List / Sequence of it
            feature = feature["feature"]
        if isinstance(feature, dict) and feature.get("_type") == "ClassLabel" and feature.get("names"):
            names[str(column)] = [str(name) for name in feature["names"]]
    return names or None


def _parquet_chunks(parquet: Any, header: list[str], path: str, chunk_size: int | None) -> Iterator[Chunk]:
    number, pending = 0, Chunk([], [])
    try:
        for batch in parquet.iter_batches(batch_size=chunk_size or 65_536):
            columns = [batch.column(index).to_pylist() for index in range(len(header))]
            records = [list(values) for values in zip(*columns)]
            chunk = Chunk(records, list(range(number + 1, number + len(records) + 1)))
            number += len(records)
            if chunk_size is not None:
                yield chunk
            else:  # a whole-file read is one chunk, as for the other formats
                pending.records.extend(chunk.records)
                pending.numbers.extend(chunk.numbers)
    except OSError as error:
        raise DataError(f"{path}: not a readable Parquet file ({one_line(error)})") from None
    if pending.records:
        yield pending


# -- fastText ---------------------------------------------------------------------------------------------------

# Lines of a file's start that must all start with the label prefix for a file of no known ending to be fastText.
FASTTEXT_DETECTION_LINES = 20


def starts_like_fasttext(lines: LineSource, label_prefix: str) -> bool:
    """Whether the first non-blank lines of a file's start (up to FASTTEXT_DETECTION_LINES) all start with the label
    prefix: a fastText file whose labels lead its lines. A last line cut off by the head is left out, since it may
    end inside the prefix."""
    head = lines.head_text()
    starts = head.split("\n")
    if len(starts) > 1 and not head.endswith("\n"):
        starts.pop()
    first = [line.lstrip() for line in starts if line.strip()][:FASTTEXT_DETECTION_LINES]
    return bool(first) and all(line.startswith(label_prefix) for line in first)


def fasttext_table(lines: LineSource, chunk_size: int | None, label_prefix: str) -> Table:
    """fastText's layout: one row per non-blank line, its `__label__<name>` words as the label (None: no label; a
    name; a list of names for several, as a JSON list column holds them) and the rest of the line as the text."""
    records = _fasttext_records(lines, FastTextLabels(label_prefix))
    first = next(records, None)
    if first is None:
        raise DataError(f"{lines.name} is empty")
    header = [LABEL_COLUMN, TEXT_COLUMN]  # data.label_column's and data.text_columns' defaults
    return Table(lines.name, "fasttext", header, "line", batched(_chain([first], records), chunk_size), lines)


def _fasttext_records(lines: LineSource, labels: FastTextLabels) -> Iterator[tuple[int, list]]:
    for line in lines:
        if line.strip():
            names, text = labels.split(line, f"{lines.name}, line {lines.line_number}")
            yield lines.line_number, [None if not names else names[0] if len(names) == 1 else names, text]


class FastTextLabels:
    """How a fastText line's labels are told from its text: words that start with the prefix, up to whitespace or a
    comma, separated from the next word by whitespace or a comma. The comma is that of the CSV file many fastText
    files were made from by putting the prefix before its label field (`__label__1,Some text`; fastText's own
    dbpedia.train has `__label__1 , some text`): a separator, part of neither the label nor the text."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        label = re.escape(prefix) + r"([^\s,]*)"
        self._leading = re.compile(rf"\s*{label}(?:\s*,\s*|\s+|$)")

    def split(self, line: str, where: str) -> tuple[list[str], str]:
        """A line's labels (each once, in order) and its text. Labels lead the line, or end it (some files put them
        last), or both, as fastText reads them; a label word within the text is left there (fastText would take it
        as a label, but inside a sentence it is far more likely text). A prefix without a name is an error."""
        labels, position = [], 0
        while match := self._leading.match(line, position):
            labels.append(match.group(1))
            position = match.end()
        text, ending = line[position:], []
        # Its end is read word by word from the right, not by a regular expression searched from the left, which tries
        # every position: a line with a long run of spaces before its label took seconds (50,000 spaces: 15 s).
        while self.prefix in text:  # most texts hold no prefix at all
            body = _without_separator(text)
            start = _last_word_start(body)
            if not body.startswith(self.prefix, start):
                break
            ending.insert(0, body[start + len(self.prefix) :])
            text = _without_separator(body[:start])
        if "" in labels + ending:
            raise DataError(f"{where}: {self.prefix} with no label name after it; write {self.prefix}<name>")
        return list(dict.fromkeys(labels + ending)), text.strip()


def _without_separator(text: str) -> str:
    """`text` without what separates its last word from a label after it: whitespace, at most one comma."""
    text = text.rstrip()
    return text[:-1].rstrip() if text.endswith(",") else text


def _last_word_start(text: str) -> int:
    """Where the last word of `text` starts: after its last whitespace or comma, as a label name ends at one."""
    start = len(text)
    while start and not (text[start - 1].isspace() or text[start - 1] == ","):
        start -= 1
    return start
