"""Tables in, text out: the one reader of CSV, TSV, JSON Lines, Parquet and fastText files (optionally
gzip-compressed; a text file alone in a zip archive too) and Excel workbooks, and the one rule that turns a row's
columns into the text a model reads.

    with open_table("emails.csv.gz", column_names=None, chunk_size=10_000) as table:
        columns = resolve_columns(table.header, ["subject", "body"], table.name, "data.text_columns")
        for chunk in table.chunks:
            texts = [spec.text_of([record[i] for i in columns]) for record in chunk.records]

Stage 1 reads a whole file through it (data.py) and prediction streams it chunk by chunk (predict/), so a row
becomes exactly the same text in training and in prediction, by construction. Every error is a `DataError` naming
the file and the line (CSV, TSV, JSON Lines, fastText: the 1-based physical line, header included) or record
(Parquet, a JSON array: the 1-based position) or row (an Excel sheet: the row number Excel shows) and, where it
applies, the column. Each format's reader (and the CSV/TSV header rule): pipeline/data/formats.py; a workbook's
sheet: pipeline/data/workbooks.py.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import gzip
import io
import json
import logging
import math
import re
import sys
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pipeline.common.errors import DataError, one_line, shorten
from pipeline.config.reading import (
    DEFAULT_ENCODING,
    FASTTEXT_LABEL_PREFIX,
    PAIR_MARK,
    STANDARD_INPUT,
    normalise_name,
)

FORMATS = ("csv", "tsv", "jsonl", "parquet", "fasttext", "xlsx")
DELIMITERS = {"csv": ",", "tsv": "\t"}
# The formats whose first row is a header, or data.column_names name their columns (table_formats.read_header).
HEADED_FORMATS = ("csv", "tsv", "xlsx")
# How a CSV/TSV file's double quotes are read (data.quoting, pipeline.predict's --quoting): table_formats.reads_quotes.
QUOTINGS = ("auto", "csv", "none")
BYTE_ORDER_MARK = "\ufeff"  # as a decoded character
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",  # a workbook with macros: its cells are read as any workbook's
}
# Reading settings of text files (data.* keys; pipeline.predict's options of the same names), which a workbook, whose
# cells are neither decoded nor split, does not have; and the one setting a workbook has that no other file has. Given
# with a file they do not describe, they are named in a warning rather than silently ignored (settings_not_read).
TEXT_FILE_SETTINGS = ("encoding", "delimiter", "quoting", "label_prefix")
WORKBOOK_SETTINGS = ("sheet",)
# The setting that only a JSON file has: the key of one object that holds the list of records (data.json_field).
JSON_SETTINGS = ("json_field",)
# The settings that describe a file's layout, which a folder of class folders does not have: by their data.* names,
# which pipeline.predict's options share (the format's own setting is data.file_format there, --format here).
LAYOUT_SETTINGS = ("column_names", "delimiter", "quoting", "label_prefix", *WORKBOOK_SETTINGS, *JSON_SETTINGS)
GZIP_MAGIC = b"\x1f\x8b"
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


logger = logging.getLogger(__name__)


class UnknownFormatError(DataError):
    """A file whose format neither its name nor its start tells: a caller that knows what such files hold (a text
    file of one text per line, labels elsewhere) may add how to read them."""


class EncodingError(DataError):
    """Bytes that are not text in the encoding a file is read with: the message names the file, the line and the
    setting that gives the encoding; a caller that knows a likelier encoding may add it."""


# A number as a file writes one: sign, digits, a decimal point, an exponent ("3", "-0.5", ".25", "1e-3").
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def is_number_text(text: object) -> bool:
    """Whether a cell or label is a number written out (surrounding spaces aside)."""
    return _NUMBER_TEXT.fullmatch(str(text).strip()) is not None


# Longer than a column name is written: a text.
MAX_HEADER_NAME = 30


def looks_like_data(header: Sequence[str], file_format: str) -> bool:
    """Whether a CSV/TSV file's (or a sheet's) header row looks like a row of data (names_read_as_data)."""
    return file_format in HEADED_FORMATS and names_read_as_data(header)


def names_read_as_data(names: Sequence[str]) -> bool:
    """Whether a row read as names is more likely data: a number (a class index) or a text among them."""
    return any(is_number_text(name) or len(str(name).strip()) > MAX_HEADER_NAME for name in names)


# ---------------------------------------------------------------------------------------------------------------
# The text rule


def is_missing(value: Any) -> bool:
    """None, NaN and pandas' NA: an absent value (JSON null, an empty Parquet cell), read as an empty text part."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ == "NAType"


# How an error about a row without a text or a label says that such rows can be left out instead.
INCOMPLETE_ROWS_HINT = "or set data.incomplete_rows=drop to leave such rows out (listed in removed_rows.csv)"


def is_blank(value: Any) -> bool:
    """Absent, or nothing but whitespace: a cell that gives no label."""
    return is_missing(value) or not str(value).strip()


# A line break written as a backslash and an "n", as the Yelp and Amazon review CSV files write one inside a text: read
# as a line break with data.unescape_newlines.
ESCAPED_NEWLINE = "\\n"


def join_text(parts: Sequence[str], separator: str, unescape_newlines: bool) -> str:
    """Each part unescaped (backslash-n -> newline, if asked) and stripped; empty parts skipped, so that a missing
    title or description never leaves a doubled or dangling separator."""
    cleaned = (part.replace(ESCAPED_NEWLINE, "\n") if unescape_newlines else part for part in parts)
    return separator.join(part for part in (part.strip() for part in cleaned) if part)


def segments_of(text: str) -> list[str]:
    """A text's segments: [text], or [first, second] for a pair that TextSpec joined."""
    return text.split(PAIR_MARK, 1)


@dataclass(frozen=True)
class TextSpec:
    """Which columns make a row's text, and how they are joined (data.text_columns, text_separator, unescape); with
    pair_columns (data.text_pair_columns), the text is a pair: text_columns' text, PAIR_MARK, pair_columns' text."""

    columns: tuple[str, ...]
    separator: str
    unescape_newlines: bool
    pair_columns: tuple[str, ...] = ()

    @classmethod
    def from_data_config(cls, data: Any) -> TextSpec:
        """From a DataConfig (or anything with its attributes)."""
        pair_columns = tuple(getattr(data, "text_pair_columns", None) or ())
        return cls(tuple(data.text_columns), data.text_separator, data.unescape_newlines, pair_columns)

    @classmethod
    def from_settings(cls, data: dict[str, Any], defaults: Any) -> TextSpec:
        """From config.yaml's data mapping as recorded (a hand-written one may omit keys: the DataConfig `defaults`'
        values) or model/decision.json's record (to_settings)."""

        def names(columns: Any) -> tuple[str, ...]:  # one name, or a list of them
            return tuple(str(column) for column in ([columns] if isinstance(columns, str) else columns or ()))

        return cls(
            names(data.get("text_columns", defaults.text_columns)),
            str(data.get("text_separator", defaults.text_separator)),
            bool(data.get("unescape_newlines", defaults.unescape_newlines)),
            names(data.get("text_pair_columns")),
        )

    def side_columns(self) -> list[tuple[tuple[str, ...], str]]:
        """(columns, the setting that names them) for each side: the text's, and a pair's second text's."""
        sides = [(self.columns, "data.text_columns")]
        return [*sides, (self.pair_columns, "data.text_pair_columns")] if self.pair_columns else sides

    def named_columns(self) -> list[tuple[str, str]]:
        """(column, the setting that names it) for each of input_columns, in order."""
        return [(column, key) for columns, key in self.side_columns() for column in columns]

    def keys(self) -> list[str]:
        """The settings that name the text's columns."""
        return list(dict.fromkeys(key for _, key in self.named_columns()))

    @property
    def input_columns(self) -> tuple[str, ...]:
        """Every column a row's text reads, in the order text_of takes their values."""
        return self.columns + self.pair_columns

    def with_columns(self, columns: Sequence[str] | None) -> TextSpec:
        return self if not columns else dataclasses.replace(self, columns=tuple(columns))

    def with_pair_columns(self, columns: Sequence[str] | None) -> TextSpec:
        return self if not columns else dataclasses.replace(self, pair_columns=tuple(columns))

    def positions(self, header: Sequence[str], where: str, options: tuple[str, str]) -> list[int]:
        """Where input_columns are in a header (resolve_columns); a missing one is an error naming the option that
        names it: options are (that of text columns, that of pair columns), e.g. ("--text-columns",
        "--text-pair-columns")."""
        return resolve_columns(header, self.columns, where, options[0]) + resolve_columns(
            header, self.pair_columns, where, options[1]
        )

    def with_separator(self, separator: str | None) -> TextSpec:
        return self if separator is None else dataclasses.replace(self, separator=separator)

    def to_settings(self) -> dict[str, Any]:
        """The rule as config.yaml's data settings (text_columns, text_separator, unescape_newlines,
        text_pair_columns): how model/decision.json records it, read back by pipeline.predict as a run's config.yaml
        is."""
        return {
            "text_columns": list(self.columns),
            "text_separator": self.separator,
            "unescape_newlines": self.unescape_newlines,
            "text_pair_columns": list(self.pair_columns) or None,
        }

    def text_of(self, values: Sequence[Any]) -> str:
        """The text of one row from its values of input_columns, in that order; "" when it has no text (for a pair:
        when either segment has none, as a pair with one side missing cannot be read as a pair)."""
        if not self.pair_columns:
            return self.segment_of(values)
        return self.join_pair(*self.sides(values))

    def sides(self, values: Sequence[Any]) -> tuple[str, str]:
        """A pair's two texts from its values of input_columns ("" for a side without text)."""
        return self.segment_of(values[: len(self.columns)]), self.segment_of(values[len(self.columns) :])

    def what_is_empty(self, values: Sequence[Any]) -> str | None:
        """What a row without a text lacks, as removed_rows.csv says it: "text", or for a pair "text in" the columns
        of each empty side; None when it has a text."""
        if not self.pair_columns:
            return None if self.segment_of(values) else "text"
        empty = [columns for columns, side in zip((self.columns, self.pair_columns), self.sides(values)) if not side]
        return " and no ".join(f"text in {', '.join(columns)}" for columns in empty) or None

    def partial_text(self, values: Sequence[Any]) -> str:
        """The row's text as far as it has one: for a pair with a side missing, both sides joined by the mark anyway,
        so that removed_rows.csv shows the side that was there."""
        return PAIR_MARK.join(self.sides(values)) if self.pair_columns else self.segment_of(values)

    @staticmethod
    def join_pair(first: str, second: str) -> str:
        """A pair's one text from its two texts (each already joined); "" when either is empty."""
        return f"{first}{PAIR_MARK}{second}" if first and second else ""

    def segment_of(self, values: Sequence[Any]) -> str:
        """One segment's text from its columns' values. A list value (JSON Lines, Parquet: sentences, paragraphs)
        is its items joined as parts are."""
        return join_text([self.cell_text(value) for value in values], self.separator, self.unescape_newlines)

    def cell_text(self, value: Any) -> str:
        """One cell as text: empty when missing, a list's items joined, a dict as JSON, anything else its str()."""
        if is_missing(value):
            return ""
        if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
            return self.segment_of(list(value))
        text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)
        return text.replace(PAIR_MARK, " ")

    def describe_empty(self, what: str = "empty text") -> str:
        if self.pair_columns:
            return f"{what} in {', '.join(self.columns)} or in {', '.join(self.pair_columns)} (a pair needs both)"
        return f"{what} in {', '.join(self.columns)}"


def fewer_columns_warning(trained: Sequence[str], given: Sequence[str] | None, option: str) -> str | None:
    """One line when `option` names fewer of the text's columns than the model was trained on, else None. A model
    trained on a subject and a body, given the body alone (--text-columns message), reads less than it learnt from
    and labels every row without a word; a renamed column of the same count is no loss."""
    if not given or len(given) >= len(trained):
        return None
    return (
        f"the model was trained on {len(trained)} columns joined ({', '.join(trained)}); {option} reads "
        f"{len(given)} now ({', '.join(given)}): where that is only part of what the model learnt from, its labels may "
        "be worse than its test scores say"
    )


def resolve_columns(header: Sequence[str], wanted: Sequence[str], where: str, option: str) -> list[int]:
    """Positions of the wanted columns in the header: an exact name first, else the one name equal to it ignoring
    case and surrounding spaces. A missing column is an error naming the setting and listing the columns."""
    positions, missing = [], []
    normalised = [normalise_name(name) for name in header]
    for column in wanted:
        if column in header:
            positions.append(list(header).index(column))
        elif normalised.count(normalise_name(column)) == 1:
            positions.append(normalised.index(normalise_name(column)))
        else:
            missing.append(column)
    if missing:
        tabbed = " (tab-separated? read it as TSV)" if any("\t" in str(name) for name in header) else ""
        raise DataError(
            f"{where} has no column {', '.join(repr(c) for c in missing)} ({option}); "
            f"its columns: {', '.join(repr(str(c)) for c in header)}{tabbed}"
        )
    return positions


# ---------------------------------------------------------------------------------------------------------------
# Formats


def resolve_format(path: str, explicit: str | None, option: str, formats: Sequence[str] = FORMATS) -> str:
    """An explicit format wins; otherwise the file name tells (a trailing .gz is looked through); stdin is CSV.
    `formats`: those the caller handles (prediction writes fewer than it reads), the only ones an unknown name's
    hint offers."""
    if explicit and explicit != "auto":
        return explicit
    if path == STANDARD_INPUT:
        return "csv"
    name = Path(path).name.lower().removesuffix(".gz")
    kind = EXTENSIONS.get(Path(name).suffix)
    if kind is None:
        endings = sorted(ending for ending, format_ in EXTENSIONS.items() if format_ in formats)
        raise UnknownFormatError(
            f"{path}: cannot tell the file format from its name (known endings: {', '.join(endings)}, "
            f"optionally + .gz); set {option} to {', '.join(formats)}"
        )
    return kind


def settings_not_read(file_format: str) -> tuple[tuple[str, ...], str]:
    """The reading settings that do not describe a file of this format (TEXT_FILE_SETTINGS, WORKBOOK_SETTINGS,
    JSON_SETTINGS), and what the file is, as a warning naming them says."""
    if file_format == "xlsx":
        return TEXT_FILE_SETTINGS + JSON_SETTINGS, "an Excel workbook"
    if file_format == "jsonl":
        return WORKBOOK_SETTINGS, "read as jsonl"
    return WORKBOOK_SETTINGS + JSON_SETTINGS, f"read as {file_format}"


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
    from pipeline.data.workbooks import is_workbook  # it imports this module

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
    if not _splits_on_newline_bytes(lines.encoding):  # already a wide encoding
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


# What reading a damaged gzip file, or a zip archive's damaged file (a wrong CRC), raises.
READ_ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile)
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
# Bytes of a text file's start that `LineSource.head` can show: a buffered file's own buffer holds only 4 KiB, about
# 50 lines of short texts, too few to tell how a file quotes (table_formats.reads_quotes).
HEAD_BYTES = 65536


def _check_line_ends(head: bytes, codec: str, name: str) -> None:
    """Lines are split at newline bytes; a file whose lines end in a carriage return alone (classic Mac OS, Excel for
    Mac's "CSV (Macintosh)") was one line, and its error csv's advice to open it in universal-newline mode."""
    if _splits_on_newline_bytes(codec) and b"\r" in head and b"\n" not in head:
        raise DataError(
            f"{name} ends its lines with a carriage return alone (classic Mac OS; Excel for Mac's \"CSV "
            "(Macintosh)\"), which is not read: save it as CSV UTF-8, or convert its line ends (tr '\\r' '\\n')"
        )


# ---------------------------------------------------------------------------------------------------------------
# Decoded lines with line numbers and bytes read


def check_encoding(encoding: str) -> str:
    """The codec to decode with: utf-8 also drops a byte-order mark (Excel writes one) from the header. Python's
    name for it ("iso8859-1" for "latin1"), which messages do not quote: they name the encoding as the user gave it."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise DataError(f"unknown encoding '{encoding}' (e.g. utf-8, latin-1, cp1252, utf-16)") from None
    return "utf-8-sig" if name == "utf-8" else name


# Bytes 0x80-0x9F are text in cp1252 (’ “ ” – … €) but C1 control characters in latin-1, which no text holds: a
# Windows file read as latin-1 (the encoding most often advised for "not UTF-8") loses its quotes, dashes and euro
# signs without an error (the tokenizer drops control characters) and prediction writes them back as controls.
_C1_CONTROLS = re.compile("[\x80-\x9f]")


def _reads_high_bytes_as_controls(encoding: str) -> bool:
    """Whether this encoding decodes the byte 0x92 (cp1252's ’) to the control character U+0092, as latin-1 does."""
    return b"\x92".decode(encoding.removesuffix("-sig"), errors="replace") == "\x92"


def _likely_encoding(raw_line: bytes) -> str:
    """What a line whose high bytes latin-1 reads as control characters was written in: UTF-8 (’ is E2 80 99) when it
    decodes as such, else cp1252, which Windows writes."""
    try:
        raw_line.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252 (a file saved on Windows: ’ “ ” – €)"
    return "utf-8 (the line is valid UTF-8)"


def _suggested_encoding(raw_line: bytes, codec: str) -> str:
    """The encoding an undecodable line was most likely written in. Bytes 0x80-0x9F that `codec` cannot decode are
    cp1252's ’ “ ” – … € (Windows, and Excel's "CSV" export), which latin-1 would read as control characters without
    an error; other high bytes are any single-byte encoding's letters, which latin-1 reads."""
    undecodable = raw_line.decode(codec, errors="surrogateescape")
    if any("\udc80" <= character <= "\udc9f" for character in undecodable):
        return 'cp1252, as Windows and Excel\'s "CSV" export write: its bytes 0x80-0x9F are ’ “ ” – €'
    return "latin-1"


def _splits_on_newline_bytes(encoding: str) -> bool:
    """Whether b"\\n" ends a line in this encoding (ASCII-compatible ones); UTF-16/32 must be decoded first."""
    return "\n".encode(encoding.removesuffix("-sig")) == b"\n"


class LineSource:
    """Decoded physical lines of a (possibly gzip-compressed) byte stream, counting lines and bytes read.

    ASCII-compatible encodings are split on newline bytes and decoded line by line, so a bad byte is reported with
    its line; UTF-16 and UTF-32 are decoded as a stream first (their newline is not the byte 0x0A). `encoding` is the
    value of the setting `option` as the user wrote it: `self.encoding` is its codec, which decodes, and
    `self.named_encoding` that value, which messages quote.
    """

    def __init__(
        self,
        raw: IO[bytes],
        name: str,
        encoding: str,
        size: int | None,
        option: str = "data.encoding",
        warn_controls: bool = True,
    ):
        self.raw = raw
        self.option = option  # the setting that gives the encoding, named in errors
        self.name = name
        # Before anything is read (from a pipe, the first bytes may be long in coming): an unknown encoding fails here.
        self.encoding = check_encoding(encoding)
        # As the user wrote it ("latin1", not Python's "iso8859-1"), so that a message points at the setting's value.
        self.named_encoding = encoding
        self.size = size  # bytes on disk (compressed size for gzip); None for a pipe
        self.line_number = 0
        # Whether a line read as control characters is warned about (once per source), and whether one was seen: a
        # folder of class folders reads thousands of files and warns about its first such file only.
        self.warn_controls = warn_controls
        self.controls_seen = False
        self._bytes_read = 0
        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
        self.compressed = buffered.peek(2)[:2] == GZIP_MAGIC
        content = gzip.GzipFile(fileobj=buffered, mode="rb") if self.compressed else buffered
        # Only a file gets the HEAD_BYTES buffer: peeking into it reads until it is full, which from a pipe means
        # waiting for 64 KiB or the end of input before the header is read (a slow producer streams nothing).
        self._stream: IO[bytes] = io.BufferedReader(content, buffer_size=HEAD_BYTES) if _is_file(raw) else content

    def read_as(self, encoding: str) -> None:
        """Decode with another encoding, before any line is read: the one a file's byte-order mark says."""
        self.encoding, self.named_encoding = check_encoding(encoding), encoding

    def head(self, count: int) -> bytes:
        """The first bytes of the (decompressed) content, without consuming them: from a file, up to HEAD_BYTES;
        from a pipe, what the stream's own peek gives (what has arrived, up to its buffer's size), without waiting
        for the rest."""
        peek = getattr(self._stream, "peek", None)
        try:
            return peek(count)[:count] if peek else b""
        except READ_ERRORS as error:
            raise DataError(f"{self.name}: cannot read (corrupt gzip or zip data?): {one_line(error)}") from None

    def head_text(self) -> str:
        """The start of the content (head(HEAD_BYTES)) as text, for a look ahead at its first lines: decoded leniently
        (its last character may be cut), without the byte-order mark."""
        return self.head(HEAD_BYTES).decode(self.encoding, errors="ignore").lstrip(BYTE_ORDER_MARK)

    def position(self) -> int:
        """Bytes of the file consumed so far (compressed bytes for gzip), for a progress estimate."""
        if self.compressed:
            try:
                return self.raw.tell()
            except OSError:
                return 0
        return self._bytes_read

    def __iter__(self) -> Iterator[str]:
        if not _splits_on_newline_bytes(self.encoding):
            yield from self._decoded_stream_lines()
            return
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="strict")
        watch_controls = _reads_high_bytes_as_controls(self.encoding)
        for raw_line in self._raw_lines(self._stream):
            self.line_number += 1
            self._bytes_read += len(raw_line)
            try:
                line = decoder.decode(raw_line)
            except UnicodeDecodeError as error:
                bad = raw_line[error.start : error.end]
                raise EncodingError(
                    f"{self.name}, line {self.line_number}: bytes that are not valid {self.named_encoding} "
                    f"({bad!r} at byte {error.start + 1} of the line); give the file's encoding with {self.option} "
                    f"(e.g. {_suggested_encoding(raw_line, self.encoding)})"
                ) from None
            if watch_controls and _C1_CONTROLS.search(line):
                watch_controls, self.controls_seen = False, True  # once per file
                if self.warn_controls:
                    logger.warning(
                        "%s, line %d: bytes 0x80-0x9F read as %s are control characters, not text; give %s %s",
                        self.name,
                        self.line_number,
                        self.named_encoding,
                        self.option,
                        _likely_encoding(raw_line),
                    )
            yield line
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise EncodingError(
                f"{self.name}, line {self.line_number}: the file ends inside a {self.named_encoding} character; "
                f"give the file's encoding with {self.option}"
            ) from None

    def _raw_lines(self, stream: IO[bytes]) -> Iterator[bytes]:
        lines = iter(stream)
        while True:
            try:
                yield next(lines)
            except StopIteration:
                return
            except READ_ERRORS as error:
                raise DataError(
                    f"{self.name}: cannot read (truncated or corrupt gzip or zip data?): {one_line(error)}"
                ) from None

    def _decoded_stream_lines(self) -> Iterator[str]:
        text = io.TextIOWrapper(self._stream, encoding=self.encoding, errors="strict", newline="")
        try:
            for line in text:
                self.line_number += 1
                self._bytes_read += len(line.encode(self.encoding, errors="replace"))
                yield line
        except UnicodeDecodeError as error:
            raise EncodingError(
                f"{self.name}, line {self.line_number + 1}: not valid {self.named_encoding} ({error.reason}); "
                f"give the file's encoding with {self.option}"
            ) from None
        except READ_ERRORS as error:
            raise DataError(
                f"{self.name}: cannot read (truncated or corrupt gzip or zip data?): {one_line(error)}"
            ) from None
        finally:
            text.detach()


def _is_file(raw: IO[bytes]) -> bool:
    """Whether a stream is a file (or stdin redirected from one) rather than a pipe or a socket: a file can be
    sought, and reading ahead of it never waits for a writer."""
    try:
        return raw.seekable()
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------------------------
# Tables


@dataclass
class Chunk:
    """Consecutive rows: their values in header order, and the line (or record) number where each starts."""

    records: list[list[Any]]
    numbers: list[int] | list[str]  # a folder's (pipeline/data/folders.py): each file's path in it


@dataclass
class Table:
    """A table being read: its header, how rows are numbered, and a generator of chunks (which raises DataError
    on a malformed row when it reaches it)."""

    name: str
    format: str
    header: list[str]
    unit: str  # "line", "record" or (a workbook's sheet) "row"
    chunks: Iterator[Chunk]
    lines: LineSource | None = None  # for progress: bytes read so far of a text file
    # How a CSV/TSV file's double quotes are read, `auto` resolved for this file: "csv" or "none" (QUOTINGS); None
    # for the formats without quoting (JSON Lines, Parquet).
    quoting: str | None = None
    # The one character between a CSV/TSV file's fields, as read (data.delimiter, or the format's: a comma, a semicolon
    # the first line shows, a tab); None for the other formats.
    delimiter: str | None = None
    # Rows in all, where known before reading them (a folder: its files); else progress estimates them from `lines`.
    row_count: int | None = None
    sheet: str | None = None  # the worksheet read, of an Excel workbook (data.sheet, or its first)
    # The class names of columns a Parquet file stores as ClassLabel ids (a file `datasets` wrote: its schema's
    # metadata), a list of ClassLabel's too (multi-label); None for the other formats, or where none is recorded.
    class_names: dict[str, list[str]] | None = None
    # Added to the error about a column the rows lack: what the file most likely is instead (a JSON object holding
    # the records' list: table_formats.records_field_hint).
    missing_column_hint: str = ""
    # The row a CSV/TSV file's or a sheet's header was read from, as written (or the given column names of one without
    # a header): a later row equal to it is that header again (repeats_header); None for the formats without one.
    header_row: list[str] | None = None

    def where(self, number: int | str) -> str:
        return f"{in_sheet(self.name, self.sheet)}, {self.unit} {number}"

    def repeats_header(self, record: Sequence[Any]) -> bool:
        """Whether a row is the header row again, every cell as written (`cat a.csv b.csv` repeats b.csv's header
        between the two files' rows): no data, which read as a row became a class named after the label column's
        name in training and a labelled row in prediction. A file without a header repeats only the given column
        names, exactly; a data row that merely holds the column names' words differs in some cell."""
        if self.header_row is None or len(record) != len(self.header_row):
            return False
        # The second file's byte-order mark (Excel's "CSV UTF-8") sits before its header, mid-file, as a character.
        first = record[0].removeprefix(BYTE_ORDER_MARK) if isinstance(record[0], str) else record[0]
        return [first, *record[1:]] == self.header_row


def and_more(unit: str, numbers: Sequence[int | str]) -> str:
    """ " (and 3 more: lines 7, 9, 12)" after the first of `numbers` (lines, records, rows) is named; "" for one."""
    if len(numbers) < 2:
        return ""
    shown = ", ".join(str(number) for number in numbers[1:6])
    units = unit if len(numbers) == 2 else f"{unit}s"
    return f" (and {len(numbers) - 1:,} more: {units} {shown}{', ...' if len(numbers) > 6 else ''})"


# What a row that repeats its file's header row is, as removed_rows.csv, the report and prediction's error cell say.
REPEATED_HEADER = "the header row again (files joined with cat?)"


def repeated_header_warning(where: str, header_row: Sequence[str], more: str, outcome: str) -> str:
    """The one warning about a file's rows that repeat its header row (Table.repeats_header): `where` the first is,
    `more` the others (and_more), and `outcome`, what the reader's caller did with them."""
    names = shorten(", ".join(header_row), 80)
    return f"{where}: the header row ({names}) again, as files joined with cat repeat it{more}; {outcome}"


def in_sheet(name: str, sheet: str | None) -> str:
    """A file as errors name it, with the worksheet read where it is a workbook ("book.xlsx, sheet 'Train'"), so
    that a row number leads to the sheet it counts in."""
    return f"{name}, sheet {sheet!r}" if sheet else name


@contextlib.contextmanager
def open_table(
    path: str,
    file_format: str | None = None,
    column_names: Sequence[str] | None = None,
    encoding: str = DEFAULT_ENCODING,
    chunk_size: int | None = None,
    format_option: str = "data.file_format",
    encoding_option: str = "data.encoding",
    quoting: str = "auto",
    quoting_option: str = "data.quoting",
    delimiter: str | None = None,
    label_prefix: str = FASTTEXT_LABEL_PREFIX,
    sheet: str | None = None,
    sheet_option: str = "data.sheet",
    delimiter_option: str = "data.delimiter",
    json_field: str | None = None,
    json_field_option: str = "data.json_field",
) -> Iterator[Table]:
    """Open a file ('-': stdin) and read its header; iterate `table.chunks` for the rows (all in one chunk when
    `chunk_size` is None). `column_names` names the columns of a header-less CSV/TSV file or sheet; `quoting`
    (QUOTINGS) says how its double quotes are read, and `delimiter` what separates its fields (None: its format's);
    `label_prefix` marks a fastText file's labels; `sheet` names an Excel workbook's sheet (None: its first);
    `json_field` the key of a JSON file's one object that holds the records' list (None: one record per line, or an
    array). The options name the settings that an error message tells the user to change."""
    with _open_bytes(path) as (raw, size), contextlib.ExitStack() as archive:
        lines = LineSource(raw, "<stdin>" if path == STANDARD_INPUT else path, encoding, size, encoding_option)
        head = lines.head(MAGIC_BYTES)  # magic numbers: what the content is, whatever its name
        workbook = _is_workbook(head, lines, path)
        named = path  # the name that tells the format: a zip archive's, its one file's
        if head.startswith(ZIP_MAGIC) and not workbook:
            lines = archive.enter_context(_zipped_file(lines))
            head, named = lines.head(MAGIC_BYTES), lines.name
        _refuse_other_compression(head, lines.name)
        if not workbook and not head.startswith(PARQUET_MAGIC):  # binary: no text encoding of their own
            # Before the format: a fastText file is told by its decoded start, which a wrong wide encoding garbles.
            check_wide_encoding(lines)
        kind = _format_of(lines, named, file_format, format_option, label_prefix, workbook)
        _check_content_matches(head, workbook, kind, lines.name, format_option)
        if kind not in ("parquet", "xlsx"):
            _check_line_ends(lines.head(LINE_END_BYTES), lines.encoding, lines.name)
        # They import this module.
        from pipeline.data.formats import delimited_table, fasttext_table, json_table, parquet_table

        if kind == "xlsx":
            from pipeline.data.workbooks import workbook_table  # it imports this module

            with workbook_table(raw, lines.name, column_names, chunk_size, sheet, sheet_option) as table:
                yield table
        elif kind == "parquet":
            yield parquet_table(lines, path, chunk_size)
        elif kind == "jsonl":
            yield json_table(lines, chunk_size, json_field, json_field_option)
        elif kind == "fasttext":
            yield fasttext_table(lines, chunk_size, label_prefix)
        else:
            yield delimited_table(
                lines, kind, column_names, chunk_size, quoting, quoting_option, delimiter, delimiter_option
            )


def _format_of(
    lines: LineSource, path: str, explicit: str | None, option: str, label_prefix: str, workbook: bool
) -> str:
    """The format by resolve_format, and by the file's start where its name cannot tell it. A workbook (`workbook`:
    told by its content) is one whatever its name. fastText files have no ending of their own (.txt, .train, .valid),
    so a file whose name tells no format is read as fastText when its first lines all start with the label prefix; a
    CSV/TSV file whose first lines all do is refused, naming the format: read as one column of text (a plain text file
    of one text per line is read so), every text would hold its labels."""
    from pipeline.data.formats import starts_like_fasttext  # it imports this module

    if workbook and explicit in (None, "auto"):
        return "xlsx"
    try:
        kind = resolve_format(path, explicit, option)
    except DataError:
        if not starts_like_fasttext(lines, label_prefix):
            raise
        logger.info("%s: its first lines start with %s, read as fastText (%s: auto)", lines.name, label_prefix, option)
        return "fasttext"
    if kind in DELIMITERS and starts_like_fasttext(lines, label_prefix):
        raise DataError(
            f"{lines.name}: its first lines start with {label_prefix}, as a fastText file's do ({label_prefix}sports "
            f"Some text), not a {kind.upper()} file's; set {option} to fasttext"
        )
    return kind


def format_read(path: str, explicit: str | None) -> str:
    """The format a file was read as, by its settings and name alone (a finished run's files may be gone): that of
    resolve_format, or fastText for a name of no known ending, the one format _format_of reads such a name as."""
    try:
        return resolve_format(path, explicit, "data.file_format")
    except DataError:
        return "fasttext"


@contextlib.contextmanager
def _open_bytes(path: str) -> Iterator[tuple[IO[bytes], int | None]]:
    if path == STANDARD_INPUT:
        yield sys.stdin.buffer, None
        return
    file = Path(path).expanduser()
    if not file.exists():
        raise DataError(f"file not found: {path} (looked for {file.resolve()})")
    if file.is_dir():
        raise DataError(f"{path} is a directory, not a file")
    try:
        handle = open(file, "rb")  # noqa: SIM115 -- closed below; only open() maps to this error
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    with handle:
        size = file.stat().st_size
        if size == 0:
            raise DataError(f"{path} is empty")
        yield handle, size
