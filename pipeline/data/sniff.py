"""Rare layouts told before a file is read (archives, compressions, wide encodings, Mac line ends): adapted or refused."""

from __future__ import annotations

import codecs
import contextlib
import logging
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

from pipeline.common.errors import DataError, one_line
from pipeline.config.reading import DEFAULT_ENCODING, STANDARD_INPUT
from pipeline.data.lines import READ_ERRORS, LineSource, check_encoding, splits_on_newline_bytes

logger = logging.getLogger(__name__)
PARQUET_MAGIC = b"PAR1"
# .xlsx, .ods, .docx, .zip; an empty archive starts with its directory's end.
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # .xls (Excel 97-2003)
WORKBOOK_PART = "xl/workbook.xml"
# Compressions other than gzip (bzip2's with its first block's, as "BZh" may start a text): Amazon's train.ft.txt.bz2.
OTHER_COMPRESSIONS = (
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2", "bunzip2 -k"),
    (re.compile(re.escape(b"\xfd7zXZ\x00")), "xz", "unxz -k"),
    (re.compile(re.escape(b"\x28\xb5\x2f\xfd")), "zstd", "unzstd"),
)
MAGIC_BYTES = 10  # the longest magic number above
# UTF-32's marks come first, as UTF-32-LE's begins with UTF-16-LE's.
BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
    (codecs.BOM_UTF8, "utf-8"),
)


def _is_workbook(head: bytes, lines: LineSource, path: str) -> bool:
    """Whether the file is an .xlsx by its content, whatever its name; an .xls is refused here."""
    if head.startswith(OLE_MAGIC):
        raise DataError(
            f"{lines.name} is an Excel 97-2003 workbook (.xls), which is not read: save the sheet as CSV UTF-8 (Excel: File > Save As > CSV UTF-8) and give that file"
        )
    if not head.startswith(ZIP_MAGIC):
        return False
    if path == STANDARD_INPUT or lines.compressed:  # a zip archive's index is at its end: read from a file only
        raise DataError(f"{lines.name}: a zip archive (an Excel workbook?) is read from a file, not a stream or .gz")
    try:
        with zipfile.ZipFile(lines.raw) as archive:
            return WORKBOOK_PART in archive.namelist()  # every .xlsx holds it, an .ods or a .docx does not
    except (zipfile.BadZipFile, OSError) as error:
        raise DataError(f"{lines.name}: a damaged zip archive (a workbook cut short?): {one_line(error)}") from None


OPENDOCUMENT_MIMETYPE = b"application/vnd.oasis.opendocument"
# What macOS's "Compress" adds beside a zip archive's files.
ZIP_METADATA_FOLDER, ZIP_METADATA_FILE = "__MACOSX/", ".DS_Store"
# A zipped file not read from inside the archive: Parquet (its footer is sought), a zip, an .xls.
NOT_READ_ZIPPED = (PARQUET_MAGIC, *ZIP_MAGIC, OLE_MAGIC)


@contextlib.contextmanager
def _zipped_file(lines: LineSource) -> Iterator[LineSource]:
    """A zip archive's one file as a LineSource named "train.zip/train.csv"; anything else is an error."""
    try:
        archive = zipfile.ZipFile(lines.raw)
    except (zipfile.BadZipFile, OSError) as error:
        raise DataError(f"{lines.name}: a damaged zip archive: {one_line(error)}") from None
    with archive:
        names = archive.namelist()
        if names and names[0] == "mimetype" and archive.read("mimetype").startswith(OPENDOCUMENT_MIMETYPE):
            raise DataError(
                f"{lines.name} is an OpenDocument file (.ods: a zip archive of its parts), which is not read: save the sheet as CSV UTF-8 and give that file"
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
                f"{lines.name} is a zip archive of {len(files)} files{f' ({held})' if files else ''}; one is read from a zip archive that holds it alone (CSV, TSV, JSON Lines): unzip it (unzip {lines.name}) and give the file to read"
            )
        (info,) = files
        try:
            stream = archive.open(info)
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as error:  # encrypted, or compressed unknowingly
            raise DataError(f"{lines.name}: cannot read {info.filename} in it: {one_line(error)}") from None
        with stream:
            name = f"{lines.name}/{info.filename}"
            try:  # reads its first bytes: a small file's whole, and its checksum
                zipped = LineSource(stream, name, lines.named_encoding, info.file_size, lines.option)
            except READ_ERRORS as error:
                raise DataError(f"{name}: cannot read (corrupt zip data?): {one_line(error)}") from None
            if any(zipped.head(MAGIC_BYTES).startswith(magic) for magic in NOT_READ_ZIPPED):
                raise DataError(
                    f"{lines.name} holds {info.filename}, which is not read from inside a zip archive: unzip it (unzip {lines.name}) and give the file it writes"
                )
            yield zipped


def check_wide_encoding(lines: LineSource, say: bool = True) -> None:
    """Read a file as its byte-order mark says where UTF-8 is the default; else an error naming the mark."""
    if not splits_on_newline_bytes(lines.encoding):  # already a wide encoding
        return
    head = lines.head(WIDE_HEAD_BYTES)
    for mark, marked in BYTE_ORDER_MARKS:
        if head.startswith(mark) and lines.encoding.removesuffix("-sig") != marked:
            if lines.encoding == check_encoding(DEFAULT_ENCODING) and marked != DEFAULT_ENCODING:
                level = logging.INFO if say else logging.DEBUG
                logger.log(
                    level,
                    f"{lines.name}: read as {marked}, as its byte-order mark says ({lines.option}: {lines.named_encoding} cannot read it)",
                )
                lines.read_as(marked)
                return
            raise DataError(
                f"{lines.name} starts with a {marked.upper()} byte-order mark, so it is not {lines.named_encoding}; give its encoding with {lines.option} (e.g. {marked})"
            )
    unmarked = _utf16_without_mark(head)
    if unmarked:
        raise DataError(
            f"{lines.name} is {unmarked.upper()} text without a byte-order mark (every other byte of its start is NUL), so it is not {lines.named_encoding}; set {lines.option} to {unmarked}"
        )


WIDE_HEAD_BYTES = 1024


def _utf16_without_mark(head: bytes) -> str | None:
    """UTF-16-LE or -BE by its NULs at odd or even offsets, for a start without a mark; else None."""
    pairs = len(head) // 2
    even, odd = head[0 : 2 * pairs : 2].count(0), head[1 : 2 * pairs : 2].count(0)
    for nuls, others, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if pairs and nuls >= pairs / 4 and others * 10 <= nuls:
            return encoding
    return None


def records_field_hint(record: dict, field_option: str) -> str:
    """For a file of one JSON object: the advice to set `field_option` to a key holding a list of objects, or ""."""
    keys = _record_list_keys(record)
    if not keys:
        return ""
    return f"; the file is one JSON object whose {keys[0]!r} holds a list of objects: if those are the records, set {field_option}={keys[0]}"


def _record_list_keys(record: dict) -> list[str]:
    """The keys of a JSON object holding a non-empty list of objects."""
    return [
        key
        for key, value in record.items()
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value)
    ]


def refuse_table_as_one_object(record: dict, name: str, field_option: str) -> None:
    """Refuse a whole table (pandas' to_json() default) or a file of splits in one JSON object."""
    values = list(record.values())
    # Columns orient: row indices inside; index orient: outside. Nested records ({"review": {...}}) are neither.
    by_column_or_index = (
        len(values) > 0
        and all(isinstance(value, dict) for value in values)
        and (_all_indices(record) or all(_all_indices(value) for value in values))
    )
    split = {"columns", "data"} <= set(record) and all(isinstance(value, list) for value in values)
    if by_column_or_index or split:
        raise DataError(
            f"{name}: the first record is a whole table in one JSON object (pandas' DataFrame.to_json() without orient='records'?), not one record per row; write it with df.to_json(path, orient='records', lines=True)"
        )
    first_rows = [value[0] for value in values if isinstance(value, list) and value]
    lists = all(isinstance(value, list) for value in values)
    if lists and first_rows and all(isinstance(row, (list, dict)) for row in first_rows):
        keys = ", ".join(repr(key) for key in list(record)[:6])
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
    """The lines to read (a zipped file's, a marked encoding's), the name that tells the format, and if a workbook."""
    head = lines.head(MAGIC_BYTES)
    workbook = _is_workbook(head, lines, path)
    named = path
    if head.startswith(ZIP_MAGIC) and not workbook:
        lines = stack.enter_context(_zipped_file(lines))
        head, named = lines.head(MAGIC_BYTES), lines.name
    for magic, compression, command in OTHER_COMPRESSIONS:  # not failed as a wrong encoding
        if magic.match(head):
            raise DataError(
                f"{lines.name} is {compression}-compressed, which is not read (gzip is): decompress it ({command} {lines.name}) and give the file it writes, or compress with gzip instead"
            )
    if not workbook and not head.startswith(PARQUET_MAGIC):  # binary: no text encoding of their own
        # Before the format: a fastText file is told by its decoded start.
        check_wide_encoding(lines)
    return lines, named, workbook


LINE_END_BYTES = 8192


def check_content(lines: LineSource, workbook: bool, kind: str, option: str) -> None:
    """Error for content not the format `kind` (the setting `option`), or a text file with Mac line ends."""
    # A Parquet file (or a workbook) under a CSV name would otherwise fail as a confusing parse error.
    name, parquet = lines.name, lines.head(MAGIC_BYTES).startswith(PARQUET_MAGIC)
    if workbook and kind != "xlsx":
        raise DataError(f"{name} is an Excel workbook, not {kind.upper()}; set {option} to xlsx (or auto)")
    if kind == "xlsx" and not workbook:
        raise DataError(f"{name} is not an Excel workbook (.xlsx: a zip archive of its parts); check {option}")
    if parquet and kind != "parquet":
        raise DataError(f"{name} is a Parquet file, not {kind.upper()}; set {option} to parquet (or rename it)")
    if kind == "parquet" and not parquet:
        raise DataError(f"{name} is not a Parquet file (it does not start with PAR1); check {option}")
    if kind in ("parquet", "xlsx") or not splits_on_newline_bytes(lines.encoding):
        return
    head = lines.head(LINE_END_BYTES)
    if b"\r" in head and b"\n" not in head:  # classic Mac OS line ends: the whole file would be one line
        raise DataError(
            f"{name} ends its lines with a carriage return alone (classic Mac OS; Excel for Mac's \"CSV (Macintosh)\"), which is not read: save it as CSV UTF-8, or convert its line ends (tr '\\r' '\\n')"
        )
