"""The one table reader and text rule (pipeline/data/tables.py), used by stage 1 and by prediction alike.

Files are built in tmp_path with pandas/pyarrow, so the reader is checked against independent writers.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import logging
import lzma
import math
import os
import sys
import threading
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pipeline.common.errors import DataError
from pipeline.data.formats.header import header_of
from pipeline.data.tables import open_table, resolve_format
from pipeline.data.text import TextSpec, is_missing, join_text, resolve_columns

COLUMNS = ["id", "title", "label"]
ROWS = [
    ["001", "Plain title", "World"],
    ["002", 'A "quoted", comma, title', "Sports"],
    ["003", "Two\nlines", "Business"],
    ["004", "Ünïcødé — “quotes” 😀", "Sci/Tech"],
    ["005", "NA", "World"],
]


def frame() -> pd.DataFrame:
    return pd.DataFrame(ROWS, columns=COLUMNS)


def gzipped(path: Path) -> Path:
    target = path.with_name(path.name + ".gz")
    target.write_bytes(gzip.compress(path.read_bytes()))
    return target


def write_format(directory: Path, kind: str) -> Path:
    """ROWS written by pandas/pyarrow as `kind`."""
    data = frame()
    base = kind.removesuffix(".gz")
    path = directory / f"table.{base}"
    if base == "csv":
        data.to_csv(path, index=False)
    elif base == "tsv":
        data.to_csv(path, index=False, sep="\t")
    elif base == "jsonl":
        data.to_json(path, orient="records", lines=True)
    elif base == "json":  # one JSON array of objects
        data.to_json(path, orient="records")
    elif base == "parquet":
        data.to_parquet(path, index=False)
    return gzipped(path) if kind.endswith(".gz") else path


def read_all(path: Path, **options) -> tuple[list[str], list[list], list[int], str]:
    with open_table(str(path), **options) as table:
        chunks = list(table.chunks)
        header, unit = table.header, table.unit
    return header, [r for c in chunks for r in c.records], [n for c in chunks for n in c.numbers], unit


def message_of(path: Path, **options) -> str:
    with pytest.raises(DataError) as caught:
        read_all(path, **options)
    return str(caught.value)


# ---------------------------------------------------------------------------------------------------------------
# Formats: one set of records whatever the file


FORMATS = ["csv", "tsv", "jsonl", "json", "parquet", "csv.gz", "tsv.gz", "jsonl.gz", "json.gz"]


@pytest.mark.parametrize("kind", FORMATS)
def test_every_format_reads_to_the_same_records(tmp_path, kind):
    path = write_format(tmp_path, kind)
    header, records, numbers, unit = read_all(path)
    assert header == COLUMNS
    assert records == ROWS
    assert len(numbers) == len(ROWS) and numbers == sorted(numbers) and numbers[0] >= 1
    assert unit == ("record" if kind.startswith(("parquet", "json.")) or kind == "json" else "line")


@pytest.mark.parametrize("kind", FORMATS)
def test_chunks_hold_the_same_rows_as_a_whole_read(tmp_path, kind):
    path = write_format(tmp_path, kind)
    whole = read_all(path)
    with open_table(str(path), chunk_size=2) as table:
        chunks = list(table.chunks)
    assert [len(chunk.records) for chunk in chunks] == [2, 2, 1]
    assert [r for c in chunks for r in c.records] == whole[1]
    assert [n for c in chunks for n in c.numbers] == whole[2]


def test_gzip_is_recognised_by_its_content_not_only_its_name(tmp_path):
    path = write_format(tmp_path, "csv")
    disguised = tmp_path / "compressed.csv"
    disguised.write_bytes(gzip.compress(path.read_bytes()))
    assert read_all(disguised)[1] == ROWS


def test_typed_formats_keep_their_types_and_missing_values(tmp_path):
    data = pd.DataFrame({"text": ["a", None, "c"], "label": [1, 2, 3], "score": [0.5, np.nan, 1.5]})
    data.to_parquet(tmp_path / "t.parquet", index=False)
    data.to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    for name in ("t.parquet", "t.jsonl"):
        _, records, _, _ = read_all(tmp_path / name)
        assert [r[1] for r in records] == [1, 2, 3]
        assert records[0][0] == "a" and is_missing(records[1][0]) and is_missing(records[1][2])


def test_an_explicit_format_wins_over_the_name(tmp_path):
    path = tmp_path / "data.txt"
    frame().to_csv(path, index=False, sep="\t")
    assert read_all(path, file_format="tsv")[1] == ROWS
    assert resolve_format("x.TSV.GZ", None, "opt") == "tsv"
    assert resolve_format("x.csv", "jsonl", "opt") == "jsonl"
    assert resolve_format("-", "auto", "opt") == "csv"


def test_unknown_extension_names_the_option(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("a,b\n1,2\n")
    message = message_of(path)
    assert "data.txt" in message and "cannot tell the file format" in message and "data.file_format" in message
    assert "--format" in message_of(path, format_option="--format")


def test_a_parquet_file_named_csv_is_called_parquet(tmp_path):
    frame().to_parquet(tmp_path / "data.csv", index=False)
    message = message_of(tmp_path / "data.csv")
    assert "data.csv is a Parquet file, not CSV" in message and "data.file_format" in message


def test_a_csv_file_named_parquet_and_compressed_parquet_are_refused(tmp_path):
    frame().to_csv(tmp_path / "data.parquet", index=False)
    assert "not a Parquet file" in message_of(tmp_path / "data.parquet")
    compressed = gzipped(write_format(tmp_path, "parquet"))
    assert "uncompressed file" in message_of(compressed)


def opendocument_spreadsheet() -> bytes:
    """An .ods: a zip archive of OpenDocument parts, without the part an Excel workbook holds."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("content.xml", "<office:document-content/>")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [("sheet.ods", opendocument_spreadsheet(), "zip"), ("old.xls", b"\xd0\xcf\x11\xe0" + b"\x00" * 64, "97")],
)
def test_a_workbook_not_read_is_named_by_its_content_whatever_its_name(tmp_path, name, content, kind):
    """An .ods or .xls was told to set data.file_format (which could not read it either): it is told to save as CSV.
    (An .xlsx is read: tests/data/formats/test_xlsx.py.)"""
    for path in (tmp_path / name, tmp_path / "renamed.csv"):
        path.write_bytes(content)
        message = message_of(path)
        assert message.startswith(str(path)) and kind in message and "save the sheet as CSV UTF-8" in message


@pytest.mark.parametrize(
    ("compress", "compression", "command"),
    [(bz2.compress, "bzip2", "bunzip2 -k"), (lzma.compress, "xz", "unxz -k")],
)
def test_a_file_compressed_otherwise_than_by_gzip_is_named_with_the_command_that_decompresses_it(
    tmp_path, compress, compression, command
):
    """Kaggle's Amazon reviews ship as train.ft.txt.bz2: read as text, its bytes failed as a wrong encoding, whose
    advice (latin-1) reads garbage. A CSV whose first field merely starts with BZh is still a CSV."""
    content = b"label,text\n1,some text\n2,other text\n"
    for name in ("train.ft.txt", "renamed.csv"):
        path = tmp_path / f"{name}.{compression}"
        path.write_bytes(compress(content))
        message = message_of(path)
        assert message.startswith(f"{path} is {compression}-compressed") and f"({command} {path})" in message
    plain = tmp_path / "plain.csv"
    plain.write_bytes(b"text,label\nBZh91AY is a code,1\n")
    assert read_all(plain)[1] == [["BZh91AY is a code", "1"]]


def test_a_whole_read_is_one_chunk_for_parquet_too(tmp_path):
    path = tmp_path / "big.parquet"
    pd.DataFrame({"text": [f"row {i}" for i in range(70_000)]}).to_parquet(path, index=False)
    with open_table(str(path)) as table:
        chunks = list(table.chunks)
    assert sum(len(chunk.records) for chunk in chunks) == 70_000
    assert len(chunks) == 1


# ---------------------------------------------------------------------------------------------------------------
# Line numbers, long fields, encodings


def test_line_numbers_count_physical_lines_of_multi_line_fields(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('id,text\n1,"a\nb"\n2,c\n\n3,"x\ny\nz"\n4,d\n')
    _, records, numbers, unit = read_all(path)
    assert records == [["1", "a\nb"], ["2", "c"], ["3", "x\ny\nz"], ["4", "d"]]
    assert numbers == [2, 4, 6, 9] and unit == "line"  # the blank line 5 is skipped, but counted
    path.write_text('id,text\n1,"a\nb"\n2,c\n\n3,"x\ny\nz"\n4,d,EXTRA\n')
    message = message_of(path)
    assert "t.csv, line 9" in message and "3 fields, expected 2" in message


def test_a_blank_text_in_a_one_column_file_is_a_row_not_a_skipped_line(tmp_path):
    """pandas writes an empty text as `""`: in a one-column file that is a row (prediction must return it), and so
    is a line of spaces and an empty line between rows (a text file of one text per line); empty lines before the
    header or after the last row, and blank lines between rows of several columns, are not rows."""
    path = tmp_path / "t.csv"
    path.write_text('\ntext\nFederer wins\n""\n   \n\nStocks fall\n\n\n')
    header, records, numbers, _ = read_all(path)
    assert header == ["text"] and records == [["Federer wins"], [""], ["   "], [""], ["Stocks fall"]]
    assert numbers == [3, 4, 5, 6, 7]
    assert read_all(path, chunk_size=2)[1] == records
    path.write_text("id,text\n1,a\n   \n2,b\n")
    assert read_all(path)[1] == [["1", "a"], ["2", "b"]]


def test_json_lines_are_numbered_by_line_and_arrays_by_record(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3}\n')
    assert read_all(tmp_path / "t.jsonl")[2:] == ([1, 3, 4], "line")
    (tmp_path / "t.json").write_text('[\n {"a": 1},\n {"a": 2},\n {"a": 3}\n]\n')
    assert read_all(tmp_path / "t.json")[2:] == ([1, 2, 3], "record")
    (tmp_path / "bad.json").write_text('[{"a": 1}, 2]')
    assert "bad.json, record 2" in message_of(tmp_path / "bad.json")


@pytest.mark.parametrize("orient", ["columns", "index", "split"])
def test_a_table_written_as_one_json_object_is_an_error_not_one_row(tmp_path, orient):
    """pandas' DataFrame.to_json() default: read as a record, the whole text column became the text of one row."""
    path = tmp_path / "t.json"
    pd.DataFrame({"text": ["Stocks fall", "Team wins"]}).to_json(path, orient=orient)
    message = message_of(path)
    assert message.startswith(f"{path}: the first record is a whole table in one JSON object")
    assert "orient='records', lines=True" in message


def test_a_file_of_splits_in_one_json_object_is_an_error_not_one_row(tmp_path):
    """clinc_oos's data_full.json: one object of splits, each a list of [text, intent] pairs. Read as a record it
    was one row whose columns were the splits."""
    path = tmp_path / "data_full.json"
    splits = {"oos_val": [["play a song", "oos"]], "val": [["how is the weather", "weather"]], "train": []}
    path.write_text(json.dumps(splits))
    assert message_of(path) == (
        f"{path}: one JSON object whose keys ('oos_val', 'val', 'train') each hold a list of rows (a file of splits, "
        "as clinc_oos's data_full.json), not one record per row; write each split as its own JSON Lines file, one "
        'object per row ({"text": ..., "label": ...})'
    )
    path.write_text('{"text": "a", "tokens": [["a", "DT"]], "labels": [{"start": 0}]}\n')  # one row of lists
    assert read_all(path)[1] == [["a", [["a", "DT"]], [{"start": 0}]]]


def test_a_record_of_nested_objects_is_a_record(tmp_path):
    path = tmp_path / "nested.jsonl"
    path.write_text('{"review": {"text": "Great", "stars": 5}}\n{"review": {"text": "Poor", "stars": 1}}\n')
    header, records, _, _ = read_all(path)
    assert header == ["review"] and records[1] == [{"text": "Poor", "stars": 1}]


def test_a_json_key_first_seen_after_the_first_chunk_is_an_error(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b": 4}\n')
    header, records, _, _ = read_all(path)  # a whole read sees every key
    assert header == ["a", "b"] and records == [[1, None], [2, None], [3, 4]]
    with pytest.raises(DataError, match=r"t.jsonl, line 3: key 'b'"):
        read_all(path, chunk_size=2)


def test_a_200000_character_field_loads(tmp_path):
    long_text = "word " * 40_000  # 200,000 characters, past the csv module's default limit of 131,072
    path = tmp_path / "long.csv"
    pd.DataFrame({"id": ["1", "2"], "text": [long_text, "short"]}).to_csv(path, index=False)
    _, records, _, _ = read_all(path)
    assert len(records[0][1]) == 200_000 and records[0][1] == long_text
    assert records[1] == ["2", "short"]


def test_utf16_input_reads_with_its_encoding(tmp_path):
    path = tmp_path / "wide.csv"
    frame().to_csv(path, index=False, encoding="utf-16")
    assert path.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    header, records, numbers, _ = read_all(path, encoding="utf-16")
    assert header == COLUMNS and records == ROWS
    assert numbers == [2, 3, 4, 6, 7]  # the "Two\nlines" row spans lines 4-5


@pytest.mark.parametrize("encoding, named", [("utf-16", "utf-16"), ("utf-16-be", "utf-16"), ("utf-32", "utf-32")])
@pytest.mark.parametrize("gzip_it", [False, True])
def test_a_wide_file_with_a_byte_order_mark_is_read_in_its_encoding_by_default(
    tmp_path, caplog, encoding, named, gzip_it
):
    """Excel's "Unicode text" (UTF-16 LE, a mark, tabs) was refused until data.encoding=utf-16 was given, though its
    mark says so; bytes that UTF-8 could never read. An INFO line says how it was read."""
    path = tmp_path / "wide.tsv"
    text = "id\ttext\r\n1\tCafé\r\n2\t“quoted”\r\n"
    # Python's utf-16 and utf-32 write the mark themselves; a codec of a given byte order does not.
    path.write_bytes(("\ufeff" + text).encode(encoding) if encoding.endswith("-be") else text.encode(encoding))
    path = gzipped(path) if gzip_it else path
    expected = (["id", "text"], [["1", "Café"], ["2", "“quoted”"]])
    with caplog.at_level(logging.INFO, logger="pipeline.data.sniff"):
        assert read_all(path)[:2] == expected == read_all(path, encoding="UTF8")[:2]
    assert f"{path}: read as {named}, as its byte-order mark says (data.encoding: auto cannot read it)" in caplog.text


@pytest.mark.parametrize("encoding, named", [("utf-16", "utf-16"), ("utf-16-be", "utf-16"), ("utf-32", "utf-32")])
@pytest.mark.parametrize("read_as", ["latin-1", "cp1252"])
def test_a_wide_file_read_as_a_narrow_encoding_names_its_encoding(tmp_path, encoding, named, read_as):
    # Read as latin-1, as the generic hint for bad UTF-8 bytes suggests, it gave column names full of NULs. Given on
    # purpose, a single-byte encoding is not overridden: the error says what the mark says.
    path = tmp_path / "wide.csv"
    path.write_bytes("\ufeff".encode(encoding) + "id,text\n1,Café\n".encode(encoding))
    message = message_of(path, encoding=read_as, encoding_option="--encoding")
    assert message.startswith(str(path))
    assert f"{named.upper()} byte-order mark" in message and f"--encoding (e.g. {named})" in message
    gzipped = tmp_path / "wide.csv.gz"
    gzipped.write_bytes(gzip.compress(path.read_bytes()))
    assert f"{named.upper()} byte-order mark" in message_of(gzipped, encoding=read_as)
    assert read_all(path, encoding=named)[1] == [["1", "Café"]]


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("read_as, codec", [("utf-8", "utf-8"), ("cp1252", "cp1252")])
def test_a_utf16_file_without_a_byte_order_mark_names_its_encoding(tmp_path, encoding, read_as, codec):
    """Some Windows exports write UTF-16 without a mark: read as UTF-8 its text was full of NULs, without an error."""
    path = tmp_path / "export.csv"
    path.write_bytes("id,text\r\n1,Café au lait\r\n2,naïve\r\n".encode(encoding))
    message = f"{path} is {encoding.upper()} text without a byte-order mark (every other byte of its start is NUL)"
    assert message_of(path, encoding=read_as) == f"{message}, so it is not {codec}; set data.encoding to {encoding}"
    assert message_of(gzipped(path), encoding=read_as, encoding_option="--encoding").endswith(
        f"--encoding to {encoding}"
    )
    assert read_all(path, encoding=encoding)[:2] == (["id", "text"], [["1", "Café au lait"], ["2", "naïve"]])


def test_a_few_nul_bytes_in_a_narrow_file_are_not_taken_for_utf16(tmp_path):
    path = tmp_path / "nul.csv"
    path.write_bytes(b"id,text\n1,a stray\x00 NUL\n2,another \x00\n")
    assert read_all(path)[1] == [["1", "a stray\x00 NUL"], ["2", "another \x00"]]


def test_utf8_byte_order_mark_is_dropped_from_the_header(tmp_path):
    path = tmp_path / "excel.csv"
    frame().to_csv(path, index=False, encoding="utf-8-sig")
    assert read_all(path)[0] == COLUMNS


@pytest.mark.parametrize("read_as", ["latin-1", "cp1252"])
def test_a_utf8_file_with_a_byte_order_mark_read_as_a_single_byte_encoding_names_utf8(tmp_path, read_as):
    """Excel's "CSV UTF-8" read as latin-1: the first column was named 'ï»¿id', which no setting matched, and
    'Café' read as 'CafÃ©' without an error."""
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffid;text\r\n1;Café\r\n".encode("utf-8"))
    assert message_of(path, encoding=read_as, encoding_option="--encoding") == (
        f"{path} starts with a UTF-8 byte-order mark, so it is not {read_as}; give its encoding with --encoding "
        "(e.g. utf-8)"
    )
    assert read_all(path, encoding="utf-8-sig")[:2] == (["id", "text"], [["1", "Café"]])


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_semicolon_separated_csv_is_read_as_such(tmp_path, encoding):
    # As a spreadsheet program saves "CSV" where the comma is the decimal mark; commas stay inside the texts.
    path = tmp_path / "excel.csv"
    frame().to_csv(path, index=False, sep=";", encoding=encoding)
    header, records, numbers, _ = read_all(path, encoding=encoding)
    assert header == COLUMNS and records == ROWS and numbers == [2, 3, 4, 6, 7]
    headerless = tmp_path / "headerless.csv"
    frame().to_csv(headerless, index=False, header=False, sep=";", encoding=encoding)
    assert read_all(headerless, encoding=encoding, column_names=COLUMNS)[1] == ROWS


@pytest.mark.parametrize(
    "content",
    [
        "text\nfirst; with a semicolon\nsecond\n",  # one column whose header has none
        "id,text\n1,a; b\n2,c\n",  # commas on the first line decide
    ],
)
def test_semicolons_in_texts_do_not_make_a_csv_semicolon_separated(tmp_path, content):
    path = tmp_path / "texts.csv"
    path.write_text(content)
    header, records, _, _ = read_all(path)
    assert len(records[0]) == len(header) and "; " in records[0][-1]
    # Without a header, a first text with semicolons is one field when one column is named.
    headerless = tmp_path / "headerless.csv"
    headerless.write_text("first; with a semicolon\nsecond\n")
    assert read_all(headerless, column_names=["text"])[1] == [["first; with a semicolon"], ["second"]]


def test_bytes_that_are_not_utf8_name_the_line_and_the_option(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("id,text\n1,plain\n2,Caf\xe9\n".encode("latin-1"))
    message = message_of(path, encoding="utf-8")
    assert "latin.csv, line 3" in message and "data.encoding" in message
    assert "--encoding" in message_of(path, encoding="utf-8", encoding_option="--encoding")
    assert read_all(path, encoding="latin-1")[1][1] == ["2", "Café"]
    assert "unknown encoding 'klingon'" in message_of(path, encoding="klingon")


@pytest.mark.parametrize(
    ("content", "encoding", "says"),
    [
        (b"id,text\n2,Caf\xe9\n", "UTF8", "line 2: bytes that are not valid UTF8 (b'\\xe9' at byte 6 of the line)"),
        ("\ufeffid,text\n".encode(), "ISO-8859-1", "starts with a UTF-8 byte-order mark, so it is not ISO-8859-1;"),
        ("id,text\n".encode("utf-16-le"), "latin1", "every other byte of its start is NUL), so it is not latin1;"),
        ("id,text\n".encode("utf-16") + b"!", "UTF16", "line 2: not valid UTF16 (truncated data)"),
    ],
)
def test_an_encoding_error_quotes_the_encoding_as_the_user_wrote_it(tmp_path, content, encoding, says):
    """Not Python's name for its codec ("utf-8", "iso8859-1", "utf-16"): the value to look for in the config."""
    path = tmp_path / "spelled.csv"
    path.write_bytes(content)
    assert says in message_of(path, encoding=encoding)


def test_a_windows_file_read_as_latin1_is_warned_about_once(tmp_path, caplog):
    """Read as latin-1, cp1252's ’ and € become control characters, which the tokenizer drops without a word."""
    path = tmp_path / "sms.csv"
    path.write_bytes(b"v1,v2\nham,plain\nham,I\x92m on my way\nspam,Win \x805 now\n")
    with caplog.at_level("WARNING", logger="pipeline.data.lines"):
        assert read_all(path, encoding="latin-1")[1][1] == ["ham", "I\x92m on my way"]
    assert [record.getMessage() for record in caplog.records] == [
        f"{path}, line 3: bytes 0x80-0x9F read as latin-1 are control characters, not text; give data.encoding "
        "cp1252 (a file saved on Windows: ’ “ ” – €)"
    ]
    caplog.clear()
    with caplog.at_level("WARNING", logger="pipeline.data.lines"):
        assert read_all(path, encoding="cp1252")[1][1:] == [["ham", "I’m on my way"], ["spam", "Win €5 now"]]
        read_all(tmp_path / "sms.csv", encoding="latin-1", chunk_size=1)  # still once per file, not per chunk
    assert len(caplog.records) == 1
    caplog.clear()
    path.write_text("v1,v2\nham,I’m on my way\n", encoding="utf-8")  # a UTF-8 file given as latin-1: ’ is E2 80 99
    with caplog.at_level("WARNING", logger="pipeline.data.lines"):
        read_all(path, encoding="latin-1")
    assert caplog.records[0].getMessage().endswith("give data.encoding utf-8 (the line is valid UTF-8)")


def test_a_quote_that_opens_a_tsv_field_is_named_in_the_error(tmp_path):
    """The UCI SMS Spam Collection's layout read with quoting: csv's message names the tab it expected after the
    closing quote (which used to print as a space), and the setting that reads quotes as text."""
    path = tmp_path / "sms.tsv"
    path.write_text('ham\tOk lar...\nham\t"Hey!" asked the teacher\n')
    message = message_of(path, column_names=["label", "text"], quoting="csv")
    assert message.startswith(f"{path}, line 2: malformed TSV record ('\\t' expected after '\"';")
    assert "A field that starts with a double quote is read up to its closing quote" in message
    assert message.endswith(
        "if the file does not quote its fields (a text may start with a quote), set data.quoting to none)"
    )


# ---------------------------------------------------------------------------------------------------------------
# Quoting: files that quote nothing (GLUE's train.tsv, the SMS Spam Collection) and files that quote


UNQUOTED_SMS = 'label\ttext\nham\tOk lar\nspam\t"Free" entry in 2 a wkly comp\nham\tHe said "hi" to me\nham\t"ok"\n'
SMS_RECORDS = [
    ["ham", "Ok lar"],
    ["spam", '"Free" entry in 2 a wkly comp'],
    ["ham", 'He said "hi" to me'],
    ["ham", '"ok"'],
]


@pytest.mark.parametrize("name", ["sms.tsv", "sms.tsv.gz"])
def test_auto_reads_a_tsv_file_that_quotes_nothing_with_its_quotes_as_text(tmp_path, caplog, name):
    path = tmp_path / name
    path.write_bytes(gzip.compress(UNQUOTED_SMS.encode()) if name.endswith(".gz") else UNQUOTED_SMS.encode())
    with caplog.at_level("INFO", logger="pipeline.data.load"):
        assert read_all(path)[1] == SMS_RECORDS  # '"ok"' too: the file quotes nothing, so it is no quoted field
    assert f"{path}, line 3: a field goes on after its closing double quote" in caplog.text
    assert read_all(path, quoting="none")[1] == SMS_RECORDS


def test_auto_never_reads_a_quoted_tsv_file_as_unquoted(tmp_path):
    """pandas quotes a field that holds a quote, a tab or a line break, doubling its quotes: read without quoting,
    its texts would keep those quotes, or split at the tab."""
    texts = ['"Free" entry', 'He said "hi"\tand left', "two\nlines", '"ok"']
    pd.DataFrame({"label": ["a", "b", "c", "d"], "text": texts}).to_csv(tmp_path / "q.tsv", sep="\t", index=False)
    assert [record[1] for record in read_all(tmp_path / "q.tsv")[1]] == texts
    assert "set data.quoting to csv" in message_of(tmp_path / "q.tsv", quoting="none")


def test_auto_decides_on_the_start_of_the_file_and_a_later_quote_names_the_setting(tmp_path):
    """Read as it streams, a file is read one way throughout: a text starting with a quote past the first 64 KiB
    is an error that says how to read it, never a switch of reading midway."""
    path = tmp_path / "late.tsv"
    path.write_text("label\ttext\n" + "ham\tsee you at lunch then\n" * 4000 + 'spam\t"Free" entry\n')
    message = message_of(path)
    assert message.startswith(f"{path}, line 4002: malformed TSV record")
    assert message.endswith("set data.quoting to none)")
    assert read_all(path, quoting="none")[1][-1] == ["spam", '"Free" entry']
    path.write_text("label\ttext\n" + "ham\tsee you at lunch then\n" * 1000 + 'spam\t"Free" entry\n')
    assert read_all(path)[1][-1] == ["spam", '"Free" entry']  # 26 KiB in: past a file buffer's 4 KiB, still seen


def test_auto_reads_quotes_in_csv_files_and_none_reads_them_as_text(tmp_path):
    """A CSV file that quotes nothing is read so only when asked: auto's rule is for TSV files alone."""
    path = tmp_path / "sms.csv"
    path.write_text(UNQUOTED_SMS.replace("\t", ","))
    message = message_of(path, quoting="auto")
    assert message.startswith(f"{path}, line 3: malformed CSV record") and "data.quoting to none" in message
    assert read_all(path, quoting="none")[1] == SMS_RECORDS
    path.write_text('label,text\nham,"a, b"\n')
    assert read_all(path, quoting="csv")[1] == [["ham", "a, b"]]


def sentence_lines(count: int, delimiter: str) -> list[str]:
    """A header and `count` rows of a sentence and its topic, none holding the delimiter or a quote."""
    return ["sentence" + delimiter + "label"] + [
        f"Sentence {index} of the report.{delimiter}{TOPIC_NAMES[index % 2]}" for index in range(count)
    ]


TOPIC_NAMES = ["World", "Business"]
# Two sentences of a quotation, one a row: the first opens the quote, the second closes it (lines 502 and 503).
OPENS_A_QUOTE = '"We came here to win the title.\tWorld'
CLOSES_THE_QUOTE = 'That is what we did."\tBusiness'


def quotation_file(path: Path, count: int, delimiter: str = "\t") -> Path:
    lines = sentence_lines(count, delimiter)
    lines[501:503] = [OPENS_A_QUOTE.replace("\t", delimiter), CLOSES_THE_QUOTE.replace("\t", delimiter)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_quote_that_closes_on_the_next_row_of_a_tsv_file_loses_no_row(tmp_path, caplog):
    """A sentence that opens a quotation and the next row's that closes it: read with quotes, the two rows were one
    field (the tab and line break between them inside it) and 599 of 600 rows, without a word."""
    path = quotation_file(tmp_path / "sentences.tsv", 600)
    with caplog.at_level("INFO", logger="pipeline.data.load"):
        _, records, numbers, _ = read_all(path)
    assert len(records) == 600 and records[500:502] == [
        ['"We came here to win the title.', "World"],
        ['That is what we did."', "Business"],
    ]
    assert numbers[500:502] == [502, 503]
    assert (
        f"{path}, line 502: a quoted field takes in the line break and '\\t' between rows, so the file does not "
        "quote its fields: read with quotes as text (data.quoting: auto)"
    ) in caplog.text
    # Past the start that auto decides on, the rows read as one are an error naming the lines and the setting.
    late = quotation_file(tmp_path / "late.tsv", 600)
    late.write_text(
        "sentence\tlabel\n" + "A sentence of the report.\tWorld\n" * 3000 + "".join(late.open().readlines()[1:])
    )
    message = message_of(late)
    assert message == (
        f"{late}, line 3502: a double quote opens a field that closes on line 3503, taking in the line break and "
        "'\\t' between rows (each of lines 3502-3503 is a row of 2 fields with quotes read as text); if the file does "
        "not quote its fields (a text may start with a quote), set data.quoting to none, or to csv to read the field "
        "as quoted"
    )
    assert "set --quoting to none" in message_of(late, quoting_option="--quoting")
    assert len(read_all(late, quoting="none")[1]) == 3600
    assert len(read_all(late, quoting="csv")[1]) == 3599  # asked for: the field is read as quoted


def test_a_quote_that_closes_on_a_later_row_of_a_csv_file_is_an_error_after_rows_that_quote_nothing(tmp_path):
    """A comma-separated file is read with quotes whatever its start: rows read as one are an error, once the file
    has shown for CSV_UNQUOTED_ROWS rows that it quotes nothing."""
    path = quotation_file(tmp_path / "sentences.csv", 600, ",")
    assert message_of(path).startswith(f"{path}, line 502: a double quote opens a field that closes on line 503, ")
    assert len(read_all(path, quoting="none")[1]) == 600


@pytest.mark.parametrize("first", [0, 150], ids=["first-row", "after-150-rows"])
def test_texts_over_several_lines_with_commas_in_a_quoted_csv_read_as_before(tmp_path, first):
    """Reviews as pandas writes them: a text over two lines with as many commas on each as a row has (label, text:
    one) is the shape of rows read as one, but a file that quotes is read as quoted, whether the text is its first
    row or comes after reviews that hold commas (quoted)."""
    texts = [f"Review {index}, fine." for index in range(first)] + [
        "Great food!\nService was slow, though.",
        "Bad, really bad.\nNever again, ever.",
        "ok",
    ]
    labels = ["pos", "neg"] * (len(texts) // 2) + ["pos"] * (len(texts) % 2)
    pd.DataFrame({"label": labels, "text": texts}).to_csv(tmp_path / "reviews.csv", index=False)
    _, records, numbers, _ = read_all(tmp_path / "reviews.csv")
    assert [record[1] for record in records] == texts and numbers[first:] == [first + 2, first + 4, first + 6]


@pytest.mark.parametrize("columns", [["label", "text"], ["text", "label"]])
def test_a_quoted_text_over_lines_after_rows_without_commas_reads_as_before(tmp_path, columns):
    """Short texts without a comma (pandas quotes none of them), then a text over two lines with as many commas on
    each as a row has: the shape of rows read as one, after more than CSV_UNQUOTED_ROWS rows that quoted nothing. It
    stopped the file with an error; the pieces of text where a label would be tell it apart."""
    texts = [f"short message {index}" for index in range(150)] + ["Great food!\nService was slow, though.", "ok"]
    if columns[0] == "text":
        texts[150] = "Hi team,\nthanks"
    labels = ["pos", "neg"] * (len(texts) // 2)
    pd.DataFrame({"label": labels, "text": texts})[columns].to_csv(tmp_path / "messages.csv", index=False)
    _, records, numbers, _ = read_all(tmp_path / "messages.csv")
    assert [record[columns.index("text")] for record in records] == texts and numbers[150:] == [152, 154]


def test_a_quote_that_closes_on_the_next_row_among_the_first_rows_of_a_tsv_file_is_caught(tmp_path):
    """The labels on the lines read as one are told from the few rows before: a class seen twice is a label's."""
    path = tmp_path / "early.tsv"
    path.write_text(
        "sentence\tlabel\nStocks rose.\tBusiness\nTeam won.\tSports\nMarkets fell.\tBusiness\n"
        + OPENS_A_QUOTE.replace("World", "Sports")
        + "\n"
        + CLOSES_THE_QUOTE
        + "\nShares slid.\tBusiness\n"
    )
    records = read_all(path)[1]
    assert len(records) == 6 and records[3:5] == [
        ['"We came here to win the title.', "Sports"],
        ['That is what we did."', "Business"],
    ]


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_excels_sep_line_names_the_delimiter_and_is_no_row(tmp_path, caplog, line_end):
    """Excel writes and reads a first line `sep=;`: it was read as a header (sep=, Unnamed: 1). Lines keep their
    numbers in the file."""
    path = tmp_path / "export.csv"
    path.write_bytes(line_end.join(["sep=;", "text;label", "Stocks fell, again;Business", "Won;Sports;x", ""]).encode())
    message = message_of(path)
    assert message.startswith(f"{path}, line 4: 3 fields, expected 2 as in the header on line 2 (text, label)")
    path.write_bytes(line_end.join(["sep=;", "text;label", "Stocks fell, again;Business", "Won;Sports", ""]).encode())
    with caplog.at_level("INFO", logger="pipeline.data.load"):
        header, records, numbers, _ = read_all(path)
    assert header == ["text", "label"] and numbers == [3, 4]
    assert records == [["Stocks fell, again", "Business"], ["Won", "Sports"]]
    assert f"{path}, line 1: sep=;, Excel's line naming the delimiter: fields separated by ';'" in caplog.text
    caplog.clear()
    path.write_bytes(line_end.join(["sep=;", "text,label", "Stocks fell,Business", ""]).encode())
    with caplog.at_level("INFO", logger="pipeline.data.load"):  # a delimiter given wins, and the line is still no row
        assert read_all(path, delimiter=",")[1:3] == ([["Stocks fell", "Business"]], [3])
    assert (
        f"{path}, line 1: sep=; names ';' as the delimiter, but data.delimiter gives ',': read with ','" in caplog.text
    )


# The Financial PhraseBank's layout: latin-1, no header, CRLF, one "sentence@label" per line; sentences hold commas
# and quotes, some open with one that never closes.
PHRASEBANK_RECORDS = [
    ["Sales rose , the company said .", "positive"],
    ['" Ahlström\'s net profit , up £ 3.5 mn , beat "forecasts" .', "positive"],
    ['Kesko said : " We expect no change " , analysts agreed .', "neutral"],
]


def test_a_given_delimiter_reads_a_file_separated_by_another_character(tmp_path, caplog):
    path = tmp_path / "Sentences_AllAgree.txt"
    path.write_bytes("".join(f"{text}@{label}\r\n" for text, label in PHRASEBANK_RECORDS).encode("latin-1"))
    options = {"file_format": "csv", "encoding": "latin-1", "column_names": ["sentence", "label"]}
    assert message_of(path, **options).startswith(f"{path}, line 2: malformed CSV record")  # read at commas
    with caplog.at_level("INFO", logger="pipeline.data.load"):
        header, records, numbers, _ = read_all(path, delimiter="@", **options)
    assert header == ["sentence", "label"] and records == PHRASEBANK_RECORDS and numbers == [1, 2, 3]
    # Its unbalanced quotes show that it quotes nothing, as a TSV file's would.
    assert "a field goes on after its closing double quote" in caplog.text
    assert read_all(path, delimiter="@", quoting="none", **options)[1] == PHRASEBANK_RECORDS
    quoted = tmp_path / "quoted.csv"  # a file that quotes its fields is still read with its quotes
    quoted.write_text('text@label\n"two\nlines @ once"@a\n"said ""hi"""@b\n')
    assert read_all(quoted, delimiter="@")[1] == [["two\nlines @ once", "a"], ['said "hi"', "b"]]


def test_a_file_whose_lines_end_in_a_carriage_return_alone_is_named_so(tmp_path):
    """Excel for Mac's "CSV (Macintosh)": read as one line, it failed with csv's advice about universal-newline mode."""
    for name in ("mac.csv", "mac.jsonl", "mac.csv.gz"):
        content = b"text,label\rStocks fall,neg\r" if "csv" in name else b'{"text": "a"}\r{"text": "b"}\r'
        path = tmp_path / name
        path.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
        assert message_of(path).startswith(f"{path} ends its lines with a carriage return alone")
    path = tmp_path / "windows.csv"  # a carriage return inside a quoted field of a CRLF file is text
    path.write_bytes(b'text,label\r\n"two\rlines",neg\r\n')
    assert read_all(path)[1] == [["two\rlines", "neg"]]
    path.write_bytes(b"text,label\nfine,pos\nstray\r return,neg\n")  # ... and outside quotes an error, in words
    assert message_of(path) == (
        f"{path}, line 3: malformed CSV record (a carriage return inside a field that is not quoted: quote the field "
        "or remove the carriage return)"
    )


def test_standard_input_is_read_as_it_arrives_not_at_its_end(monkeypatch):
    """`zcat big.csv.gz | python -m pipeline.predict --input - ...` predicts as rows arrive: peeking HEAD_BYTES ahead
    of a pipe waited for 64 KiB or the end of input before even the header was read."""
    read_end, write_end = os.pipe()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(open(read_end, "rb")))  # noqa: SIM115 -- closed with sys.stdin
    os.write(write_end, b"text,label\nhello,pos\n")
    seen = []

    def read_first_row() -> None:
        with open_table("-", chunk_size=1) as table:
            seen.append((table.header, next(table.chunks).records))

    reader = threading.Thread(target=read_first_row, daemon=True)
    reader.start()
    reader.join(timeout=20)  # the write end stays open: the input has not ended
    read_before_the_end = not reader.is_alive()
    os.close(write_end)
    reader.join()
    assert read_before_the_end
    assert seen == [(["text", "label"], [["hello", "pos"]])]


def test_missing_empty_and_folder_inputs(tmp_path):
    assert "file not found" in message_of(tmp_path / "nope.csv")
    (tmp_path / "empty.csv").write_text("")
    assert "empty.csv is empty" in message_of(tmp_path / "empty.csv")
    (tmp_path / "blank.csv").write_text("\n\n")
    assert "blank.csv is empty" in message_of(tmp_path / "blank.csv")
    assert "is a directory" in message_of(tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# The header rule


def test_without_column_names_the_first_record_is_the_header_as_written():
    # As written, so that prediction writes it back unchanged; columns are found ignoring case and spaces.
    assert header_of([" id", "Title ", "label"], None, "f, line 1") == ([" id", "Title ", "label"], True)
    assert resolve_columns([" id", "Title ", "label"], ["title", "id"], "f", "data.text_columns") == [1, 0]


@pytest.mark.parametrize("first", [["id", "text", "text"], ["Text", "id", "text "], ["id", "", "Unnamed: 1"]])
def test_repeated_header_names_are_rejected(first):
    with pytest.raises(DataError, match=r"f, line 1: the header has repeated column names") as caught:
        header_of(first, None, "f, line 1")
    assert "give the column names" in str(caught.value)


def test_empty_header_names_are_unnamed_columns_as_pandas_names_them(tmp_path):
    """The SMS Spam Collection's layout: `v1,v2,,,`, the unnamed columns holding a few stray cells. Refused, the file
    could not be read at all: given column names, its first row was another header."""
    path = tmp_path / "spam.csv"
    path.write_bytes(b"v1,v2,,,\r\nham,Ok lar... Joking wif u oni,,,\r\nspam,Free entry \xa35,call,now,\r\n")
    header, records, numbers, _ = read_all(path, encoding="latin-1")
    assert header == ["v1", "v2", "Unnamed: 2", "Unnamed: 3", "Unnamed: 4"]
    assert records == [["ham", "Ok lar... Joking wif u oni", "", "", ""], ["spam", "Free entry £5", "call", "now", ""]]
    assert numbers == [2, 3]
    assert header_of(["id", " ", "text"], None, "f") == (["id", "Unnamed: 1", "text"], True)


@pytest.mark.parametrize(
    ("first", "is_header"),
    [
        (["class_index", "title", "description"], True),
        (["CLASS_INDEX", " Title", "Description "], True),  # case and surrounding spaces are ignored
        (["3", "Wall St. Bears", "Reuters - Short-sellers"], False),
        (["3", "Wall St. Bears", "4"], False),
    ],
)
def test_with_column_names_a_first_record_repeating_them_is_a_header(first, is_header):
    names = ["class_index", "title", "description"]
    assert header_of(first, names, "f") == (names, is_header)


@pytest.mark.parametrize(
    "first",
    [
        ["id", "title", "description"],  # a file with its own header, given the run's names (README's example)
        ["class_index", "description", "title"],  # another order: read as data, title and description swapped
        ["class_index", "title"],
        ["title", "description", "class_index"],  # every name, none in its place
        ["text", "Title"],
    ],
)
def test_with_column_names_a_first_record_naming_some_of_them_is_another_header(tmp_path, first):
    """Read as data, such a header was labelled as a text and its names replaced by the given ones."""
    names = ["class_index", "title", "description"]
    with pytest.raises(DataError, match=r"f, line 1: the first row \(.*\) is a header") as caught:
        header_of(first, names, "f, line 1")
    assert "leave the column names out" in str(caught.value)
    path = tmp_path / "own_header.csv"
    path.write_text("id,title,description\n007,Wall St.,Short-sellers\n")
    assert "own_header.csv, line 1: the first row (id, title, description)" in message_of(path, column_names=names)
    assert read_all(path)[:2] == (["id", "title", "description"], [["007", "Wall St.", "Short-sellers"]])


def repeated_header_lines(path: Path, **options) -> list[int]:
    """The lines (rows) of a file whose record the table tells as its header row again."""
    with open_table(str(path), **options) as table:
        return [
            number
            for chunk in table.chunks
            for number, record in zip(chunk.numbers, chunk.records)
            if table.repeats_header(record)
        ]


@pytest.mark.parametrize("delimiter, name", [(",", "joined.csv"), ("\t", "joined.tsv")])
def test_the_header_row_again_in_the_middle_of_a_file_is_told_apart_from_data(tmp_path, delimiter, name):
    """`cat a.csv b.csv` leaves b.csv's header row between the two files' rows: a row of no data, which read as one
    became a class named after the label column. Told by every cell as written: rows that merely hold the names'
    words (a text "text", the names in another case or order) are data."""
    part = pd.DataFrame([["1", "text", "label"], ["2", "Text", "LABEL"], ["3", "label", "text"]], columns=COLUMNS)
    path = tmp_path / name
    path.write_text(part.to_csv(index=False, sep=delimiter) * 3)  # three files joined: header, 3 rows, each
    header, records, numbers, _ = read_all(path)
    assert header == COLUMNS and len(records) == 11  # the reader gives every row; each caller says what it does
    assert [record == COLUMNS for record in records] == [number in (5, 9) for number in numbers]
    assert repeated_header_lines(path) == [5, 9]


def test_a_header_repeated_by_joining_two_excel_utf8_files_is_told_despite_its_byte_order_mark(tmp_path):
    """Excel's "CSV UTF-8" starts with a byte-order mark; joined with cat, the second file's mark sits mid-file before
    its header, where the decoder leaves it as a character."""
    part = pd.DataFrame([["1", "Stocks fell", "Business"]], columns=COLUMNS).to_csv(index=False).encode("utf-8-sig")
    path = tmp_path / "joined.csv"
    path.write_bytes(part + part)
    assert read_all(path)[0] == COLUMNS
    assert repeated_header_lines(path) == [3]


def test_a_file_without_a_header_repeats_only_the_given_column_names_exactly(tmp_path):
    """A header-less file has no header row of its own to repeat: only a row that is the given names, exactly, is one
    (a first row repeating them in another case is still read as the header, as before)."""
    path = tmp_path / "headerless.tsv"
    path.write_text("pos\tgood\nlabel\ttext\nLabel\ttext\nneg\tbad\n")
    assert repeated_header_lines(path, column_names=["label", "text"]) == [2]
    assert read_all(path, column_names=["label", "text"])[1][1:3] == [["label", "text"], ["Label", "text"]]
    headed = tmp_path / "headed.tsv"
    headed.write_text("LABEL\tText\npos\tgood\nLABEL\tText\nlabel\ttext\n")
    assert repeated_header_lines(headed, column_names=["label", "text"]) == [3]  # the file's own header, as written


def test_formats_without_a_header_row_have_none_to_repeat(tmp_path):
    """JSON Lines and Parquet name their columns in every record or in their schema: a record of the names is data."""
    part = pd.DataFrame([COLUMNS, ["1", "a", "b"]], columns=COLUMNS)
    part.to_json(tmp_path / "names.jsonl", orient="records", lines=True)
    part.to_parquet(tmp_path / "names.parquet", index=False)
    for path in (tmp_path / "names.jsonl", tmp_path / "names.parquet"):
        assert read_all(path)[1][0] == COLUMNS and repeated_header_lines(path) == []


def zip_archive(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return path


@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl", "json", "csv.gz"])
def test_a_zip_archive_of_one_file_is_read_as_that_file(tmp_path, kind):
    """As pandas reads one (`train.csv.zip`, as Kaggle hands data out): was "a zip archive (an OpenDocument
    workbook?), which is not read". Its format is its file's, its lines are that file's, named inside the archive."""
    plain = write_format(tmp_path, kind)
    archived = zip_archive(tmp_path / "data.zip", {f"data/{plain.name}": plain.read_bytes()})
    assert read_all(archived) == read_all(plain)
    # What macOS's "Compress" adds beside the file holds no data, and is not counted.
    with zipfile.ZipFile(archived, "a") as archive:
        archive.writestr(f"__MACOSX/data/._{plain.name}", b"\x00\x05\x16\x07")
        archive.writestr("data/", b"")
    assert read_all(archived) == read_all(plain)
    broken = zip_archive(tmp_path / "broken.zip", {"broken.csv": b"id,title\n1,a,EXTRA\n"})
    assert message_of(broken).startswith(f"{broken}/broken.csv, line 2: 3 fields")
    damaged = bytearray(archived.read_bytes())
    damaged[damaged.index(b"PK\x03\x04") + 60] ^= 0xFF  # a byte of the file's compressed data
    (tmp_path / "damaged.zip").write_bytes(bytes(damaged))
    assert "damaged.zip/data/" in message_of(tmp_path / "damaged.zip")  # a DataError naming it, not a traceback


def test_a_zip_archive_of_several_files_or_none_or_of_a_file_not_read_zipped_is_named_by_what_it_holds(tmp_path):
    several = zip_archive(tmp_path / "splits.zip", {"train.csv": b"a,b\n1,2\n", "test.csv": b"a,b\n3,4\n"})
    message = message_of(several)
    assert message.startswith(f"{several} is a zip archive of 2 files (train.csv, test.csv)") and "unzip" in message
    empty = zip_archive(tmp_path / "empty.zip", {})
    assert message_of(empty).startswith(f"{empty} is a zip archive of 0 files;")
    parquet = write_format(tmp_path, "parquet")
    zipped = zip_archive(tmp_path / "parquet.zip", {"table.parquet": parquet.read_bytes()})
    assert message_of(zipped) == (
        f"{zipped} holds table.parquet, which is not read from inside a zip archive: unzip it (unzip {zipped}) and "
        "give the file it writes"
    )


def test_a_number_in_a_column_named_by_numbers_is_data():
    """Columns named 0, 1, ... (pandas' default): a first row holding 0 is data, not a header."""
    assert header_of(["0", "Wall St. Bears"], ["0", "1"], "f") == (["0", "1"], False)
    with pytest.raises(DataError, match="is a header naming 1, 0"):  # both, in another order
        header_of(["1", "0"], ["0", "1"], "f")


def test_one_config_reads_files_with_and_without_a_header(tmp_path):
    names = ["class_index", "title", "description"]
    body = '"3","Wall St.","Short-sellers"\n"4","Chips","New processors"\n'
    (tmp_path / "plain.csv").write_text(body)
    (tmp_path / "header.csv").write_text(" Class_Index ,TITLE,Description\n" + body)
    plain = read_all(tmp_path / "plain.csv", column_names=names)
    with_header = read_all(tmp_path / "header.csv", column_names=names)
    assert plain[0] == with_header[0] == names
    assert plain[1] == with_header[1] == [["3", "Wall St.", "Short-sellers"], ["4", "Chips", "New processors"]]
    assert plain[2] == [1, 2] and with_header[2] == [2, 3]


# ---------------------------------------------------------------------------------------------------------------
# resolve_columns


def test_a_tsv_read_as_csv_gets_a_hint(tmp_path):
    """A first line with a comma is read as a CSV's (csv_delimiter reads tabs only on a first line without one)."""
    path = tmp_path / "data.csv"
    path.write_text("id\ttitle, subtitle\tlabel\n1\tStocks fell, again\tBusiness\n")
    header = read_all(path)[0]
    expected = r"its columns: 'id\\ttitle', ' subtitle\\tlabel' \(tab-separated\? read it as TSV\)$"
    with pytest.raises(DataError, match=expected):
        resolve_columns(header, ["title"], "data.csv", "data.text_columns")


def test_resolve_columns_exact_names_first_then_ignoring_case_and_spaces():
    header = ["ID", "Title", "title", " Body "]
    assert resolve_columns(header, ["title"], "f.csv", "opt") == [2]  # the exact name, not the first match
    assert resolve_columns(header, ["Title"], "f.csv", "opt") == [1]
    assert resolve_columns(header, ["id", "body"], "f.csv", "opt") == [0, 3]
    assert resolve_columns(header, ["body", "ID"], "f.csv", "opt") == [3, 0]  # in the order asked


def test_an_ambiguous_or_missing_column_lists_the_columns_and_names_the_option():
    header = ["ID", "Title", "title"]
    with pytest.raises(DataError) as caught:
        resolve_columns(header, ["TITLE", "body", "id"], "news.csv", "data.text_columns")
    message = str(caught.value)
    assert message.startswith("news.csv has no column 'TITLE', 'body' (data.text_columns)")
    assert "its columns: 'ID', 'Title', 'title'" in message


# ---------------------------------------------------------------------------------------------------------------
# The text rule


def test_text_parts_are_stripped_and_empty_parts_skipped():
    spec = TextSpec(("title", "description"), " - ", unescape_newlines=False)
    assert spec.text_of(["  Title ", " Body  "]) == "Title - Body"
    assert spec.text_of(["", "Body"]) == "Body"  # no dangling separator
    assert spec.text_of(["Title", "   "]) == "Title"
    assert spec.text_of([None, float("nan")]) == ""
    assert spec.text_of([pd.NA, 7]) == "7"
    assert spec.describe_empty() == "empty text in title, description"


def test_a_list_value_is_its_items_joined_and_an_object_is_json():
    spec = TextSpec(("title", "sentences"), " - ", unescape_newlines=False)
    assert spec.text_of(["Title", [" One. ", "", None, "Two."]]) == "Title - One. - Two."
    assert spec.text_of([None, np.array(["a", "b"], dtype=object)]) == "a - b"  # a Parquet list cell
    assert spec.text_of([[], []]) == ""  # empty, so an incomplete row, not a text "[]"
    assert spec.text_of(["Title", {"body": "héllo"}]) == 'Title - {"body": "héllo"}'


def test_backslash_n_becomes_a_newline_only_when_asked():
    assert join_text(["a\\nb", "\\nc"], " ", unescape_newlines=True) == "a\nb c"
    assert join_text(["a\\nb", "\\nc"], " ", unescape_newlines=False) == "a\\nb \\nc"


def test_is_missing():
    assert all(is_missing(value) for value in (None, math.nan, np.nan, pd.NA))
    assert not any(is_missing(value) for value in ("", "NA", 0, 0.0, "nan"))


def test_text_spec_from_config_and_with_columns():
    data = SimpleNamespace(text_columns=["title", "description"], text_separator="|", unescape_newlines=True)
    spec = TextSpec.from_data_config(data)
    assert spec == TextSpec(("title", "description"), "|", True)
    assert spec.with_columns(None) is spec and spec.with_columns([]) is spec
    assert spec.with_columns(["body"]) == TextSpec(("body",), "|", True)


# ---------------------------------------------------------------------------------------------------------------
# Layouts that real data sets ship: a TSV named .csv, cp1252 bytes, one JSON object holding the records


def test_a_tab_separated_file_named_csv_is_read_with_tabs(tmp_path, caplog):
    """Told by its first line, as a semicolon-separated one is: no comma, no semicolon, several tab-separated fields
    (as many as the column names given, when given). It used to fail on line 4 ("3 fields, expected 1")."""
    path = tmp_path / "train.csv"
    path.write_text('id\ttitle\tlabel\n1\tStocks fell, again\tBusiness\n2\tA "quoted" win\tSports\n')
    with caplog.at_level("INFO", logger="pipeline.data.load"), open_table(str(path)) as table:
        assert table.format == "csv" and table.delimiter == "\t"
        records = [record for chunk in table.chunks for record in chunk.records]
    assert records == [["1", "Stocks fell, again", "Business"], ["2", 'A "quoted" win', "Sports"]]
    assert f"{path}: fields separated by tabs (its first line has no comma or semicolon), read so" in caplog.text
    headerless = tmp_path / "headerless.csv"
    headerless.write_text("1\tStocks fell\tBusiness\n")
    assert read_all(headerless, column_names=COLUMNS)[1] == [["1", "Stocks fell", "Business"]]
    # Given names of another width, or a first line with a semicolon, leave the file a CSV's: one field per line.
    assert read_all(headerless, column_names=["text"])[1] == [["1\tStocks fell\tBusiness"]]
    semicolons = tmp_path / "semicolons.csv"
    semicolons.write_text("id;title\tx\n1;a\tb\n")
    assert read_all(semicolons)[0] == ["id", "title\tx"]


def test_a_csv_read_as_one_column_whose_rows_are_wider_names_the_delimiter_setting(tmp_path):
    """A header line of one field, a later line of several: most likely another delimiter (a pipe)."""
    path = tmp_path / "pipes.csv"
    path.write_text("sentence|label\nGood|positive\nBad, really|negative\n")
    message = message_of(path)
    assert message.startswith(f"{path}, line 3: 2 fields, expected 1 as in the header on line 1 (sentence|label); ")
    assert (
        "one column named: if a character other than a comma separates the fields, set data.delimiter to it" in message
    )
    assert "set --delimiter to it" in message_of(path, delimiter_option="--delimiter")
    assert read_all(path, delimiter="|")[1] == [["Good", "positive"], ["Bad, really", "negative"]]
    wider = tmp_path / "wider.csv"
    wider.write_text("id,text\n1,a,b\n")
    assert "data.delimiter" not in message_of(wider)  # a header of two fields: a stray comma, not another delimiter


def test_a_title_line_above_the_header_is_named_as_such(tmp_path):
    """`Export from helpdesk 2024-03-01` on line 1: read as a header of one column, the error advised data.delimiter;
    Excel's CSV of such a sheet pads the title with commas, and the header then lacked every column."""
    path = tmp_path / "export.csv"
    path.write_text("Export from helpdesk 2024-03-01\nid,text,label\n1,Printer jams,Hardware\n2,No VPN,Network\n")
    assert message_of(path) == (
        f"{path}, line 2: 3 fields, expected 1 as in the header on line 1 (Export from helpdesk 2024-03-01); a title "
        "above the header? The header seems to be on line 2 (id, text, label): delete the lines above it"
    )
    path.write_text("Export from helpdesk 2024-03-01,,\n,,\nid,text,label\n1,Printer jams,Hardware\n")
    with open_table(str(path)) as table:
        assert table.missing_column_hint == (
            "; a title above the header? The header seems to be on line 3 (id, text, label): delete the lines above it"
        )
    # One text per line, a later one holding a comma: no title, the one-column advice stands.
    path.write_text("text\nPrinter jams\nNo VPN, again\nDisk full\n")
    assert message_of(path).endswith("set data.delimiter to it; or a stray delimiter or quote?")


def test_a_one_column_files_name_above_texts_with_commas_is_no_title(tmp_path):
    """`text` over texts whose first two hold an unquoted comma: the error said `text` was a title and to delete it,
    which would make the first text the header; a one-word name is the column's, and the one-column advice stands."""
    path = tmp_path / "inbox.csv"
    path.write_text("text\nHello, world\nGood morning, team\nBye\n")
    assert message_of(path) == (
        f"{path}, line 2: 2 fields, expected 1 as in the header on line 1 (text); one column named: if a character "
        "other than a comma separates the fields, set data.delimiter to it; or a stray delimiter or quote?"
    )


@pytest.mark.parametrize(
    ("line", "text"),
    [
        (b"1,I\x92m on my way\n", "I\u2019m on my way"),
        (b"1,Caf\xe9 cr\xe8me\n", "Café crème"),
        (b"1,Caf\xe9 \x80 5\n", "Café € 5"),
        (b"1,\xa3 5 \x81\n", "£ 5 \x81"),  # one of the five bytes cp1252 leaves undefined: its control, as browsers
    ],
    ids=["smart-quote", "accents", "euro-after-accent", "undefined-byte"],
)
def test_a_file_that_holds_no_utf8_is_read_as_windows_1252_under_auto(tmp_path, line, text):
    """data.encoding: auto (the default) reads a file that is not UTF-8 and holds no UTF-8 character as Windows-1252,
    that file only; a named encoding still fails, and its advice is never one encoding for every file (latin-1 would
    mis-read the other files' UTF-8)."""
    path = tmp_path / "windows.csv"
    path.write_bytes(b"id,text\n" + line)
    assert read_all(path)[1][0] == ["1", text]
    message = message_of(path, encoding="utf-8")
    assert message.startswith(f"{path}, line 2: bytes that are not valid utf-8")
    assert "set data.encoding to auto" in message and "data.decode_errors to replace" in message
    assert "latin-1" not in message


def test_a_file_that_mixes_utf8_and_other_bytes_names_its_lines_and_decode_errors(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"id,text\n1,Caf\xc3\xa9\n2,plain\n3,\xa3 5\n")
    message = message_of(path)
    assert message.startswith(f"{path}, lines 2 and 4: the file mixes UTF-8 characters (line 2)")
    assert "data.decode_errors to replace" in message and "latin-1" not in message
    # The other order: Windows-1252 first, a UTF-8 character later.
    path.write_bytes(b"id,text\n1,\xa3 5\n2,Caf\xc3\xa9\n")
    assert message_of(path).startswith(f"{path}, lines 2 and 3: the file mixes UTF-8 characters (line 3)")


SQUAD_LIKE = {
    "version": "1.1",
    "data": [{"text": "Stocks fell", "label": "Business"}, {"text": "Team wins", "label": "Sports"}],
}


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "indented"])
def test_json_field_reads_the_records_list_of_one_json_object(tmp_path, indent):
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(SQUAD_LIKE, indent=indent))
    header, records, numbers, unit = read_all(path, json_field="data")
    assert header == ["text", "label"] and records == [["Stocks fell", "Business"], ["Team wins", "Sports"]]
    assert (numbers, unit) == ([1, 2], "record")
    assert read_all(path, json_field="data", chunk_size=1)[1] == records
    # Without it the object is one record (indented over lines, too), whose missing columns name the setting.
    with open_table(str(path)) as table:
        assert table.header == ["version", "data"] and table.unit == ("line" if indent is None else "record")
        assert table.missing_column_hint == (
            "; the file is one JSON object whose 'data' holds a list of objects: if those are the records, set "
            "data.json_field=data"
        )
    with open_table(str(path), json_field_option="--json-field") as table:
        assert table.missing_column_hint.endswith("set --json-field=data")


def test_json_lines_have_no_records_field_hint(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"text": "a", "spans": [{"start": 0}]}\n{"text": "b", "spans": []}\n')
    with open_table(str(path)) as table:
        assert table.missing_column_hint == ""
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"text": "a",\n"b": 1}\n{"text": "c"}\n')  # not one object either: the first line's error
    assert message_of(broken).startswith(f"{broken}, line 1: not valid JSON")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ({"version": "1"}, "no key 'data' (data.json_field); the object's keys: 'version'"),
        ({"data": {"a": 1}}, "'data' (data.json_field) holds a JSON object, not a list of records"),
        ({"data": [{"a": 1}, 2]}, ", record 2: expected a JSON object with named fields"),
        ({"data": []}, "the list 'data' (data.json_field) is empty"),
        ([{"a": 1}], "the file is a JSON array, not an object; data.json_field reads a file that is one JSON object"),
    ],
)
def test_json_field_errors_name_the_file_and_the_setting(tmp_path, content, says):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(content))
    assert says in message_of(path, json_field="data")
    lines = tmp_path / "t.jsonl"
    lines.write_text('{"a": 1}\n{"a": 2}\n')
    assert "not valid JSON (Extra data); data.json_field reads a file that is one JSON object" in message_of(
        lines, json_field="data"
    )


def test_a_file_of_splits_whose_lists_hold_objects_suggests_json_field(tmp_path):
    path = tmp_path / "splits.json"
    path.write_text(json.dumps({"train": [{"text": "a", "label": "x"}], "test": [{"text": "b", "label": "y"}]}))
    assert message_of(path).endswith("or read one list of objects with data.json_field=train")
    assert read_all(path, json_field="test")[1] == [["b", "y"]]
