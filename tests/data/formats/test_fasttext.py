"""fastText files (`__label__sports Some text`) as a data source: the reader (pipeline/data/formats.py), how a file
is told to be one, stage 1 reading it by data.file_format alone, and prediction and evaluation pointed at one.

Files are written into tmp_path by hand, as fastText's own datasets and the tutorials' dumps lay them out.
"""

from __future__ import annotations

import csv
import gzip
import json
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline.common.errors import DataError
from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError, DataConfig
from pipeline.data.load import load_data, read_labelled_file
from pipeline.data.splits import labels_of
from pipeline.data.tables import open_table
from pipeline.predict import main as predict_main
from tests.helpers import tiny_bert_classifier

TOPICS = {"sports": "goal", "tech": "chip", "food": "bread"}


def read_rows(path: Path, **options) -> tuple[list[str], list[list], list[int], str]:
    """Header, records, their line numbers and the format, as open_table reads the file."""
    with open_table(str(path), **options) as table:
        chunks = list(table.chunks)
        return (
            table.header,
            [r for c in chunks for r in c.records],
            [n for c in chunks for n in c.numbers],
            table.format,
        )


def error_of(path: Path, **options) -> str:
    with pytest.raises(DataError) as caught:
        read_rows(path, **options)
    return str(caught.value)


def topic_lines(count: int, labels_last: bool = False) -> list[str]:
    """`count` single-label lines, the three topics in turn, each text its topic's word and its row number."""
    lines = []
    for index in range(count):
        topic = list(TOPICS)[index % 3]
        text = f"story {index} about the {TOPICS[topic]}"
        lines.append(f"{text} __label__{topic}" if labels_last else f"__label__{topic} {text}")
    return lines


def write_lines(path: Path, lines: list[str], ending: str = "\n", encoding: str = "utf-8") -> Path:
    path.write_bytes((ending.join(lines) + ending).encode(encoding))
    return path


# ---------------------------------------------------------------------------------------------------------------
# The reader


def test_each_line_is_a_row_of_its_labels_and_the_rest_of_the_line(tmp_path):
    path = write_lines(
        tmp_path / "cooking.train",
        [
            "__label__baking __label__bread How do I make my sourdough rise more?",
            "",  # a blank line is no row; the next keeps its own line number
            "__label__2 Great product, works well",
            "No label on this line",
            "__label__sauce",
            "  __label__tea\tTabbed  text  with  spaces ",
        ],
    )
    header, records, numbers, kind = read_rows(path, file_format="fasttext")
    assert (header, kind) == (["label", "text"], "fasttext")
    assert records == [
        [["baking", "bread"], "How do I make my sourdough rise more?"],
        ["2", "Great product, works well"],
        [None, "No label on this line"],
        ["sauce", ""],
        ["tea", "Tabbed  text  with  spaces"],
    ]
    assert numbers == [1, 3, 4, 5, 6]


@pytest.mark.parametrize(
    ("line", "labels", "text"),
    [
        ("Great product __label__2", "2", "Great product"),  # labels at the end of the line
        ("Great product __label__a __label__b", ["a", "b"], "Great product"),
        ("__label__1, Great product", "1", "Great product"),  # the comma of the CSV file it was made from
        ("__label__1 , great product", "1", "great product"),  # fastText's own dbpedia.train
        ("__label__1,Great product", "1", "Great product"),
        ("__label__a,__label__b Great", ["a", "b"], "Great"),
        ("__label__a __label__a Repeated", "a", "Repeated"),  # each label once
        ("__label__a not __label__b inside", "a", "not __label__b inside"),  # a label word within the text is text
        ("Great product, __label__2 ,", "2", "Great product"),  # one comma each side of a trailing label is dropped
        ("Great product ,, __label__2", "2", "Great product ,"),
        ("Ends with a comma ,", None, "Ends with a comma ,"),  # no label: the line is its text
        ("Ends in a word__label__x", None, "Ends in a word__label__x"),
    ],
)
def test_labels_at_either_end_and_comma_separated_labels(tmp_path, line, labels, text):
    path = write_lines(tmp_path / "one.txt", [line])
    assert read_rows(path, file_format="fasttext")[1] == [[labels, text]]


def test_a_long_run_of_spaces_before_a_trailing_label_is_read_at_once(tmp_path):
    """The trailing labels were found by a regular expression searched from the line's left, which tries every
    position: 50,000 spaces took 15 s, 100,000 a minute. The line is now read from its end."""
    path = write_lines(tmp_path / "padded.txt", ["__label__a start" + " " * 100_000 + "end __label__b"])
    started = time.perf_counter()
    assert read_rows(path, file_format="fasttext")[1] == [[["a", "b"], "start" + " " * 100_000 + "end"]]
    assert time.perf_counter() - started < 5


def test_crlf_byte_order_mark_other_encodings_and_gzip_read_as_for_every_text_format(tmp_path):
    lines = ["__label__café Crème brûlée recipe", "__label__thé Earl grey"]
    expected = [["café", "Crème brûlée recipe"], ["thé", "Earl grey"]]
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    latin = write_lines(tmp_path / "latin.txt", lines, encoding="latin-1")
    wide = write_lines(tmp_path / "wide.txt", lines, "\r\n", encoding="utf-16")
    packed = tmp_path / "packed.txt.gz"
    packed.write_bytes(gzip.compress(bom.read_bytes()))
    assert read_rows(bom)[1] == read_rows(packed)[1] == expected
    assert read_rows(latin, encoding="latin-1")[1] == read_rows(wide, encoding="utf-16")[1] == expected
    assert read_rows(latin)[1] == expected  # data.encoding: auto reads a file that holds no UTF-8 as Windows-1252
    message = error_of(latin, file_format="fasttext", encoding="utf-8")
    assert "latin.txt, line 1" in message and "data.encoding to auto" in message and "latin-1" not in message


def test_a_label_prefix_without_a_name_names_the_file_and_line(tmp_path):
    path = write_lines(tmp_path / "bad.txt", ["__label__a Fine", "__label__ Nameless label"])
    message = error_of(path, file_format="fasttext")
    assert "bad.txt, line 2" in message and "__label__<name>" in message


def test_a_file_of_blank_lines_is_empty(tmp_path):
    path = write_lines(tmp_path / "blank.txt", ["", "   ", ""])
    assert "is empty" in error_of(path, file_format="fasttext")


def test_another_label_prefix_reads_a_file_written_with_fasttext_label_option(tmp_path):
    path = write_lines(tmp_path / "custom.txt", ["__class__pos Loved it __label__kept", "__class__neg Hated it"])
    records = read_rows(path, file_format="fasttext", label_prefix="__class__")[1]
    assert records == [["pos", "Loved it __label__kept"], ["neg", "Hated it"]]


def test_chunks_hold_the_same_rows_as_a_whole_read(tmp_path):
    path = write_lines(tmp_path / "many.txt", topic_lines(25))
    with open_table(str(path), chunk_size=10) as table:
        sizes = [len(chunk.records) for chunk in table.chunks]
    assert sizes == [10, 10, 5]


# ---------------------------------------------------------------------------------------------------------------
# Telling a fastText file by its content


@pytest.mark.parametrize("name", ["train.txt", "cooking.valid", "amazon.train", "noending"])
def test_a_name_of_no_known_format_is_fasttext_when_its_first_lines_start_with_the_prefix(tmp_path, name):
    path = write_lines(tmp_path / name, topic_lines(30))
    assert read_rows(path)[3] == "fasttext"


def test_a_utf16_file_of_no_known_ending_is_told_by_its_mark_then_its_format(tmp_path):
    """Notepad's "Unicode" .txt: its start, decoded as UTF-8, shows no prefix, and the format error sent the user
    to data.file_format, after which the encoding error came; its byte-order mark says its encoding first, and read
    in it, its start shows the prefix (by default; a single-byte encoding given is told what the mark says)."""
    path = write_lines(tmp_path / "train.txt", topic_lines(30), encoding="utf-16")
    assert read_rows(path)[3] == "fasttext" == read_rows(path, encoding="utf-16")[3]
    message = error_of(path, encoding="latin-1")
    assert "UTF-16 byte-order mark" in message and "data.encoding" in message


def test_a_file_whose_first_lines_do_not_all_start_with_the_prefix_needs_its_format_said(tmp_path):
    """Labels at the end of the line, or a line without a label among the first: the name still tells nothing."""
    for name, lines in (("last.txt", topic_lines(5, labels_last=True)), ("gap.txt", ["plain text", *topic_lines(5)])):
        message = error_of(write_lines(tmp_path / name, lines))
        assert "cannot tell the file format" in message and "fasttext" in message
        assert read_rows(tmp_path / name, file_format="fasttext")[3] == "fasttext"


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("labelled.csv", {}),
        ("labelled.txt", {"file_format": "tsv", "column_names": ["text"]}),  # as a plain file of one text per line
    ],
)
def test_a_fasttext_file_read_as_csv_or_tsv_is_refused_not_read_with_its_labels_in_its_texts(tmp_path, name, options):
    path = write_lines(tmp_path / name, topic_lines(5))
    message = error_of(path, **options)
    assert f"{name}: its first lines start with __label__" in message
    assert "set data.file_format to fasttext" in message


# ---------------------------------------------------------------------------------------------------------------
# Stage 1


def files_config(train: Path, **overrides) -> DataConfig:
    return DataConfig(source="files", train_file=str(train), **overrides)


def test_a_fasttext_file_trains_by_its_format_alone_and_reads_as_the_same_rows_in_jsonl(tmp_path):
    lines = topic_lines(60)
    fasttext = write_lines(tmp_path / "train.txt", lines)
    with open(tmp_path / "train.jsonl", "w", encoding="utf-8") as handle:
        for line in lines:
            label, text = line.split(" ", 1)
            handle.write(json.dumps({"label": label.removeprefix("__label__"), "text": text}) + "\n")
    from_fasttext = load_data(files_config(fasttext), seed=1)
    from_jsonl = load_data(files_config(tmp_path / "train.jsonl"), seed=1)
    assert from_fasttext.labels == from_jsonl.labels == sorted(TOPICS)
    for split in ("train", "validation", "test"):
        assert from_fasttext.splits[split].to_list() == from_jsonl.splits[split].to_list()


def test_several_labels_in_a_single_label_task_name_the_file_and_line_and_the_multi_label_task(tmp_path):
    path = write_lines(tmp_path / "train.txt", [*topic_lines(9), "__label__sports __label__food Cup final dinner"])
    with pytest.raises(DataError) as caught:
        load_data(files_config(path), seed=1)
    assert "train.txt, line 10" in str(caught.value) and "data.task=multi_label" in str(caught.value)


def test_a_line_without_a_label_is_an_incomplete_row_in_a_single_label_task(tmp_path):
    path = write_lines(tmp_path / "train.txt", [*topic_lines(30), "A line nobody labelled"])
    with pytest.raises(DataError) as caught:
        load_data(files_config(path), seed=1)
    assert "train.txt, line 31" in str(caught.value) and "label is empty" in str(caught.value)
    loaded = load_data(files_config(path, incomplete_rows="drop"), seed=1)
    assert [(row.row_id, row.text) for row in loaded.removed] == [("31", "A line nobody labelled")]


def test_a_line_with_labels_but_no_text_is_an_empty_text(tmp_path):
    path = write_lines(tmp_path / "train.txt", [*topic_lines(30), "__label__food"])
    with pytest.raises(DataError) as caught:
        load_data(files_config(path), seed=1)
    assert "train.txt, line 31: empty text in text" in str(caught.value)


MULTI_LABEL_SETS = [["baking", "bread"], ["bread"], [], ["sauce", "baking"], ["sauce"]] * 12


def test_multi_label_lines_give_the_same_label_sets_as_a_json_list_column(tmp_path):
    """An empty set (a line without labels) is a row negative for every class, as an empty list is."""
    lines, records = [], []
    for index, labels in enumerate(MULTI_LABEL_SETS):
        text = f"question {index} on {' and '.join(labels) or 'nothing'}"
        lines.append(" ".join([*(f"__label__{label}" for label in labels), text]))
        records.append(json.dumps({"label": labels, "text": text}))
    fasttext = write_lines(tmp_path / "cooking.train", lines)
    jsonl = write_lines(tmp_path / "cooking.jsonl", records)
    settings = {"task": "multi_label", "file_format": "fasttext"}
    from_fasttext = load_data(files_config(fasttext, **settings), seed=2)
    from_jsonl = load_data(files_config(jsonl, **{**settings, "file_format": "jsonl"}), seed=2)
    assert from_fasttext.labels == from_jsonl.labels == ["baking", "bread", "sauce"]
    for split in ("train", "validation", "test"):
        np.testing.assert_array_equal(labels_of(from_fasttext.splits[split]), labels_of(from_jsonl.splits[split]))
        assert from_fasttext.splits[split]["text"] == from_jsonl.splits[split]["text"]
    assert (labels_of(from_fasttext.splits["train"]).sum(axis=1) == 0).any()


def test_a_multi_label_line_s_one_label_is_not_split_at_the_label_separator(tmp_path):
    """A line's labels are whitespace-separated words: `__label__c|sharp` alone was split at data.label_separator
    into the classes c and sharp, without a word, where beside another label it was an error; now always the error
    a JSON list's label holding the separator gets, naming the line."""
    lines = [
        f"__label__c|sharp question {index}" if index % 2 else f"__label__java question {index}" for index in range(20)
    ]
    path = write_lines(tmp_path / "tags.train", lines)
    with pytest.raises(
        DataError, match=r"tags.train, line 2, column 'label': label 'c\|sharp' contains data.label_sep"
    ):
        load_data(files_config(path, task="multi_label"), seed=1)
    assert load_data(files_config(path, task="multi_label", label_separator=";"), seed=1).labels == ["c|sharp", "java"]


def test_data_label_prefix_is_read_by_stage_1_and_checked_when_loaded(tmp_path):
    lines = [line.replace("__label__", "__class__") for line in topic_lines(30)]
    path = write_lines(tmp_path / "train.txt", lines)
    config = load_config(None, ["data.source=files", f"data.train_file={path}", "data.label_prefix=__class__"])
    assert load_data(config.data, seed=1).labels == sorted(TOPICS)
    assert load_config(None).data.label_prefix == "__label__"
    for prefix in ("''", "'__label '"):
        with pytest.raises(ConfigError, match="data.label_prefix"):
            load_config(None, [f"data.label_prefix={prefix}"])


def test_evaluation_reads_a_fasttext_file_with_a_run_trained_on_csv(tmp_path):
    """pipeline.evaluate reads its file by the run's data settings: a run trained on a CSV file of `text`, `label`
    scores a fastText .txt file (told by its content) with its labels read against the model's classes."""
    path = write_lines(tmp_path / "new.txt", topic_lines(6))
    reading = {"names": True, "ids": False, "index_base": 0}
    dataset, removed, _ = read_labelled_file(
        files_config(tmp_path / "train.csv"), str(path), "--input", ["food", "sports", "tech"], reading
    )
    assert dataset["text"][:2] == ["story 0 about the goal", "story 1 about the chip"]
    assert dataset["label"][:3] == [1, 2, 0] and removed == []


# ---------------------------------------------------------------------------------------------------------------
# Prediction


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, bert_tokenizer) -> Path:
    """A tiny random BERT saved as a finished run trained on a `text` column."""
    run = tmp_path_factory.mktemp("runs") / "tiny"
    tiny_bert_classifier(bert_tokenizer, sorted(TOPICS), layers=1).save_pretrained(run / "model")
    bert_tokenizer.save_pretrained(run / "model")
    (run / "config.yaml").write_text("data:\n  text_columns: [text]\n")
    (run / "metrics.json").write_text(json.dumps({"labels": sorted(TOPICS), "tokenization": {"max_length": 32}}))
    return run


def predict_rows(run_dir: Path, source: Path, output: Path, *options: str) -> list[dict[str, str]]:
    predict_main(["--model", str(run_dir), "--input", str(source), "--output", str(output), "--no-progress", *options])
    with open(output, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_prediction_reads_a_fasttext_file_s_texts_without_their_labels(tmp_path, run_dir):
    """Each row is labelled as its text alone is (the same text written as a one-column CSV), and written back with
    its own labels beside it."""
    lines = [*topic_lines(5), "__label__sports __label__food Cup final dinner", "Unlabelled line"]
    source = write_lines(tmp_path / "test.txt", lines)
    options = ("--prefix", "pred_", "--probabilities")  # pred_: the file has a label column of its own
    labelled = predict_rows(run_dir, source, tmp_path / "out.csv", "--format", "fasttext", *options)
    texts = tmp_path / "texts.csv"
    with open(texts, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["text"], *([row["text"]] for row in labelled)])
    alone = predict_rows(run_dir, texts, tmp_path / "alone.csv", *options)
    assert [row["text"] for row in labelled] == [line.split(" ", 1)[1] for line in topic_lines(5)] + [
        "Cup final dinner",
        "Unlabelled line",
    ]
    assert [row["label"] for row in labelled] == ["sports", "tech", "food", "sports", "tech", '["sports", "food"]', ""]
    prediction_columns = [column for column in labelled[0] if column.startswith("pred_")]
    assert [[row[c] for c in prediction_columns] for row in labelled] == [
        [row[c] for c in prediction_columns] for row in alone
    ]


def test_prediction_on_a_fasttext_file_read_as_a_column_of_text_is_refused(tmp_path, run_dir, capsys):
    source = write_lines(tmp_path / "test.txt", topic_lines(5))
    with pytest.raises(SystemExit):
        predict_rows(run_dir, source, tmp_path / "out.csv", "--format", "tsv", "--column-names", "text")
    assert "set --format to fasttext" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()
