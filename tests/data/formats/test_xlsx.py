"""Excel workbooks (.xlsx) as data files (pipeline/data/workbooks.py, through tables.open_table): a sheet reads as the
same rows a CSV file of its cells gives, by stage 1, pipeline.evaluate's reader and pipeline.predict alike.

Workbooks are written into tmp_path with openpyxl (the `excel` extra, which the dev extra installs); a formula's
saved value, which openpyxl does not compute, is written into the sheet's XML as Excel saves it.
"""

from __future__ import annotations

import csv
import datetime
import gzip
import json
import logging
import re
import sys
import zipfile
from pathlib import Path

import pytest

from pipeline.common.errors import DataError
from pipeline.config.schema import DataConfig
from pipeline.data.formats.xlsx import cell_text
from pipeline.data.load import load_data, read_labelled_file
from pipeline.data.tables import open_table
from pipeline.predict import main as predict_main
from tests.helpers import tiny_bert_classifier

openpyxl = pytest.importorskip("openpyxl")

DATA_LOGGER = "pipeline.data.load"
TOPICS = ["World", "Sports", "Business", "Sci/Tech"]
HEADER = ["id", "title", "body", "label"]


def news_rows(count: int, start: int = 0, label_ids: bool = False) -> list[list]:
    """`count` rows of an int id, two text columns and a topic (or its id from 1, some as a whole float, as a
    computed cell holds one)."""
    rows = []
    for index in range(start, start + count):
        topic = index % len(TOPICS)
        label = (float(topic + 1) if index % 3 else topic + 1) if label_ids else TOPICS[topic]
        rows.append([index, f"Report {index}", f"On {TOPICS[topic].lower()}, day {index}.", label])
    return rows


def write_workbook(path: Path, sheets: dict[str, list[list]]) -> Path:
    """One worksheet per entry, in order, each its rows from A1."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    workbook.save(path)
    return path


def write_csv(path: Path, rows: list[list]) -> Path:
    """The rows (of text, whole numbers and empty cells) as Excel's CSV UTF-8 writes them, by hand: a whole number
    without a decimal point, an empty cell as an empty field."""
    fields = [
        ["" if value is None else str(int(value)) if isinstance(value, float) else str(value) for value in row]
        for row in rows
    ]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(fields)
    return path


def save_formula_values(path: Path, values: dict[str, str]) -> None:
    """Give the first sheet's formulas the values Excel saves beside them (openpyxl writes a formula without one):
    `values` by cell ("B2"), a number, or text when quoted ('"xy"')."""
    with zipfile.ZipFile(path) as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    for cell, value in values.items():
        kind = ' t="str"' if value.startswith('"') else ""
        sheet, found = re.subn(
            rf'<c r="{cell}"([^>]*)><f>(.*?)</f><v\s*/>',
            rf'<c r="{cell}"\1{kind}><f>\2</f><v>{value.strip(chr(34))}</v>',
            sheet,
        )
        assert found == 1, cell
    parts["xl/worksheets/sheet1.xml"] = sheet.encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in parts.items():
            archive.writestr(name, content)


def read_rows(path: Path, **options) -> tuple[list[str], list[list], list[int]]:
    """Header, records and their row numbers, as open_table reads the file."""
    with open_table(str(path), **options) as table:
        chunks = list(table.chunks)
        return table.header, [r for c in chunks for r in c.records], [n for c in chunks for n in c.numbers]


def error_of(path: Path, **options) -> str:
    with pytest.raises(DataError) as caught:
        read_rows(path, **options)
    return str(caught.value)


def files_config(train: Path, **settings) -> DataConfig:
    defaults = {"text_columns": ["title", "body"], "id_column": "id", "deduplicate": "none"}
    return DataConfig(source="files", train_file=str(train), **{**defaults, **settings})


# ---------------------------------------------------------------------------------------------------------------
# Stage 1


@pytest.mark.parametrize("label_ids", [False, True], ids=["names", "ids"])
def test_a_run_reads_workbooks_as_the_same_rows_in_csv(tmp_path, label_ids):
    """train/validation/test as .xlsx and as CSV: the same classes, texts, labels and row ids (integer labels 1-4,
    some stored as whole floats, map to the same classes)."""
    parts = {"train": news_rows(40, label_ids=label_ids), "validation": news_rows(8, 40, label_ids)}
    parts["test"] = news_rows(8, 48, label_ids)
    paths = {}
    for kind, write in (("xlsx", lambda path, rows: write_workbook(path, {"Sheet1": rows})), ("csv", write_csv)):
        paths[kind] = {
            split: str(write(tmp_path / f"{split}.{kind}", [HEADER, *rows])) for split, rows in parts.items()
        }
    loaded = {
        kind: load_data(
            files_config(Path(files["train"]), validation_file=files["validation"], test_file=files["test"]), seed=3
        )
        for kind, files in paths.items()
    }
    assert loaded["xlsx"].labels == loaded["csv"].labels == (["1", "2", "3", "4"] if label_ids else sorted(TOPICS))
    for split in ("train", "validation", "test"):
        assert loaded["xlsx"].splits[split].to_list() == loaded["csv"].splits[split].to_list()
    assert loaded["xlsx"].splits["test"]["row_id"][0] == "48"
    summary = loaded["xlsx"].summary
    assert summary["sheet"] == {"setting": None, "read": {"train": "Sheet1", "validation": "Sheet1", "test": "Sheet1"}}
    assert summary["quoting"] is None and summary["delimiter"] is None


def test_data_sheet_selects_a_sheet_and_a_workbook_of_several_says_which_it_read(tmp_path, caplog):
    path = write_workbook(
        tmp_path / "tickets.xlsx",
        {"Notes": [["read me"], ["not data"]], "Data": [HEADER, *news_rows(30)], "Old": [HEADER]},
    )
    with caplog.at_level(logging.INFO, logger=DATA_LOGGER):
        assert read_rows(path)[0] == ["read me"]
    assert f"{path}: read its first sheet, 'Notes' (data.sheet unset); not read: 'Data', 'Old'" in caplog.messages
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=DATA_LOGGER):
        loaded = load_data(files_config(path, sheet="data"), seed=1)  # Excel's sheet names ignore case
    assert sum(len(split) for split in loaded.splits.values()) == 30 and loaded.labels == sorted(TOPICS)
    assert loaded.summary["sheet"] == {"setting": "data", "read": {"train": "Data"}}
    assert not any("first sheet" in message for message in caplog.messages)


def test_an_unknown_or_empty_sheet_is_an_error_naming_it(tmp_path):
    path = write_workbook(tmp_path / "tickets.xlsx", {"Train": [HEADER], "Test": [HEADER], "Blank": []})
    with pytest.raises(DataError) as caught:
        load_data(files_config(path, sheet="Validation"), seed=1)
    assert str(caught.value) == f"{path} has no sheet 'Validation' (data.sheet); its sheets: 'Train', 'Test', 'Blank'"
    assert error_of(path, sheet="Blank") == f"{path}: the sheet 'Blank' is empty"


def test_formulas_read_as_the_values_excel_saved_with_them(tmp_path):
    path = write_workbook(
        tmp_path / "sheet.xlsx", {"Sheet1": [["text", "label"], ['=CONCAT("good ","day")', "=1+1"], ["plain", 3]]}
    )
    save_formula_values(path, {"A2": '"good day"', "B2": "2"})
    assert read_rows(path)[1] == [["good day", "2"], ["plain", "3"]]


def test_empty_trailing_rows_and_columns_are_ignored_and_rows_keep_their_sheet_numbers(tmp_path):
    """A used range larger than the data (a formatted cell far away, a cleared one) adds no rows or columns; a blank
    row between rows of several columns is skipped as a blank line is, and the rows keep Excel's numbers."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in (["text", "label", None], ["first", "a"], [], ["second", "b", None], [None, None, None]):
        sheet.append(row)
    sheet.cell(row=40, column=12).number_format = "0.00"
    sheet.cell(row=41, column=13, value="")
    workbook.save(tmp_path / "sheet.xlsx")
    assert "A1:M41" in zipfile.ZipFile(tmp_path / "sheet.xlsx").read("xl/worksheets/sheet1.xml").decode()
    header, records, numbers = read_rows(tmp_path / "sheet.xlsx", chunk_size=1)
    assert header == ["text", "label"] and records == [["first", "a"], ["second", "b"]] and numbers == [2, 4]


def test_a_header_less_sheet_is_read_by_column_names(tmp_path):
    path = write_workbook(tmp_path / "sheet.xlsx", {"Sheet1": [[3, "Cup final"], [1, "Summit"]]})
    assert read_rows(path, column_names=["label", "text"]) == (
        ["label", "text"],
        [["3", "Cup final"], ["1", "Summit"]],
        [1, 2],
    )


def test_a_sheet_pasted_below_another_with_its_header_row_loses_that_row(tmp_path, caplog):
    """Two sheets' rows pasted one below the other keep the second's header row: the CSV rule, by Excel's row
    number and the sheet's name."""
    path = write_workbook(tmp_path / "pasted.xlsx", {"Tickets": [HEADER, *news_rows(20), HEADER, *news_rows(20, 20)]})
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        loaded = load_data(files_config(path), seed=1)
    assert sum(len(split) for split in loaded.splits.values()) == 40 and loaded.labels == sorted(TOPICS)
    assert [(row.row_id, row.reason) for row in loaded.removed] == [
        ("id", "the header row again (files joined with cat?), row 22")
    ]
    assert caplog.messages[0].startswith(f"{path}, sheet 'Tickets', row 22: the header row (id, title, body, label)")


def test_errors_name_the_sheet_and_its_row_as_excel_numbers_it(tmp_path):
    """A missing text (the rows start on row 3 under a title row's blank) and a value right of the header, in the
    second of two sheets: the error leads to the sheet and its row."""
    rows = [[], HEADER, *news_rows(12)]
    rows[6][1] = rows[6][2] = None  # row 7 of the sheet
    sheets = {"Notes": [["read me"]], "Train": rows}
    path = write_workbook(tmp_path / "train.xlsx", sheets)
    with pytest.raises(DataError) as caught:
        load_data(files_config(path, sheet="Train"), seed=1)
    assert str(caught.value).startswith(f"{path}, sheet 'Train', row 7: empty text in title, body")
    rows[6][1] = "Back"
    rows[9].append("stray note")
    write_workbook(path, sheets)
    message = error_of(path, sheet="Train")
    assert message.startswith(
        f"{path}, sheet 'Train', row 10: 5 fields, expected 4 as in the header on row 2 (id, title, body, label)"
    )
    assert "right of the header's last column" in message


def test_a_title_row_above_the_header_is_named_as_such(tmp_path):
    """A title on row 1, an empty row 2, the header on row 3: the error said to clear a value right of the header."""
    path = write_workbook(tmp_path / "export.xlsx", {"Export": [["Export from helpdesk"], [], HEADER, *news_rows(3)]})
    assert error_of(path) == (
        f"{path}, sheet 'Export', row 3: 4 fields, expected 1 as in the header on row 1 (Export from helpdesk); a "
        "title above the header? The header seems to be on row 3 (id, title, body, label): delete the rows above it"
    )


def tickets_workbook(path: Path) -> Path:
    """A first sheet of one note, the table on the second, a third empty."""
    rows = [
        ["Ticket ID", "Subject", "Body", "Category"],
        *[[i, f"Subject {i}", f"Body {i}", "ab"[i % 2]] for i in range(8)],
    ]
    return write_workbook(path, {"Notes": [["Ticket export, do not edit"]], "Data": rows, "Pivot": []})


def test_a_workbook_whose_first_sheet_is_not_the_table_names_its_other_sheets(tmp_path):
    """Read from its first sheet, the data lacked its columns, and the error advised joining a labels file."""
    path = tickets_workbook(tmp_path / "tickets.xlsx")
    config = files_config(path, text_columns=["Subject", "Body"], label_column="Category", id_column=None)
    others = "the sheet read was 'Notes', and the workbook has others ('Data', 'Pivot'): read one with data.sheet=Data"
    with pytest.raises(DataError) as caught:
        load_data(config, seed=1)
    assert str(caught.value) == f"The train split is empty: {path} (data.train_file) has no data rows; {others}"
    write_workbook(path, {"Notes": [["Ticket export, do not edit"], ["Owner: support"]], "Data": [["x"]]})
    with pytest.raises(DataError) as caught:
        load_data(config, seed=1)
    assert str(caught.value) == (
        f"{path} has no column 'Category' (data.label_column); its columns: 'Ticket export, do not edit'; "
        "the sheet read was 'Notes', and the workbook has others ('Data'): read one with data.sheet=Data"
    )
    tickets_workbook(path)
    settings = {"text_columns": ["Subject", "Body"], "label_column": "Category", "id_column": None}
    loaded = load_data(files_config(path, sheet="Data", **settings), seed=1)
    assert sum(len(split) for split in loaded.splits.values()) == 8


def test_a_headerless_sheet_of_a_workbook_with_other_sheets_is_told_as_headerless(tmp_path):
    """Data from row 1 on the first sheet, an empty Sheet2 beside it (older Excel makes three sheets): the first row
    holds a number and texts, so the advice is the missing header, not the other sheet."""
    path = write_workbook(tmp_path / "news.xlsx", {"Sheet1": news_rows(12), "Sheet2": []})
    with pytest.raises(DataError) as caught:
        load_data(files_config(path), seed=1)
    assert str(caught.value).endswith("; the file has no header row? Name its columns in data.column_names")


def test_settings_that_do_not_describe_the_file_are_named_in_a_warning(tmp_path, caplog):
    path = write_workbook(tmp_path / "train.xlsx", {"Sheet1": [HEADER, *news_rows(30)]})
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        load_data(files_config(path, encoding="latin-1", delimiter=";", sheet="Sheet1"), seed=1)
    assert caplog.messages == [
        f"{path} (data.train_file) is an Excel workbook, which these file settings do not describe: data.encoding, "
        "data.delimiter"
    ]
    caplog.clear()
    text = write_csv(tmp_path / "train.csv", [HEADER, *news_rows(30)])
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        load_data(files_config(text, sheet="Sheet1"), seed=1)
    assert caplog.messages == [
        f"{text} (data.train_file) is read as csv, which these file settings do not describe: data.sheet"
    ]


def test_a_workbook_is_told_by_its_content_and_refused_where_it_cannot_be_read(tmp_path):
    workbook = write_workbook(tmp_path / "data.xlsx", {"Sheet1": [["text", "label"], ["a", "b"]]})
    renamed = tmp_path / "export.csv"
    renamed.write_bytes(workbook.read_bytes())
    assert read_rows(renamed)[1] == [["a", "b"]]  # data.file_format auto: a workbook by its content
    assert "is an Excel workbook, not CSV; set data.file_format to xlsx" in error_of(renamed, file_format="csv")
    text = write_csv(tmp_path / "text.csv", [["text"], ["a"]])
    assert "is not an Excel workbook" in error_of(text, file_format="xlsx")
    cut = tmp_path / "cut.xlsx"
    cut.write_bytes(workbook.read_bytes()[:200])
    assert error_of(cut).startswith(f"{cut}: a damaged zip archive")
    packed = tmp_path / "data.xlsx.gz"
    packed.write_bytes(gzip.compress(workbook.read_bytes()))
    assert "is read from a file, not a stream or .gz" in error_of(packed)


def test_without_openpyxl_the_error_names_the_file_and_the_extra(tmp_path, monkeypatch):
    path = write_workbook(tmp_path / "data.xlsx", {"Sheet1": [["text"], ["a"]]})
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # import openpyxl raises ImportError
    message = error_of(path)
    assert message.startswith(f"{path} is an Excel workbook") and "[excel]" in message and "CSV UTF-8" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (3, "3"),
        (3.0, "3"),
        (0.1 + 0.2, "0.3"),
        (1.5e-7, "1.5e-07"),
        (True, "TRUE"),
        (datetime.datetime(2024, 3, 1), "2024-03-01"),
        (datetime.datetime(2024, 3, 1, 9, 30), "2024-03-01T09:30:00"),
        (datetime.time(9, 30), "09:30:00"),
        ("  as written ", "  as written "),
    ],
)
def test_cells_read_as_excels_csv_export_writes_them(value, text):
    assert cell_text(value) == text


def test_evaluation_reads_a_workbook_by_the_runs_data_settings(tmp_path):
    path = write_workbook(tmp_path / "new.xlsx", {"Sheet1": [HEADER, *news_rows(6, label_ids=True)]})
    reading = {"names": False, "ids": True, "index_base": 1}
    dataset, removed, read = read_labelled_file(
        files_config(tmp_path / "train.csv"), str(path), "--input", TOPICS, reading
    )
    assert dataset["label"] == [0, 1, 2, 3, 0, 1] and dataset["row_id"][0] == "0" and removed == []
    assert read["sheet"] == {"setting": None, "read": {"test": "Sheet1"}}


# ---------------------------------------------------------------------------------------------------------------
# Prediction


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, bert_tokenizer) -> Path:
    """A tiny random BERT saved as a finished run trained on the columns title and body."""
    run = tmp_path_factory.mktemp("runs") / "tiny"
    tiny_bert_classifier(bert_tokenizer, TOPICS, layers=1).save_pretrained(run / "model")
    bert_tokenizer.save_pretrained(run / "model")
    (run / "config.yaml").write_text("data:\n  text_columns: [title, body]\n")
    (run / "metrics.json").write_text(json.dumps({"labels": TOPICS, "tokenization": {"max_length": 32}}))
    return run


def predict_rows(run_dir: Path, source: Path, output: Path, *options: str) -> list[dict[str, str]]:
    predict_main(["--model", str(run_dir), "--input", str(source), "--output", str(output), "--no-progress", *options])
    with open(output, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_prediction_labels_a_workbooks_sheet_as_the_same_rows_in_csv(tmp_path, run_dir, caplog, capsys):
    rows = [HEADER, *news_rows(7)]
    source = write_workbook(tmp_path / "inbox.xlsx", {"Notes": [["not data"]], "Inbox": rows})
    options = ("--prefix", "pred_", "--probabilities", "--chunk-size", "3")
    with caplog.at_level(logging.WARNING):
        labelled = predict_rows(
            run_dir, source, tmp_path / "out.csv", "--sheet", "Inbox", "--encoding", "latin-1", *options
        )
    alone = predict_rows(run_dir, write_csv(tmp_path / "inbox.csv", rows), tmp_path / "alone.csv", *options)
    assert labelled == alone and len(labelled) == 7 and labelled[0]["id"] == "0"
    assert f"{source} (--input) is an Excel workbook, which these file options do not describe: --encoding" in (
        caplog.messages
    )
    capsys.readouterr()
    predict_main(["--model", str(run_dir), "--input", str(source), "--output", "-", "--sheet", "Inbox", *options])
    written = capsys.readouterr().out  # to stdout in the input's format, which for a workbook is CSV
    assert list(csv.DictReader(written.splitlines())) == labelled
    with pytest.raises(SystemExit):
        predict_rows(run_dir, source, tmp_path / "out.xlsx", "--sheet", "Inbox")
    assert "out.xlsx: prediction writes csv, tsv, jsonl (optionally .gz), not xlsx" in capsys.readouterr().err


def test_prediction_of_a_workbook_whose_first_sheet_is_not_the_table_names_sheet(tmp_path, run_dir, capsys):
    source = tickets_workbook(tmp_path / "tickets.xlsx")
    with pytest.raises(SystemExit):
        predict_rows(run_dir, source, tmp_path / "out.csv", "--text-columns", "Subject,Body")
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "has no column 'Subject', 'Body' (--text-columns); its columns: 'Ticket export, do not edit'; the sheet read "
            "was 'Notes', and the workbook has others ('Data', 'Pivot'): read one with --sheet=Data"
        )
    )
    assert (
        len(predict_rows(run_dir, source, tmp_path / "out.csv", "--text-columns", "Subject,Body", "--sheet", "Data"))
        == 8
    )
