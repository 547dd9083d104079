"""Tests for stage 1, data loading (pipeline/data/load.py).

Everything runs offline on small files written to tmp_path, plus the shared AG News CSVs (skipped when absent).
The Hub is exercised only through a fake local cache, and through subprocesses whose Hub endpoint is a local
port that refuses connections, never answers, or answers with HTTP errors.
"""

import dataclasses
import gzip
import http.server
import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import datasets
import pandas as pd
import pytest

from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError, DataConfig
from pipeline.data.load import DataError, load_data, load_splits
from tests.helpers import REPO_ROOT

AG_NAMES = ["World", "Sports", "Business", "Sci/Tech"]
AG_COLUMNS = ["class_index", "title", "description"]


def ag_news_config(train: Path, test: Path, **overrides) -> DataConfig:
    """The settings that read the original ag_news_csv layout (and train_20k.csv, which adds a header)."""
    settings = dict(
        source="files",
        train_file=str(train),
        test_file=str(test),
        deduplicate="none",  # these synthetic files share texts between train and test; duplicates have own tests
        column_names=AG_COLUMNS,
        text_columns=["title", "description"],
        label_column="class_index",
        label_names=AG_NAMES,
        label_index_base=1,
        unescape_newlines=True,
    )
    return DataConfig(**{**settings, **overrides})


def write_ag_news_csv(path: Path, rows_per_class: int = 3, header: bool = False, tag: str = "") -> Path:
    """Rows like ag_news_csv: every field quoted, class index 1-4, a literal backslash-n inside descriptions."""
    lines = ['"class_index","title","description"'] if header else []
    for index in range(rows_per_class * 4):
        label = index % 4 + 1
        lines.append(f'"{label}","Title {tag}{index}","First line {index}\\nsecond line"')
    path.write_text("\n".join(lines) + "\n")
    return path


def write_text(path: Path, content: str) -> Path:
    path.write_text(textwrap.dedent(content).lstrip("\n"))
    return path


def files_config(train: Path, test: Path, **overrides) -> DataConfig:
    settings = {"source": "files", "train_file": str(train), "test_file": str(test), "deduplicate": "none"}
    return DataConfig(**{**settings, **overrides})


def label_counts(split: datasets.Dataset) -> dict[str, int]:
    names = split.features["label"].names
    counts = pd.Series(split["label"]).value_counts()
    return {names[index]: int(count) for index, count in counts.items()}


# ---------------------------------------------------------------------------------------------------------------
# Layouts and formats


def test_ag_news_csv_layout_loads_by_config_alone(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv")
    test = write_ag_news_csv(tmp_path / "test.csv", rows_per_class=1)

    splits = load_splits(ag_news_config(train, test, validation_fraction=0.3), seed=0)

    assert list(splits) == ["train", "validation", "test"]
    for split in splits.values():
        assert split.column_names == ["text", "label", "row_id"]
        assert split.features["label"] == datasets.ClassLabel(names=AG_NAMES)
    assert splits["test"][0] == {"text": "Title 0 First line 0\nsecond line", "label": 0, "row_id": "1"}
    assert splits["test"]["label"] == [0, 1, 2, 3]
    assert len(splits["train"]) + len(splits["validation"]) == 12
    assert label_counts(splits["validation"]) == {name: 1 for name in AG_NAMES}


def test_label_names_file_names_the_classes_as_label_names_does(tmp_path):
    """ag_news_csv ships classes.txt beside its CSV files: read, it gives the classes label_names gives."""
    train = write_ag_news_csv(tmp_path / "train.csv")
    test = write_ag_news_csv(tmp_path / "test.csv", rows_per_class=1)
    classes = tmp_path / "classes.txt"
    classes.write_text("\ufeff" + "\n".join(f" {name} " for name in AG_NAMES) + "\n\n", encoding="utf-8")
    listed = ag_news_config(train, test, validation_fraction=0.3, label_names=None, label_names_file=str(classes))

    from_file, from_list = (
        load_splits(listed, seed=0),
        load_splits(ag_news_config(train, test, validation_fraction=0.3), seed=0),
    )

    for name in ("train", "validation", "test"):
        assert from_file[name].features["label"] == datasets.ClassLabel(names=AG_NAMES)
        assert from_file[name]["label"] == from_list[name]["label"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "classes.txt: no such file"),
        ("World\n\nSports\n", "classes.txt, line 2: empty"),
        ("World\nSports\nWorld\n", "classes.txt, line 3: 'World' repeats line 1"),
        ("World\n", "classes.txt: 1 class name(s)"),
    ],
)
def test_label_names_file_errors_name_the_file_and_line(tmp_path, content, message):
    train = write_ag_news_csv(tmp_path / "train.csv")
    classes = tmp_path / "classes.txt"
    if content is not None:
        classes.write_text(content)
    config = ag_news_config(train, train, label_names=None, label_names_file=str(classes))

    assert error_message(config).startswith(f"data.label_names_file: {classes}{message.removeprefix('classes.txt')}")


def test_label_names_file_beside_label_names_is_a_config_error():
    with pytest.raises(ConfigError, match=r"data\.label_names_file: the classes are named once; data\.label_names"):
        load_config(
            None,
            ["data.source=files", "data.train_file=t.csv", "data.label_names=[a,b]", "data.label_names_file=c.txt"],
        )


def test_header_and_headerless_files_load_under_one_config(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv", header=True)
    test = write_ag_news_csv(tmp_path / "test.csv", header=False, rows_per_class=2)

    splits = load_splits(ag_news_config(train, test, validation_fraction=0.25), seed=0)

    assert len(splits["train"]) + len(splits["validation"]) == 12  # the header is not a row
    assert len(splits["test"]) == 8
    assert "class_index" not in " ".join(splits["train"]["text"])


def test_real_ag_news_files(ag_news_train_csv, ag_news_test_csv):
    config = ag_news_config(ag_news_train_csv, ag_news_test_csv, max_train_samples=5000)

    splits = load_splits(config, seed=42)

    # Validation is carved from all 20,000 rows before the cap; the cap never touches test.
    assert label_counts(splits["validation"]) == {name: 500 for name in AG_NAMES}
    assert label_counts(splits["train"]) == {name: 1250 for name in AG_NAMES}
    assert len(splits["test"]) == 7600
    assert label_counts(splits["test"]) == {name: 1900 for name in AG_NAMES}
    assert not set(splits["train"]["text"]) & set(splits["validation"]["text"])
    # test.csv's first row, "3","Fears for T N pension after talks",...: class 3 is Business.
    assert splits["test"][0]["text"].startswith("Fears for T N pension after talks Unions representing")
    assert splits["test"].features["label"].int2str(splits["test"][0]["label"]) == "Business"


@pytest.mark.parametrize("suffix", ["tsv", "jsonl", "json", "parquet", "csv.gz", "tsv.gz", "jsonl.gz"])
def test_formats_load_with_string_labels(tmp_path, suffix):
    frame = pd.DataFrame(
        {
            "text": [f"text {i}" for i in range(8)],
            "topic": ["sports", "world"] * 4,
            "extra": ["NA"] * 8,  # "NA" must stay text, not become a missing value
        }
    )
    paths = {split: tmp_path / f"{split}.{suffix}" for split in ("train", "test")}
    for path in paths.values():
        write_frame(frame, path)
    config = files_config(paths["train"], paths["test"], text_columns=["text", "extra"], label_column="topic")

    splits = load_splits(config, seed=0)

    assert splits["test"].features["label"].names == ["sports", "world"]  # sorted distinct labels of train
    assert splits["test"]["text"][:2] == ["text 0 NA", "text 1 NA"]
    assert splits["test"]["label"][:2] == [0, 1]


def test_data_quoting_reads_every_file_of_the_run(tmp_path):
    """Texts that start with a quote in files that quote nothing: train, validation and test read alike."""
    rows = "".join(
        f'{label},"{word}" said {index}\n' for index in range(8) for label, word in [("pos", "yes"), ("neg", "no")]
    )
    paths = {split: write_text(tmp_path / f"{split}.csv", "label,text\n" + rows) for split in SPLIT_NAMES}
    config = files_config(paths["train"], paths["test"], validation_file=str(paths["validation"]))
    assert "set data.quoting to none" in error_message(config)
    splits = load_splits(dataclasses.replace(config, quoting="none"), seed=0)
    for name in SPLIT_NAMES:
        assert splits[name]["text"][:2] == ['"yes" said 0', '"no" said 0'], name


def test_how_auto_read_each_files_quotes_and_delimiter_is_recorded(tmp_path):
    """data.quoting auto, and the delimiter when data.delimiter is unset, are decided per file by its start:
    metrics.json's data record says what was decided."""
    unquoted = "".join(
        f'{label}\t"{word}" said {index}\n' for index in range(8) for label, word in [("a", "x"), ("b", "y")]
    )
    quoted = "".join(f'{label}\t"{word}, quoted"\n' for index in range(4) for label, word in [("a", "x"), ("b", "y")])
    train = write_text(tmp_path / "train.tsv", "label\ttext\n" + unquoted)
    test = write_text(tmp_path / "test.tsv", "label\ttext\n" + quoted)
    data = load_data(files_config(train, test), seed=0)
    assert data.summary["quoting"] == {"setting": "auto", "read": {"train": "none", "test": "csv"}}
    assert data.summary["delimiter"] == {"setting": None, "read": {"train": "\t", "test": "\t"}}
    assert data.splits["train"]["text"][0] == '"x" said 0' and data.splits["test"]["text"][0] == "x, quoted"
    # A spreadsheet's semicolon CSV beside a comma one: each file's delimiter as its first line showed it.
    semicolons = write_text(
        tmp_path / "train.csv", "label;text\n" + "".join(f"{'ab'[i % 2]};t {i}\n" for i in range(8))
    )
    commas = write_text(tmp_path / "test.csv", "label,text\na,t 8\nb,t 9\n")
    assert load_data(files_config(semicolons, commas), seed=0).summary["delimiter"] == {
        "setting": None,
        "read": {"train": ";", "test": ","},
    }
    jsonl = [tmp_path / f"{split}.jsonl" for split in ("train", "test")]
    for path in jsonl:
        path.write_text("".join(f'{{"text": "t {i}", "label": "{"ab"[i % 2]}"}}\n' for i in range(8)))
    summary = load_data(files_config(*jsonl), seed=0).summary
    assert summary["quoting"] is None and summary["delimiter"] is None  # no file has quotes or delimiters to read


def test_data_delimiter_reads_every_file_of_the_run(tmp_path):
    """The Financial PhraseBank's sentence@label lines (latin-1, no header), its sentences holding commas and quotes."""
    rows = "".join(
        f'Net sales {word} , by £ {index} , " {index} " said Ahlström .@{word}\r\n'
        for index in range(8)
        for word in ("up", "down")
    )
    paths = {split: tmp_path / f"Sentences_{split}.txt" for split in SPLIT_NAMES}
    for path in paths.values():
        path.write_bytes(rows.encode("latin-1"))
    settings = {"file_format": "csv", "encoding": "latin-1", "column_names": ["sentence", "label"], "delimiter": "@"}
    config = files_config(paths["train"], paths["test"], validation_file=str(paths["validation"]), **settings)
    config = dataclasses.replace(config, text_columns=["sentence"])
    splits = load_splits(config, seed=0)
    for name in SPLIT_NAMES:
        assert splits[name].features["label"].names == ["down", "up"], name
        assert splits[name]["text"][:2] == [
            'Net sales up , by £ 0 , " 0 " said Ahlström .',
            'Net sales down , by £ 0 , " 0 " said Ahlström .',
        ]
    assert "3 fields, expected 2" in error_message(dataclasses.replace(config, delimiter=None))


SPLIT_NAMES = ("train", "validation", "test")


def write_frame(frame: pd.DataFrame, path: Path) -> None:
    name = path.name.removesuffix(".gz")
    if name.endswith(".parquet"):
        frame.to_parquet(path)
        return
    if name.endswith(".json") and not path.name.endswith(".gz"):  # a JSON array, the other shape .json files take
        content = frame.to_json(orient="records")
    elif name.endswith(".jsonl"):
        content = frame.to_json(orient="records", lines=True)
    else:
        content = frame.to_csv(index=False, sep="\t" if name.endswith(".tsv") else ",")
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(content.encode()))
    else:
        path.write_text(content)


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_typed_formats_with_one_based_integer_labels(tmp_path, suffix):
    frame = pd.DataFrame({"text": [f"text {i}" for i in range(6)], "label": [1, 2, 1, 2, 1, 2]})
    path = tmp_path / f"data.{suffix}"
    write_frame(frame, path)
    config = files_config(path, path, label_names=["first", "second"], label_index_base=1, validation_fraction=0.34)

    splits = load_splits(config, seed=0)

    assert splits["test"]["label"] == [0, 1, 0, 1, 0, 1]


def test_zero_based_integer_labels_without_names(tmp_path):
    train = write_text(tmp_path / "train.csv", "label,text\n" + "".join(f"{i % 3},row {i}\n" for i in range(9)))
    test = write_text(tmp_path / "test.csv", "label,text\n2,last\n0,first\n")

    splits = load_splits(files_config(train, test, validation_fraction=0.34), seed=0)

    assert splits["test"].features["label"].names == ["0", "1", "2"]
    assert splits["test"]["label"] == [2, 0]


def test_integer_labels_written_from_one_get_no_phantom_class_zero(tmp_path):
    """Labels 1..K (ag_news_csv's, and many exports') are K classes, not K+1 with an empty class 0 that would
    skew class weights and turn a binary task into a three-class one; an explicit base still rules."""
    train = write_text(tmp_path / "train.csv", "label,text\n" + "".join(f"{1 + i % 2},row {i}\n" for i in range(8)))
    test = write_text(tmp_path / "test.csv", "label,text\n2,last\n1,first\n")

    splits = load_splits(files_config(train, test, validation_fraction=0.25), seed=0)
    assert splits["test"].features["label"].names == ["1", "2"]
    assert splits["test"]["label"] == [1, 0]

    explicit = load_splits(files_config(train, test, validation_fraction=0.25, label_index_base=0), seed=0)
    assert explicit["test"].features["label"].names == ["0", "1", "2"]
    zero_test = write_text(tmp_path / "zero.csv", "label,text\n0,unknown\n")
    with pytest.raises(
        DataError, match=r"label '0' is not a known class; allowed: ids 1\.\.2 \(data\.label_index_base=1\)"
    ):
        load_splits(files_config(train, zero_test, validation_fraction=0.25), seed=0)


def test_ids_against_label_names_without_a_zero_need_their_base_said(tmp_path):
    """DBpedia's CSV counts its 14 classes from 1. Given the names but not the base, a train file that lacks the last
    class read every label as the class after its own, the first class merely without rows: now the base is asked
    for (and, with the last id present, only 1 fits)."""
    names = ["Company", "Artist", "Village", "Film"]
    rows = "".join(f'"{1 + i % 3}","{names[i % 3]} article {i}"\n' for i in range(12))  # ids 1..3: no Film rows
    train = write_text(tmp_path / "train.csv", rows)
    test = write_text(tmp_path / "test.csv", '"1","Company article"\n"3","Village article"\n')
    config = files_config(train, test, column_names=["label", "text"], label_names=names, validation_fraction=0.25)
    message = error_message(config)
    assert message.startswith(f"{train}, column 'label': the labels are ids 1 to 3 and none is 0;")
    assert message.endswith("set data.label_index_base to 1 (ids 1..4) or 0")
    one_based = load_splits(dataclasses.replace(config, label_index_base=1), seed=0)
    assert [names[label] for label in one_based["test"]["label"]] == ["Company", "Village"]
    assert load_splits(dataclasses.replace(config, label_index_base=0), seed=0)["test"]["label"] == [1, 3]  # as said
    train.write_text(rows + '"4","Film article"\n"4","Film article 2"\n')
    assert error_message(config).endswith(
        "as many as data.label_names, so they count from 1: set data.label_index_base to 1"
    )
    named = write_text(tmp_path / "named.csv", "".join(f"{names[i % 4]},row {i}\n" for i in range(12)))
    assert load_splits(dataclasses.replace(config, train_file=str(named), test_file=str(named)), seed=0)  # names


def test_a_file_without_a_header_row_read_by_its_first_row_is_told_to_name_its_columns(tmp_path):
    """The SMS Spam Collection, DBpedia's and Yelp's CSV files have no header: their first row is no column names."""
    rows = "".join(f"{'ham' if i % 2 else 'spam'}\tA message of some length, number {i}\n" for i in range(8))
    train = write_text(tmp_path / "SMSSpamCollection.tsv", rows)
    message = error_message(files_config(train, train))
    assert message.startswith(f"{train} has no column 'label' (data.label_column); its columns: 'spam', 'A message")
    assert message.endswith("; the file has no header row? Name its columns in data.column_names")
    assert len(load_splits(files_config(train, train, column_names=["label", "text"]), seed=0)["test"]) == 8
    headed = write_text(tmp_path / "headed.tsv", "category\ttext\n" + rows)  # a header, just not with `label`
    assert error_message(files_config(headed, headed)).endswith("its columns: 'category', 'text'")


def test_labels_that_join_known_classes_point_to_the_multi_label_settings(tmp_path):
    """go_emotions' raw TSV writes a comment's emotions as "2,27" (ids into its 28 names)."""
    names = ["anger", "joy", "neutral"]
    rows = "".join(f"comment {i}\t{['0', '1,2', '2'][i % 3]}\te{i}\n" for i in range(9))
    train = write_text(tmp_path / "train.tsv", rows)
    config = files_config(train, train, column_names=["text", "emotions", "id"], label_column="emotions")
    config = dataclasses.replace(config, label_names=names)
    hints = {
        "single_label": "; several classes joined by ','? A multi-label task reads them with data.task=multi_label "
        "and data.label_separator=','",
        # Multi-label, with the default separator "|": only the separator is wrong.
        "multi_label": "; labels joined by ',', not data.label_separator '|'? Set data.label_separator=','",
    }
    for task, hint in hints.items():
        message = error_message(dataclasses.replace(config, task=task))
        assert message.startswith(f"{train}, line 2, column 'emotions': label '1,2' is not a known class")
        assert message.endswith(hint)
    multi = dataclasses.replace(config, task="multi_label", label_separator=",")
    assert load_splits(multi, seed=0)["test"]["labels"][1] == [0.0, 1.0, 1.0]
    other = write_text(tmp_path / "other.tsv", rows.replace("1,2", "surprise"))
    assert "several classes" not in error_message(dataclasses.replace(config, train_file=str(other)))


def test_string_labels_follow_label_names_order(tmp_path):
    rows = "".join(f"{name},{name} story {i}\n" for i in range(3) for name in ("neg", "pos"))
    train = write_text(tmp_path / "train.csv", "label,text\n" + rows)
    test = write_text(tmp_path / "test.csv", "label,text\npos,good\nneg,bad\n")

    splits = load_splits(files_config(train, test, label_names=["pos", "neg"]), seed=0)

    assert splits["test"]["label"] == [0, 1]


@pytest.mark.parametrize("task", ["single_label", "multi_label"])
def test_labels_that_differ_only_in_case_are_named_in_a_warning(tmp_path, caplog, task):
    rows = "".join(f"{name},story {i} {name}\n" for i in range(3) for name in ("World", "world", "Sports", " WORLD "))
    train = write_text(tmp_path / "train.csv", "label,text\n" + rows)
    with caplog.at_level("WARNING", logger="pipeline.data.labels"):
        data = load_data(files_config(train, train, task=task, deduplicate="none"), seed=0)
    assert data.labels == ["Sports", "WORLD", "World", "world"]  # kept as written (spaces stripped)
    (message,) = [record.getMessage() for record in caplog.records if "differ only in case" in record.getMessage()]
    assert f"{train}, column 'label'" in message and "'WORLD', 'World', 'world';" in message
    assert "Sports" not in message


def test_listed_classes_read_their_labels_in_any_letter_case(tmp_path):
    """The way out the case warning offers: data.label_names lists each class once, and a label spelled in another
    case is that class; where two listed classes differ only in case, each takes only its exact spelling."""
    spellings = ["World", "world", " WORLD ", "Sports", "sports"]
    rows = "".join(f"{name},story {i} {name.strip()}\n" for i in range(4) for name in spellings)
    train = write_text(tmp_path / "train.csv", "label,text\n" + rows)
    test = write_text(tmp_path / "test.csv", "label,text\nWORLD,a\nSPORTS,b\nworld,c\n")
    splits = load_splits(files_config(train, test, label_names=["World", "Sports"], deduplicate="none"), seed=0)
    assert splits["test"]["label"] == [0, 1, 0]
    assert sorted(set(splits["train"]["label"])) == [0, 1]
    both = write_text(
        tmp_path / "both.csv", "label,text\n" + "".join(f"{n},t {i} {n}\n" for i in range(4) for n in "aA")
    )
    strict = load_splits(files_config(both, None, test_file=None, label_names=["a", "A"], deduplicate="none"), seed=0)
    assert all(
        text.endswith(" a") == (label == 0) for text, label in zip(strict["train"]["text"], strict["train"]["label"])
    )
    with pytest.raises(DataError, match="label 'Sports' is not a known class"):
        load_splits(files_config(train, test, label_names=["World", "A", "a"], deduplicate="none"), seed=0)


def test_integer_labels_exported_as_decimals_are_the_same_classes(tmp_path, caplog):
    """Spreadsheets write 1 as "1.0": with "0" and "1" in the same column that is one class each, not four."""
    rows = "".join(f"story {i},{label}\n" for i in range(4) for label in ("0", "0.0", "1", "1.0"))
    train = write_text(tmp_path / "train.csv", "text,label\n" + rows)
    data = load_data(files_config(train, train, deduplicate="none"), seed=0)
    assert data.labels == ["0", "1"] and sorted(set(data.splits["test"]["label"])) == [0, 1]
    # Among names, numbers written two ways stay as written, and a warning names them.
    named = write_text(tmp_path / "named.csv", "text,label\n" + rows + "".join(f"more {i},other\n" for i in range(4)))
    with caplog.at_level("WARNING", logger="pipeline.data.labels"):
        assert load_data(files_config(named, named, deduplicate="none"), seed=0).labels == [
            "0",
            "0.0",
            "1",
            "1.0",
            "other",
        ]
    assert "differ only in case, spacing, number or boolean format are separate classes: '0', '0.0'; '1', '1.0';" in (
        caplog.text
    )


def test_values_in_columns_without_a_name_are_warned_about_unless_read(tmp_path, caplog):
    """Kaggle's SMS spam.csv: `v1,v2,,,`, where a comma left unquoted put the end of some texts into the unnamed
    columns. Read by v2 alone those texts are cut short: a WARNING names the rows and the columns holding values."""
    rows = "".join(f"{label},message {i},,,\n" for i in range(4) for label in ("ham", "spam"))
    rows += "spam,Free entry,call 0800,now,\nham,cut,off,,\n"
    train = write_text(tmp_path / "spam.csv", "v1,v2,,,\n" + rows)
    test = write_text(tmp_path / "test.csv", "v1,v2,,,\nham,fine,,,\nspam,win,,,\n")
    config = files_config(train, test, text_columns=["v2"], label_column="v1", validation_file=str(test))
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        load_data(config, seed=0)
    (message,) = [record.getMessage() for record in caplog.records if "without a name" in record.getMessage()]
    assert message.startswith(f"{train}: line 10 (and 1 more: line 11), 2 of 10, hold values in the columns without")
    assert "(Unnamed: 2, Unnamed: 3), which no setting reads;" in message  # Unnamed: 4 is empty throughout
    caplog.clear()
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        data = load_data(dataclasses.replace(config, text_columns=["v2", "unnamed: 2", "Unnamed: 3"]), seed=0)
    assert "without a name" not in caplog.text
    assert "Free entry call 0800 now" in data.splits["train"]["text"]


def test_pandas_index_column_is_no_text_cut_short(tmp_path, caplog):
    """DataFrame.to_csv without index=False writes its index in a first column without a name: a value on every row,
    a column of its own, not the ends of texts to add to data.text_columns."""
    frame = pd.DataFrame({"text": [f"message {index}" for index in range(12)], "label": ["ham", "spam"] * 6})
    frame.to_csv(tmp_path / "train.csv")
    frame.head(4).to_csv(tmp_path / "test.csv")
    config = files_config(tmp_path / "train.csv", tmp_path / "test.csv")
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        load_data(config, seed=0)
    assert "without a name" not in caplog.text


def test_text_parts_are_stripped_and_empty_parts_skipped(tmp_path):
    train = write_text(
        tmp_path / "train.csv",
        """
        label,title,body
        0,  Title  ,  body
        1,,only body
        0,only title,
        1,a,b
        """,
    )
    config = files_config(
        train, train, text_columns=["title", "body"], text_separator=" | ", validation_file=str(train)
    )

    splits = load_splits(config, seed=0)

    assert splits["test"]["text"] == ["Title | body", "only body", "only title", "a | b"]


def test_validation_file_is_used_instead_of_carving(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv", rows_per_class=2)
    validation = write_ag_news_csv(tmp_path / "validation.csv", rows_per_class=1, tag="v")
    config = ag_news_config(train, train, validation_file=str(validation))

    splits = load_splits(config, seed=0)

    assert len(splits["train"]) == 8
    assert splits["validation"]["text"][0].startswith("Title v0")


# ---------------------------------------------------------------------------------------------------------------
# Validation split and caps


def unbalanced_files(tmp_path: Path) -> tuple[Path, Path]:
    """100 training rows, 60/30/10 over three classes, and a 30-row test file."""
    labels = ["a"] * 60 + ["b"] * 30 + ["c"] * 10
    train_rows = "".join(f"{label},row {i}\n" for i, label in enumerate(labels))
    train = write_text(tmp_path / "train.csv", "label,text\n" + train_rows)
    test_labels = labels[::10] * 3
    test_rows = "".join(f"{label},test {i}\n" for i, label in enumerate(test_labels))
    test = write_text(tmp_path / "test.csv", "label,text\n" + test_rows)
    return train, test


def test_validation_split_is_stratified_and_seeded(tmp_path):
    train, test = unbalanced_files(tmp_path)
    config = files_config(train, test, validation_fraction=0.2)

    first, again, other = (load_splits(config, seed=seed) for seed in (7, 7, 8))

    assert label_counts(first["validation"]) == {"a": 12, "b": 6, "c": 2}
    assert label_counts(first["train"]) == {"a": 48, "b": 24, "c": 8}
    assert first["validation"]["text"] == again["validation"]["text"]
    assert first["validation"]["text"] != other["validation"]["text"]
    assert sorted([*first["train"]["text"], *first["validation"]["text"]]) == sorted(f"row {i}" for i in range(100))
    assert first["test"]["text"] == [f"test {i}" for i in range(30)]  # test is never shuffled


def test_a_class_with_one_row_cannot_be_stratified(tmp_path):
    train = write_text(tmp_path / "train.csv", "label,text\n" + "".join(f"a,x{i}\n" for i in range(9)) + "b,lonely\n")
    message = error_message(files_config(train, train, validation_fraction=0.2))
    assert "'b' (1 row)" in message and "data.validation_fraction" in message


def test_max_train_samples_caps_train_only(tmp_path):
    train, test = unbalanced_files(tmp_path)
    config = files_config(train, test, validation_fraction=0.2, max_train_samples=40)

    capped, full = load_splits(config, seed=3), load_splits(files_config(train, test, validation_fraction=0.2), seed=3)

    assert label_counts(capped["train"]) == {"a": 24, "b": 12, "c": 4}
    assert set(capped["train"]["text"]) <= set(full["train"]["text"])
    assert capped["validation"]["text"] == full["validation"]["text"]
    assert len(capped["test"]) == 30


def test_max_eval_samples_caps_validation_and_test(tmp_path):
    train, test = unbalanced_files(tmp_path)
    config = files_config(train, test, validation_fraction=0.2, max_eval_samples=10)

    splits = load_splits(config, seed=3)

    assert len(splits["train"]) == 80
    assert len(splits["validation"]) == 10
    assert len(splits["test"]) == 10
    numbers = [int(text.split()[1]) for text in splits["test"]["text"]]
    assert numbers == sorted(numbers)  # a capped split keeps file order


# ---------------------------------------------------------------------------------------------------------------
# Errors name the file, the row and the column


def error_message(config: DataConfig) -> str:
    with pytest.raises(DataError) as caught:
        load_splits(config, seed=0)
    return str(caught.value)


def test_missing_file_names_key_and_path(tmp_path):
    test = write_ag_news_csv(tmp_path / "test.csv")
    message = error_message(ag_news_config(tmp_path / "nope.csv", test))
    assert "data.train_file" in message and "nope.csv" in message


def test_without_a_test_file_test_is_carved_from_train(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv", rows_per_class=10)
    config = ag_news_config(train, train, test_fraction=0.2, validation_fraction=0.25)
    data = load_data(dataclasses.replace(config, test_file=None), seed=3)
    sizes = {name: len(split) for name, split in data.splits.items()}
    assert sizes == {"train": 22, "validation": 10, "test": 8}  # both fractions are of all 40 rows
    assert label_counts(data.splits["test"]) == {name: 2 for name in AG_NAMES}
    ids = data.row_ids()
    assert sorted(int(i) for ids_ in ids.values() for i in ids_) == list(range(1, 41))  # every row once
    assert data.summary["carved_from_train"] == {"test": 0.2, "validation": 0.25}
    again = load_data(dataclasses.replace(config, test_file=None), seed=3)
    assert again.row_ids() == ids
    assert load_data(dataclasses.replace(config, test_file=None), seed=4).row_ids() != ids


def test_many_small_classes_make_carved_splits_larger_than_asked_and_say_so(tmp_path, caplog):
    rows = "".join(f"story {i} of c{c},c{c}\n" for c in range(28) for i in range(3))  # 28 classes x 3 rows
    train = write_text(tmp_path / "train.csv", "text,label\n" + rows)
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        data = load_data(files_config(train, None, test_file=None, test_fraction=0.1, validation_fraction=0.1), seed=0)
    assert {name: len(split) for name, split in data.splits.items()} == {"train": 28, "validation": 28, "test": 28}
    assert data.summary["carved_from_train"] == {"test": 0.3333, "validation": 0.3333}  # the shares they hold
    assert (
        "data.test_fraction 0.1 asks for 9 of the 84 train rows; to keep a row of every class in test it holds 28"
        in (caplog.text)
    )


def test_a_class_too_small_to_carve_names_its_rows_in_the_file_and_what_it_needs(tmp_path):
    rows = "".join(f"story {i} of {name},{name}\n" for name, count in (("big", 20), ("pair", 2)) for i in range(count))
    train = write_text(tmp_path / "train.csv", "text,label\n" + rows)
    with pytest.raises(
        DataError,
        match=r"cannot carve stratified test and validation out of train \(data\.test_fraction, "
        r"data\.validation_fraction\): a class needs 3 rows, one in train and one in each carved split, but the "
        r"class 'pair' \(2 rows\) has fewer; add rows, drop the class, or give a validation file",
    ):
        load_data(files_config(train, None, test_file=None), seed=0)
    load_data(files_config(train, train), seed=0)  # carving validation alone needs 2: fine


def test_missing_column_lists_existing_columns(tmp_path):
    train = write_text(tmp_path / "train.csv", "label,body\n0,x\n1,y\n")
    message = error_message(files_config(train, train, text_columns=["title"]))
    assert "'title'" in message and "data.text_columns" in message and "'label', 'body'" in message
    assert "train.csv" in message


def test_empty_text_names_file_line_and_columns(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv", header=True)
    test = write_text(tmp_path / "test.csv", '"1","a","b"\n"2","c","d"\n"3","  ","\\n"\n')
    message = error_message(ag_news_config(train, test))
    assert "test.csv, line 3" in message and "empty text" in message and "title, description" in message
    assert "more" not in message
    many = write_text(tmp_path / "many.csv", "".join(f'"1","{"" if i % 2 else "a"}",""\n' for i in range(20)))
    message = error_message(ag_news_config(train, many))
    assert message.endswith(
        "many.csv, line 2: empty text in title, description (and 9 more: lines 4, 6, 8, 10, 12, ...); "
        "fill or remove these rows, or set data.incomplete_rows=drop to leave such rows out (listed in "
        "removed_rows.csv)"
    )


def test_empty_labels_are_named_all_at_once(tmp_path):
    train = write_text(tmp_path / "train.csv", "label,text\npos,a\n,b\nneg,c\n  ,d\n")
    message = error_message(files_config(train, train))
    assert message.startswith(f"{train}, line 3, column 'label': the label is empty (and 1 more: line 5); ")
    assert "data.incomplete_rows=drop" in message


def test_incomplete_rows_drop_leaves_out_rows_without_text_or_label(tmp_path):
    # Integer labels with blank cells are still read as integers: the blank cells are not a class.
    train = write_text(
        tmp_path / "train.csv",
        "id,label,text\n" + "".join(f"r{i},{i % 2},text {i}\n" for i in range(20)) + "x1,,no label\nx2,1,\nx3,,\n",
    )
    test = write_text(tmp_path / "test.csv", "id,label,text\nt1,0,kept\nt2,1,\nt3,1,also kept\n")
    config = files_config(train, test, id_column="id", incomplete_rows="drop", validation_fraction=0.2)
    data = load_data(config, seed=0)
    assert data.labels == ["0", "1"]
    assert sorted([*data.splits["train"]["row_id"], *data.splits["validation"]["row_id"]]) == sorted(
        f"r{i}" for i in range(20)
    )
    assert list(data.splits["test"]["row_id"]) == ["t1", "t3"]
    removed = {row.row_id: (row.split, row.reason) for row in data.removed}
    assert removed == {
        "x1": ("train", "incomplete: no label (data.incomplete_rows: drop)"),
        "x2": ("train", "incomplete: no text (data.incomplete_rows: drop)"),
        "x3": ("train", "incomplete: no text and no label (data.incomplete_rows: drop)"),
        "t2": ("test", "incomplete: no text (data.incomplete_rows: drop)"),
    }
    assert data.summary["incomplete_rows"] == {"setting": "drop", "removed": {"train": 3, "test": 1}}


def joined_with_cat(path: Path, *parts: pd.DataFrame) -> Path:
    """The files `cat a.csv b.csv` joins: each part written with its own header row."""
    path.write_text("".join(part.to_csv(index=False) for part in parts))
    return path


@pytest.mark.parametrize("id_column", [None, "id"])
def test_a_header_row_repeated_by_cat_is_left_out_listed_and_warned_about_once_per_file(tmp_path, caplog, id_column):
    """Read as a row, b.csv's header in the middle of `cat a.csv b.csv` became a class 'label' of 1 row (or an error
    about it); it is no data: left out, with one warning per file naming where, and listed in removed_rows.csv."""
    rows = [[f"r{i}", f"story {i} on {'goals' if i % 2 else 'markets'}", "ab"[i % 2]] for i in range(24)]
    parts = [pd.DataFrame(rows[start : start + 8], columns=["id", "text", "label"]) for start in (0, 8, 16)]
    train = joined_with_cat(tmp_path / "train.csv", *parts)  # lines 1 and 10 and 19 are the header
    test = joined_with_cat(tmp_path / "test.csv", parts[0].assign(id=lambda f: "t" + f["id"]))
    config = files_config(train, test, id_column=id_column, validation_fraction=0.25)
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        data = load_data(config, seed=0)
    assert data.labels == ["a", "b"]
    assert sum(len(data.splits[split]) for split in ("train", "validation")) == 24
    repeated = [row for row in data.removed if "header row" in row.reason]
    assert [(row.split, row.reason, row.text) for row in repeated] == [
        ("train", f"the header row again (files joined with cat?), line {line}", "text") for line in (10, 19)
    ]
    assert [row.row_id for row in repeated] == (["id", "id"] if id_column else ["10", "19"])
    assert data.summary["repeated_headers"] == {"removed": {"train": 2, "test": 0}}
    (warning,) = [record.getMessage() for record in caplog.records if "header row" in record.getMessage()]
    assert warning == (
        f"{train}, line 10: the header row (id, text, label) again, as files joined with cat repeat it (and 1 more: "
        "line 19); left out of the data, listed in removed_rows.csv"
    )


def test_a_file_without_a_header_loses_a_row_that_is_its_column_names(tmp_path):
    """data.column_names: no header row of its own to repeat, but a row that is those names exactly (a header-less
    file joined with one that has the header) is no data either. Which rows are: tests/data/test_tables.py."""
    lines = [f"{'ab'[i % 2]}\tstory {i}" for i in range(12)]
    train = write_text(tmp_path / "train.tsv", "\n".join([*lines[:6], "label\ttext", *lines[6:]]) + "\n")
    test = write_text(tmp_path / "test.tsv", "a\tnew story\nb\tanother\n")
    data = load_data(files_config(train, test, column_names=["label", "text"]), seed=0)
    assert data.labels == ["a", "b"]
    assert [(row.row_id, row.text) for row in data.removed] == [("7", "text")]


def test_incomplete_rows_keep_their_file_numbers_for_later_errors(tmp_path):
    # After rows are dropped, a bad label further down is still named by its own line.
    train = write_text(tmp_path / "train.csv", "label,text\npos,a\nneg,\npos,b\nmaybe,c\n")
    message = error_message(files_config(train, train, label_names=["neg", "pos"], incomplete_rows="drop"))
    assert message.startswith(f"{train}, line 5, column 'label': label 'maybe' is not a known class")


def test_ids_shared_by_two_split_files_are_named_in_a_warning(tmp_path, caplog):
    train = write_text(
        tmp_path / "train.csv", "id,label,text\n" + "".join(f"d{i},{'ab'[i % 2]},t {i}\n" for i in range(8))
    )
    test = write_text(tmp_path / "test.csv", "id,label,text\nd1,a,new one\nx9,b,new two\nd3,b,new three\n")
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        load_data(files_config(train, test, id_column="id"), seed=0)
    assert (
        "data.id_column 'id': 2 ids appear in more than one split file (first: 'd1' in train and test)" in caplog.text
    )


def test_labels_train_never_had_are_named_together_with_every_row(tmp_path):
    train = write_text(
        tmp_path / "train.csv", "label,text\n" + "".join(f"{n},{n} {i}\n" for i in range(3) for n in "ab")
    )
    test = write_text(tmp_path / "test.csv", "label,text\na,x\nWeather,y\nb,z\nWeather,w\nHealth,v\n")
    message = error_message(files_config(train, test))
    assert message.startswith(
        f"{test}, line 3, column 'label': label 'Weather' is not a known class (and 2 more: lines 5, 6); "
        "unknown labels: 'Weather', 'Health'; allowed: the names a, b"
    )


def test_multi_label_row_without_labels_is_kept_under_drop(tmp_path):
    train = write_text(tmp_path / "train.csv", "labels,text\na|b,x\n,y\nb,\na,z\nb,w\n")
    config = files_config(
        train, train, label_column="labels", task="multi_label", incomplete_rows="drop", deduplicate="none"
    )
    data = load_data(config, seed=0)
    assert [row.reason for row in data.removed] == ["incomplete: no text (data.incomplete_rows: drop)"] * 2
    assert "y" in [*data.splits["train"]["text"], *data.splits["validation"]["text"]]


def test_a_split_with_no_complete_row_is_an_error(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv")
    test = write_text(tmp_path / "test.csv", '"1","",""\n"2"," ",""\n')
    message = error_message(ag_news_config(train, test, incomplete_rows="drop"))
    assert message.startswith("The test split is empty: every one of the 2 rows of") and "test.csv" in message


def test_label_outside_classes_names_file_line_column_and_value(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv", header=True)
    content = train.read_text().splitlines()
    content[4] = '"5","Title","Body"'  # line 5 of the file: the header is line 1
    train.write_text("\n".join(content) + "\n")
    message = error_message(ag_news_config(train, train))
    assert "train.csv, line 5" in message and "'class_index'" in message and "'5'" in message
    assert "1..4" in message and "World" in message


def test_unknown_string_label_lists_the_classes(tmp_path):
    train = write_text(tmp_path / "train.csv", "label,text\npos,a\nneg,b\nmaybe,c\n")
    message = error_message(files_config(train, train, label_names=["neg", "pos"]))
    assert "line 4" in message and "'maybe'" in message and "neg, pos" in message


def test_empty_split_names_split_and_file(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv")
    test = write_text(tmp_path / "test.csv", "class_index,title,description\n")
    message = error_message(ag_news_config(train, test))
    assert "test split is empty" in message and "test.csv" in message


def test_malformed_csv_row_names_its_line(tmp_path):
    # The quoted field spans lines 2-3, so the bad row is on physical line 5, not "row 4".
    train = write_text(tmp_path / "train.csv", 'label,text\n0,"two\nlines"\n1,fine\n0,too,many\n1,ok\n')
    message = error_message(files_config(train, train))
    assert "train.csv, line 5" in message and "3 fields, expected 2" in message


def test_short_row_is_an_error_not_padding(tmp_path):
    train = write_ag_news_csv(tmp_path / "train.csv")
    with train.open("a") as handle:
        handle.write('"1","title only"\n')
    message = error_message(ag_news_config(train, train))
    assert "line 13" in message and "2 fields, expected 3" in message


def test_bad_json_line_names_its_line(tmp_path):
    train = write_text(tmp_path / "train.jsonl", '{"text": "a", "label": 0}\n\n{"text": "b", "label": 1\n')
    message = error_message(files_config(train, train))
    assert "train.jsonl, line 3" in message and "not valid JSON" in message


def test_parquet_rows_are_named_as_records(tmp_path):
    train = tmp_path / "train.parquet"
    pd.DataFrame({"text": ["a", "b", " "], "label": [0, 1, 0]}).to_parquet(train)
    message = error_message(files_config(train, train))
    assert "train.parquet, record 3" in message and "empty text" in message


def test_unknown_extension_asks_for_file_format(tmp_path):
    train = write_text(tmp_path / "train.txt", "label,text\n0,a\n1,b\n")
    assert "data.file_format" in error_message(files_config(train, train))
    assert len(load_splits(files_config(train, train, file_format="csv", validation_file=str(train)), 0)["test"]) == 2


def test_a_text_file_of_unknown_ending_says_how_labels_in_another_file_are_joined(tmp_path):
    """tweet_eval's train_text.txt (its labels in train_labels.txt) and TREC's train_5500.label ("DESC:manner How
    did ..."): neither name tells a format, and neither file holds a label column."""
    texts = write_text(tmp_path / "train_text.txt", "first tweet\nsecond tweet\n")
    message = error_message(files_config(texts, texts))
    assert "cannot tell the file format from its name" in message
    assert "if it holds one text per line: labels in a separate file (tweet_eval's" in message
    assert (
        "paste train_labels.txt train_text.txt > train.tsv) and read that with data.column_names=[label, text]"
        in message
    )
    assert "TREC's 'DESC:manner How did ...'" in message and "sed 's/ /\\t/' train.txt > train.tsv" in message
    # Read as a one-column TSV, it lacks the labels: the error says the same.
    one_column = files_config(texts, texts, file_format="tsv", column_names=["text"])
    message = error_message(one_column)
    assert "has no column 'label' (data.label_column); its columns: 'text'; the file has one column: labels in a" in (
        message
    )
    # Joined as the hint says, it loads.
    labels = write_text(tmp_path / "train_labels.txt", "0\n1\n")
    joined = tmp_path / "train.tsv"
    joined.write_text(
        "".join(f"{label}\t{text}" for label, text in zip(labels.open(), texts.open())).replace("\n\t", "\t")
    )
    loaded = load_data(files_config(joined, joined, validation_file=str(joined), column_names=["label", "text"]), 0)
    assert loaded.splits["test"]["text"] == ["first tweet", "second tweet"]


def test_a_test_file_without_labels_points_to_prediction(tmp_path):
    """GLUE's test.tsv: index and sentence, its labels held back."""
    train = write_text(tmp_path / "train.tsv", "sentence\tlabel\ngood film\t1\nbad film\t0\nfine\t1\ndull\t0\n")
    test = write_text(tmp_path / "test.tsv", "index\tsentence\n0\tnew film\n1\tother film\n")
    message = error_message(files_config(train, test, text_columns=["sentence"]))
    assert message.endswith(
        "test.tsv has no column 'label' (data.label_column); its columns: 'index', 'sentence'; if the file has no "
        "labels (a test set's held back, as GLUE's test.tsv): it is not scored but labelled by a trained model, with "
        "python -m pipeline.predict --model <run> --input <file>"
    )
    # A file that lacks a text column too is not said to be an unlabelled one.
    other = write_text(tmp_path / "other.tsv", "index\tbody\n0\tnew film\n")
    assert "pipeline.predict" not in error_message(files_config(train, other, text_columns=["sentence"]))


def test_json_field_reads_a_file_that_is_one_object_holding_the_records(tmp_path, caplog):
    rows = [{"text": f"story {index}", "label": "ab"[index % 2]} for index in range(8)]
    train = tmp_path / "train.json"
    train.write_text(json.dumps({"version": "1.1", "data": rows}, indent=2))
    message = error_message(files_config(train, train))
    assert "has no column 'label' (data.label_column); its columns: 'version', 'data'; the file is one JSON " in message
    assert message.endswith("if those are the records, set data.json_field=data")
    loaded = load_data(files_config(train, train, validation_file=str(train), json_field="data"), 0)
    assert loaded.splits["test"]["text"] == [row["text"] for row in rows]
    assert loaded.splits["test"]["row_id"] == [str(index) for index in range(1, 9)]  # records, by their position
    csv_train = write_text(tmp_path / "train.csv", "text,label\na,x\nb,y\nc,x\nd,y\n")
    with caplog.at_level(logging.WARNING, logger="pipeline.data.load"):
        load_data(files_config(csv_train, csv_train, validation_file=str(csv_train), json_field="data"), 0)
    assert "which these file settings do not describe: data.json_field" in caplog.text
    with pytest.raises(ConfigError, match=r"data\.json_field: name the key"):
        load_config(None, ["data.json_field=''"])


def test_a_save_to_disk_folder_given_as_a_file_is_refused_naming_data_hub_name(tmp_path):
    """Read as class folders, its split folders were classes and its .arrow files documents."""
    saved = save_hub_splits(tmp_path / "saved", ["train", "test"])
    with pytest.raises(DataError) as caught:
        load_data(files_config(Path(saved), Path(saved)), seed=0)
    assert str(caught.value) == (
        f"{saved} (data.train_file) is a dataset saved by the datasets library (save_to_disk: dataset_dict.json), not "
        f"a folder of documents: set data.source=hub data.hub_name={saved}, which reads its splits"
    )
    single = tmp_path / "single"
    datasets.load_from_disk(saved)["train"].save_to_disk(str(single))
    with pytest.raises(DataError, match=r"\(save_to_disk: state\.json\)"):
        load_data(files_config(single, single, encoding="latin-1"), seed=0)


def test_the_saved_dataset_files_are_those_datasets_writes():
    from pipeline.data.folder_sniff import SAVED_DATASET_FILES

    assert SAVED_DATASET_FILES == (
        datasets.config.DATASETDICT_JSON_FILENAME,
        datasets.config.DATASET_STATE_JSON_FILENAME,
    )


def escaped_rows(count: int, escaped: int) -> str:
    """A CSV of `count` rows, the first `escaped` of whose texts hold a literal backslash-n (as Yelp's CSVs)."""
    lines = ["text,label"]
    for index in range(count):
        text = f"Great food.\\nWould return {index}" if index < escaped else f"Fine {index}"
        lines.append(f'"{text}",{"ab"[index % 2]}')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("count", "escaped", "unescape", "warned"),
    [(40, 3, False, True), (40, 2, False, False), (100, 4, False, False), (40, 40, True, False)],
    ids=["three-of-40", "only-two", "under-5-percent", "unescaping"],
)
def test_many_texts_with_a_literal_backslash_n_suggest_unescape_newlines(
    tmp_path, caplog, count, escaped, unescape, warned
):
    train = write_text(tmp_path / "train.csv", escaped_rows(count, escaped))
    config = files_config(train, train, validation_file=str(train), unescape_newlines=unescape)
    with caplog.at_level(logging.WARNING, logger="pipeline.data.load"):
        load_data(config, seed=0)
    warnings = [record.getMessage() for record in caplog.records if "backslash-n" in record.getMessage()]
    if not warned:
        assert warnings == []
        return
    assert len(warnings) == 3  # one per file read (train, validation, test)
    assert warnings[0] == (
        f"{train}: {escaped} of {count} texts hold a literal backslash-n (\\n), the line break of the Yelp and Amazon "
        "review CSV files; set data.unescape_newlines=true to read it as one"
    )


# ---------------------------------------------------------------------------------------------------------------
# The Hub, without the network


def write_fake_hub_cache(
    cache_dir: Path, repo_id: str = "fancyzhx/ag_news", multi_label: bool = False, hidden_labels: bool = False
) -> None:
    """Lay out a small dataset the way `datasets` caches a Hub dataset, so offline loading can find it; with
    `multi_label`, its label column is a list of ClassLabel (as go_emotions'), row i holding classes i and i + 1;
    with `hidden_labels`, every test label and train row 4's are -1, as in GLUE's test splits."""
    namespace, name = repo_id.split("/")
    folder = cache_dir / f"{namespace}___{name}" / "default" / "0.0.0" / "0123abcd"
    folder.mkdir(parents=True)
    label = datasets.ClassLabel(names=AG_NAMES)
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.List(label) if multi_label else label}
    )
    split_infos = datasets.SplitDict()
    for split, rows in (("train", 40), ("test", 8)):
        labels = [[i % 4, (i + 1) % 4] if multi_label else i % 4 for i in range(rows)]
        if hidden_labels:
            labels = [-1 if split == "test" or i == 3 else label for i, label in enumerate(labels)]
        columns = {"text": [f"{split} story {i}" for i in range(rows)], "label": labels}
        dataset = datasets.Dataset.from_dict(columns, features=features)
        with datasets.arrow_writer.ArrowWriter(path=str(folder / f"{name}-{split}.arrow"), features=features) as writer:
            writer.write_table(dataset.data.table)
        split_infos.add(datasets.SplitInfo(name=split, num_examples=rows, dataset_name=name))
    info = datasets.DatasetInfo(
        features=features, builder_name="parquet", dataset_name=name, config_name="default", splits=split_infos
    )
    info.write_to_directory(str(folder))


def test_hub_dataset_loads_from_the_cache_offline(tmp_path):
    write_fake_hub_cache(tmp_path / "cache")
    config = DataConfig(source="hub", cache_dir=str(tmp_path / "cache"), validation_fraction=0.25)

    splits = load_splits(config, seed=0)

    assert splits["train"].features["label"].names == AG_NAMES
    assert (len(splits["train"]), len(splits["validation"]), len(splits["test"])) == (30, 10, 8)
    assert splits["test"][1] == {"text": "test story 1", "label": 1, "row_id": "2"}


def test_hub_list_of_class_labels_gives_a_multi_label_task_its_class_names(tmp_path):
    write_fake_hub_cache(tmp_path / "cache", multi_label=True)
    config = DataConfig(source="hub", cache_dir=str(tmp_path / "cache"), task="multi_label", validation_fraction=0.25)

    data = load_data(config, seed=0)

    assert data.labels == AG_NAMES  # the ClassLabel's names in id order, not the ids sorted as text
    test = data.splits["test"]
    assert test[1]["text"] == "test story 1"
    assert test[1]["labels"] == [0.0, 1.0, 1.0, 0.0]  # ids 1 and 2: Sports, Business


def test_hub_hidden_labels_are_missing_labels_and_an_unlabelled_test_split_is_carved_instead(tmp_path, caplog):
    write_fake_hub_cache(tmp_path / "cache", hidden_labels=True)
    config = DataConfig(source="hub", cache_dir=str(tmp_path / "cache"), validation_fraction=0.25)
    with pytest.raises(DataError, match=r"split 'train', record 4, column 'label': the label is empty"):
        load_splits(config, seed=0)

    splits = load_splits(dataclasses.replace(config, incomplete_rows="drop"), seed=0)

    assert "split 'test' has no labels (every one is -1" in caplog.text
    assert sum(len(split) for split in splits.values()) == 39  # the 40 train rows but row 4; the 8 test rows left out
    assert all(text.startswith("train story") for split in splits.values() for text in split["text"])


def test_hub_name_may_be_a_folder_that_save_to_disk_wrote(tmp_path):
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=AG_NAMES)})
    rows = {"text": [f"saved story {i}" for i in range(40)], "label": [i % 4 for i in range(40)]}
    whole = datasets.Dataset.from_dict(rows, features=features)
    whole.save_to_disk(str(tmp_path / "single"))
    datasets.DatasetDict({"train": whole.select(range(32)), "test": whole.select(range(32, 40))}).save_to_disk(
        str(tmp_path / "dict")
    )

    single = load_splits(DataConfig(source="hub", hub_name=str(tmp_path / "single")), seed=0)
    from_dict = load_splits(DataConfig(source="hub", hub_name=str(tmp_path / "dict")), seed=0)

    assert single["train"].features["label"].names == AG_NAMES  # one saved Dataset: train, the rest carved
    assert sum(len(split) for split in single.values()) == 40 and len(single["test"]) == 4
    assert from_dict["test"]["text"] == [f"saved story {i}" for i in range(32, 40)]
    with pytest.raises(DataError, match=r"data\.hub_name: \./nowhere is neither a folder nor a Hub dataset id"):
        load_splits(DataConfig(source="hub", hub_name="./nowhere"), seed=0)
    datasets.DatasetDict({"train": whole, "test": whole.select([])}).save_to_disk(str(tmp_path / "empty_test"))
    with pytest.raises(DataError, match=r"The test split is empty: .*empty_test/test \(data\.hub_name\) was saved"):
        load_splits(DataConfig(source="hub", hub_name=str(tmp_path / "empty_test")), seed=0)


def save_hub_splits(folder: Path, names: list[str], rows: int = 40) -> str:
    """A DatasetDict of these split names (each its own texts, labels cycling through the classes), saved to disk:
    what data.hub_name reads as a Hub dataset."""
    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=AG_NAMES)})
    splits = {
        name: datasets.Dataset.from_dict(
            {"text": [f"{name} story {i}" for i in range(rows)], "label": [i % 4 for i in range(rows)]},
            features=features,
        )
        for name in names
    }
    datasets.DatasetDict(splits).save_to_disk(str(folder))
    return str(folder)


def first_texts(splits) -> dict[str, str]:
    return {split: dataset["text"][0].split(" story")[0] for split, dataset in splits.items()}


def test_hub_splits_by_another_name_are_read_as_the_pipelines(tmp_path, caplog):
    imdb_like = save_hub_splits(tmp_path / "dev", ["train", "dev", "test", "unsupervised"])
    with caplog.at_level("INFO", logger="pipeline.data.load"):
        splits = load_splits(DataConfig(source="hub", hub_name=imdb_like), seed=0)
    assert first_texts(splits) == {"train": "train", "validation": "dev", "test": "test"}  # dev is validation
    assert "split unsupervised not used; data.hub_splits maps" in caplog.text

    mnli_like = save_hub_splits(
        tmp_path / "mnli", ["train", "validation_matched", "validation_mismatched", "test_matched"]
    )
    caplog.clear()
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        carved = load_splits(DataConfig(source="hub", hub_name=mnli_like), seed=0)
    assert first_texts(carved) == {"train": "train", "validation": "train", "test": "train"}
    assert "splits validation_matched, validation_mismatched, test_matched not used, and validation and test" in (
        caplog.text
    )
    mapped = DataConfig(
        source="hub",
        hub_name=mnli_like,
        hub_splits={"validation": "validation_matched", "test": "validation_mismatched"},
    )
    assert first_texts(load_splits(mapped, seed=0)) == {
        "train": "train",
        "validation": "validation_matched",
        "test": "validation_mismatched",
    }


def test_hub_splits_that_do_not_fit_are_named(tmp_path):
    unnamed = save_hub_splits(tmp_path / "unnamed", ["training", "testing"])
    with pytest.raises(
        DataError, match=r"has the splits training, testing and none is train: name it in data\.hub_splits"
    ):
        load_splits(DataConfig(source="hub", hub_name=unnamed), seed=0)
    named = DataConfig(source="hub", hub_name=unnamed, hub_splits={"train": "training", "test": "testing"})
    assert first_texts(load_splits(named, seed=0))["test"] == "testing"
    with pytest.raises(
        DataError, match=r"data\.hub_splits: .* has no split 'dev' for validation \(its splits: training"
    ):
        load_splits(dataclasses.replace(named, hub_splits={"train": "training", "validation": "dev"}), seed=0)
    with pytest.raises(DataError, match=r"data\.hub_splits: 'eval' is not a split of the pipeline"):
        load_splits(dataclasses.replace(named, hub_splits={"train": "training", "eval": "testing"}), seed=0)
    with pytest.raises(ConfigError, match="data.hub_splits: names the splits of a Hub dataset; data.source is 'files'"):
        load_config(None, ["data.source=files", "data.train_file=x.csv", "data.hub_splits={test: testing}"])
    with pytest.raises(ConfigError, match="gives one Hub split to two splits"):
        load_config(None, ["data.hub_splits={validation: testing, test: testing}"])


def test_hub_offline_without_cache_names_the_local_files_option(tmp_path):
    started = time.monotonic()
    message = error_message(DataConfig(source="hub", cache_dir=str(tmp_path / "empty")))
    assert time.monotonic() - started < 10
    assert "offline mode" in message and "data.source=files" in message and "data.train_file" in message


# The subprocess gets the resolved DataConfig as JSON, so it imports only pipeline.data.load: it times the stage, not
# the import of torch that pipeline.config.schema pulls in through the model settings.
HUB_SCRIPT = """
import json, sys, time, types
from pipeline.data.load import DataError, load_splits

results = {}
for case, settings in json.loads(sys.argv[1]).items():
    started = time.monotonic()
    try:
        splits = load_splits(types.SimpleNamespace(**settings), seed=0)
        outcome = {"rows": {split: len(data) for split, data in splits.items()}}
    except DataError as error:
        outcome = {"error": str(error)}
    results[case] = {**outcome, "seconds": time.monotonic() - started}
print(json.dumps(results))
"""


def run_without_hub(endpoint: str, cases: dict[str, DataConfig], home: Path) -> subprocess.Popen:
    """Start HUB_SCRIPT with the Hub at `endpoint`, offline mode off (as for a real user) and an empty HF_HOME."""
    offline_switches = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    env = {key: value for key, value in os.environ.items() if key not in offline_switches}
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(home), PYTHONPATH=str(REPO_ROOT))
    settings = json.dumps({case: dataclasses.asdict(config) for case, config in cases.items()})
    return subprocess.Popen(
        [sys.executable, "-c", HUB_SCRIPT, settings],
        env=env,
        cwd=REPO_ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.slow  # three subprocesses probing fake Hubs, one of which never answers
def test_unreachable_hub_fails_fast_and_names_the_local_files_option(tmp_path):
    cache = tmp_path / "cache"
    write_fake_hub_cache(cache)
    # A port that refuses connections, a listening socket that accepts but never answers (like a firewall that
    # drops packets) and a server that answers every request with an HTTP error; one process each, run at once.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ErrorStatusHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    processes = [
        run_without_hub(
            f"http://127.0.0.1:{free_port()}",
            {"no_cache": DataConfig(cache_dir=str(tmp_path / "empty")), "cached": DataConfig(cache_dir=str(cache))},
            tmp_path / "home1",
        ),
        run_without_hub(
            f"http://127.0.0.1:{silent.getsockname()[1]}",
            {"no_cache": DataConfig(hub_timeout_seconds=2.0)},
            tmp_path / "home2",
        ),
        run_without_hub(
            f"http://127.0.0.1:{server.server_address[1]}",
            {"not_found": DataConfig(hub_name="someone/missing"), "down": DataConfig(hub_name="someone/unavailable")},
            tmp_path / "home3",
        ),
    ]
    try:
        outputs = [process.communicate(timeout=60) for process in processes]
    finally:
        silent.close()
        server.shutdown()
        for process in processes:
            process.kill()
    assert all(process.returncode == 0 for process in processes), outputs
    refused, hanging, answering = (json.loads(stdout.splitlines()[-1]) for stdout, _ in outputs)

    for case in (refused["no_cache"], hanging["no_cache"], answering["down"]):
        assert "could not be reached" in case["error"]
        assert "data.source=files" in case["error"] and "data.train_file" in case["error"]
        assert "docs/offline.md" in case["error"]
    assert refused["no_cache"]["seconds"] < 5  # well under 30 s: datasets alone retries for ~25 s here
    assert hanging["no_cache"]["seconds"] < 2.0 + 3  # the probe's deadline, not datasets' retries
    assert "no answer within 2 s" in hanging["no_cache"]["error"]
    assert "HTTP 503" in answering["down"]["error"]
    # No Hub, but a cached copy: it is used (train 40 rows -> 36 + 4 validation).
    assert refused["cached"]["rows"] == {"train": 36, "validation": 4, "test": 8}
    # The Hub answered, but has no such dataset: the message names the setting.
    assert "data.hub_name" in answering["not_found"]["error"] and "someone/missing" in answering["not_found"]["error"]
    assert answering["not_found"]["seconds"] < 10


class ErrorStatusHandler(http.server.BaseHTTPRequestHandler):
    """A stand-in Hub: 503 for any URL naming 'unavailable' (a Hub that is down), 404 for everything else."""

    def answer(self) -> None:
        self.send_response(503 if "unavailable" in self.path else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_HEAD = answer

    def log_message(self, *args) -> None:
        pass


def free_port() -> int:
    """A local port with nothing listening on it (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------------------------------------------------------
# A user's own file: one file, string labels, ids, duplicates, long fields


def write_emails(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    frame = pd.DataFrame(rows, columns=["message_id", "category", "body"])
    frame.to_csv(path, index=False)
    return path


def email_rows(count: int, start: int = 0) -> list[tuple[str, str, str]]:
    categories = ["billing", "spam", "support"]
    return [
        (f"m{i}", categories[i % 3], f"message number {i} about {categories[i % 3]}")
        for i in range(start, start + count)
    ]


def own_config(path: Path, **overrides) -> DataConfig:
    settings = dict(
        source="files",
        train_file=str(path),
        text_columns=["body"],
        label_column="category",
        id_column="message_id",
        test_fraction=0.2,
        validation_fraction=0.2,
    )
    return DataConfig(**{**settings, **overrides})


def test_one_file_with_string_labels_and_ids(tmp_path):
    data = load_data(own_config(write_emails(tmp_path / "mail.csv", email_rows(60))), seed=0)
    assert data.splits["train"].features["label"].names == ["billing", "spam", "support"]
    ids = data.row_ids()
    assert all(i.startswith("m") for split_ids in ids.values() for i in split_ids)
    assert sorted(i for split_ids in ids.values() for i in split_ids) == sorted(f"m{i}" for i in range(60))
    assert data.summary["sizes"] == {"train": 36, "validation": 12, "test": 12}


def test_duplicates_are_counted_removed_across_and_listed(tmp_path, caplog):
    rows = email_rows(30)
    rows += [(f"dup{i}", rows[i][1], "  " + rows[i][2].replace(" ", "\n ") + " ") for i in range(6)]  # same text
    rows += [("conflict", "spam", rows[0][2])]  # same text as m0, another label
    path = write_emails(tmp_path / "mail.csv", rows)
    with caplog.at_level(logging.WARNING, logger="pipeline.data.splits"):
        data = load_data(own_config(path), seed=0)
    duplicates = data.summary["duplicates"]
    assert duplicates["mode"] == "across" and duplicates["conflicts"] == 1
    across = sum(duplicates["across"].values())
    assert across and "texts also occur in an earlier split: removed (data.deduplicate: across)" in caplog.text
    assert duplicates["conflict_examples"][0]["labels"] == ["billing", "spam"]
    removed_ids = {row.row_id for row in data.removed}
    assert len(data.removed) == sum(duplicates["removed"].values()) == 7
    # m0, dup0 (billing) and "conflict" (spam) share a text: the two copies removed say so.
    conflicts = [row for row in data.removed if "labels conflict" in row.reason]
    assert len(conflicts) == 2 and {row.row_id for row in conflicts} < {"m0", "dup0", "conflict"}
    assert all("(billing vs spam), the first copy's stays" in row.reason for row in conflicts)
    kept_texts = [" ".join(text.split()) for split in data.splits.values() for text in split["text"]]
    assert len(kept_texts) == len(set(kept_texts)) == 30  # no text twice, anywhere
    assert removed_ids.isdisjoint(i for split_ids in data.row_ids().values() for i in split_ids)

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pipeline.data.splits"):
        counted_only = load_data(own_config(path, deduplicate="none"), seed=0)
    assert "earlier split: kept, so its scores count texts seen before" in caplog.text
    assert counted_only.removed == [] and sum(counted_only.summary["sizes"].values()) == 37
    assert (
        sum(counted_only.summary["duplicates"]["within"].values())
        + sum(counted_only.summary["duplicates"]["across"].values())
        == 7
    )


@pytest.mark.parametrize("split", ["validation", "test"])
def test_an_evaluation_file_whose_texts_are_all_in_train_is_an_error_naming_it(tmp_path, split):
    """data.deduplicate: across removes every row of such a file; the empty split then failed to tokenize, with an
    error about missing columns."""
    train = write_text(
        tmp_path / "train.csv", "text,label\n" + "".join(f"story {i},{'ab'[i % 2]}\n" for i in range(12))
    )
    copies = write_text(tmp_path / f"{split}.csv", "text,label\nstory 1,b\nstory  2,a\nstory 2,a\n")
    fresh = write_text(tmp_path / "fresh.csv", "text,label\nnews 1,b\nnews 2,a\n")
    test, given = (fresh, {"validation_file": str(copies)}) if split == "validation" else (copies, {})
    config = files_config(train, test, deduplicate="across", **given)
    earlier = "train" if split == "validation" else "train or validation"
    assert error_message(config) == (
        f"The {split} split is empty: data.deduplicate: across removed all 3 rows of {copies} (data.{split}_file), "
        f"as each repeats a text of {earlier} (including 1 repeated within {split}); set data.deduplicate=within or "
        f"none to keep them (their scores then count texts seen before), or give a {split} file whose texts are not "
        f"in {earlier}"
    )
    assert load_data(dataclasses.replace(config, deduplicate="within"), seed=0).summary["sizes"][split] == 2


def test_a_carved_test_split_whose_texts_all_stay_in_train_is_an_error_naming_its_setting(tmp_path):
    rows = "".join(f"story {i},{'ab'[i % 2]}\n" for i in range(8)) * 4  # every text 4 times: a copy stays in train
    train = write_text(tmp_path / "train.csv", "text,label\n" + rows)
    fresh = write_text(tmp_path / "fresh.csv", "text,label\nnews 1,b\nnews 2,a\n")
    config = DataConfig(source="files", train_file=str(train), validation_file=str(fresh), test_fraction=0.1)
    assert error_message(config).startswith(
        f"The test split is empty: data.deduplicate: across removed all 4 test rows carved from {train} "
        "(data.test_fraction), as each repeats a text of train or validation"
    )


def test_a_200000_character_field_loads(tmp_path):
    rows = email_rows(30)
    rows[4] = (rows[4][0], rows[4][1], "long " * 40_000)
    data = load_data(own_config(write_emails(tmp_path / "mail.csv", rows)), seed=0)
    assert max(len(text) for split in data.splits.values() for text in split["text"]) == len(("long " * 40_000).strip())


def test_id_column_must_exist_and_be_unique(tmp_path):
    path = write_emails(tmp_path / "mail.csv", email_rows(20) + [("m3", "spam", "another message")])
    message = error_message(own_config(path))
    assert "mail.csv, line 22" in message and "'m3' repeats" in message and "data.id_column" in message
    message = error_message(own_config(path, id_column="msg"))
    assert "no column 'msg' (data.id_column)" in message


def test_a_row_repeated_whole_under_its_id_is_a_duplicate_not_an_id_error(tmp_path):
    rows = email_rows(20)
    path = write_emails(tmp_path / "mail.csv", rows + [rows[3]])  # the same record again: id, label and text
    removed = load_data(own_config(path), seed=0).removed
    assert [(row.row_id, row.reason) for row in removed] == [(rows[3][0], "duplicate within split")]
    changed = write_emails(tmp_path / "changed.csv", rows + [(rows[3][0], rows[3][1], "another text")])
    message = error_message(own_config(changed))
    assert "changed.csv, line 22" in message and "changed.csv, line 5 with other values" in message
    assert "data.deduplicate" in message and "leave data.id_column unset" in message


def test_bad_labels_name_file_row_and_class(tmp_path):
    missing = write_text(tmp_path / "missing.csv", "category,body\nspam,a\n,b\nham,c\n")
    assert "missing.csv, line 3" in error_message(own_config(missing, id_column=None))
    single = write_text(tmp_path / "single.csv", "category,body\n" + "".join(f"spam,t{i}\n" for i in range(10)))
    message = error_message(own_config(single, id_column=None))
    assert "single.csv" in message and "one class" in message


def test_ids_never_index_inferred_names(tmp_path):
    """A test file of ids against a train file of names would silently permute the gold labels."""
    train = write_text(
        tmp_path / "train.csv", "label,text\n" + "".join(f"{n},t{i}{n}\n" for i in range(5) for n in ("sport", "news"))
    )
    test = write_text(tmp_path / "test.csv", "label,text\n0,a\n1,b\n")
    message = error_message(files_config(train, test))
    assert "test.csv, line 2" in message and "'0'" in message and "data.label_names" in message


def test_a_column_mixing_names_and_ids_is_an_error(tmp_path):
    train = write_text(
        tmp_path / "train.csv", "label,text\n" + "".join(f"{c},t{i}\n" for i, c in enumerate(["World", "Sports"] * 5))
    )
    test = write_text(tmp_path / "test.csv", "label,text\nWorld,a\n2,b\n")
    message = error_message(files_config(train, test, label_names=["World", "Sports"], label_index_base=1))
    assert "test.csv, line 3" in message and "'2'" in message and "same way" in message


def test_an_object_or_a_list_as_a_single_label_is_an_error_not_a_class(tmp_path):
    """Read as its str(), {"label": "World", ...} became a class of that name, without a word."""
    records = [{"text": f"t{i}", "meta": {"label": c, "source": "ag"}} for i, c in enumerate(["World", "Sports"] * 3)]
    nested = write_text(tmp_path / "nested.jsonl", "".join(json.dumps(record) + "\n" for record in records))
    message = error_message(files_config(nested, nested, label_column="meta"))
    assert message.startswith(f"{nested}, line 1, column 'meta' (data.label_column): the label is an object")
    assert "nested fields are not read" in message
    message = error_message(files_config(nested, nested, label_column="meta", label_names=["World", "Sports"]))
    assert "line 1, column 'meta' (data.label_column): the label is an object" in message

    train = write_text(tmp_path / "train.jsonl", '{"text": "a", "label": "World"}\n{"text": "b", "label": "Sports"}\n')
    listed = write_text(
        tmp_path / "test.jsonl", '{"text": "c", "label": "World"}\n{"text": "d", "label": ["Sports"]}\n'
    )
    message = error_message(files_config(train, listed))
    assert message.startswith(f"{listed}, line 2, column 'label' (data.label_column): the label is a list")
    assert "data.task=multi_label" in message


def test_a_single_label_csv_cell_that_writes_a_list_is_an_error_pointing_to_multi_label(tmp_path):
    """pandas' to_csv writes a list column as its str(): each set ("['Sports', 'World']") became a class."""
    rows = "".join(f'"{labels}",t{i}\n' for i, labels in enumerate([["World"], ["Sports", "World"]] * 3))
    train = write_text(tmp_path / "train.csv", "label,text\n" + rows)
    assert error_message(files_config(train, None, test_file=None)) == (
        f"{train}, line 2, column 'label' (data.label_column): the label is a list (['World']), not a class; for "
        "several classes per row set data.task=multi_label"
    )
    brackets = write_text(tmp_path / "brackets.csv", "label,text\n" + "".join(f"[{i % 2}x],t{i}\n" for i in range(9)))
    assert load_data(files_config(brackets, None, test_file=None), seed=0).labels == ["[0x]", "[1x]"]  # no list


def test_a_stray_id_does_not_make_thousands_of_classes(tmp_path):
    train = write_text(
        tmp_path / "train.csv", "label,text\n" + "".join(f"{i % 3},t{i}\n" for i in range(30)) + "2004,odd\n"
    )
    message = error_message(files_config(train, train))
    assert "2004" in message and "data.label_names" in message


def test_integer_labels_that_skip_ids_are_refused_until_the_classes_are_listed(tmp_path):
    """sentiment140's polarity 0 and 4 made five classes, three of which no row teaches; listed, they are two."""
    train = write_text(tmp_path / "train.csv", "label,text\n" + "".join(f"{4 * (i % 2)},t{i}\n" for i in range(30)))
    assert error_message(files_config(train, None, test_file=None)) == (
        f"{train}, column 'label': integer labels 0, 4 read as class ids 0 to 4 leave 1, 2, 3 without a row, classes "
        "the model could never learn; list the classes in data.label_names: ['0', '4'] for only the labels written "
        "(codes, as sentiment140's 0 and 4), or all 5 ids' names if the others merely lack rows here"
    )
    data = load_data(files_config(train, None, test_file=None, label_names=["0", "4"]), seed=0)
    assert data.labels == ["0", "4"] and sorted(set(data.splits["train"]["label"])) == [0, 1]


def test_negative_integer_labels_say_which_base_reads_them(tmp_path):
    """Polarity -1/0/1 (as floats: Kaggle's Twitter_Data.csv) was refused as "from -1 to 1 but only 3 distinct
    values appear", which all of them did."""
    rows = "".join(f"{['-1.0', '0.0', '1.0'][i % 3]},t{i}\n" for i in range(30))
    train = write_text(tmp_path / "train.csv", "category,text\n" + rows)
    config = files_config(train, None, test_file=None, label_column="category")
    assert error_message(config) == (
        f"{train}, column 'category': integer label -1 is below 0, data.label_index_base being unset, where ids count "
        "from; if the labels are classes from -1 up (polarity -1, 0, 1), set data.label_index_base to -1 or list the "
        "classes in data.label_names; if -1 marks a row without a label (as -1 does in GLUE's test files), remove "
        "those rows"
    )
    data = load_data(dataclasses.replace(config, label_index_base=-1), seed=0)
    assert data.labels == ["-1", "0", "1"]


def test_a_regression_target_chosen_as_label_column_is_refused_before_splitting(tmp_path):
    scores = [f"{0.01 * (index + 1):.2f}" for index in range(25)]
    rows = "".join(f"story {index} of {score},{score}\n" for index, score in enumerate(scores * 2))
    train = write_text(tmp_path / "train.csv", "text,score\n" + rows)
    message = error_message(files_config(train, train, label_column="score"))
    assert message.startswith(f"{train}, column 'score' (data.label_column): the labels are numbers with fractions")
    assert "25 distinct values in 50 rows), a regression target?" in message and "data.label_names" in message
    # Listing the classes is how a user insists that they are classes.
    load_data(files_config(train, train, label_column="score", label_names=scores), seed=0)


def test_half_star_ratings_stay_classes(tmp_path):
    stars = [f"{0.5 * (index + 1):.1f}" for index in range(10)]
    rows = "".join(f"review {index} of {star},{star}\n" for index, star in enumerate(stars * 3))
    train = write_text(tmp_path / "train.csv", "text,stars\n" + rows)
    data = load_data(files_config(train, None, test_file=None, label_column="stars"), seed=0)
    assert data.labels == sorted(stars)


def test_decimal_codes_with_rows_to_learn_from_stay_classes(tmp_path):
    """ICD-9-like codes (401.9, 250.00): many fractional numbers, but each on enough rows to be a class."""
    codes = [f"{400 + index}.{index % 10}" for index in range(25)]
    rows = "".join(f"note {index} about {code},{code}\n" for index, code in enumerate(codes * 8))
    train = write_text(tmp_path / "train.csv", "text,code\n" + rows)
    data = load_data(files_config(train, None, test_file=None, label_column="code"), seed=0)
    assert len(data.labels) == len(codes)


@pytest.mark.parametrize("labels", [[f"headline number {index}" for index in range(30)], list(range(30))])
def test_a_text_or_id_column_chosen_as_label_column_is_refused(tmp_path, labels):
    rows = "".join(f"story {index},{label}\n" for index, label in enumerate(labels))
    train = write_text(tmp_path / "train.csv", "text,title\n" + rows)
    message = error_message(files_config(train, train, label_column="title"))
    assert message.startswith(
        f"{train}, column 'title' (data.label_column): 30 of 30 rows have a label no other row has ("
    )
    assert "is it a text or id column?" in message and "data.label_names" in message


def test_many_classes_too_small_to_carve_are_named_up_to_ten(tmp_path):
    rows = "".join(f"story {i},big\n" for i in range(30)) + "".join(f"lone {i},small{i:02d}\n" for i in range(15))
    train = write_text(tmp_path / "train.csv", "text,label\n" + rows)
    message = error_message(files_config(train, None, test_file=None))
    assert "'small09' (1 row) and 5 more have fewer" in message and "small10" not in message


def test_the_split_log_names_the_first_classes_and_counts_the_rest(tmp_path, caplog):
    from pipeline.data.load import LOGGED_CLASSES

    count = LOGGED_CLASSES + 7
    rows = "".join(f"story {i} of {c},class{c:02d}\n" for c in range(count) for i in range(4))
    train = write_text(tmp_path / "train.csv", "text,label\n" + rows)
    test = write_text(tmp_path / "test.csv", "text,label\n" + "".join(f"new {c},class{c:02d}\n" for c in range(count)))
    with caplog.at_level("INFO", logger="pipeline.data.load"):
        load_splits(files_config(train, test), seed=0)
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("train: ")]
    assert f"class{LOGGED_CLASSES - 1:02d} 3, and 7 more classes)" in line and f"class{LOGGED_CLASSES:02d}" not in line


def test_a_text_column_of_numbers_only_is_warned_about(tmp_path, caplog):
    rows = "".join(f"{1000 + i},story number {i},{'ab'[i % 2]}\n" for i in range(24))
    train = write_text(tmp_path / "train.csv", "id,body,label\n" + rows)
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        load_splits(files_config(train, None, test_file=None, text_columns=["id"]), seed=0)
    (message,) = [r.getMessage() for r in caplog.records if "numbers only" in r.getMessage()]
    assert "train.csv: 24 of 24 texts are numbers only (data.text_columns: id)" in message
    caplog.clear()
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        load_splits(files_config(train, None, test_file=None, text_columns=["body"]), seed=0)
    assert not [r for r in caplog.records if "numbers only" in r.getMessage()]
    # A pair is judged per side: the id as the second text is named by its own setting.
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        load_splits(files_config(train, None, test_file=None, text_columns=["body"], text_pair_columns=["id"]), 0)
    (message,) = [r.getMessage() for r in caplog.records if "numbers only" in r.getMessage()]
    assert "train.csv: 24 of 24 texts are numbers only (data.text_pair_columns: id)" in message


# ---------------------------------------------------------------------------------------------------------------
# Rows without a label, class names that files record, label names files, boolean labels


def write_labelled_csv(path: Path, labels: list[str]) -> Path:
    """A CSV of `labels` (written as given) beside distinct texts."""
    return write_text(path, "label,text\n" + "".join(f"{label},story {index}\n" for index, label in enumerate(labels)))


def removed_reasons(data) -> dict[str, str]:
    return {row.row_id: row.reason for row in data.removed}


def write_class_label_parquet(path: Path, labels: list, names: list[str], multi_label: bool = False) -> Path:
    """A Parquet file as `datasets` writes one (Dataset.to_parquet, the Hub's own files): a ClassLabel column (a list
    of them for multi-label) whose names live in the schema's metadata only."""
    feature = datasets.ClassLabel(names=names)
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.List(feature) if multi_label else feature}
    )
    texts = [f"record story {index}" for index in range(len(labels))]
    datasets.Dataset.from_dict({"text": texts, "label": labels}, features=features).to_parquet(str(path))
    return path


def test_parquet_written_by_datasets_gives_its_class_label_names_and_minus_one_is_no_label(tmp_path, caplog):
    names = ["negative", "neutral", "positive"]
    labels = [index % 3 for index in range(30)]
    labels[4] = labels[9] = -1  # SNLI's pairs without a gold label, as datasets writes them
    train = write_class_label_parquet(tmp_path / "train-00000-of-00001.parquet", labels, names)
    config = files_config(train, None, test_file=None)

    with pytest.raises(DataError) as caught:
        load_data(config, seed=0)
    assert str(caught.value).startswith(
        f"{train}, record 5, column 'label': no label ('-1': none where labels are ids of named classes (for a class "
        "-1 set data.label_index_base=-1)) (and 1 more: record 10); fill or remove these rows, or set "
        "data.incomplete_rows=drop"
    )
    with caplog.at_level("INFO", logger="pipeline.data.load"):
        data = load_data(dataclasses.replace(config, incomplete_rows="drop"), seed=0)

    assert data.labels == names  # not 0, 1, 2
    assert "Classes from" in caplog.text and "ClassLabel column 'label'" in caplog.text
    assert removed_reasons(data) == {
        "5": "incomplete: no label ('-1' marks none) (data.incomplete_rows: drop)",
        "10": "incomplete: no label ('-1' marks none) (data.incomplete_rows: drop)",
    }
    assert data.summary["label_reading"] == {"names": True, "ids": True, "index_base": 0}
    assert sum(len(split) for split in data.splits.values()) == 28
    # data.label_names names the classes instead; -1 is still no label, as the ids are ids of named classes.
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        listed = load_data(dataclasses.replace(config, incomplete_rows="drop", label_names=["neg", "neu", "pos"]), 0)
    assert listed.labels == ["neg", "neu", "pos"] and len(listed.removed) == 2
    assert "the file's ClassLabel names (negative, neutral, positive) are not data.label_names (neg, neu, pos)" in (
        caplog.text
    )


def test_parquet_list_of_class_labels_gives_a_multi_label_task_its_class_names(tmp_path):
    names = ["sports", "health", "tech"]
    sets = [[0], [1, 2], [], [2]] * 8
    train = write_class_label_parquet(tmp_path / "train.parquet", sets, names, multi_label=True)
    data = load_data(files_config(train, None, test_file=None, task="multi_label"), seed=0)
    assert data.labels == names
    rows = {text: labels for split in data.splits.values() for text, labels in zip(split["text"], split["labels"])}
    assert rows["record story 1"] == [0.0, 1.0, 1.0]


def test_class_label_names_read_from_each_metadata_layout():
    from pipeline.data.formats.parquet import class_label_names

    def metadata(features):
        return {b"huggingface": json.dumps({"info": {"features": features}}).encode()}

    class_label = {"names": ["a", "b"], "_type": "ClassLabel"}
    assert class_label_names(metadata({"text": {"dtype": "string", "_type": "Value"}, "label": class_label})) == {
        "label": ["a", "b"]
    }
    assert class_label_names(metadata({"labels": {"feature": class_label, "_type": "Sequence"}})) == {
        "labels": ["a", "b"]
    }
    assert class_label_names(metadata({"labels": [class_label]})) == {"labels": ["a", "b"]}  # an older writer's
    assert class_label_names(metadata({"text": {"dtype": "string", "_type": "Value"}})) is None
    assert class_label_names({b"huggingface": b"not json"}) is None and class_label_names(None) is None


def test_minus_one_is_no_label_where_ids_are_mapped_to_names_and_a_class_where_they_are_not(tmp_path):
    labels = ["0", "1", "2"] * 8
    labels[3] = "-1"  # line 5
    train = write_labelled_csv(tmp_path / "train.csv", labels)
    mapped = files_config(train, None, test_file=None, label_names=["anger", "joy", "sadness"])
    assert "line 5, column 'label': no label ('-1'" in error_message(mapped)
    data = load_data(dataclasses.replace(mapped, incomplete_rows="drop"), seed=0)
    assert data.labels == ["anger", "joy", "sadness"] and list(removed_reasons(data)) == ["5"]
    # Classes named from -1 up: -1 is the first class's id, not a missing label.
    polarity = dataclasses.replace(mapped, label_names=["negative", "neutral", "positive"], label_index_base=-1)
    labels_from_minus_one = write_labelled_csv(tmp_path / "polarity.csv", [str(i % 3 - 1) for i in range(24)])
    data = load_data(dataclasses.replace(polarity, train_file=str(labels_from_minus_one)), seed=0)
    assert data.removed == [] and sum(label_counts(split)["negative"] for split in data.splits.values()) == 8
    # Not mapped to names: the classes are the values found, and -1 one of them, as before.
    inferred = files_config(labels_from_minus_one, None, test_file=None, label_index_base=-1)
    assert load_data(inferred, seed=0).labels == ["-1", "0", "1"]


def test_a_file_scored_later_reads_minus_one_and_missing_marks_as_no_label(tmp_path):
    """pipeline.evaluate reads a labelled file through read_labelled_file: the rule of training, from one place."""
    from pipeline.data.load import read_labelled_file

    path = write_labelled_csv(tmp_path / "new.csv", ["0", "-1", "1", "N/A", "1"])
    config = files_config(path, None, incomplete_rows="drop")
    mapped = {"names": True, "ids": True, "index_base": 0}
    dataset, removed, _ = read_labelled_file(config, str(path), "--input", ["anger", "joy"], mapped)
    assert dataset["label"] == [0, 1, 1]
    assert [(row.row_id, row.reason) for row in removed] == [
        ("3", "incomplete: no label ('-1' marks none) (data.incomplete_rows: drop)"),
        ("5", "incomplete: no label ('N/A' marks none) (data.incomplete_rows: drop)"),
    ]
    with pytest.raises(DataError, match=r"new\.csv, line 3, column 'label': no label \("):
        read_labelled_file(
            dataclasses.replace(config, incomplete_rows="error"), str(path), "--input", ["anger", "joy"], mapped
        )


def test_missing_value_marks_are_missing_labels_not_classes(tmp_path):
    labels = ["pos", "neg"] * 10 + ["NaN", " n/a ", "#N/A", "NULL", "<NA>"]  # lines 22 to 26
    train = write_labelled_csv(tmp_path / "train.csv", labels)
    config = files_config(train, None, test_file=None)
    message = error_message(config)
    assert message.startswith(
        f"{train}, line 22, column 'label': no label ('NaN', 'n/a', '#N/A', 'NULL', '<NA>': "
        "data.missing_label_values) (and 4 more: lines 23, 24, 25, 26); fill or remove these rows"
    )
    data = load_data(dataclasses.replace(config, incomplete_rows="drop"), seed=0)
    assert data.labels == ["neg", "pos"] and len(data.removed) == 5
    assert removed_reasons(data)["23"] == "incomplete: no label ('n/a' marks none) (data.incomplete_rows: drop)"
    # The setting replaces the list: "N/A" is then a class, and SNLI's "-" a missing label.
    own = dataclasses.replace(
        config,
        missing_label_values=["-"],
        train_file=str(
            write_labelled_csv(tmp_path / "snli.csv", ["entailment", "contradiction"] * 10 + ["-"] + ["N/A"] * 3)
        ),
        incomplete_rows="drop",
    )
    data = load_data(own, seed=0)
    assert data.labels == ["N/A", "contradiction", "entailment"] and list(removed_reasons(data)) == ["22"]


def test_a_class_that_looks_like_a_missing_mark_is_named_in_a_warning_and_in_an_unknown_label_error(tmp_path, caplog):
    train = write_labelled_csv(tmp_path / "train.csv", ["entailment", "contradiction", "neutral"] * 6 + ["-"] * 3)
    config = files_config(train, None, test_file=None)
    with caplog.at_level("WARNING", logger="pipeline.data.labels"):
        assert "-" in load_data(config, seed=0).labels  # a class still: a "+"/"-" labelling has one
    assert (
        f"{train}, column 'label': the class '-' (3 rows) looks like a mark of a missing label (SNLI's '-': no gold "
        "label); if it is one, add it to data.missing_label_values" in caplog.text
    )
    named = dataclasses.replace(config, label_names=["entailment", "neutral", "contradiction"])
    assert error_message(named).endswith(
        "; '-' marks a row without a label? Add it to data.missing_label_values (such rows are then incomplete: "
        "data.incomplete_rows=drop leaves them out)"
    )


def test_a_missing_mark_in_a_label_set_makes_the_row_incomplete(tmp_path):
    train = write_labelled_csv(tmp_path / "train.csv", ["a|b", "a", "b", "", "a|null", "b"] * 4)  # lines 6, 12, ...
    config = files_config(train, None, test_file=None, task="multi_label")
    assert error_message(config).startswith(f"{train}, line 6, column 'label': no label ('null': ")
    data = load_data(dataclasses.replace(config, incomplete_rows="drop"), seed=0)
    assert data.labels == ["a", "b"]  # not a class "null"
    assert list(removed_reasons(data)) == ["6", "12", "18", "24"]  # the empty sets stay: negative for every class


def test_a_listed_class_spelled_as_a_missing_mark_stays_a_class(tmp_path):
    """data.label_names naming a class "N/A" (a default mark) needs no other setting: the class wins."""
    train = write_labelled_csv(tmp_path / "train.csv", ["yes", "no", "N/A", "n/a "] * 6)
    data = load_data(files_config(train, None, test_file=None, label_names=["yes", "no", "N/A"]), seed=0)
    assert data.labels == ["yes", "no", "N/A"] and not removed_reasons(data)
    assert sorted(set(data.splits["train"]["label"])) == [0, 1, 2]


def test_missing_label_values_must_be_written_marks():
    with pytest.raises(ConfigError, match=r"data\.missing_label_values\[1\]: empty"):
        load_config(None, ["data.missing_label_values=['-', ' ']"])
    assert load_config(None, []).data.missing_label_values == ["NaN", "N/A", "#N/A", "null", "<NA>"]


def test_tweet_eval_mapping_file_of_ids_and_names_names_the_classes(tmp_path):
    mapping = write_text(tmp_path / "mapping.txt", "0\tanger\n1\tjoy\n2\toptimism\n3\tsadness\n")
    train = write_labelled_csv(tmp_path / "train.csv", [str(index % 4) for index in range(24)])
    config = files_config(train, None, test_file=None, label_names_file=str(mapping))
    assert load_data(config, seed=0).labels == ["anger", "joy", "optimism", "sadness"]
    # Lines in another order are read by their ids; a base said lets them count from it.
    shuffled = write_text(tmp_path / "shuffled.txt", "2\toptimism\n1\tjoy\n4\tsadness\n3\tanger\n")
    from_one = dataclasses.replace(config, label_names_file=str(shuffled), label_index_base=1)
    assert load_data(
        dataclasses.replace(
            from_one,
            train_file=str(write_labelled_csv(tmp_path / "one.csv", [str(index % 4 + 1) for index in range(24)])),
        ),
        seed=0,
    ).labels == ["joy", "optimism", "anger", "sadness"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "1\tanger\n2\tjoy\n",
            ", line 1: the ids (id, tab, name) start at 1, but labels count from 0 (data.label_index_base, unset: 0)",
        ),
        ("0\tanger\n1\tjoy\n3\tsadness\n", ", line 3: id 3 follows a gap (no line for id 2)"),
        ("0\tanger\n1\tjoy\n1\tsadness\n", ", line 3: id 1 repeats line 2; each id once"),
    ],
)
def test_mapping_file_ids_must_run_from_zero_or_the_base(tmp_path, content, message):
    mapping = write_text(tmp_path / "mapping.txt", content)
    train = write_labelled_csv(tmp_path / "train.csv", ["0", "1"] * 6)
    config = files_config(train, None, test_file=None, label_names_file=str(mapping))
    assert error_message(config).startswith(f"data.label_names_file: {mapping}{message}")


def test_a_mapping_file_from_zero_is_refused_for_labels_counted_from_one(tmp_path):
    """Read against labels 1..K, ids 0..K-1 would name every class one off: refused, naming the setting."""
    mapping = write_text(tmp_path / "mapping.txt", "0\tanger\n1\tjoy\n")
    train = write_labelled_csv(tmp_path / "train.csv", ["1", "2"] * 6)
    config = files_config(train, None, test_file=None, label_names_file=str(mapping), label_index_base=1)
    assert error_message(config).startswith(
        f"data.label_names_file: {mapping}, line 1: the ids (id, tab, name) start at 0, but labels count from 1 "
        "(data.label_index_base)"
    )


def test_a_names_file_of_names_with_spaces_and_numbers_stays_names(tmp_path):
    from pipeline.data.labels import read_names_file

    stars = write_text(tmp_path / "stars.txt", "1 star\n2 stars\n3 stars\n")  # spaces, ids not from 0: names
    assert read_names_file(str(stars), "utf-8") == ["1 star", "2 stars", "3 stars"]
    plain = write_text(tmp_path / "classes.txt", "very negative\nnegative\nneutral\n")
    assert read_names_file(str(plain), "utf-8") == ["very negative", "negative", "neutral"]
    # Separated by spaces, numbers are part of the name whatever the base (Yelp's labels count from 1).
    assert read_names_file(str(stars), "utf-8", index_base=1) == ["1 star", "2 stars", "3 stars"]
    spaced = write_text(tmp_path / "spaced.txt", "0 negative\n1 positive\n")
    assert read_names_file(str(spaced), "utf-8") == ["0 negative", "1 positive"]


def test_single_label_classes_that_look_like_label_sets_point_to_multi_label(tmp_path, caplog):
    """go_emotions' raw TSV ("2,27") read without data.task: each combination became a class, silently."""
    train = write_labelled_csv(tmp_path / "train.tsv", [])
    rows = "".join(f"comment {i}\t{['0', '3', '0,3', '3,27', '27'][i % 5]}\n" for i in range(25))
    train = write_text(tmp_path / "train.tsv", "text\tlabel\n" + rows)
    with caplog.at_level("WARNING", logger="pipeline.data.labels"):
        load_data(files_config(train, None, test_file=None, validation_fraction=0.2, test_fraction=0.2), seed=0)
    assert (
        "column 'label': 2 classes look like several classes joined by ',' ('0,3', '3,27'): a set of labels per row? "
        "Set data.task=multi_label data.label_separator=','" in caplog.text
    )
    caplog.clear()
    names = write_text(
        tmp_path / "names.csv",
        "label,text\n"
        + "".join(f"{['Arts, Culture', 'Science, Tech', 'Sports'][i % 3]},story {i}\n" for i in range(15))
        .replace("Arts, Culture", '"Arts, Culture"')
        .replace("Science, Tech", '"Science, Tech"'),
    )
    with caplog.at_level("WARNING", logger="pipeline.data.labels"):
        assert load_data(files_config(names, None, test_file=None), seed=0).labels[0] == "Arts, Culture"
    assert "joined by" not in caplog.text  # names with commas, whose parts are no classes


def test_multi_label_rows_without_a_label_are_counted_and_recorded(tmp_path, caplog):
    train = write_labelled_csv(tmp_path / "train.csv", ["a|b", "", "a", "b", "", "a"] * 5)
    config = files_config(train, None, test_file=None, task="multi_label", validation_fraction=0.2, test_fraction=0.2)
    with caplog.at_level("INFO", logger="pipeline.data.load"):
        data = load_data(config, seed=0)
    counts = data.summary["class_counts"]["train"]
    assert counts["rows_without_labels"] == sum(1 for row in data.splits["train"]["labels"] if not any(row)) > 0
    assert (
        f"{counts['rows_without_labels']} of {counts['rows']} train rows have no label: negative for every class"
        in (caplog.text)
    )
    single = write_labelled_csv(tmp_path / "single.csv", ["a", "b"] * 10)
    assert (
        "rows_without_labels"
        not in load_data(files_config(single, None, test_file=None), seed=0).summary["class_counts"]["train"]
    )


def test_one_error_names_the_rows_without_a_text_and_those_without_a_label(tmp_path):
    train = write_text(tmp_path / "train.csv", "label,text\npos,a\nneg,\nneg,c\n,d\npos,\nN/A,f\n")
    assert error_message(files_config(train, train)) == (
        f"{train}, line 3: empty text in text (and 1 more: line 6); {train}, line 5, column 'label': no label (empty "
        "cells; 'N/A': data.missing_label_values) (and 1 more: line 7); fill or remove these rows, or set "
        "data.incomplete_rows=drop to leave such rows out (listed in removed_rows.csv)"
    )


def test_boolean_labels_match_label_names_in_any_spelling(tmp_path):
    """JSON writes true and false; read, they are True and False, which data.label_names as JSON spells them lacked."""
    lines = "".join(json.dumps({"text": f"claim {i}", "label": i % 2 == 0}) + "\n" for i in range(20))
    train = write_text(tmp_path / "train.jsonl", lines)
    config = files_config(train, None, test_file=None)
    assert load_data(config, seed=0).labels == ["False", "True"]  # unnamed: the values found, as before
    named = load_data(dataclasses.replace(config, label_names=["false", "true"]), seed=0)
    assert named.labels == ["false", "true"]  # as the user spelled them
    test = named.splits["test"]
    assert all(
        (text.split()[1] in {str(i) for i in range(0, 20, 2)}) == (label == 1)
        for text, label in zip(test["text"], test["label"])
    )
    spreadsheet = write_labelled_csv(tmp_path / "sheet.csv", ["TRUE", "FALSE"] * 10)
    assert load_data(files_config(spreadsheet, None, test_file=None, label_names=["False", "True"]), seed=0).labels == [
        "False",
        "True",
    ]
