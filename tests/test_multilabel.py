"""Multi-label tasks (data.task: multi_label): label sets from list columns or delimited strings, iterative
stratification, sigmoid per class, multi-label metrics, and a run whose saved model transformers reads as
multi-label."""

import csv
import json

import datasets
import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.common.errors import DataError
from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError
from pipeline.data.load import load_data
from pipeline.data.splits import iterative_sample, labels_of
from pipeline.scoring.evaluation import compute_multilabel_metrics

CLASSES = ["health", "politics", "sports", "tech"]
WORDS = {"health": "doctor", "politics": "senate", "sports": "goal", "tech": "chip"}


def label_sets(count: int, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [sorted(rng.choice(CLASSES, size=rng.choice([0, 1, 1, 2]), replace=False).tolist()) for _ in range(count)]


def write_jsonl(path, sets):
    with open(path, "w", encoding="utf-8") as handle:
        for index, labels in enumerate(sets):
            words = " ".join(WORDS.get(name, name) for name in labels)
            handle.write(json.dumps({"text": f"story {index} {words} news", "label": labels}) + "\n")
    return path


def files_config(path, *overrides):
    return load_config(None, ["data.source=files", f"data.train_file={path}", "data.task=multi_label", *overrides])


def test_list_column_and_delimited_string_give_the_same_multi_hot_rows(tmp_path):
    sets = label_sets(200)
    jsonl = write_jsonl(tmp_path / "train.jsonl", sets)
    with open(tmp_path / "train.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for index, labels in enumerate(sets):
            writer.writerow([f"story {index} {' '.join(WORDS[name] for name in labels)} news", "|".join(labels)])
    from_json = load_data(files_config(jsonl).data, seed=3)
    from_csv = load_data(files_config(tmp_path / "train.csv").data, seed=3)
    assert from_json.labels == from_csv.labels == CLASSES  # the sorted union
    assert from_json.multi_label and "labels" in from_json.splits["train"].column_names
    for split in ("train", "validation", "test"):
        np.testing.assert_array_equal(labels_of(from_json.splits[split]), labels_of(from_csv.splits[split]))
    train = labels_of(from_json.splits["train"])
    assert train.shape[1] == 4 and (train.sum(axis=1) == 0).any()  # empty sets stay, as all-negative rows
    assert from_json.summary["class_counts"]["train"]["per_class"] == dict(
        zip(CLASSES, train.sum(0).astype(int).tolist())
    )


def test_csv_cells_that_write_a_list_read_as_the_list(tmp_path):
    """pandas' to_csv writes a list column as its str() ("['a', 'b']"): each such cell was one class named by the
    whole cell, without an error."""
    sets = label_sets(120, seed=2)
    cells = [str(labels) if index % 2 else json.dumps(labels) for index, labels in enumerate(sets)]
    pd.DataFrame({"text": [f"story {i}" for i in range(120)], "label": cells}).to_csv(tmp_path / "lists.csv")
    pd.DataFrame({"text": [f"story {i}" for i in range(120)], "label": ["|".join(s) for s in sets]}).to_csv(
        tmp_path / "joined.csv"
    )
    from_lists = load_data(files_config(tmp_path / "lists.csv").data, seed=3)
    from_joined = load_data(files_config(tmp_path / "joined.csv").data, seed=3)
    assert from_lists.labels == from_joined.labels == CLASSES
    for split in ("train", "validation", "test"):
        np.testing.assert_array_equal(labels_of(from_lists.splits[split]), labels_of(from_joined.splits[split]))
    (tmp_path / "bad.csv").write_text("text,label\na,['health']\nb,\"[health, tech]\"\n", encoding="utf-8")
    with pytest.raises(
        DataError,
        match=r"bad\.csv, line 3, column 'label': label '\[health, tech\]' starts and ends like a list but is not a "
        r"list of class names or ids",
    ):
        load_data(files_config(tmp_path / "bad.csv").data, seed=0)


def test_parquet_list_column_reads_as_label_sets(tmp_path):
    sets = label_sets(60, seed=1)
    path = tmp_path / "train.parquet"
    pd.DataFrame({"text": [f"row {i}" for i in range(60)], "label": sets}).to_parquet(path)
    data = load_data(files_config(path, "data.label_names=[health,politics,sports,tech]").data, seed=0)
    rows = np.concatenate([labels_of(data.splits[name]) for name in ("train", "validation", "test")])
    assert rows.sum() == sum(len(labels) for labels in sets)


def test_unknown_label_and_separator_inside_a_name_are_errors_naming_the_row(tmp_path):
    jsonl = write_jsonl(tmp_path / "train.jsonl", [["health"], ["sports", "weather"], ["tech"]] * 5)
    with pytest.raises(
        DataError, match=r"train\.jsonl, line 2, column 'label': label 'weather' is not a known class"
    ) as caught:
        load_data(files_config(jsonl, "data.label_names=[health,sports,tech]").data, seed=0)
    assert str(caught.value).endswith("allowed: ids 0..2 (data.label_index_base=0) or the names health, sports, tech")
    joined = tmp_path / "joined.jsonl"
    joined.write_text('{"text": "a", "label": ["x"]}\n{"text": "b", "label": ["x|y"]}\n', encoding="utf-8")
    with pytest.raises(
        DataError,
        match=r"joined\.jsonl, line 2, column 'label': label 'x\|y' contains "
        r"data\.label_separator",
    ):
        load_data(files_config(joined).data, seed=0)
    with pytest.raises(DataError, match=r"data\.label_names: class 'a/b' contains data\.label_separator '/'"):
        load_data(files_config(jsonl, "data.label_names=[a/b,c]", "data.label_separator=/").data, seed=0)


def test_label_sets_of_class_ids_index_the_named_classes_and_are_read_one_way(tmp_path):
    ids = tmp_path / "ids.jsonl"  # go_emotions' shape: a list of class ids per row
    ids.write_text(
        "".join(json.dumps({"text": f"story {i}", "label": [i % 4, 3] if i % 2 else []}) + "\n" for i in range(40)),
        encoding="utf-8",
    )
    said = "data.label_index_base=0"  # its rows never use id 0, so the base is said (test below)
    data = load_data(files_config(ids, "data.label_names=[health,politics,sports,tech]", said).data, seed=0)
    rows = {row: labels for split in data.splits.values() for row, labels in zip(split["row_id"], split["labels"])}
    assert data.labels == CLASSES
    assert rows["2"] == [0.0, 1.0, 0.0, 1.0] and rows["4"] == [0.0, 0.0, 0.0, 1.0] and rows["1"] == [0.0] * 4
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"text": "a", "label": [1]}\n{"text": "b", "label": ["tech", 0]}\n', encoding="utf-8")
    with pytest.raises(
        DataError, match=r"mixed\.jsonl, line 2, column 'label': label 'tech' is a class name but earlier labels"
    ):
        load_data(files_config(mixed, "data.label_names=[health,politics,sports,tech]").data, seed=0)
    with pytest.raises(DataError, match=r"ids\.jsonl, line 2, column 'label': label '3' is not a known class"):
        load_data(files_config(ids, "data.label_names=[health,politics,sports]", said).data, seed=0)


def test_label_sets_of_ids_without_a_zero_need_their_base_said(tmp_path):
    """A go_emotions subset written as ids ("2,3") that never uses id 0: counted from 0 or from 1 both fit, and the
    wrong one reads every label as its neighbour class without an error; the base is asked for, as for single ids."""
    path = tmp_path / "subset.csv"
    path.write_text("text,label\n" + "".join(f"story {i},{1 + i % 3}|3\n" for i in range(30)), encoding="utf-8")
    with pytest.raises(DataError) as caught:
        load_data(files_config(path, "data.label_names=[health,politics,sports,tech]").data, seed=0)
    assert str(caught.value) == (
        f"{path}, column 'label': the labels are ids 1 to 3 and none is 0; counted from 0 (data.label_index_base "
        "unset) 'health' has no rows, and if the file counts from 1 every label names the class after its own: set "
        "data.label_index_base to 1 (ids 1..4) or 0"
    )
    said = load_data(
        files_config(path, "data.label_names=[health,politics,sports,tech]", "data.label_index_base=1").data, seed=0
    )
    train = labels_of(said.splits["train"])
    assert train[:, 3].sum() == 0 and train[:, 2].all()  # id 3, in every row, is the third class counted from 1


def write_indicator_csv(path, sets, cells=("0", "1")):
    """Jigsaw's layout: one column per class, the row's cell cells[1] where it has the class, cells[0] where not.
    The class columns come in an order that is not sorted, which the classes must keep."""
    columns = ["tech", "health", "sports", "politics"]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "comment", *columns])
        for index, labels in enumerate(sets):
            flags = [cells[name in labels] for name in columns]
            writer.writerow([f"c{index}", f"story {index} {' '.join(WORDS[name] for name in labels)} news", *flags])
    return path, columns


def indicator_config(path, columns, *overrides):
    return files_config(path, "data.text_columns=[comment]", f"data.label_columns=[{','.join(columns)}]", *overrides)


@pytest.mark.parametrize("cells", [("0", "1"), ("0.0", "1.0"), ("FALSE", "TRUE"), ("no", "Yes")])
def test_indicator_columns_give_the_same_label_sets_as_a_list_column(tmp_path, cells):
    sets = label_sets(120, seed=2)
    path, columns = write_indicator_csv(tmp_path / "train.csv", sets, cells)
    from_columns = load_data(indicator_config(path, columns, "data.id_column=id").data, seed=4)
    assert from_columns.labels == columns  # the columns' order, not sorted
    from_list = load_data(
        files_config(
            write_jsonl(tmp_path / "train.jsonl", sets), "data.label_names=[tech,health,sports,politics]"
        ).data,
        seed=4,
    )
    for split in ("train", "validation", "test"):
        assert from_columns.splits[split]["row_id"] == [f"c{int(row) - 1}" for row in from_list.splits[split]["row_id"]]
        np.testing.assert_array_equal(labels_of(from_columns.splits[split]), labels_of(from_list.splits[split]))


def test_indicator_columns_from_parquet_booleans_and_integers(tmp_path):
    sets = label_sets(60, seed=3)
    frame = pd.DataFrame({"comment": [f"row {i}" for i in range(60)]})
    frame["sports"] = [int("sports" in labels) for labels in sets]  # int64
    frame["health"] = ["health" in labels for labels in sets]  # bool
    path = tmp_path / "train.parquet"
    frame.to_parquet(path)
    data = load_data(indicator_config(path, ["sports", "health"]).data, seed=0)
    rows = np.concatenate([labels_of(data.splits[name]) for name in ("train", "validation", "test")])
    assert data.labels == ["sports", "health"]
    assert rows.sum(axis=0).tolist() == [frame["sports"].sum(), frame["health"].sum()]


def indicator_csv_with(tmp_path, edit):
    """40 rows of four repeating label sets in Jigsaw's layout, each line (numbered from 1, the header first) passed
    through edit(number, line)."""
    path, columns = write_indicator_csv(tmp_path / "train.csv", [["health"], ["tech"], ["sports", "politics"], []] * 10)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(edit(number, line) + "\n" for number, line in enumerate(lines, 1)), encoding="utf-8")
    return path, columns


def test_indicator_cells_that_say_neither_are_errors_naming_row_and_column(tmp_path):
    # A count where a flag belongs: the last column of lines 4 and 8.
    path, columns = indicator_csv_with(tmp_path, lambda number, line: line[:-1] + "2" if number in (4, 8) else line)
    with pytest.raises(
        DataError,
        match=r"train\.csv, line 4, column 'politics' \(data\.label_columns\): '2' is not 0 or 1 \(nor true/false, "
        r"yes/no\) \(and 1 more: line 8\)",
    ):
        load_data(indicator_config(path, columns).data, seed=0)


def test_minus_one_in_indicator_columns_marks_a_row_left_out_of_scoring(tmp_path):
    """Jigsaw's test_labels.csv writes -1 in every class column of a row not scored: a row without a label (an
    incomplete row), as an empty cell is, never an error about the value nor a class."""
    not_scored = {4: ",-1,-1,-1,-1", 8: ",-1,-1,-1,-1", 9: ",0,N/A,0,0"}

    def edit(number, line):
        return (
            line.split(",", 2)[0] + "," + line.split(",", 2)[1] + not_scored[number] if number in not_scored else line
        )

    path, columns = indicator_csv_with(tmp_path, edit)
    with pytest.raises(DataError) as caught:
        load_data(indicator_config(path, columns).data, seed=0)
    assert str(caught.value).startswith(
        f"{path}, line 4, column 'tech' (data.label_columns): no label ('N/A': data.missing_label_values; '-1': not "
        "scored (Jigsaw's test labels)) (and 2 more: lines 8, 9); fill or remove these rows, or set "
        "data.incomplete_rows=drop"
    )
    data = load_data(indicator_config(path, columns, "data.incomplete_rows=drop").data, seed=0)
    assert [(row.row_id, row.reason) for row in data.removed] == [
        ("4", "incomplete: no label ('-1' marks none) (data.incomplete_rows: drop)"),
        ("8", "incomplete: no label ('-1' marks none) (data.incomplete_rows: drop)"),
        ("9", "incomplete: no label ('N/A' marks none) (data.incomplete_rows: drop)"),
    ]
    assert sum(len(split) for split in data.splits.values()) == 40 - 3
    # data.label_index_base says how ids of a label column count; an indicator cell is 0 or 1, so -1 stays no label.
    based = indicator_config(path, columns, "data.incomplete_rows=drop", "data.label_index_base=-1").data
    assert len(load_data(based, seed=0).removed) == 3


def test_an_empty_indicator_cell_is_an_incomplete_row(tmp_path):
    # Line 6's health cell left empty.
    path, columns = indicator_csv_with(
        tmp_path, lambda number, line: line.replace("news,0,1,", "news,0,,") if number == 6 else line
    )
    with pytest.raises(
        DataError,
        match=r"train\.csv, line 6, column 'health' \(data\.label_columns\): the cell is empty; fill or remove these "
        r"rows, or set data\.incomplete_rows=drop",
    ):
        load_data(indicator_config(path, columns).data, seed=0)
    data = load_data(indicator_config(path, columns, "data.incomplete_rows=drop").data, seed=0)
    assert [(row.row_id, row.reason) for row in data.removed] == [
        ("6", "incomplete: no label (data.incomplete_rows: drop)")
    ]
    assert sum(len(split) for split in data.splits.values()) == 40 - 1


def test_indicator_columns_from_a_saved_hub_dataset(tmp_path):
    """A Hub dataset of go_emotions' raw shape (one int column per class), here a folder save_to_disk wrote."""
    sets = label_sets(80, seed=5)
    columns = {name: [int(name in labels) for labels in sets] for name in ("politics", "tech")}
    datasets.Dataset.from_dict({"text": [f"row {i}" for i in range(80)], **columns}).save_to_disk(tmp_path / "saved")
    config = load_config(
        None, [f"data.hub_name={tmp_path / 'saved'}", "data.task=multi_label", "data.label_columns=[politics,tech]"]
    )
    data = load_data(config.data, seed=0)
    assert data.labels == ["politics", "tech"]
    rows = np.concatenate([labels_of(data.splits[name]) for name in ("train", "validation", "test")])
    assert rows.sum(axis=0).tolist() == [sum(columns["politics"]), sum(columns["tech"])]
    missing = load_config(
        None, [f"data.hub_name={tmp_path / 'saved'}", "data.task=multi_label", "data.label_columns=[politics,sport]"]
    )
    with pytest.raises(DataError, match=r"data\.label_columns"):
        load_data(missing.data, seed=0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["data.task=single_label"],
            r"data\.label_columns: one 0/1 column per class is a multi-label layout; set data\.task=multi_label",
        ),
        (["data.label_names=[a,b]"], r"data\.label_names: the classes are the names of data\.label_columns"),
        (["data.label_names_file=c.txt"], r"data\.label_names_file: the classes are named once; data\.label_columns"),
        (["data.label_columns=[a,A]"], r"data\.label_columns: name two or more distinct columns"),
        (["data.label_columns=[a]"], r"data\.label_columns: name two or more distinct columns"),
        (["data.label_columns=[a|b,c]"], r"data\.label_columns: column 'a\|b' contains data\.label_separator"),
        (["data.label_columns=[a,text]"], r"data\.text_columns: holds the label column 'text' \(data\.label_columns\)"),
    ],
)
def test_label_columns_settings_that_cannot_work_are_config_errors(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, ["data.task=multi_label", "data.label_columns=[a,b]", *overrides])


def test_inferred_integer_classes_are_ordered_as_numbers(tmp_path):
    path = tmp_path / "numbers.csv"
    path.write_text("text,label\n" + "".join(f"row {i},{[2, 10, 9][i % 3]}|{i % 2}\n" for i in range(30)))
    data = load_data(files_config(path).data, seed=0)
    assert data.labels == ["0", "1", "2", "9", "10"]


def test_iterative_stratification_keeps_every_class_share_and_the_exact_size():
    rng = np.random.default_rng(5)
    multi_hot = (rng.random((2000, 5)) < [0.4, 0.2, 0.1, 0.05, 0.01]).astype(np.float32)
    chosen, rest = iterative_sample(multi_hot, 200, seed=0)
    assert len(chosen) == 200 and len(rest) == 1800 and not set(chosen) & set(rest)
    overall, picked = multi_hot.mean(axis=0), multi_hot[chosen].mean(axis=0)
    np.testing.assert_allclose(picked, overall, atol=0.012)
    assert iterative_sample(multi_hot, 200, seed=0) == (chosen, rest)  # seeded


def test_multilabel_metrics_by_hand():
    gold = np.array([[1, 0, 1], [0, 1, 0], [0, 0, 0], [1, 1, 0]], dtype=np.float32)
    predicted = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0], [1, 0, 1]], dtype=bool)
    metrics = compute_multilabel_metrics(gold, predicted, ["a", "b", "c"])
    assert metrics["subset_accuracy"] == metrics["accuracy"] == 0.5
    assert metrics["micro_f1"] == pytest.approx(2 * 3 / (2 * 3 + 1 + 2))  # tp 3, fp 1, fn 2
    assert metrics["hamming_loss"] == pytest.approx(3 / 12)
    # per row: 2/3, 1, 1 (nothing to find, nothing claimed), 1/2
    assert metrics["samples_f1"] == pytest.approx((2 / 3 + 1 + 1 + 0.5) / 4)
    assert metrics["per_class"]["a"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2}
    assert metrics["per_class"]["c"]["support"] == 1 and metrics["per_class"]["c"]["f1"] == 0.0
    # macro-F1: a 1, b 2/3, c 0 (predicted once, wrongly)
    assert metrics["macro_f1"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    # A class that occurs nowhere and is never predicted has no F1 to average in.
    unused = compute_multilabel_metrics(
        np.concatenate([gold, np.zeros((4, 1))], axis=1),
        np.concatenate([predicted, np.zeros((4, 1), bool)], axis=1),
        ["a", "b", "c", "never"],
    )
    assert unused["macro_f1"] == pytest.approx(metrics["macro_f1"]) and unused["per_class"]["never"]["support"] == 0


def test_encoder_computes_binary_cross_entropy_for_multi_label():
    from pipeline.config.schema import EncoderSettings
    from pipeline.models.encoder import EncoderClassifierConfig, EncoderForSequenceClassification

    settings = EncoderSettings(hidden_size=16, num_heads=2, intermediate_size=32, max_position_embeddings=32)
    config = EncoderClassifierConfig.from_settings(
        settings, vocab_size=50, pad_token_id=0, id2label=["a", "b", "c"], problem_type="multi_label_classification"
    )
    model = EncoderForSequenceClassification(config).eval()
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    output = model(input_ids=torch.randint(1, 50, (2, 7)), labels=labels)
    expected = torch.nn.functional.binary_cross_entropy_with_logits(output.logits, labels)
    torch.testing.assert_close(output.loss, expected)


def test_a_multi_label_run_saves_a_model_every_loader_reads_as_multi_label(
    tmp_path, tiny_bert_dir, fresh_accelerate_state
):
    from transformers import pipeline as hf_pipeline

    from pipeline import finetune
    from pipeline.predict import predict_texts
    from pipeline.predict.cli import main as predict_main

    train = write_jsonl(tmp_path / "train.jsonl", label_sets(160, seed=2))
    config = load_config(
        None,
        [
            f"run.output_dir={tmp_path / 'runs'}",
            "run.name=multi",
            "data.source=files",
            f"data.train_file={train}",
            "data.task=multi_label",
            f"data.cache_dir={tmp_path / 'cache'}",
            f"tokenizer.name_or_path={tiny_bert_dir}",
            f"model.name_or_path={tiny_bert_dir}",
            "train.max_steps=6",
            "train.per_device_batch_size=16",
            "train.learning_rate=3e-3",
            "train.report_to=none",  # the trackers are tests/train/test_trackers.py's: MLflow's store costs seconds
            "train.mixed_precision=no",
            "train.class_weights=balanced",
            "eval.threshold=best_f1",
            "eval.baseline=none",
            "eval.predict_speed_rows=0",
            "train.log_every_steps=2",
        ],
    )
    metrics = finetune.run(config)
    assert metrics["best"]["metric"] == "micro_f1" and "validation_micro_f1" in metrics["best"]
    for key in ("micro_f1", "macro_f1", "samples_f1", "subset_accuracy", "hamming_loss", "per_class", "areas"):
        assert key in metrics["test"], key
    assert set(metrics["thresholds"]["thresholds"]) == set(CLASSES)
    assert metrics["training"]["class_weights"]["tech"] > 1  # pos_weight: negatives / positives
    run_dir = config.run_dir
    saved = json.loads((run_dir / "model" / "config.json").read_text())
    assert saved["problem_type"] == "multi_label_classification"
    assert json.loads((run_dir / "model" / "decision.json").read_text())["kind"] == "multi_label"

    # transformers reads the saved model as multi-label: a sigmoid per class, not a softmax over them.
    scores = hf_pipeline("text-classification", model=str(run_dir / "model"), top_k=None)(["story doctor goal"])[0]
    assert len(scores) == 4 and sum(item["score"] for item in scores) != pytest.approx(1.0, abs=1e-3)
    ((labels, label_scores),) = predict_texts(run_dir, ["story doctor goal"])
    by_name = {item["label"]: item["score"] for item in scores}
    for name, score in zip(labels, label_scores):  # the pipeline's and predict's probabilities agree
        assert score == pytest.approx(by_name[name], abs=1e-4)
        assert score >= metrics["thresholds"]["thresholds"][name]
    # A gap predicts no class, as a text under every threshold may: the flags tell a gap (None) from such a text.
    gap, text = predict_texts(run_dir, [None, "story doctor goal"], flags=True)
    assert gap == ([], [], None) and text[:2] == (labels, label_scores) and text[2] is False

    source = tmp_path / "in.csv"
    source.write_text("text\nstory doctor goal\nstory chip\n", encoding="utf-8")
    predict_main(
        [
            "--model",
            str(run_dir),
            "--input",
            str(source),
            "--output",
            str(tmp_path / "out.csv"),
            "--probabilities",
            "--no-progress",
        ]
    )
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert list(out.columns) == ["text", "labels", *[f"prob_{name}" for name in CLASSES], "error"]
    for _, row in out.iterrows():
        expected = [name for name in CLASSES if row[f"prob_{name}"] >= metrics["thresholds"]["thresholds"][name]]
        assert row["labels"] == "|".join(expected)
    # JSON Lines output: the label set is a list, as a list column of the training data is.
    predict_main(["--model", str(run_dir), "--input", str(source), "--output", str(tmp_path / "out.jsonl")])
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["labels"] for row in written] == [
        [name for name in value.split("|") if name] for value in out["labels"]
    ]
    predictions = pd.read_csv(run_dir / "test_predictions.csv", keep_default_na=False)
    assert set(predictions.columns) >= {"text", "label", "predicted", "score"}
