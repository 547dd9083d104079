"""CSV and TSV files as a Table: the delimiter (given, Excel's `sep=` line, or the first line's), quoting, header."""

from __future__ import annotations

import csv
import logging
import re
import sys
from collections.abc import Iterator
from typing import Any

from pipeline.common.errors import DataError, one_line
from pipeline.config.reading import delimiter_problem
from pipeline.data.formats.header import read_header
from pipeline.data.formats.quoting import RowsInOneField, reads_quotes, without_separator_line
from pipeline.data.formats.table import ReadOptions, Table, batched
from pipeline.data.lines import LineSource

logger = logging.getLogger("pipeline.data.load")
DELIMITERS = {"csv": ",", "tsv": "\t"}
QUOTINGS = ("auto", "csv", "none")
# Python's csv module refuses fields over 128 KiB by default, but a long e-mail body is a valid CSV field.
CSV_FIELD_SIZE_LIMIT = min(sys.maxsize, 2**31 - 1)


def delimited_table(lines: LineSource, kind: str, options: ReadOptions) -> Table:
    """A CSV/TSV file as a Table; options.delimiter, else Excel's first line `sep=;`, replaces the format's."""
    column_names, quoting, quoting_option = options.column_names, options.quoting, options.quoting_option
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_SIZE_LIMIT))  # process-wide, and only ever raised
    separator = excel_separator(lines)
    if options.delimiter is not None:
        delimiter = options.delimiter
    else:
        width = len(column_names) if column_names else None
        delimiter = separator or (csv_delimiter(lines, width) if kind == "csv" else DELIMITERS[kind])
    if separator == delimiter:
        logger.info(
            f"{lines.name}, line 1: sep={separator}, Excel's line naming the delimiter: fields separated by {delimiter!r}"
        )
    elif separator is not None:
        logger.warning(
            f"{lines.name}, line 1: sep={separator} names {separator!r} as the delimiter, but {options.delimiter_option} gives {delimiter!r}: read with {delimiter!r} (the line skipped)"
        )
    # Tab- or "@"-separated files (TSV, Financial PhraseBank) often go unquoted, quote-led texts and all.
    detect_with = None if delimiter in ",;" else delimiter
    quoted = reads_quotes(lines, quoting, quoting_option, detect_with, separator is not None)
    reader = csv.reader(
        without_separator_line(lines) if separator is not None else iter(lines),
        delimiter=delimiter,
        strict=True,
        quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
    )
    watch = RowsInOneField(delimiter) if quoted and quoting == "auto" else None
    records = _csv_records(reader, lines, kind, quoting_option if quoted else None, watch)
    hint = "a stray delimiter or quote?"
    if not quoted:
        hint = f"a stray delimiter? Quotes were read as text ({quoting_option}); if the file quotes fields that hold delimiters, set {quoting_option} to csv"
    # One column named but wider rows: another delimiter than the first line showed.
    unsplit = ""
    if kind == "csv":
        unsplit = f"one column named: if a character other than a comma separates the fields, set {options.delimiter_option} to it"
    header, rows, header_row, below_title = read_header(
        records, column_names, lines.name, "line", hint, f"{lines.name} is empty", unsplit
    )
    return Table(
        lines.name,
        kind,
        header,
        "line",
        batched(rows, options.chunk_size),
        lines,
        quoting="csv" if quoted else "none",
        delimiter=delimiter,
        missing_column_hint=below_title,
        header_row=header_row,
    )


# Excel's first line naming a CSV file's delimiter ("sep=;"): no row of the file.
EXCEL_SEPARATOR_LINE = re.compile(r"sep=(.)\r?")


def excel_separator(lines: LineSource) -> str | None:
    """The delimiter a first line exactly `sep=X` names (X one character that can separate fields), else None."""
    match = EXCEL_SEPARATOR_LINE.fullmatch(lines.head_text().split("\n", 1)[0])
    return match.group(1) if match and delimiter_problem(match.group(1)) is None else None


# Other delimiters of a "CSV" file, told by a first line lacking the listed characters.
CSV_DELIMITERS = ((";", "semicolons", ",", "comma"), ("\t", "tabs", ",;", "comma or semicolon"))


def csv_delimiter(lines: LineSource, width: int | None) -> str:
    """ ",", ";" or a tab, by the first line alone: one that lacks the others and splits into fields."""
    head = lines.head_text()
    first = next((line for line in head.splitlines() if line.strip()), "")
    for delimiter, name, lacked, lacked_names in CSV_DELIMITERS:
        if not any(character in first for character in lacked) and _splits_into_fields(first, delimiter, width):
            logger.info(f"{lines.name}: fields separated by {name} (its first line has no {lacked_names}), read so")
            return delimiter
    return ","


def _splits_into_fields(line: str, delimiter: str, width: int | None) -> bool:
    """Whether a line splits at `delimiter` into several fields, and into `width` of them when that is given."""
    if delimiter not in line:
        return False
    fields = len(next(csv.reader([line], delimiter=delimiter)))
    return fields >= 2 and (width is None or fields == width)


def _csv_records(
    reader: Any, lines: LineSource, kind: str, quoting_option: str | None, watch: RowsInOneField | None = None
) -> Iterator[tuple[int, list[str]]]:
    """(first line, fields) per record, fields exactly as written; `watch` tells a record that is several rows."""
    previous_end = 0
    try:
        for record in reader:
            start, previous_end = previous_end + 1, reader.line_num
            if watch is not None and watch.joins_rows(record):
                raise DataError(
                    f"{lines.name}, line {start}: a double quote opens a field that closes on line {previous_end}, taking in the line break and "
                    f"{watch.delimiter!r} between rows (each of lines {start}-{previous_end} is a row of {watch.width} fields with quotes "
                    f"read as text); if the file does not quote its fields (a text may start with a quote), set {quoting_option} "
                    "to none, or to csv to read the field as quoted"
                )
            yield start, record  # an empty line is [], which read_header reads by the file's width
    except csv.Error as error:
        raise DataError(
            f"{lines.name}, line {previous_end + 1}: malformed {kind.upper()} record ({_csv_error_detail(error, quoting_option)})"
        ) from None


def _csv_error_detail(error: csv.Error, quoting_option: str | None) -> str:
    """What csv found, in a user's words; `quoting_option`: set when quotes were read as quoting."""
    message = str(error)
    if "new-line character seen in unquoted field" in message:  # csv's advice (universal-newline mode) is for code
        return "a carriage return inside a field that is not quoted: quote the field or remove the carriage return"
    # csv names the delimiter it expected: a TSV's tab, which one_line would print as a space.
    detail = one_line(message.replace("\t", "\\t"))
    if quoting_option is None:
        return detail
    return f"{detail}; an unclosed quote? A field that starts with a double quote is read up to its closing quote; if the file does not quote its fields (a text may start with a quote), set {quoting_option} to none"
