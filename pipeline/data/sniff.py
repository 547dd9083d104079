"""Rare layouts, recognised before a file is read: workbooks and archives by their magic numbers, other
compressions, wide encodings, Mac line ends, content that is not the format named. Each either adapts (a zip
archive's one file, a UTF-16 file's byte-order mark) or raises the clear error with the fix; `sniff` is the one
call the main path makes.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pipeline.common.errors import DataError, one_line
from pipeline.config.reading import (
    DEFAULT_ENCODING,
    STANDARD_INPUT,
)
from pipeline.data.lines import READ_ERRORS, LineSource, check_encoding, splits_on_newline_bytes

logger = logging.getLogger(__name__)
PARQUET_MAGIC = b"PAR1"
# .xlsx, .ods, .docx, .zip: a zip archive starts with its first file's header, or an empty one with its directory's end.
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # .xls (Excel 97-2003)
# Compressions other than gzip, by their magic numbers (bzip2's with its first block's, as "BZh" may start a text):
# Kaggle's Amazon reviews ship as train.ft.txt.bz2, and their bytes read as text failed as a wrong encoding.
OTHER_COMPRESSIONS = (
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2", "bunzip2 -k"),
    (re.compile(re.escape(b"\xfd7zXZ\x00")), "xz", "unxz -k"),
    (re.compile(re.escape(b"\x28\xb5\x2f\xfd")), "zstd", "unzstd"),
)
MAGIC_BYTES = 10  # the longest magic number above: bzip2's with its first block's
# Encodings by their byte-order mark; UTF-32's come first, as UTF-32-LE's begins with UTF-16-LE's. UTF-8's is what
# Excel's "CSV UTF-8" starts with.
BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
    (codecs.BOM_UTF8, "utf-8"),
)


def _is_workbook(head: bytes, lines: LineSource, path: str) -> bool:
    """Whether the file is an Excel workbook, told by its content before its name is read as a format (a zip
    archive holding a workbook's part), so that one under any name is read as such. Other workbooks are refused,
    named by their content: an .xls or .ods would otherwise be told to set a file format, which could not read it
    either (an .xls here; an .ods, a zip archive of other parts, by _zipped_file)."""
    if head.startswith(OLE_MAGIC):
        raise DataError(
            f"{lines.name} is an Excel 97-2003 workbook (.xls), which is not read: save the sheet as CSV UTF-8 "
            "(Excel: File > Save As > CSV UTF-8) and give that file"
        )
    if not head.startswith(ZIP_MAGIC):
        return False
    if path == STANDARD_INPUT or lines.compressed:  # a zip archive's index is at its end: read from a file only
        raise DataError(f"{lines.name}: a zip archive (an Excel workbook?) is read from a file, not a stream or .gz")
    return is_workbook(lines.raw, lines.name)


# What an OpenDocument file's first part, `mimetype`, starts with: an .ods (or another OpenDocument file), by content.
OPENDOCUMENT_MIMETYPE = b"application/vnd.oasis.opendocument"
# Entries of a zip archive that hold no data of their own: what macOS's "Compress" adds beside the files (each one's
# resource fork under __MACOSX/, a folder's .DS_Store); folders are none either.
ZIP_METADATA_FOLDER, ZIP_METADATA_FILE = "__MACOSX/", ".DS_Store"
# Magic numbers of a zip archive's one file that is not read from inside it: Parquet's (read from a file of its own,
# whose footer is sought), another zip's (a workbook, a nested archive) and an .xls's.
NOT_READ_ZIPPED = (PARQUET_MAGIC, *ZIP_MAGIC, OLE_MAGIC)


@contextlib.contextmanager
def _zipped_file(lines: LineSource) -> Iterator[LineSource]:
    """The one file of a zip archive that is not a workbook (a CSV, TSV, JSON Lines or JSON file zipped, as pandas
    reads one) as the lines of a file of its own, named "train.zip/train.csv" (so that its name tells its format and
    errors say where the line is), in the encoding given; an archive of no file or of several, or an OpenDocument
    workbook, is an error naming what it holds."""
    try:
        archive = zipfile.ZipFile(lines.raw)
    except (zipfile.BadZipFile, OSError) as error:
        raise DataError(f"{lines.name}: a damaged zip archive: {one_line(error)}") from None
    with archive:
        names = archive.namelist()
        if names and names[0] == "mimetype" and archive.read("mimetype").startswith(OPENDOCUMENT_MIMETYPE):
            raise DataError(
                f"{lines.name} is an OpenDocument file (.ods: a zip archive of its parts), which is not read: save "
                "the sheet as CSV UTF-8 and give that file"
            )
        files = [
            info
            for info in archive.infolist()
            if not info.is_dir()
            and not info.filename.startswith(ZIP_METADATA_FOLDER)
            and Path(info.filename).name != ZIP_METADATA_FILE
        ]
        if len(files) != 1:
            held = ", ".join(info.filename for info in files[:5]) + (", ..." if len(files) > 5 else "")
            raise DataError(
                f"{lines.name} is a zip archive of {len(files)} files{f' ({held})' if files else ''}; one is read "
                f"from a zip archive that holds it alone (CSV, TSV, JSON Lines): unzip it (unzip {lines.name}) and "
                "give the file to read"
            )
        (info,) = files
        try:
            stream = archive.open(info)
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as error:  # encrypted, or compressed unknowingly
            raise DataError(f"{lines.name}: cannot read {info.filename} in it: {one_line(error)}") from None
        with stream:
            name = f"{lines.name}/{info.filename}"
            try:  # its first bytes are read here: a small file's whole, and its checksum
                zipped = LineSource(stream, name, lines.named_encoding, info.file_size, lines.option)
            except READ_ERRORS as error:
                raise DataError(f"{name}: cannot read (corrupt zip data?): {one_line(error)}") from None
            if any(zipped.head(MAGIC_BYTES).startswith(magic) for magic in NOT_READ_ZIPPED):
                raise DataError(
                    f"{lines.name} holds {info.filename}, which is not read from inside a zip archive: unzip it "
                    f"(unzip {lines.name}) and give the file it writes"
                )
            yield zipped


def _refuse_other_compression(head: bytes, name: str) -> None:
    """A file compressed other than by gzip is named as such: its bytes read as text fail as a wrong encoding, whose
    advice (latin-1) would read them as garbage."""
    for magic, compression, command in OTHER_COMPRESSIONS:
        if magic.match(head):
            raise DataError(
                f"{name} is {compression}-compressed, which is not read (gzip is): decompress it ({command} {name}) "
                "and give the file it writes, or compress with gzip instead"
            )


def _check_content_matches(head: bytes, workbook: bool, kind: str, name: str, option: str) -> None:
    """A Parquet file (or a workbook) under a CSV name would otherwise fail as a confusing parse error."""
    if workbook and kind != "xlsx":
        raise DataError(f"{name} is an Excel workbook, not {kind.upper()}; set {option} to xlsx (or auto)")
    if kind == "xlsx" and not workbook:
        raise DataError(f"{name} is not an Excel workbook (.xlsx: a zip archive of its parts); check {option}")
    if head.startswith(PARQUET_MAGIC) and kind != "parquet":
        raise DataError(f"{name} is a Parquet file, not {kind.upper()}; set {option} to parquet (or rename it)")
    if kind == "parquet" and not head.startswith(PARQUET_MAGIC):
        raise DataError(f"{name} is not a Parquet file (it does not start with PAR1); check {option}")


def check_wide_encoding(lines: LineSource, say: bool = True) -> None:
    """A UTF-16 file (a spreadsheet's "Unicode text", PowerShell's default) read as UTF-8 fails on its first byte,
    and read as latin-1, which the generic hint offers, gives column names full of NULs; Excel's "CSV UTF-8" read as
    latin-1 or cp1252 gives its first column's name a prefix "ï»¿" (which then matches no setting) and every accented
    letter two letters (é as Ã©) without an error. Its byte-order mark says which encoding it is: read as UTF-8 (the
    default), a UTF-16 or UTF-32 file is read in the encoding its mark says, with an INFO line (its mark's bytes are
    no UTF-8, so UTF-8, given or not, could only fail on it); read as another encoding it is an error naming the
    mark's, since a single-byte encoding given on purpose may be the file's after all. Without a mark (some Windows
    exports), the NUL bytes of its ASCII characters say which UTF-16 it is. `say`: the INFO line (else DEBUG: one per
    file of a folder would flood the log)."""
    if not splits_on_newline_bytes(lines.encoding):  # already a wide encoding
        return
    head = lines.head(WIDE_HEAD_BYTES)
    for mark, marked in BYTE_ORDER_MARKS:
        if head.startswith(mark) and lines.encoding.removesuffix("-sig") != marked:
            if lines.encoding == check_encoding(DEFAULT_ENCODING) and marked != DEFAULT_ENCODING:
                logger.log(
                    logging.INFO if say else logging.DEBUG,
                    "%s: read as %s, as its byte-order mark says (%s: %s cannot read it)",
                    lines.name,
                    marked,
                    lines.option,
                    lines.named_encoding,
                )
                lines.read_as(marked)
                return
            raise DataError(
                f"{lines.name} starts with a {marked.upper()} byte-order mark, so it is not {lines.named_encoding}; "
                f"give its encoding with {lines.option} (e.g. {marked})"
            )
    unmarked = _utf16_without_mark(head)
    if unmarked:
        raise DataError(
            f"{lines.name} is {unmarked.upper()} text without a byte-order mark (every other byte of its start is "
            f"NUL), so it is not {lines.named_encoding}; set {lines.option} to {unmarked}"
        )


# Bytes of a file's start looked at for a byte-order mark and, without one, for the NUL bytes of UTF-16.
WIDE_HEAD_BYTES = 1024


def _utf16_without_mark(head: bytes) -> str | None:
    """Which UTF-16 ("utf-16-le" or "utf-16-be") a file's start without a byte-order mark is by its NULs, or None.
    Each ASCII or latin-1 character is its byte and a NUL, in that order in UTF-16-LE (NULs at odd offsets) and the
    other in UTF-16-BE (even offsets): a quarter of one side's bytes NUL is far more than text in a narrow encoding
    holds (none), and a tenth as many on the other side leaves out UTF-32 (NULs on both sides)."""
    pairs = len(head) // 2
    even, odd = head[0 : 2 * pairs : 2].count(0), head[1 : 2 * pairs : 2].count(0)
    for nuls, others, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if pairs and nuls >= pairs / 4 and others * 10 <= nuls:
            return encoding
    return None


# Bytes of a text file's start in which a line break must show which bytes end its lines.
LINE_END_BYTES = 8192


def _check_line_ends(head: bytes, codec: str, name: str) -> None:
    """Lines are split at newline bytes; a file whose lines end in a carriage return alone (classic Mac OS, Excel for
    Mac's "CSV (Macintosh)") was one line, and its error csv's advice to open it in universal-newline mode."""
    if splits_on_newline_bytes(codec) and b"\r" in head and b"\n" not in head:
        raise DataError(
            f"{name} ends its lines with a carriage return alone (classic Mac OS; Excel for Mac's \"CSV "
            "(Macintosh)\"), which is not read: save it as CSV UTF-8, or convert its line ends (tr '\\r' '\\n')"
        )


# The part every Excel workbook's zip archive holds (Office Open XML), and an OpenDocument spreadsheet or a Word file
# does not: what tells an .xlsx by its content, whatever its name.
WORKBOOK_PART = "xl/workbook.xml"


def is_workbook(raw: IO[bytes], name: str) -> bool:
    """Whether a zip archive (its bytes start with a zip's magic number) is an Excel workbook."""
    try:
        with zipfile.ZipFile(raw) as archive:
            return WORKBOOK_PART in archive.namelist()
    except (zipfile.BadZipFile, OSError) as error:
        raise DataError(f"{name}: a damaged zip archive (a workbook cut short?): {one_line(error)}") from None


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


def refuse_table_as_one_object(record: dict, name: str, field_option: str) -> None:
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


def unwrap(lines: LineSource, path: str, stack: contextlib.ExitStack) -> tuple[LineSource, str, bool]:
    """The lines to read (a zip archive's one file's, in `stack`; a UTF-16 file's in the encoding its mark says), the
    name that tells the format (the zipped file's), and whether the file is a workbook; a file of a layout that is not
    read is an error saying what to do with it."""
    head = lines.head(MAGIC_BYTES)  # magic numbers: what the content is, whatever its name
    workbook = _is_workbook(head, lines, path)
    named = path
    if head.startswith(ZIP_MAGIC) and not workbook:
        lines = stack.enter_context(_zipped_file(lines))
        head, named = lines.head(MAGIC_BYTES), lines.name
    _refuse_other_compression(head, lines.name)
    if not workbook and not head.startswith(PARQUET_MAGIC):  # binary: no text encoding of their own
        # Before the format: a fastText file is told by its decoded start, which a wrong wide encoding garbles.
        check_wide_encoding(lines)
    return lines, named, workbook


def check_content(lines: LineSource, workbook: bool, kind: str, option: str) -> None:
    """A file whose content is not the format `kind` (the setting `option`), or a text file with Mac line ends, is an
    error saying so."""
    _check_content_matches(lines.head(MAGIC_BYTES), workbook, kind, lines.name, option)
    if kind not in ("parquet", "xlsx"):
        _check_line_ends(lines.head(LINE_END_BYTES), lines.encoding, lines.name)
