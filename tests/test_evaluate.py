"""python -m pipeline.evaluate: a trained run's model scored on a labelled file, into a folder the report reads.

One tiny run (a random 2-layer BERT, a few steps on AG News rows) serves the file. Its own test rows, written out as
a new file with their class names, must score exactly what stage 4 recorded for them.
"""

import csv
import json

import pytest

from pipeline import finetune
from pipeline.config import load_config
from pipeline.data import read_labelled_file
from pipeline.evaluate import main as evaluate_main
from pipeline.rundir import PREDICTION_GOLD, PREDICTION_TEXT, RunDir
from pipeline.splits import labels_of
from pipeline.tables import DataError
from tests.helpers import MINILM_CONFIG, reset_accelerate, tiny_run_overrides

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv):
    reset_accelerate()
    root = tmp_path_factory.mktemp("evaluate")
    overrides = tiny_run_overrides(root, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv)
    overrides += ["run.name=scored", "train.max_steps=8", "train.per_device_batch_size=16"]
    overrides += ["train.learning_rate=1e-3", "eval.baseline=none", "eval.predict_speed_rows=0"]
    config = load_config(MINILM_CONFIG, overrides)
    metrics = finetune.run(config)
    reset_accelerate()
    return config, metrics


def own_test_rows_as_a_new_file(run_dir, path):
    """The run's scored test rows (their texts as the run built them), with class names, in a file of new columns."""
    with open(RunDir(run_dir).predictions_path, newline="", encoding="utf-8") as handle:
        rows = [(row[PREDICTION_TEXT], row[PREDICTION_GOLD]) for row in csv.DictReader(handle)]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["story", "topic"])
        writer.writerows(rows)
    return path, len(rows)


def test_the_runs_own_test_rows_score_what_stage_4_recorded(trained, tmp_path, capsys):
    config, run_metrics = trained
    path, count = own_test_rows_as_a_new_file(config.run_dir, tmp_path / "again.csv")
    output = tmp_path / "again_scored"
    reading = ["data.text_columns=[story]", "data.label_column=topic", "data.column_names=null"]
    assert evaluate_main(["--model", str(config.run_dir), "--input", str(path), "--output", str(output), *reading]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    for key in ("accuracy", "macro_f1", "confusion_matrix", "num_samples"):
        assert metrics["test"][key] == run_metrics["test"][key], key
    assert metrics["test"]["loss"] == pytest.approx(run_metrics["test"]["loss"], rel=1e-4)
    assert metrics["labels"] == LABELS and metrics["evaluation"]["rows"] == count
    assert metrics["validation"] == run_metrics["validation"]  # the run's own, beside the file's
    assert metrics["calibration"]["ece"]["test"]["after"] >= 0
    with open(RunDir(output).predictions_path, newline="", encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == count
    report = (output / "report.md").read_text(encoding="utf-8")
    assert f"the model of {config.run_dir.resolve()} scored on {path.resolve()} ({count} rows)" in report
    assert "Validation curves" in report and (output / "history.jsonl").is_file()
    assert load_config(output / "config.yaml").data.label_column == "topic"
    assert f"accuracy {run_metrics['test']['accuracy']:.4f}" in capsys.readouterr().out


def test_ids_are_read_by_the_runs_index_base_and_unknown_labels_name_the_row(trained, tmp_path, capsys):
    config, _ = trained
    path = tmp_path / "ids.csv"  # the training files' own layout: class index 1-4, no header
    path.write_text('"2","Cup final","The home side won 3-1"\n"9","Odd","a class the model lacks"\n')
    assert evaluate_main(["--model", str(config.run_dir), "--input", str(path), "--output", str(tmp_path / "o")]) == 1
    assert "ids.csv, line 2, column 'class_index': label '9' is not a known class" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing written when the input is refused
    path.write_text('"2","Cup final","The home side won 3-1"\n"4","Chips","A faster processor"\n')
    assert evaluate_main(["--model", str(config.run_dir), "--input", str(path), "--output", str(tmp_path / "o")]) == 0
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert (
        metrics["test"]["per_class"]["Sports"]["support"] == 1
        and metrics["test"]["per_class"]["Sci/Tech"]["support"] == 1
    )


def test_an_existing_output_and_a_training_setting_are_refused(trained, tmp_path, capsys):
    config, _ = trained
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    test_file = str(config.data.test_file)
    args = ["--model", str(config.run_dir), "--input", test_file, "--output", str(tmp_path / "taken")]
    assert evaluate_main(args) == 1
    assert "taken exists; pass --overwrite" in capsys.readouterr().err
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    assert evaluate_main([*args, "train.epochs=2"]) == 1
    assert "train.epochs=2: only data.* settings apply to evaluation" in capsys.readouterr().err


def test_a_labelled_file_is_read_against_the_models_classes(tmp_path):
    """labels.trained_scheme: names, ids where names are not integers; integer names by name; indicator columns
    must be the model's classes."""
    data = load_config(None, ["data.source=files", "data.train_file=unused.csv", "data.label_index_base=1"]).data
    path = tmp_path / "mixed.csv"
    path.write_text("text,label\nfirst,Sports\nsecond,Sports\n")
    dataset, removed = read_labelled_file(data, str(path), "--input", LABELS)
    assert labels_of(dataset).tolist() == [1, 1] and removed == []
    path.write_text("text,label\nfirst,4\nsecond,1\n")
    dataset, _ = read_labelled_file(data, str(path), "--input", LABELS)
    assert labels_of(dataset).tolist() == [3, 0]  # ids from data.label_index_base
    dataset, _ = read_labelled_file(data, str(path), "--input", ["1", "2", "3", "4"])
    assert labels_of(dataset).tolist() == [3, 0]  # the names themselves
    path.write_text("text,a,b\nfirst,1,0\nsecond,0,0\n")
    indicators = load_config(None, ["data.task=multi_label", "data.label_columns=[a,b]"]).data
    dataset, _ = read_labelled_file(indicators, str(path), "--input", ["b", "a"])
    assert labels_of(dataset).tolist() == [[0.0, 1.0], [0.0, 0.0]]  # the model's class order
    with pytest.raises(DataError, match=r"data\.label_columns: a, b are not the model's classes \(a, c\)"):
        read_labelled_file(indicators, str(path), "--input", ["a", "c"])
