"""data.split_column: one file whose column says each row's split (MASSIVE's `partition`, Kaggle's `split`).

Small files written to tmp_path; the Hub through a folder that `save_to_disk` wrote. The end-to-end run and the
evaluation of it use the tiny BERT and the shared AG News rows (skipped when absent).
"""

import csv
import json

import datasets
import pytest

from pipeline import finetune
from pipeline.card.facts import read_facts
from pipeline.card.write import render_card
from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError, DataConfig
from pipeline.data.load import DataError, load_data
from pipeline.data.split_column import SPLIT_VALUES
from pipeline.evaluate import main as evaluate_main
from pipeline.run.directory import RunDir
from pipeline.run.record import RunRecord
from tests.helpers import MINILM_CONFIG, reset_accelerate, tiny_run_overrides


def write_rows(path, rows, header=("text", "label", "partition")):
    """A CSV of `rows` (tuples in `header` order) under a header: row k of `rows` is line k + 2 of the file."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def rows_for(partitions, classes=("pos", "neg")):
    """One row per partition value, classes alternating, every text its own."""
    return [(f"story number {i}", classes[i % len(classes)], value) for i, value in enumerate(partitions)]


def split_config(path, **overrides):
    settings = {"source": "files", "train_file": str(path), "split_column": "partition", "deduplicate": "none"}
    return DataConfig(**{**settings, **overrides})


def test_rows_land_in_the_split_their_column_names_keeping_their_line_numbers(tmp_path):
    partitions = ["train", "dev", "train", "test", "train", "train", "valid", "TEST ", " Train", "train", "Val", "test"]
    path = write_rows(tmp_path / "all.csv", rows_for(partitions))

    loaded = load_data(split_config(path), seed=0)

    ids = loaded.row_ids()  # no id column: each row is named by its line in the file (the header is line 1)
    assert ids == {"train": ["2", "4", "6", "7", "10", "11"], "validation": ["3", "8", "12"], "test": ["5", "9", "13"]}
    assert loaded.splits["validation"]["text"] == ["story number 1", "story number 6", "story number 10"]
    assert loaded.labels == ["neg", "pos"]
    assert loaded.summary["carved_from_train"] == {}
    assert loaded.summary["split_column"] == {
        "column": "partition",
        "rows": {"train": 6, "validation": 3, "test": 3},
        "values": {
            "train": "train",
            "dev": "validation",
            "test": "test",
            "valid": "validation",
            "TEST": "test",
            "Train": "train",
            "Val": "validation",
        },
    }


def test_every_synonym_names_its_split_and_a_file_without_the_setting_has_no_record(tmp_path):
    for value, split in SPLIT_VALUES.items():
        path = write_rows(tmp_path / f"{value}.csv", rows_for(["train"] * 8 + [value.upper()] * 2))
        rows = load_data(split_config(path), seed=0).summary["split_column"]["rows"]  # as read, before carving
        assert rows[split] == (10 if split == "train" else 2), value
    path = write_rows(tmp_path / "all.csv", rows_for(["train"] * 8))
    assert load_data(split_config(path, split_column=None), seed=0).summary["split_column"] is None


def test_a_split_the_column_never_names_is_carved_from_train(tmp_path):
    """MASSIVE without its dev rows, or a Kaggle file of train and test: validation is carved from the train rows."""
    path = write_rows(tmp_path / "all.csv", rows_for(["train"] * 20 + ["test"] * 4))

    loaded = load_data(split_config(path, validation_fraction=0.2), seed=0)

    assert loaded.summary["carved_from_train"] == {"validation": 0.2}
    assert loaded.summary["sizes"] == {"train": 16, "validation": 4, "test": 4}
    assert loaded.row_ids()["test"] == ["22", "23", "24", "25"]
    assert set(loaded.row_ids()["validation"]) <= {str(line) for line in range(2, 22)}
    assert loaded.summary["split_column"]["rows"] == {"train": 20, "validation": 0, "test": 4}


# The advice that ends a message about a split carved from train when the file is divided by its split column.
MARK_VALIDATION = "mark rows as validation (or valid, val, dev) in the column 'partition' (data.split_column)"


@pytest.mark.parametrize(
    ("rows", "overrides", "message"),
    [
        (  # too few train rows to carve validation from
            rows_for(["train"] * 4 + ["test"] * 2),
            {"validation_fraction": 0.9},
            "The train split has 4 rows: too few to carve a validation split of 0.9 (data.validation_fraction); "
            f"add rows or {MARK_VALIDATION}",
        ),
        (  # a class with one train row cannot keep a row in train and one in validation
            rows_for(["train"] * 6 + ["test"] * 2) + [("the one odd story", "odd", "train")],
            {},
            "cannot carve stratified validation out of train (data.validation_fraction): a class needs 2 rows, one in "
            "train and one in each carved split, but the class 'odd' (1 row) has fewer; add rows, drop the class, or "
            f"{MARK_VALIDATION}",
        ),
        (  # the test rows the column names all repeat a train text
            rows_for(["train"] * 8 + ["dev"] * 2) + [("story number 0", "pos", "test")] * 2,
            {"deduplicate": "across"},
            "The test split is empty: data.deduplicate: across removed all 2 rows of {path} (data.train_file, its test "
            "rows by data.split_column), as each repeats a text of train or validation (including 1 repeated within "
            "test); set data.deduplicate=within or none to keep them (their scores then count texts seen before), or "
            "mark rows whose texts are not in train or validation as test in the column 'partition' "
            "(data.split_column)",
        ),
    ],
)
def test_a_message_about_a_split_the_column_does_not_give_says_to_mark_rows_not_to_give_a_file(
    tmp_path, rows, overrides, message
):
    """Split files are refused beside data.split_column: the advice is the column and its values for the split."""
    path = write_rows(tmp_path / "all.csv", rows)
    with pytest.raises(DataError) as caught:
        load_data(split_config(path, **overrides), seed=0)
    assert str(caught.value) == message.format(path=path)


def test_carving_more_than_asked_from_the_train_rows_advises_marking_rows(tmp_path, caplog):
    classes = [f"c{c}" for c in range(10)]
    path = write_rows(tmp_path / "all.csv", rows_for(["train"] * 30 + ["test"] * 10, classes))
    with caplog.at_level("WARNING", logger="pipeline.data.load"):
        load_data(split_config(path, validation_fraction=0.1), seed=0)
    assert "asks for 3 of the 30 train rows; to keep a row of every class in validation it holds 10" in caplog.text
    assert f"add rows to the small classes, or {MARK_VALIDATION}" in caplog.text
    assert "file" not in caplog.text


def test_the_classes_are_those_of_the_train_rows_only(tmp_path):
    """As with separate files: a class only the test rows have is an unknown label there, not a class."""
    rows = rows_for(["train"] * 6) + [("story only in test", "odd", "test")]
    path = write_rows(tmp_path / "all.csv", rows)
    with pytest.raises(DataError, match=r"all\.csv, line 8.*'odd'"):
        load_data(split_config(path), seed=0)


def test_the_split_column_of_a_json_lines_file_and_an_id_column(tmp_path):
    path = tmp_path / "all.jsonl"
    lines = [
        {"id": f"r{i}", "text": f"story {i}", "label": i % 2, "split": value}
        for i, value in enumerate(["train", "train", "train", "train", "dev", "test", "test", "train"])
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    loaded = load_data(split_config(path, split_column="split", id_column="id"), seed=0)

    assert loaded.row_ids() == {"train": ["r0", "r1", "r2", "r3", "r7"], "validation": ["r4"], "test": ["r5", "r6"]}


@pytest.mark.parametrize(
    ("partitions", "message"),
    [
        (
            ["train", "unsup", "test", "Unsup", "tset", "unsup"],
            "all.csv, line 3, column 'partition' (data.split_column): 'unsup' names no split (and 3 more: lines 5, "
            "6, 7); other values naming no split: 'Unsup', 'tset'; the accepted values (in any case): train; "
            "validation, valid, val, dev; test; relabel or remove these rows",
        ),
        (
            ["train", "test", "  ", "train", ""],
            "all.csv, line 4, column 'partition' (data.split_column): no split given (and 1 more: line 6); give "
            "each row one of train; validation, valid, val, dev; test, or remove the row",
        ),
        (
            ["dev", "test", "test"],
            "all.csv, column 'partition' (data.split_column): no row is in train (rows per split: validation 1, "
            "test 2); the model learns from the train rows, so mark some as train",
        ),
    ],
)
def test_a_value_that_names_no_split_is_an_error_naming_the_file_line_and_column(tmp_path, partitions, message):
    path = write_rows(tmp_path / "all.csv", rows_for(partitions))
    with pytest.raises(DataError) as caught:
        load_data(split_config(path), seed=0)
    assert str(caught.value) == f"{tmp_path}/{message}"


def test_a_missing_split_column_names_the_setting(tmp_path):
    path = write_rows(tmp_path / "all.csv", rows_for(["train"] * 4))
    with pytest.raises(DataError, match=r"data\.split_column"):
        load_data(split_config(path, split_column="fold"), seed=0)


def test_a_hub_dataset_with_only_a_train_split_is_divided_and_one_with_a_test_split_refused(tmp_path):
    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["neg", "pos"]),
            "partition": datasets.Value("string"),
        }
    )
    partitions = ["train"] * 8 + ["dev"] * 2 + ["test"] * 2
    rows = {"text": [f"saved story {i}" for i in range(12)], "label": [i % 2 for i in range(12)]}
    whole = datasets.Dataset.from_dict({**rows, "partition": partitions}, features=features)
    whole.save_to_disk(str(tmp_path / "single"))
    datasets.DatasetDict({"train": whole, "test": whole}).save_to_disk(str(tmp_path / "dict"))

    loaded = load_data(DataConfig(source="hub", hub_name=str(tmp_path / "single"), split_column="partition"), seed=0)

    assert loaded.summary["sizes"] == {"train": 8, "validation": 2, "test": 2}
    assert loaded.row_ids()["test"] == ["11", "12"]  # record numbers in the saved split
    with pytest.raises(DataError) as caught:
        load_data(DataConfig(source="hub", hub_name=str(tmp_path / "dict"), split_column="partition"), seed=0)
    assert str(caught.value) == (
        f"data.split_column 'partition': Hub dataset '{tmp_path}/dict' split 'test' (data.hub_name) already holds "
        "the test rows; the column divides a source that has only a train split: unset it"
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["data.test_file=test.csv"],
            "data.split_column: the column 'partition' says which rows are validation and test, and data.test_file "
            "gives them too; unset one (a file to score a trained run: python -m pipeline.evaluate)",
        ),
        (
            ["data.validation_file=dev.csv"],
            "data.split_column: the column 'partition' says which rows are validation and test, and "
            "data.validation_file gives them too; unset one (a file to score a trained run: python -m "
            "pipeline.evaluate)",
        ),
        (
            ["data.label_column=Partition"],
            "data.split_column: 'partition' is also read by data.label_column; the split column only says which "
            "split a row is in, name another column",
        ),
        (
            ["data.text_columns=[title, partition]"],
            "data.split_column: 'partition' is also read by data.text_columns; the split column only says which "
            "split a row is in, name another column",
        ),
        (
            ["data.task=multi_label", "data.label_columns=[toxic, partition]"],
            "data.split_column: 'partition' is also read by data.label_columns; the split column only says which "
            "split a row is in, name another column",
        ),
        (
            ["data.id_column=partition"],
            "data.split_column: 'partition' is also read by data.id_column; the split column only says which "
            "split a row is in, name another column",
        ),
        (
            ["data.split_column=' '"],
            "data.split_column: empty; name the column that says each row's split, or leave it unset",
        ),
    ],
)
def test_the_config_check_refuses_a_split_column_beside_split_files_or_read_as_another_column(overrides, message):
    base = ["data.source=files", "data.train_file=all.csv", "data.split_column=partition"]
    with pytest.raises(ConfigError) as caught:
        load_config(None, base + overrides)
    assert str(caught.value) == message


def test_the_split_column_with_a_test_file_is_accepted_for_a_hub_source_which_reads_no_file():
    config = load_config(None, ["data.split_column=partition", "data.test_file=test.csv"])
    assert config.data.split_column == "partition"


def test_the_model_card_says_where_the_splits_came_from(tmp_path):
    record = {"column": "partition", "rows": {"train": 8, "validation": 0, "test": 2}, "values": {}}
    lines = card_lines(tmp_path, {"split_column": record, "carved_from_train": {"validation": 0.1}, "seed": 0})
    assert "Each row's split is the `partition` column of the train data (train 8, test 2 rows)." in lines
    assert "The validation split is 10% of the source's train split, held out stratified by label with seed 0." in lines
    assert not any("`partition`" in line for line in card_lines(tmp_path, {"seed": 0}))


def card_lines(tmp_path, data_record):
    """The lines of the model card of a run whose config.yaml and metrics.json are these (no other record)."""
    config = {"data": {"source": "files", "train_file": "data/all.csv", "split_column": "partition"}}
    metrics = {"labels": ["neg", "pos"], "data": data_record}
    return render_card(read_facts(RunDir(tmp_path), config, RunRecord.from_dict(metrics))).text.splitlines()


def write_ag_news_rows(source, path, count, split=None):
    """The first `count` rows of an AG News CSV under a header, with a `split` column when `split` is given."""
    with open(source, newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if row[0] != "class_index"][:count]
    header = ["class_index", "title", "description"]
    return write_rows(path, [[*row, split] for row in rows] if split else rows, [*header, "split"] if split else header)


@pytest.mark.slow  # a fine-tuning run
def test_a_run_trained_on_one_file_with_a_split_column_and_evaluated_on_a_file(
    tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv
):
    """AG News train and test rows as one file with a `split` column: the run trains and scores as with two files,
    and pipeline.evaluate scores another file with the run's settings (the split column cleared for it)."""
    train = write_ag_news_rows(ag_news_train_csv, tmp_path / "train.csv", 200, "train")
    test = write_ag_news_rows(ag_news_test_csv, tmp_path / "test.csv", 40, " Test")
    combined = tmp_path / "combined.csv"
    combined.write_text(train.read_text() + "".join(test.read_text().splitlines(keepends=True)[1:]))
    reset_accelerate()
    overrides = tiny_run_overrides(tmp_path, tiny_bert_dir, combined, ag_news_test_csv)
    overrides += ["data.test_file=null", "data.column_names=null", "data.split_column=split", "run.name=split_column"]
    overrides += ["train.max_steps=4", "eval.baseline=none", "eval.predict_speed_rows=0"]
    config = load_config(MINILM_CONFIG, overrides)

    metrics = finetune.run(config)
    reset_accelerate()

    record = metrics["data"]["split_column"]
    assert record == {
        "column": "split",
        "rows": {"train": 200, "validation": 0, "test": 40},
        "values": {"train": "train", "Test": "test"},
    }
    assert set(metrics["data"]["carved_from_train"]) == {"validation"}
    assert metrics["test"]["num_samples"] == metrics["data"]["sizes"]["test"] == 40
    model_card = (config.run_dir / "model" / "README.md").read_text(encoding="utf-8")
    assert "Each row's split is the `split` column of the train data (train 200, test 40 rows)." in model_card
    new = write_ag_news_rows(ag_news_test_csv, tmp_path / "new.csv", 30)
    output = tmp_path / "scored"
    assert evaluate_main(["--model", str(config.run_dir), "--input", str(new), "--output", str(output)]) == 0
    assert json.loads((output / "metrics.json").read_text())["evaluation"]["rows"] == 30
    saved = load_config(output / "config.yaml")  # read back: no split column beside the scored file
    assert saved.data.split_column is None and saved.data.test_file == str(new)
