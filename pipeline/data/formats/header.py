"""The header rule of CSV/TSV files and sheets: the first non-blank record (or data.column_names) names the columns."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from pipeline.common.errors import DataError, shorten
from pipeline.config.reading import normalise_name
from pipeline.data.text import is_number_text

HEADED_FORMATS = ("csv", "tsv", "xlsx")
MAX_HEADER_NAME = 30


def looks_like_data(header: Sequence[str], file_format: str) -> bool:
    return file_format in HEADED_FORMATS and names_read_as_data(header)


def names_read_as_data(names: Sequence[str]) -> bool:
    """Whether a row read as names is more likely data: a number (a class index) or a text among them."""
    return any(is_number_text(name) or len(str(name).strip()) > MAX_HEADER_NAME for name in names)


def header_of(first_record: list[str], column_names: Sequence[str] | None, where: str) -> tuple[list[str], bool]:
    """The column names, and whether the first record is a header (with `column_names`: only if it repeats them)."""
    if column_names is None:
        # Kept as written, so prediction writes the header back unchanged.
        names = [name if name.strip() else unnamed_column(index) for index, name in enumerate(first_record)]
        normalised = [normalise_name(name) for name in names]
        if len(set(normalised)) < len(normalised):
            raise DataError(
                f"{where}: the header has repeated column names ({', '.join(n.strip() for n in names)}); if the file has no header, give the column names"
            )
        return names, True
    if [normalise_name(n) for n in first_record] == [normalise_name(n) for n in column_names]:
        return list(column_names), True
    # A first record holding given names, but not exactly them, is a header of its own: an error.
    given = {normalise_name(name) for name in column_names}
    named = [cell for cell in first_record if normalise_name(cell) in given]
    if len(named) >= 2 or not all(is_number_text(cell) for cell in named):
        raise DataError(
            f"{where}: the first row ({', '.join(shorten(cell, 30) for cell in first_record)}) is a header naming "
            f"{', '.join(named)}, but not as the given column names ({', '.join(column_names)}) do; leave the column "
            "names out to read the file by its own header"
        )
    return list(column_names), False


def unnamed_column(index: int) -> str:
    """An empty header cell's name, as pandas gives it ("Unnamed: 2"): `v1,v2,,,` stays readable."""
    return f"Unnamed: {index}"


def read_header(
    records: Iterator[tuple[int, list[str]]],
    column_names: Sequence[str] | None,
    name: str,
    unit: str,
    width_hint: str,
    empty: str,
    one_column_hint: str = "",
) -> tuple[list[str], Iterator[tuple[int, list[str]]], list[str], str]:
    """The header rule: (names, width-checked records, Table.header_row, the "title above the header" hint)."""
    first = next((record for record in records if not blank_record(record[1])), None)
    if first is None:
        raise DataError(empty)
    number, first_record = first
    header, is_header = header_of(first_record, column_names, f"{name}, {unit} {number}")
    names_from = f"the header on {unit} {number}" if is_header else "the given column names"
    pending = [] if is_header else [first]
    hint = f"{one_column_hint}; or {width_hint}" if one_column_hint and len(header) == 1 else width_hint
    titled, below_title = is_header and _filled(first_record) == 1, ""
    if titled and len(first_record) > 1:  # a title padded with empty cells (Excel's CSV)
        pending = list(itertools.islice(records, TITLE_ROWS))
        below_title = header_below_title(first_record, number, pending, unit)

    def checked(rows: Iterator[tuple[int, list[str]]]) -> Iterator[tuple[int, list[str]]]:
        """The rows, each as wide as the header; a title above it is looked for once the first row fails."""
        empty_lines, first_row = [], True
        for line, record in rows:
            # A blank line between rows of several columns is no row; in a one-column file it is a blank text.
            if len(header) > 1 and blank_record(record):
                continue
            if not record:
                empty_lines.append(line)
                continue
            yield from ((empty, [""]) for empty in empty_lines)
            empty_lines.clear()
            if len(record) != len(header):
                title = ""
                if titled and first_row:
                    title = header_below_title(first_record, number, [(line, record), *itertools.islice(rows, 1)], unit)
                raise DataError(
                    f"{name}, {unit} {line}: {len(record)} fields, expected {len(header)} as in {names_from} ({', '.join(header)}); {title or hint}"
                )
            first_row = False
            yield line, record

    header_row = list(first_record if is_header else header)
    rows = checked(itertools.chain(pending, records))
    return header, rows, header_row, f"; {below_title}" if below_title else ""


TITLE_ROWS = 5


def header_below_title(first_record: list[str], number: int, ahead: list[tuple[int, list[str]]], unit: str) -> str:
    """Where the header seems to be when the first record is a title above it; else ""."""
    filled = [(line, record) for line, record in ahead if _filled(record)]
    if _filled(first_record) != 1 or _one_column_name(first_record) or not filled or filled[0][0] - number > TITLE_ROWS:
        return ""
    (line, names), following = filled[0], filled[1:2]
    if _filled(names) < 2 or names_read_as_data(names) or any(len(record) != len(names) for _, record in following):
        return ""
    shown = shorten(", ".join(name for name in names if name.strip()), 80)
    return f"a title above the header? The header seems to be on {unit} {line} ({shown}): delete the {unit}s above it"


def _one_column_name(record: list[str]) -> bool:
    """Whether a one-cell unpadded record is one word: a one-column file's name, more likely than a title."""
    return len(record) == 1 and " " not in record[0].strip()


def _filled(record: list[str]) -> int:
    return sum(1 for cell in record if cell.strip())


def blank_record(record: list[str]) -> bool:
    return not record or (len(record) == 1 and not record[0].strip())
