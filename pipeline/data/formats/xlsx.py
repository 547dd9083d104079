"""An Excel workbook's sheet as a Table, cells as its CSV export writes them; openpyxl (the `excel` extra)."""

from __future__ import annotations

import contextlib
import datetime
import logging
import warnings
from collections.abc import Iterator, Sequence
from typing import IO, Any

from pipeline.common.errors import DataError, one_line
from pipeline.common.extras import extra_install
from pipeline.config.reading import normalise_name
from pipeline.data.formats.header import looks_like_data, read_header
from pipeline.data.formats.table import ReadOptions, Table, batched, in_sheet
from pipeline.data.lines import LineSource

logger = logging.getLogger("pipeline.data.load")
# openpyxl's warnings about features it does not keep would break pipeline.predict's one-line errors on stderr.
warnings.filterwarnings("ignore", category=UserWarning, module=r"openpyxl(\.|$)")
EXTRA = "excel"  # the optional extra that installs openpyxl
# Excel keeps 15 significant digits; more are binary noise (0.30000000000000004).
EXCEL_DIGITS = 15
WIDTH_HINT = "a value right of the header's last column? Name its column in the header, or clear the cell"


def workbook_table(lines: LineSource, options: ReadOptions, stack: contextlib.ExitStack) -> Table:
    """The sheet options.sheet (None: the first) of the workbook as a Table, closed when `stack` closes."""
    name, sheet_option = lines.name, options.sheet_option
    workbook = _load(lines.raw, name)
    stack.callback(workbook.close)
    worksheet = _chosen_sheet(workbook, name, options.sheet, sheet_option)
    # The declared used range is often larger than the data: forgotten, rows end at their last cell.
    worksheet.reset_dimensions()
    records = _records(_values(worksheet, name), options.column_names)
    empty = f"{name}: the sheet {worksheet.title!r} is empty"
    where = in_sheet(name, worksheet.title)
    header, rows, header_row, below_title = read_header(records, options.column_names, where, "row", WIDTH_HINT, empty)
    return Table(
        name,
        "xlsx",
        header,
        "row",
        batched(rows, options.chunk_size),
        sheet=worksheet.title,
        missing_column_hint=below_title + _other_sheets_hint(workbook, worksheet.title, header, sheet_option),
        header_row=header_row,
    )


def _load(raw: IO[bytes], name: str) -> Any:
    try:
        import openpyxl
    except ImportError:
        raise DataError(
            f"{name} is an Excel workbook, read with openpyxl, which is not installed: it comes with the optional extra '{EXTRA}' ({extra_install(EXTRA)}), or save the sheet as CSV UTF-8"
        ) from None
    try:
        # An open file: openpyxl refuses a name without a workbook's ending.
        return openpyxl.load_workbook(raw, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises many unrelated types (KeyError, ValueError, XML errors) for one
        raise DataError(f"{name}: not a readable Excel workbook ({type(error).__name__}: {one_line(error)})") from None


def _chosen_sheet(workbook: Any, name: str, sheet: str | None, option: str) -> Any:
    """The worksheet named `sheet` (exactly, else ignoring case and spaces), or the first."""
    titles = [worksheet.title for worksheet in workbook.worksheets]
    if not titles:
        raise DataError(f"{name}: the workbook has no worksheet (only charts?)")
    if sheet is None:
        if len(titles) > 1:
            others = ", ".join(repr(title) for title in titles[1:])
            logger.info(f"{name}: read its first sheet, {titles[0]!r} ({option} unset); not read: {others}")
        return workbook.worksheets[0]
    matching = [title for title in titles if title == sheet] or [
        title for title in titles if normalise_name(title) == normalise_name(sheet)
    ]
    if len(matching) != 1:
        raise DataError(
            f"{name} has no sheet {sheet!r} ({option}); its sheets: {', '.join(repr(title) for title in titles)}"
        )
    return workbook[matching[0]]


def _other_sheets_hint(workbook: Any, read: str, header: list[str], option: str) -> str:
    """The workbook's other sheets, for the error about a missing column (not where row 1 looks like data)."""
    others = [worksheet.title for worksheet in workbook.worksheets if worksheet.title != read]
    if not others or looks_like_data(header, "xlsx"):
        return ""
    return f"; the sheet read was {read!r}, and the workbook has others ({', '.join(repr(title) for title in others)}): read one with {option}={others[0]}"


def _values(worksheet: Any, name: str) -> Iterator[tuple[Any, ...]]:
    """The sheet's rows of values; a part openpyxl cannot parse is an error naming the sheet."""
    try:
        yield from worksheet.iter_rows(values_only=True)
    except Exception as error:  # openpyxl raises many unrelated types (XML, KeyError, ValueError) for one
        raise DataError(
            f"{name}: the sheet {worksheet.title!r} cannot be read ({type(error).__name__}: {one_line(error)})"
        ) from None


def _records(rows: Iterator[tuple[Any, ...]], column_names: Sequence[str] | None) -> Iterator[tuple[int, list[str]]]:
    """(Excel's row number, cells as text) per row, padded to the header's width as the CSV export does."""
    width = len(column_names) if column_names else None
    for number, values in enumerate(rows, start=1):
        cells = [cell_text(value) for value in values]
        while cells and not cells[-1]:
            cells.pop()
        if cells and width is None:
            width = len(cells)
        yield number, (cells + [""] * ((width or 0) - len(cells))) if cells else []


def cell_text(value: Any) -> str:
    """A cell's value as Excel's CSV export writes it (1 not 1.0, 15 digits, TRUE/FALSE, ISO dates)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else format(value, f".{EXCEL_DIGITS}g")
    if isinstance(value, datetime.datetime) and value.time() == datetime.time(0):
        return value.date().isoformat()  # a date cell is stored as a date and time
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)
