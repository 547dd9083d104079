"""A folder of class folders as a data source (pipeline/data/folders.py, read through data.read_table): aclImdb's,
20 Newsgroups' and BBC News' layout, one subfolder per class and one document per file.

Every folder is written to tmp_path; the end-to-end run writes AG News rows from ../shared (skipped without it).
"""

import csv
import json
import logging
from pathlib import Path

import pandas as pd
import pytest

from pipeline.common.errors import DataError
from pipeline.config.schema import DataConfig
from pipeline.data.folders import open_folder_table
from pipeline.data.lines import EncodingError
from pipeline.data.load import load_data, read_labelled_file
from pipeline.data.splits import labels_of
from pipeline.distill.transfer import read_unlabeled

DATA_LOGGER = "pipeline.data.load"


def write_folder(root: Path, files: dict[str, str | bytes]) -> Path:
    """`files` by their path under `root` ("pos/0_9.txt"); bytes are written as they are."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


def reviews(root: Path, per_class: int = 6, classes=("neg", "pos")) -> Path:
    """aclImdb's layout: a class folder per label, files named id_rating.txt."""
    return write_folder(
        root,
        {f"{label}/{index}_7.txt": f"review {index} of {label}" for label in classes for index in range(per_class)},
    )


def folder_config(train: Path, **settings) -> DataConfig:
    return DataConfig(**{"source": "files", "train_file": str(train), "deduplicate": "none", **settings})


def test_each_file_of_a_class_folder_is_a_row_named_by_its_path(tmp_path, caplog):
    """aclImdb/train as it ships: class folders, an unlabelled unsup/ folder, loose files at the top, hidden files.
    Rows are whole files, in class-folder then file-name order, named by their path in the folder."""
    train = reviews(tmp_path / "train", per_class=3)
    write_folder(
        train,
        {
            "pos/10_9.txt": "First line.\nSecond line, same review.\n",
            "unsup/0_0.txt": "no label",
            "urls_pos.txt": "http://",
            "labeledBow.feat": "0:9 1:1",
            "pos/.DS_Store": b"\x00\x01\xff",
            ".ipynb_checkpoints/x.txt": "not data",
        },
    )
    with caplog.at_level(logging.INFO, logger=DATA_LOGGER):
        data = load_data(folder_config(train, label_names=["neg", "pos"], deduplicate="none"), seed=0)
    rows = {row_id: text for split in data.splits.values() for row_id, text in zip(split["row_id"], split["text"])}
    assert set(rows) == {f"{label}/{index}_7.txt" for label in ("neg", "pos") for index in range(3)} | {"pos/10_9.txt"}
    assert rows["pos/10_9.txt"] == "First line.\nSecond line, same review."  # the whole file, stripped as any text
    assert data.labels == ["neg", "pos"]
    assert data.summary["class_folders"] == {"train": {"neg": 3, "pos": 4}}
    assert data.summary["quoting"] is None
    messages = [record.getMessage() for record in caplog.records]
    (loose,) = [message for message in messages if "beside the class folders" in message]
    assert "2 files" in loose and "labeledBow.feat, urls_pos.txt" in loose
    (left_out,) = [message for message in messages if "folders left out" in message]
    assert "unsup" in left_out and "data.label_names" in left_out
    assert not any(".ipynb_checkpoints" in message or ".DS_Store" in message for message in messages)


def test_rows_come_in_folder_then_file_order_whatever_the_creation_order(tmp_path):
    train = write_folder(tmp_path / "train", {name: name for name in ("b/2", "a/9", "b/10", "a/1", "b/1", "a/2")})
    test = write_folder(tmp_path / "test", {name: f"other {name}" for name in ("b/x", "a/y", "a/x", "b/y")})
    data = load_data(folder_config(train, test_file=str(test), validation_file=str(test)), seed=0)
    assert data.labels == ["a", "b"]  # every class folder, none listed
    assert data.splits["test"]["row_id"] == ["a/x", "a/y", "b/x", "b/y"]
    assert data.summary["class_folders"]["test"] == {"a": 2, "b": 2}
    assert sorted(data.splits["train"]["row_id"]) == ["a/1", "a/2", "a/9", "b/1", "b/10", "b/2"]


@pytest.mark.parametrize(
    ("files", "settings", "message"),
    [
        ({"neg/1.txt": "a", "pos/1.txt": "b"}, {"label_names": ["negative", "pos"]}, r"no folder '.*train/negative' "),
        ({"1.txt": "a", "2.txt": "b"}, {}, r"train \(data\.train_file\) has no class folders: .*the 2 files directly"),
        ({}, {}, r"has no class folders: .*\(it is empty\)"),
        ({"neg/1.txt": "a", "pos/.DS_Store": "b"}, {}, r"train/pos: the class folder 'pos' holds no files"),
        # One "class" holding folders (the classes a level deeper, beside another folder) names it.
        ({"neg/1.txt": "a", "pos/x/1.txt": "b"}, {}, r"train/pos holds folders \(x\).*level deeper"),
        (
            {"neg/1.txt": "a", "pos/1.txt": "b"},
            {"text_columns": ["body"]},
            r"no column 'body'.*data.text_columns=\[text\]",
        ),
    ],
    ids=["listed-class-without-folder", "no-class-folders", "empty", "empty-class-folder", "nested", "columns"],
)
def test_a_folder_that_is_not_class_folders_of_files_is_an_error_naming_it(tmp_path, files, settings, message):
    train = write_folder(tmp_path / "train", files)
    train.mkdir(exist_ok=True)
    with pytest.raises(DataError, match=message):
        load_data(folder_config(train, **settings), seed=0)


@pytest.mark.parametrize("listed", [None, ["neg", "pos"]], ids=["classes-unset", "classes-listed"])
def test_a_folder_of_split_folders_is_named_as_such_with_each_split_folder(tmp_path, listed):
    """aclImdb/ (or 20news-bydate/) given rather than its split's folder: every folder in it holds class folders.
    The error names the split folders to choose from, not a split folder as a class, nor the test split's folder as
    the one to train on."""
    root = write_folder(
        tmp_path / "aclImdb",
        {
            "README": "?",
            **{f"{split}/{label}/1_7.txt": label for split in ("train", "test") for label in ("neg", "pos")},
        },
    )
    expected = r"aclImdb \({}\) holds folders of class folders \(test, train\).*one of .*aclImdb/test, .*aclImdb/train"
    with pytest.raises(DataError, match=expected.format(r"data\.train_file")):
        load_data(folder_config(root, label_names=listed), seed=0)
    with pytest.raises(DataError, match=expected.format("--input")):
        read_labelled_file(folder_config(root), str(root), "--input", ["neg", "pos"], None)


def all_texts(train: Path, **settings) -> list[str]:
    """Every text of a folder read as train, validation and test alike (nothing carved)."""
    both = {"validation_file": str(train), "test_file": str(train), **settings}
    return load_data(folder_config(train, **both), seed=0).splits["train"]["text"]


def test_a_test_folder_without_one_of_trains_class_folders_is_warned_about_when_classes_are_unlisted(tmp_path, caplog):
    """A train folder of a class the test folder lacks (unlabelled texts under a name of its own, say). Unlisted, it
    is a class no test row has; a warning points to data.label_names, which reads the same folders without one."""
    train = write_folder(
        reviews(tmp_path / "train"), {f"extra/{index}_0.txt": f"unlabelled {index}" for index in range(6)}
    )
    test = reviews(tmp_path / "test", per_class=3)
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        data = load_data(folder_config(train, test_file=str(test)), seed=0)
    assert data.labels == ["extra", "neg", "pos"]
    (warning,) = [record.getMessage() for record in caplog.records if "lacks the class folder" in record.getMessage()]
    assert "test (data.test_file) lacks the class folder extra of" in warning and "data.label_names" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        load_data(folder_config(train, test_file=str(test), label_names=["neg", "pos"]), seed=0)
    assert not any("lacks the class folder" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("name", ["unsup", "unlabeled", "Unlabelled", "unlabelled_data"])
def test_a_folder_of_unlabelled_texts_is_no_class_unless_listed(tmp_path, caplog, name):
    """aclImdb/train as it ships holds unsup/ (50,000 unlabelled reviews), which made a third class, learnt by the model
    and in no test row. By its name it is left out, with a WARNING naming it and its files; listed, it is a class."""
    train = write_folder(
        reviews(tmp_path / "train"), {f"{name}/{index}_0.txt": f"unlabelled {index}" for index in range(4)}
    )
    test = reviews(tmp_path / "test", per_class=3)
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        data = load_data(folder_config(train, test_file=str(test)), seed=0)
    assert data.labels == ["neg", "pos"]
    assert data.summary["class_folders"]["train"] == {"neg": 6, "pos": 6}
    (warning,) = [record.getMessage() for record in caplog.records if "left out" in record.getMessage()]
    assert warning == (
        f"{train}: the folder {name} (4 files) left out: by its name it holds unlabelled texts, not a class; name it "
        "in data.label_names to read it as one"
    )
    assert "lacks the class folder" not in caplog.text
    listed = load_data(folder_config(train, label_names=["neg", "pos", name]), seed=0)
    assert listed.labels == ["neg", "pos", name]
    with pytest.raises(
        DataError, match=rf"has no class folders: {name} holds unlabelled texts; name it in data\.label"
    ):
        load_data(folder_config(write_folder(tmp_path / "only", {f"{name}/1.txt": "a"})), seed=0)


def test_files_are_decoded_with_data_encoding_and_an_undecodable_one_is_named(tmp_path):
    train = write_folder(tmp_path / "train", {"neg/1.txt": "plain", "pos/1.txt": "caf\xe9 cr\xe8me".encode("latin-1")})
    with pytest.raises(
        EncodingError, match=r"train/pos/1\.txt, line 1: bytes that are not valid utf-8.*data\.encoding to auto"
    ):
        all_texts(train, encoding="utf-8")
    assert all_texts(train) == ["plain", "café crème"]  # auto: Windows-1252 for the file that holds no UTF-8
    assert all_texts(train, encoding="latin-1") == ["plain", "café crème"]
    with pytest.raises(EncodingError, match=r"pos/1\.txt, line 1: bytes that are not valid UTF8 "):
        all_texts(train, encoding="UTF8")  # as written in data.encoding, not Python's "utf-8"
    utf8 = write_folder(tmp_path / "utf8", {"neg/bom.txt": "\ufeffwith a byte-order mark", "pos/1.txt": "b"})
    assert all_texts(utf8) == ["with a byte-order mark", "b"]  # utf-8 drops a byte-order mark, as from a table
    wide = write_folder(tmp_path / "wide", {"neg/1.txt": "zwei".encode("utf-16"), "pos/1.txt": "drei".encode("utf-16")})
    assert all_texts(wide, encoding="utf-16") == ["zwei", "drei"]
    # Notepad's "Unicode" files: their byte-order mark is read, as a table's is, with the default encoding
    assert all_texts(wide) == ["zwei", "drei"]
    with pytest.raises(DataError, match=r"wide/neg/1\.txt starts with a UTF-16 byte-order mark, so it is not latin-1"):
        all_texts(wide, encoding="latin-1")


def test_one_windows_1252_file_among_utf8_files_trains_with_one_warning_naming_it(tmp_path, caplog):
    """Issue 40: a BBC-News-like folder of UTF-8 files with one file saved on Windows (its £ the byte 0xA3). Under
    data.encoding: auto (the default) it is read as Windows-1252, that file only: its £ reads as £, the UTF-8 files'
    £ and ’ as they are, and one WARNING names it; metrics.json's data.decoding records it."""
    utf8 = {
        f"{label}/{index}.txt": f"\u2018{label}\u2019 costs \u00a3{index}"
        for label in ("business", "sport")
        for index in range(4)
    }
    windows = "The club paid \u00a35m, a record \u2013 twice last year\u2019s".encode("cp1252")
    train = write_folder(tmp_path / "bbc", {**utf8, "sport/199.txt": windows})
    with caplog.at_level(logging.WARNING):
        data = load_data(folder_config(train), seed=0)
    texts = {row_id: text for split in data.splits.values() for row_id, text in zip(split["row_id"], split["text"])}
    assert texts["sport/199.txt"] == "The club paid \u00a35m, a record \u2013 twice last year\u2019s"
    assert texts["business/2.txt"] == "\u2018business\u2019 costs \u00a32"
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    (warning,) = [message for message in warnings if "Windows-1252" in message]
    assert warning.endswith(f"1 file: {train}/sport/199.txt") and "data.encoding: auto" in warning
    assert data.summary["decoding"] == {
        "setting": "auto",
        "errors": "strict",
        "files": {f"{train}/sport/199.txt": {"encoding": "Windows-1252", "replaced_lines": []}},
    }
    # A file mixing both stops, naming its lines and data.decode_errors; replace reads its bad bytes as U+FFFD.
    write_folder(train, {"sport/200.txt": b"Caf\xc3\xa9\n\xa3 5"})
    with pytest.raises(EncodingError, match=r"sport/200\.txt, lines 1 and 2: the file mixes .*data\.decode_errors"):
        load_data(folder_config(train), seed=0)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        data = load_data(folder_config(train, decode_errors="replace"), seed=0)
    texts = {row_id: text for split in data.splits.values() for row_id, text in zip(split["row_id"], split["text"])}
    assert texts["sport/200.txt"] == "Caf\u00e9\n\ufffd 5"
    assert f"{train}/sport/200.txt, line 2" in caplog.text and "U+FFFD" in caplog.text
    assert data.summary["decoding"]["files"][f"{train}/sport/200.txt"]["replaced_lines"] == [2]


def test_files_read_with_control_characters_are_warned_about_once_for_the_folder(tmp_path, caplog):
    """cp1252 files (its quotes are bytes 0x92-0x94) read as latin-1 become control characters: one warning naming
    the first file and its line, one line counting the rest, not a warning per file of a folder of thousands."""
    quoted = "it\u2019s \u201cgood\u201d".encode("cp1252")
    files = {f"{label}/{index}.txt": quoted for label in ("neg", "pos") for index in range(4)}
    train = write_folder(tmp_path / "train", {**files, "neg/plain.txt": "plain"})
    with caplog.at_level(logging.WARNING):
        load_data(folder_config(train, encoding="latin-1", deduplicate="within"), seed=0)
    warnings = [record.getMessage() for record in caplog.records if "control characters" in record.getMessage()]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"{train}/neg/0.txt, line 1: bytes 0x80-0x9F read as")
    assert warnings[1] == f"{train}: 7 files more read with control characters, as the first"


def test_empty_files_follow_data_incomplete_rows(tmp_path):
    train = reviews(tmp_path / "train")
    write_folder(train, {"neg/empty.txt": "", "pos/blank.txt": " \n\n"})
    with pytest.raises(
        DataError, match=r"train, file neg/empty\.txt: empty text .*\(and 1 more: file pos/blank\.txt\)"
    ):
        load_data(folder_config(train), seed=0)
    data = load_data(folder_config(train, incomplete_rows="drop"), seed=0)
    assert {(row.split, row.row_id) for row in data.removed} == {("train", "neg/empty.txt"), ("train", "pos/blank.txt")}
    assert data.summary["class_folders"] == {"train": {"neg": 7, "pos": 7}}  # files read, before any are left out
    assert sum(data.summary["sizes"].values()) == 12


def test_file_settings_that_do_not_apply_to_a_folder_are_named_in_a_warning(tmp_path, caplog):
    train = reviews(tmp_path / "train")
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        load_data(folder_config(train, column_names=["label", "text"], delimiter="@", file_format="csv"), seed=0)
    (warning,) = [record.getMessage() for record in caplog.records if "folder of class folders" in record.getMessage()]
    assert "data.file_format, data.column_names, data.delimiter" in warning and "data.quoting" not in warning


def test_a_labelled_folder_is_read_for_the_models_classes(tmp_path, caplog):
    """pipeline.evaluate's reader: a folder of the model's classes (some may be missing), other folders left out."""
    folder = write_folder(tmp_path / "test", {"pos/1.txt": "good", "pos/2.txt": "fine", "unsup/1.txt": "?"})
    data = DataConfig(source="files", train_file="unused.csv")
    reading = {"names": True, "ids": False, "index_base": 0}
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        dataset, removed, read = read_labelled_file(data, str(folder), "--input", ["neg", "pos"], reading)
    assert labels_of(dataset).tolist() == [1, 1] and dataset["row_id"] == ["pos/1.txt", "pos/2.txt"]
    assert read == {
        "quoting": None,
        "delimiter": None,
        "sheet": None,
        "class_folders": {"test": {"pos": 2}},
        "class_files": None,
        "decoding": None,
        "repeated_headers": {"removed": {"test": 0}},  # a folder has no header row to repeat
    }
    assert removed == []
    assert any("unsup" in record.getMessage() for record in caplog.records)
    with pytest.raises(DataError, match=r"none of its folders \(unsup\) is a class of the model's classes"):
        read_labelled_file(
            data, str(write_folder(tmp_path / "other", {"unsup/1.txt": "?"})), "--input", ["a", "b"], None
        )


def test_an_unlabeled_file_that_is_a_folder_is_refused(tmp_path):
    unsup = write_folder(tmp_path / "unsup", {"0_0.txt": "a review"})
    config = folder_config(reviews(tmp_path / "train"), unlabeled_file=str(unsup))
    with pytest.raises(DataError, match=r"data\.unlabeled_file: .*unsup is a folder"):
        read_unlabeled(config)


def test_a_folder_to_label_is_streamed_in_chunks_of_files_counted_before_reading(tmp_path):
    """pipeline.predict's reader: a folder of files, `chunk_size` files read at a time, each named by its name."""
    inbox = write_folder(tmp_path / "inbox", {f"{index:02d}.txt": f"text {index}" for index in range(5)})
    table = open_folder_table(str(inbox), "utf-8", 2, "--input", "--encoding")
    assert table.row_count == 5 and table.header == ["text", "id"]
    chunks = list(table.chunks)
    assert [chunk.numbers for chunk in chunks] == [["00.txt", "01.txt"], ["02.txt", "03.txt"], ["04.txt"]]
    assert chunks[2].records == [["text 4", "04.txt"]]


def test_broken_links_are_left_out_with_a_warning_naming_them(tmp_path, caplog):
    """A link whose target is gone is neither a file nor a folder: a document missing from the rows is said, in a
    class folder for training as in a folder to label."""
    train = reviews(tmp_path / "train", per_class=3)
    (train / "pos" / "moved.txt").symlink_to(tmp_path / "nowhere.txt")
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        data = load_data(folder_config(train), seed=0)
    assert sum(len(split) for split in data.splits.values()) == 6
    (warning,) = [
        record.getMessage() for record in caplog.records if "neither a file nor a folder" in record.getMessage()
    ]
    assert warning.startswith(f"{train / 'pos'}: left out") and warning.endswith("(a broken link?): moved.txt")

    caplog.clear()
    inbox = write_folder(tmp_path / "inbox", {"1.txt": "text"})
    (inbox / "2.txt").symlink_to(tmp_path / "nowhere.txt")
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        table = open_folder_table(str(inbox), "utf-8", None, "--input", "--encoding")
    assert table.row_count == 1 and [chunk.numbers for chunk in table.chunks] == [["1.txt"]]
    assert [record.getMessage() for record in caplog.records] == [
        f"{inbox}: left out, neither a file nor a folder (a broken link?): 2.txt"
    ]


def test_a_folder_to_label_with_class_folders_is_read_by_trainings_rules(tmp_path, caplog):
    """Every class folder (none is left out: there are no model classes to choose by), the files beside them not
    rows (a WARNING: they go unlabelled), hidden names ignored, decoding errors naming the option given."""
    test = write_folder(
        tmp_path / "test",
        {"pos/1.txt": "good", "unsup/1.txt": "?", "neg/1.txt": b"caf\xe9", "notes.txt": "x", ".hidden/1.txt": "x"},
    )
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        table = open_folder_table(str(test), "latin-1", None, "--input", "--encoding")
    assert table.header == ["text", "label", "id"]
    assert next(table.chunks).records == [
        ["café", "neg", "neg/1.txt"],
        ["good", "pos", "pos/1.txt"],
        ["?", "unsup", "unsup/1.txt"],
    ]
    assert "1 file beside the class folders, not rows: notes.txt" in caplog.text
    with pytest.raises(EncodingError, match=r"test/neg/1\.txt, line 1: .*give the file's encoding with --encoding"):
        list(open_folder_table(str(test), "utf-8", None, "--input", "--encoding").chunks)


# ---------------------------------------------------------------------------------------------------------------
# A folder of class files: one text per line, a file per class (rotten_tomatoes' rt-polarity.pos and .neg)


def sentences(label: str, count: int) -> str:
    """A class file's lines as rt-polarity writes them: one lower-cased sentence per line, latin-1."""
    return "".join(f"the {label} sentence number {index} , caf\xe9 .\n" for index in range(count))


@pytest.mark.parametrize(
    ("names", "classes"),
    [
        (("rt-polarity.neg", "rt-polarity.pos"), ("neg", "pos")),
        (("negative.txt", "positive.txt"), ("negative", "positive")),
    ],
    ids=["told-by-suffix", "told-by-stem"],
)
def test_a_folder_of_class_files_is_a_row_per_line_of_the_class_its_file_names(tmp_path, caplog, names, classes):
    """rotten_tomatoes' original layout: the folder "had no class folders", and the files put into class folders
    trained on two rows. The class is the part of the names that differs; blank lines are no rows."""
    lines = {name: sentences(label, 6).encode("latin-1") for name, label in zip(names, classes)}
    lines[names[0]] = lines[names[0]].replace(b"number 2 ", b"number 2\n\n \n")  # blank lines, numbers kept
    train = write_folder(tmp_path / "train", lines)
    with caplog.at_level(logging.INFO, logger=DATA_LOGGER):
        texts = all_texts(train, encoding="latin-1")
    data = load_data(folder_config(train, encoding="latin-1", test_file=str(train), validation_file=str(train)), seed=0)
    assert data.labels == list(classes)
    assert len(texts) == 13 and texts[0] == f"the {classes[0]} sentence number 0 , café ."
    rows = dict(zip(data.splits["test"]["row_id"], data.splits["test"]["text"]))
    assert rows[f"{names[0]}:6"] == ", café ." and not {f"{names[0]}:4", f"{names[0]}:5"} & set(rows)  # blank
    assert data.summary["class_folders"] is None  # no class folders' files to count
    assert data.summary["class_files"] == {
        split: dict(zip(classes, names)) for split in ("train", "validation", "test")
    }
    mapping = f"{names[0]} -> {classes[0]}, {names[1]} -> {classes[1]}"
    assert f"{train}: a folder of class files, each non-blank line a text of the class its file names: {mapping}" in (
        caplog.text
    )
    # data.label_names chooses among them as among class folders; a class without a file is an error naming it.
    assert load_data(folder_config(train, encoding="latin-1", label_names=list(classes)), seed=0).labels == list(
        classes
    )
    with pytest.raises(DataError, match=r"train \(data\.train_file\): no file for class 'other' .*class files: "):
        load_data(folder_config(train, encoding="latin-1", label_names=[classes[0], "other"]), seed=0)


@pytest.mark.parametrize(
    "files",
    [
        {f"{index}.txt": "From: someone\nSubject: a post\n" for index in range(3)},  # a class's folder of documents
        {"train.txt": sentences("a", 9), "test.txt": sentences("b", 9)},  # a split's files, not classes
        {"neg.txt": sentences("neg", 9)},  # one file: nothing tells a class
    ],
    ids=["documents", "split-files", "one-file"],
)
def test_files_that_are_not_class_files_are_no_class_folders(tmp_path, files):
    """20 Newsgroups' alt.atheism/ given for its parent (480 posts of fewer lines each than files), or a folder of a
    data set's split files given for one of them, stays the error it was rather than classes made of lines."""
    with pytest.raises(DataError, match=r"has no class folders: .*one file per class .* directly in it are no class's"):
        load_data(folder_config(write_folder(tmp_path / "train", files)), seed=0)


@pytest.mark.parametrize("layout", ["tables", "parquet-shards"])
def test_a_folder_of_a_data_sets_tables_says_which_file_to_give(tmp_path, layout):
    """data/ given for data/train.csv, or the Hub's data/ layout of Parquet shards: its tables are named with the file
    to give, and shards with data.hub_name, which reads them; a Parquet file is not decoded as lines of text (its
    bytes made an encoding error whose advice led nowhere)."""
    if layout == "tables":
        files = {"test.csv": "text,label\n" + sentences("b,y", 9), "train.csv": "text,label\n" + sentences("a,x", 9)}
    else:
        frame = pd.DataFrame({"text": ["caf\xe9 \u2603"] * 9, "label": [0, 1, 2] * 3})
        files = {}
        for name in ("test-00000-of-00001.parquet", "train-00000-of-00002.parquet", "train-00001-of-00002.parquet"):
            frame.to_parquet(tmp_path / name)
            files[name] = (tmp_path / name).read_bytes()
    folder = write_folder(tmp_path / "data", files)
    with pytest.raises(DataError) as caught:
        load_data(folder_config(folder), seed=0)
    message = str(caught.value)
    train = sorted(name for name in files if name.startswith("train"))[0]
    assert f"it holds a data set's tables ({', '.join(sorted(files))}), not class files: give each split's file " in (
        message
    )
    assert f"(data.train_file={folder / train})" in message
    assert (f"data.source=hub data.hub_name={folder}" in message) is (layout == "parquet-shards")


@pytest.mark.parametrize(
    ("shards", "to_give"),
    [
        (
            ["data/test-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"],
            "data/train-00000-of-00001.parquet",
        ),
        (["test/0000.parquet", "train/0000.parquet"], "train/0000.parquet"),
    ],
    ids=["hub-download", "split-folders"],
)
def test_folders_of_parquet_shards_are_no_class_folders(tmp_path, shards, to_give):
    """A Hub dataset as downloaded (README.md beside data/ of Parquet shards), or split folders of shards: the flat
    folder of shards was named for what it is, but one level up each folder was a class and each shard a document,
    whose bytes made a false encoding error."""
    frame = pd.DataFrame({"text": ["caf\xe9 \u2603"] * 6, "label": [0, 1] * 3})
    frame.to_parquet(tmp_path / "shard.parquet")
    files = {name: (tmp_path / "shard.parquet").read_bytes() for name in shards}
    folder = write_folder(tmp_path / "dataset", {"README.md": "# A dataset\n", **files})
    with pytest.raises(DataError) as caught:
        load_data(folder_config(folder), seed=0)
    assert str(caught.value) == (
        f"{folder} (data.train_file) holds a data set's tables in its folders ({', '.join(shards)}), not class "
        f"folders of documents: give each split's file (data.train_file={folder / to_give}), or the folder as "
        f"data.source=hub data.hub_name={folder}, which reads a split's Parquet shards"
    )


def test_class_folders_that_each_hold_one_file_of_many_lines_are_warned_about(tmp_path, caplog):
    """rt-polarity.pos put into pos/ and rt-polarity.neg into neg/: a run trained on two rows without a word."""
    files = {f"{label}/rt-polarity.{label}": sentences(label, 5) for label in ("neg", "pos")}
    train = write_folder(tmp_path / "train", files)
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        assert len(all_texts(train)) == 2
    assert (
        f"{train}: each class folder holds a single file (neg/rt-polarity.neg, pos/rt-polarity.pos), of many lines, "
        "read whole as one text: 2 rows in all. If each line is a text, put the files side by side in one folder (a "
        "folder of class files: each named by its class, as neg.txt, pos.txt) and give that folder"
    ) in caplog.text
    caplog.clear()
    one_review_each = write_folder(tmp_path / "short", {"neg/1.txt": "bad\nvery bad", "pos/1.txt": "good\nfine"})
    several = write_folder(tmp_path / "several", {**files, "pos/other.txt": "another review"})
    with caplog.at_level(logging.WARNING, logger=DATA_LOGGER):
        all_texts(one_review_each)
        all_texts(several)
    assert "single file" not in caplog.text


def test_a_folder_to_label_of_class_files_is_read_a_line_per_row_where_their_names_share_their_start(tmp_path, caplog):
    """pipeline.predict's reader: rt-polarity.pos and .neg are read as training reads them, the rows counted only as
    they are read. An inbox of files named apart (two letters, several lines each) stays a row per file, as does
    neg.txt beside pos.txt, which an inbox's documents may be named like."""
    test = write_folder(
        tmp_path / "test", {"rt-polarity.neg": "bad\n\nawful\nworse\n", "rt-polarity.pos": "good\nfine\ngreat\n"}
    )
    with caplog.at_level(logging.INFO, logger=DATA_LOGGER):
        table = open_folder_table(str(test), "utf-8", 2, "--input", "--encoding", classes=["neg", "pos"])
        chunks = list(table.chunks)
    assert table.header == ["text", "label", "id"] and table.row_count is None
    assert [chunk.numbers for chunk in chunks] == [
        ["rt-polarity.neg:1", "rt-polarity.neg:3"],
        ["rt-polarity.neg:4", "rt-polarity.pos:1"],
        ["rt-polarity.pos:2", "rt-polarity.pos:3"],
    ]
    assert chunks[0].records == [["bad", "neg", "rt-polarity.neg:1"], ["awful", "neg", "rt-polarity.neg:3"]]
    assert "a folder of class files" in caplog.text
    letters = {"a.txt": "Dear team,\nthe order is late.\nRegards\n", "b.txt": "Hello,\nplease refund me.\nThanks\n"}
    for files in (letters, {"neg.txt": "bad\nawful\nworse\n", "pos.txt": "good\nfine\ngreat\n"}):
        inbox = write_folder(tmp_path / next(iter(files)).split(".")[0], files)
        table = open_folder_table(str(inbox), "utf-8", None, "--input", "--encoding")
        assert table.header == ["text", "id"] and table.row_count == 2
        assert [chunk.numbers for chunk in table.chunks] == [sorted(files)]


def test_a_folder_to_label_is_class_files_only_where_its_files_name_the_models_classes(tmp_path):
    """An inbox of multi-line tickets named ticket.1001.txt, ticket.1002.txt shares the first part of its names as
    rt-polarity's files do, and was read line by line as classes 1001, 1002: a row per file unless every file's
    class part is one of the model's classes, in any case (POS.txt for pos)."""
    ticket = "Dear support,\nmy order has not arrived.\nIt was due last week.\nRegards\n"
    inbox = write_folder(tmp_path / "inbox", {f"ticket.{number}.txt": ticket for number in (1001, 1002, 1003)})
    table = open_folder_table(str(inbox), "utf-8", None, "--input", "--encoding", classes=["neg", "pos"])
    assert table.header == ["text", "id"] and table.row_count == 3
    lines = {"NEG.txt": "bad\nawful\nworse\n", "POS.txt": "good\nfine\ngreat\n"}
    named = write_folder(tmp_path / "named", lines)
    table = open_folder_table(str(named), "utf-8", None, "--input", "--encoding", classes=["neg", "pos"])
    assert table.header == ["text", "label", "id"] and len([row for c in table.chunks for row in c.records]) == 6
    other = open_folder_table(str(named), "utf-8", None, "--input", "--encoding", classes=["spam", "ham"])
    assert other.header == ["text", "id"] and other.row_count == 2


def test_documentation_beside_class_files_is_left_aside(tmp_path, caplog):
    """UCI's readme beside its data became a class; documentation (any case, any ending) is not a class's lines."""
    files = {"neg.txt": sentences("neg", 6), "pos.txt": sentences("pos", 6), "README.md": sentences("about", 9)}
    train = write_folder(tmp_path / "train", {**files, "LICENSE": sentences("terms", 9)})
    with caplog.at_level(logging.INFO, logger=DATA_LOGGER):
        assert load_data(folder_config(train), seed=0).labels == ["neg", "pos"]
    assert f"{train}: 2 files left aside, documentation rather than a class's lines: LICENSE, README.md" in caplog.text


@pytest.mark.parametrize(
    ("files", "hint"),
    [
        (  # UCI's SMS Spam Collection as its zip holds it: one file of "label<TAB>text" lines, and a readme
            {
                "SMSSpamCollection": "".join(f"{'ham' if i % 3 else 'spam'}\tmessage {i}\n" for i in range(20)),
                "readme": sentences("about", 9),
            },
            r"its files are no class files: most of their lines already hold a label .*data\.column_names",
        ),
        (  # UCI's sentiment labelled sentences: "text<TAB>0" per line, a file per source
            {
                f"{source}_labelled.txt": "".join(f"{source} sentence {i}\t{i % 2}\n" for i in range(20))
                for source in ("amazon_cells", "imdb", "yelp")
            },
            r"already hold a label \(after a tab, or fastText's __label__\)",
        ),
        (  # fastText lines, a file per split named otherwise than a split
            {f"{name}.txt": "".join(f"__label__{name} text {i}\n" for i in range(9)) for name in ("a", "b")},
            r"already hold a label",
        ),
        (  # texts and their labels in parallel files
            {"texts.txt": sentences("some", 20), "labels.txt": "pos\nneg\n" * 10},
            r"one file of labels: labels in a separate file .*paste train_labels\.txt train_text\.txt",
        ),
    ],
    ids=["sms-spam-collection", "sentiment-labelled-sentences", "fasttext-lines", "parallel-texts-and-labels"],
)
def test_labelled_lines_and_parallel_files_are_no_class_files_and_say_how_to_read_them(tmp_path, files, hint):
    train = write_folder(tmp_path / "train", files)
    with pytest.raises(DataError, match=r"has no class folders: .*" + hint):
        load_data(folder_config(train), seed=0)


def test_class_files_of_as_many_lines_are_still_class_files(tmp_path):
    """rt-polarity.pos and .neg hold 5,331 sentences each: as many lines, but neither file is one of labels."""
    train = write_folder(
        tmp_path / "rt", {"rt-polarity.neg": sentences("neg", 40), "rt-polarity.pos": sentences("pos", 40)}
    )
    assert load_data(folder_config(train), seed=0).labels == ["neg", "pos"]


def test_a_labelled_folder_of_class_files_is_scored_for_the_models_classes(tmp_path):
    """pipeline.evaluate's reader: class files of the model's classes, a line per row."""
    folder = write_folder(tmp_path / "test", {"neg.txt": "bad\nawful\nworse\n", "pos.txt": "good\nfine\ngreat\n"})
    data = DataConfig(source="files", train_file="unused.csv")
    reading = {"names": True, "ids": False, "index_base": 0}
    dataset, _, read = read_labelled_file(data, str(folder), "--input", ["neg", "pos"], reading)
    assert labels_of(dataset).tolist() == [0, 0, 0, 1, 1, 1]
    assert dataset["row_id"][:2] == ["neg.txt:1", "neg.txt:2"] and read["class_folders"] is None


def ag_news_folders(csv_path: Path, root: Path, rows_per_class: int) -> Path:
    """AG News rows of three classes written one file per row, as BBC News ships (Sci/Tech cannot name a folder)."""
    counts = {"1": 0, "2": 0, "3": 0}
    names = {"1": "World", "2": "Sports", "3": "Business"}
    with open(csv_path, newline="", encoding="utf-8") as handle:
        for index, title, description in csv.reader(handle):
            if counts.get(index, rows_per_class) < rows_per_class:
                counts[index] += 1
                write_folder(root, {f"{names[index]}/{counts[index]:03d}.txt": f"{title}\n\n{description}\n"})
    return root


@pytest.mark.slow  # 5-10 s of training or export: the default tier stays under five minutes
def test_a_run_trains_and_is_described_from_class_folders(tmp_path, tiny_run_config, ag_news_test_csv, capsys):
    from pipeline import finetune
    from pipeline.evaluate import main as evaluate_main
    from pipeline.run.directory import PREDICTION_ROW_ID, RunDir

    train = ag_news_folders(ag_news_test_csv, tmp_path / "news" / "train", 30)
    config = tiny_run_config(
        "run.name=folders",
        f"data.train_file={train}",
        f"data.test_file={train}",  # overridden below: a test folder of its own
        "data.column_names=null",
        "data.text_columns=[text]",
        "data.label_column=label",
        "data.label_names=null",
        "data.label_index_base=null",
        "train.max_steps=1",
        "eval.baseline=none",
        "eval.predict_speed_rows=0",
    )
    test = write_folder(tmp_path / "news" / "test", {"Sports/a.txt": "match report", "World/b.txt": "summit talks"})
    config.data.test_file = str(test)
    metrics = finetune.run(config)
    run = RunDir(config.run_dir)
    assert metrics["labels"] == ["Business", "Sports", "World"]
    assert metrics["data"]["class_folders"] == {
        "train": {"Business": 30, "Sports": 30, "World": 30},
        "test": {"Sports": 1, "World": 1},
    }
    with open(run.predictions_path, newline="", encoding="utf-8") as handle:
        assert sorted(row[PREDICTION_ROW_ID] for row in csv.DictReader(handle)) == ["Sports/a.txt", "World/b.txt"]
    card = (run.model_dir / "README.md").read_text(encoding="utf-8")
    assert "files per class: train: `Business` 30, `Sports` 30, `World` 30; test: `Sports` 1, `World` 1." in card
    assert "the `text` column" not in card.split("## Training data")[1].split("\n## ")[0]
    assert json.loads(run.metrics_path.read_text())["data"]["sizes"]["test"] == 2

    # pipeline.evaluate on a folder of new documents: the model's classes (here one of them), the rest left out.
    more = write_folder(tmp_path / "news" / "more", {"Business/1.txt": "shares fell", "Business/2.txt": "profits rose"})
    write_folder(more, {"unsup/1.txt": "unlabelled"})
    scored = tmp_path / "scored"
    assert evaluate_main(["--model", str(run.path), "--input", str(more), "--output", str(scored)]) == 0
    scored_metrics = json.loads(RunDir(scored).metrics_path.read_text())
    assert scored_metrics["data"]["class_folders"] == {"test": {"Business": 2}}
    assert scored_metrics["evaluation"]["rows"] == 2 and scored_metrics["test"]["num_samples"] == 2
    # Scored again with --overwrite: the earlier evaluation is replaced; an output inside the folder is refused.
    assert evaluate_main(["--model", str(run.path), "--input", str(more), "--output", str(scored), "--overwrite"]) == 0
    inside = ["--model", str(run.path), "--input", str(more), "--output", str(more / "scored")]
    assert evaluate_main(inside) == 1
    assert f"overlaps the input folder {more}" in capsys.readouterr().err
