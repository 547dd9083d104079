"""python -m pipeline.evaluate: a trained run's model scored on a labelled file, into a folder the report reads.

One tiny run (a random 2-layer BERT, a few steps on AG News rows) serves the file. Its own test rows, written out as
a new file with their class names, must score exactly what stage 4 recorded for them.
"""

import csv
import dataclasses
import errno
import json
import shlex
import shutil
import zipfile

import pytest
import yaml

from pipeline import finetune
from pipeline.common.errors import DataError
from pipeline.config.load import load_config
from pipeline.data.load import read_labelled_file
from pipeline.data.splits import column_values, labels_of
from pipeline.evaluate import main as evaluate_main
from pipeline.evaluate import reading_config
from pipeline.predict.predictor import DEFAULT_BATCH_SIZE
from pipeline.predict.source import load_model_and_tokenizer
from pipeline.report import write_report
from pipeline.run.directory import PREDICTION_GOLD, PREDICTION_TEXT, RunDir
from pipeline.text.lengths import truncated_share
from pipeline.text.tokenization import count_tokens
from tests.helpers import (
    MINILM_CONFIG,
    UNWRITABLE_KINDS,
    multi_label_overrides,
    reset_accelerate,
    tiny_run_overrides,
    unwritable_folder,
)

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv):
    reset_accelerate()
    root = tmp_path_factory.mktemp("evaluate")
    overrides = tiny_run_overrides(root, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv)
    overrides += ["run.name=scored", "train.max_steps=24", "train.per_device_batch_size=16"]
    overrides += ["train.learning_rate=1e-3", "eval.baseline=none", "eval.predict_speed_rows=0"]
    config = load_config(MINILM_CONFIG, overrides)
    metrics = finetune.run(config)
    reset_accelerate()
    return config, metrics


def load_tokenizer_of(config):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(config.tokenizer.name_or_path)


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
    calibration, trained_calibration = metrics["calibration"], run_metrics["calibration"]
    assert calibration["temperature"] == trained_calibration["temperature"] != 1.0  # folded into the saved model
    for key in ("ece", "loss"):  # before (logits times T) and after, as stage 4 measured the same rows
        for when in ("before", "after"):
            # Equal by construction: the same folded weights, precision and batches (bf16 too), so float rounding only.
            assert calibration[key]["test"][when] == pytest.approx(trained_calibration[key]["test"][when], abs=1e-6)
        assert calibration[key]["validation"] == trained_calibration[key]["validation"]  # the run's own
    for when in ("before", "after"):
        counts = [bin_["count"] for bin_ in calibration["reliability"]["test"][when]]
        assert counts == [bin_["count"] for bin_ in trained_calibration["reliability"]["test"][when]]
    assert metrics["throughput"]["predict_rows_timed"] == count  # every row, after a warm-up batch
    precision = "bf16" if run_metrics["training"]["mixed_precision"] == "bf16" else "fp32"
    assert metrics["throughput"]["predict_backend"] == f"torch-{precision}"  # as stage 4 scored
    with open(RunDir(output).predictions_path, newline="", encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == count
    report = (output / "report.md").read_text(encoding="utf-8")
    assert f"the model of {config.run_dir.resolve()} scored on {path.resolve()} ({count} rows)" in report
    assert f"Runs: again_scored ({output})." in report  # named and placed as it ends up, not as it was staged
    assert "Validation curves" in report and (output / "history.jsonl").is_file()
    ece = calibration["ece"]["test"]
    assert f"{ece['before']:.4f} → {ece['after']:.4f}" in report  # the calibration table, before and after
    assert 'alt="reliability diagram of again_scored"' in (output / "report.html").read_text(encoding="utf-8")
    assert load_config(output / "config.yaml").data.label_column == "topic"
    assert metrics["data"]["quoting"] == {"setting": "auto", "read": {"test": "csv"}}  # how the file was read
    side_by_side, _ = write_report([config.run_dir, output], tmp_path / "side_by_side")
    score = f"{100 * run_metrics['test']['accuracy']:.2f}%"
    assert (
        f"One model on 2 files, by test accuracy: {score} on scored's test split ({count} texts), {score} on "
        f"again.csv ({count} texts)." in side_by_side.read_text(encoding="utf-8")
    )  # set side by side, not ranked
    assert f"accuracy {run_metrics['test']['accuracy']:.4f}" in capsys.readouterr().out


def test_the_runs_own_train_file_as_input_is_said_to_overstate_its_scores(trained, tmp_path, caplog):
    """aclImdb/train scored by a model trained on it read '96.50% on train' beside the test split's 99%, with no word
    that the model had learnt those rows: a warning, the evaluation record and the report's note now say so."""
    config, _ = trained
    run = shutil.copytree(config.run_dir, tmp_path / "run")
    path, _ = own_test_rows_as_a_new_file(run, tmp_path / "seen.csv")
    saved = yaml.safe_load(RunDir(run).config_path.read_text())
    saved["data"]["train_file"] = str(path)  # as if the run had trained on this file
    RunDir(run).config_path.write_text(yaml.safe_dump(saved))
    reading = ["data.text_columns=[story]", "data.label_column=topic", "data.column_names=null"]
    outputs = {name: tmp_path / f"on_{name}" for name in ("seen", "new")}
    new = shutil.copyfile(path, tmp_path / "new.csv")
    for name, scored in (("seen", path), ("new", new)):
        argv = ["--model", str(run), "--input", str(scored), "--output", str(outputs[name]), *reading]
        assert evaluate_main(argv) == 0
    (warning,) = [record.getMessage() for record in caplog.records if "is the run's own" in record.getMessage()]
    assert f"--input {path} is the run's own data.train_file" in warning
    records = {
        name: json.loads((output / "metrics.json").read_text())["evaluation"] for name, output in outputs.items()
    }
    assert records["seen"]["run_file"] == "data.train_file" and records["new"]["run_file"] is None
    assert "It is the run's own data.train_file: these figures overstate" in (outputs["seen"] / "report.md").read_text()
    assert "overstate" not in (outputs["new"] / "report.md").read_text()


def test_a_file_the_vocabulary_cannot_read_is_warned_about_in_the_log_and_the_report(trained, tmp_path, caplog):
    """Chinese through the run's English vocabulary: metrics.json recorded its share of [UNK], but neither the log nor
    the report said it. Both now say it as training says it of train (windows.unknown_tokens_warning)."""
    config, _ = trained
    path = tmp_path / "chinese.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["story", "topic"])
        writer.writerows((f"快递太慢了，等了两个星期 {index}", LABELS[index % 4]) for index in range(8))
    output = tmp_path / "on_chinese"
    reading = ["data.text_columns=[story]", "data.label_column=topic", "data.column_names=null"]
    with caplog.at_level("WARNING", logger="pipeline.evaluate"):
        assert (
            evaluate_main(["--model", str(config.run_dir), "--input", str(path), "--output", str(output), *reading])
            == 0
        )
    (warning,) = [record.getMessage() for record in caplog.records if "unknown token" in record.getMessage()]
    record = json.loads((output / "metrics.json").read_text())["tokenization"]
    share = 100 * record["unknown_token_share"]["test"]
    assert record["mostly_unknown_share"]["test"] == 1.0
    assert f"{share:.1f}% of the input's tokens are the unknown token [UNK], and 100.0% of its texts" in warning
    report = (output / "report.md").read_text(encoding="utf-8")
    assert f"on_chinese: {share:.1f}% of the scored file's tokens are the unknown token, and 100.0% of its" in report
    assert "multilingual" in report


def test_fewer_text_columns_than_the_run_read_are_said_in_one_line(trained, tmp_path, caplog):
    """data.text_columns naming one column where the run joined title and description is said, as pipeline.predict
    says --text-columns; a rename of both is no loss."""
    config, _ = trained
    run, path = RunDir(config.run_dir), tmp_path / "new.csv"
    with caplog.at_level("WARNING", logger="pipeline.evaluate"):
        reading_config(run, ["data.text_columns=[story]"], path)
    (warning,) = [record.getMessage() for record in caplog.records]
    assert warning.startswith(
        "the model was trained on 2 columns joined (title, description); data.text_columns reads 1 now (story)"
    )
    caplog.clear()
    with caplog.at_level("WARNING", logger="pipeline.evaluate"):
        reading_config(run, ["data.text_columns=[headline, story]"], path)
    assert not caplog.records


def test_a_run_divided_by_a_split_column_scores_a_file_whose_config_reads_back(trained, tmp_path):
    """A run whose one train file was divided by data.split_column: the file evaluation scores is its test split,
    whole; the saved config.yaml, which names it as data.test_file, leaves the split column out (the config check
    refuses the two together)."""
    config, run_metrics = trained
    run = shutil.copytree(config.run_dir, tmp_path / "run")
    saved = yaml.safe_load(RunDir(run).config_path.read_text())
    saved["data"].update(split_column="partition", test_file=None)  # as if trained on one file with that column
    RunDir(run).config_path.write_text(yaml.safe_dump(saved))
    path, count = own_test_rows_as_a_new_file(run, tmp_path / "again.csv")
    output = tmp_path / "again_scored"
    reading = ["data.text_columns=[story]", "data.label_column=topic", "data.column_names=null"]
    assert evaluate_main(["--model", str(run), "--input", str(path), "--output", str(output), *reading]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["evaluation"]["rows"] == count and metrics["test"]["accuracy"] == run_metrics["test"]["accuracy"]
    read_back = load_config(output / "config.yaml")
    assert read_back.data.split_column is None and read_back.data.test_file == str(path)


@pytest.mark.slow  # a fresh process or a real-sized fit: about 7-10 s on 2 cores
def test_an_exported_run_is_scored_by_its_export_with_backend_onnx(trained, tmp_path):
    """--backend onnx alone (no --precision): the export's own precision, not the torch backend's fp32 default,
    which the predictor refuses beside an export."""
    pytest.importorskip("onnxruntime", reason="the optional extra 'onnx' is not installed (pip install -e '.[onnx]')")
    from pipeline.export import export_run

    config, run_metrics = trained
    run = shutil.copytree(config.run_dir, tmp_path / "exported")
    export_run(run, openvino=False, rounds=1, max_rows=64)
    path, count = own_test_rows_as_a_new_file(run, tmp_path / "again.csv")
    output = tmp_path / "again_on_onnx"
    reading = ["data.text_columns=[story]", "data.label_column=topic", "data.column_names=null"]
    argv = ["--model", str(run), "--input", str(path), "--output", str(output), "--backend", "onnx", *reading]
    assert evaluate_main(argv) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["evaluation"]["backend"].startswith("backend onnx") and metrics["evaluation"]["rows"] == count
    assert metrics["test"]["accuracy"] == pytest.approx(run_metrics["test"]["accuracy"], abs=2 / count)


class CountingTokenizer:
    """A tokenizer that counts the texts it is given in lists (a one-word string is how special tokens are found)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.texts = tokenizer, 0

    def __call__(self, texts, *args, **kwargs):
        self.texts += len(texts) if isinstance(texts, list) else 0
        return self.tokenizer(texts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


def test_the_file_is_tokenized_once_for_the_model_and_its_token_counts(trained, tmp_path, monkeypatch):
    from pipeline.predict import predictor as predictor_module

    config, _ = trained
    path, count = own_test_rows_as_a_new_file(config.run_dir, tmp_path / "again.csv")
    with open(path, "a", newline="", encoding="utf-8") as handle:  # a text past the fixed length; unknown tokens
        csv.writer(handle).writerows([(" ".join(["news"] * 600), "World"), ("☃ ☄ ♞ snow", "Sports")])
    count += 2
    tokenizers = []

    def load_counting(model_dir):
        model, tokenizer = load_model_and_tokenizer(model_dir)
        tokenizers.append(CountingTokenizer(tokenizer))
        return model, tokenizers[-1]

    monkeypatch.setattr(predictor_module, "load_model_and_tokenizer", load_counting)
    reading = ["data.text_columns=[story]", "data.label_column=topic", "data.column_names=null"]
    args = ["--model", str(config.run_dir), "--input", str(path), "--output", str(tmp_path / "o"), *reading]
    assert evaluate_main(args) == 0
    warm_up_batch = min(count, DEFAULT_BATCH_SIZE)  # untimed, before the timed pass (pipeline.predict.speed)
    assert [tokenizer.texts for tokenizer in tokenizers] == [count + warm_up_batch]
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    counted = count_tokens(texts_of(path), load_tokenizer_of(config))  # a separate pass, as before: the same figures
    record = metrics["tokenization"]
    assert record["unknown_token_share"]["test"] == pytest.approx(counted.unknown_share) and counted.unknown_share > 0
    truncated = truncated_share(counted.lengths, record["max_length"])
    assert record["truncated_fraction"]["test"] == pytest.approx(truncated) and truncated > 0


def texts_of(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return [row["story"] for row in csv.DictReader(handle)]


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


def test_outputs_that_would_replace_the_run_the_input_or_a_file_are_refused(trained, tmp_path, capsys):
    config, _ = trained
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    test_file = tmp_path / "inputs" / "test.csv"
    test_file.parent.mkdir()
    test_file.write_text('"2","Cup final","The home side won 3-1"\n"4","Chips","A faster processor"\n')
    common = ["--model", str(config.run_dir), "--input", str(test_file), "--overwrite"]
    refusals = {
        str(tmp_path / "taken"): "taken exists; pass --overwrite",  # without --overwrite
        str(config.run_dir): "overlaps the run directory",
        str(config.run_dir.parent): "overlaps the run directory",
        str(config.run_dir / "evaluation"): "overlaps the run directory",
        str(test_file.parent): "overlaps the input file",
        str(test_file): "overlaps the input file",
        str(tmp_path / "taken" / "keep.txt"): "is a file, not a folder",
        # --overwrite replaces a whole folder: only an earlier evaluation's
        str(tmp_path / "taken") + "/": "holds files evaluation did not write (keep.txt)",
        str(tmp_path / "other_run"): "holds a trained run (its model folder)",
    }
    (tmp_path / "other_run" / "model").mkdir(parents=True)
    (tmp_path / "other_run" / "model" / "config.json").write_text("{}")
    for output, message in refusals.items():
        args = ["--output", output, *(common[:-1] if message.startswith("taken") else common)]
        assert evaluate_main(args) == 1, output
        assert message in capsys.readouterr().err, output
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    assert (tmp_path / "other_run" / "model" / "config.json").is_file()
    assert (config.run_dir / "model" / "config.json").is_file() and test_file.is_file()
    for setting, message in {
        "train.epochs=2": "train.epochs=2: only data.* settings apply to evaluation",
        "data.task=multi_label": "data.task: the trained model decides it",
        "data.label_names=[a,b,c,d]": "data.label_names: the trained model decides it",
        "data.label_names_file=classes.txt": "data.label_names_file: the trained model decides it",
    }.items():
        assert evaluate_main(["--output", str(tmp_path / "fresh"), *common, setting]) == 1
        assert message in capsys.readouterr().err
    assert not (tmp_path / "fresh").exists()


def test_a_class_the_model_never_saw_is_refused_with_the_settings_that_leave_its_rows_out(trained, tmp_path, capsys):
    config, metrics = trained
    path = tmp_path / "new.csv"
    path.write_text("story,topic\nCup final,Sports\nA new vaccine,Health\nChips,Sci/Tech\nFlu season,Health\n")
    common = ["--model", str(config.run_dir), "--input", str(path), "--output", str(tmp_path / "o")]
    overrides = ["data.column_names=null", "data.text_columns=[story]", "data.label_column=topic"]
    assert evaluate_main([*common, *overrides]) == 1
    error = capsys.readouterr().err
    assert "line 3, column 'topic': label 'Health' is not a known class (and 1 more: line 5)" in error
    hint = error.strip().split("; to leave those rows out (listed in removed_rows.csv), add ")[1]
    assert hint == """'data.missing_label_values=[NaN, N/A, "#N/A", "null", <NA>, Health]' data.incomplete_rows=drop"""
    # The settings as a shell passes them read the file with those rows left out (what the command then scores).
    reading = reading_config(RunDir(config.run_dir), [*overrides, *shlex.split(hint)], path)
    dataset, removed, _ = read_labelled_file(reading.data, str(path), "--input", metrics["labels"], None)
    assert dataset["text"] == ["Cup final", "Chips"] and [row.text for row in removed] == [
        "A new vaccine",
        "Flu season",
    ]


@pytest.mark.parametrize("kind", UNWRITABLE_KINDS)
def test_an_output_that_cannot_be_written_is_one_line_before_the_file_is_scored(
    trained, tmp_path, capsys, monkeypatch, kind
):
    """The user sweep: a read-only --output scored the whole file, then ended in a traceback naming a .partial folder."""
    config, _ = trained
    path = tmp_path / "new.csv"
    path.write_text('"2","Cup final","The home side won 3-1"\n')
    output = unwritable_folder(tmp_path, kind) / "ev"
    monkeypatch.setattr("pipeline.evaluate.read_labelled_file", lambda *args: pytest.fail("the file was read"))
    assert evaluate_main(["--model", str(config.run_dir), "--input", str(path), "--output", str(output)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot write --output {output}: "), lines


def test_a_write_that_fails_names_the_output_file_not_its_staging_folder(trained, tmp_path, capsys, monkeypatch):
    config, _ = trained
    path = tmp_path / "new.csv"
    path.write_text('"2","Cup final","The home side won 3-1"\n"4","Chips","A faster processor"\n')

    def refused(target, removed):  # as a full or read-only disk refuses the file, named as the writer named it
        raise PermissionError(errno.EACCES, "Permission denied", str(target))

    monkeypatch.setattr("pipeline.evaluate.write_removed_rows", refused)
    output = tmp_path / "reports" / "ev"
    assert evaluate_main(["--model", str(config.run_dir), "--input", str(path), "--output", str(output)]) == 1
    error = capsys.readouterr().err  # after the model's loading bar
    assert error.strip().splitlines()[-1] == f"error: cannot write {output / 'removed_rows.csv'}: Permission denied"
    assert "Traceback" not in error and ".partial" not in error
    assert list(output.parent.iterdir()) == []  # nor a staging folder left behind


def test_an_unfinished_run_is_refused_with_the_command_that_continues_it(trained, tmp_path, capsys):
    config, _ = trained
    stopped = tmp_path / "stopped"
    (stopped / "checkpoints" / "step_12").mkdir(parents=True)
    shutil.copy(config.run_dir / "config.yaml", stopped / "config.yaml")
    shutil.copy(config.run_dir / "history.jsonl", stopped / "history.jsonl")
    path = tmp_path / "new.csv"
    path.write_text('"2","Cup final","The home side won 3-1"\n')
    assert evaluate_main(["--model", str(stopped), "--input", str(path), "--output", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == f"error: {RunDir(stopped).unfinished()}\n"
    assert "(step_12): python -m pipeline.finetune --config" in RunDir(stopped).unfinished()


def test_a_labelled_file_is_read_as_training_read_its_labels(tmp_path):
    """labels.trained_scheme: the run's data.label_reading record; ids never index names that training inferred."""
    data = load_config(None, ["data.source=files", "data.train_file=unused.csv"]).data
    path = tmp_path / "labels.csv"
    path.write_text("text,label\nfirst,4\nsecond,1\n")
    names_only = {"names": True, "ids": False, "index_base": 0}
    with pytest.raises(DataError, match=r"labels\.csv, line 2, column 'label': label '4' is not a known class"):
        read_labelled_file(data, str(path), "--input", LABELS, names_only)  # sorted names from train: not ids
    with pytest.raises(DataError, match=r"label '4' is not a known class"):
        read_labelled_file(data, str(path), "--input", LABELS, None)  # an older run without data.label_names
    given = {"names": True, "ids": True, "index_base": 1}  # data.label_names with data.label_index_base 1
    assert labels_of(read_labelled_file(data, str(path), "--input", LABELS, given)[0]).tolist() == [3, 0]
    numbers = ["0", "1", "2", "3", "4"]
    ids_from_zero = {"names": False, "ids": True, "index_base": 0}  # integer labels inferred from train, from 0
    assert labels_of(read_labelled_file(data, str(path), "--input", numbers, ids_from_zero)[0]).tolist() == [4, 1]
    shifted = ["1", "2", "3", "4", "5"]
    assert labels_of(read_labelled_file(data, str(path), "--input", shifted, names_only)[0]).tolist() == [3, 0]
    path.write_text("text,a,b\nfirst,1,0\nsecond,0,0\n")
    indicators = load_config(None, ["data.task=multi_label", "data.label_columns=[a,b]"]).data
    dataset, _, _ = read_labelled_file(
        indicators, str(path), "--input", ["b", "a"], {"names": True, "ids": False, "index_base": 0}
    )
    assert labels_of(dataset).tolist() == [[0.0, 1.0], [0.0, 0.0]]  # the model's class order
    with pytest.raises(DataError, match=r"data\.label_columns: a, b are not the model's classes \(a, c\)"):
        read_labelled_file(indicators, str(path), "--input", ["a", "c"], None)


def test_a_file_to_score_is_read_as_training_reads_one_its_repeated_header_rows_left_out(tmp_path):
    """Excel's "Unicode text" (UTF-16 with its mark), zipped, two files joined with cat: read by the run's settings
    (data.encoding left at utf-8), the header row between them left out, listed, and recorded apart from incomplete
    rows (metrics.json data.repeated_headers)."""
    data = load_config(None, ["data.source=files", "data.train_file=unused.csv"]).data
    part = "story\ttopic\r\nMarkets fell\tBusiness\r\nA late goal\tSports\r\n"
    path = tmp_path / "march.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("march.txt", (part + part).encode("utf-16"))
    data = dataclasses.replace(data, file_format="tsv", text_columns=["story"], label_column="topic")
    dataset, removed, read = read_labelled_file(data, str(path), "--input", LABELS, None)
    assert column_values(dataset, "text") == ["Markets fell", "A late goal"] * 2
    reason = "the header row again (files joined with cat?), line 4"
    assert [(row.row_id, row.reason) for row in removed] == [("4", reason)]
    assert read["repeated_headers"] == {"removed": {"test": 1}}


@pytest.mark.slow  # 5-10 s of training or export: the default tier stays under five minutes
def test_a_multi_label_run_scored_again_with_rows_left_out_and_long_texts(
    tmp_path_factory, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv, tmp_path
):
    reset_accelerate()
    root = tmp_path_factory.mktemp("evaluate_multi")
    overrides = tiny_run_overrides(root, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv)
    overrides += multi_label_overrides(root, ag_news_train_csv, ag_news_test_csv)
    overrides += ["run.name=multi", "train.max_steps=4", "eval.baseline=none", "eval.predict_speed_rows=0"]
    config = load_config(MINILM_CONFIG, overrides)
    run_metrics = finetune.run(config)
    reset_accelerate()
    with open(RunDir(config.run_dir).predictions_path, newline="", encoding="utf-8") as handle:
        rows = [
            (row[PREDICTION_TEXT], row[PREDICTION_GOLD].split("|") if row[PREDICTION_GOLD] else [])
            for row in csv.DictReader(handle)
        ]
    path = tmp_path / "again.jsonl"
    lines = [json.dumps({"text": text, "labels": labels}) for text, labels in rows]
    lines.append(json.dumps({"text": "", "labels": ["World"]}))  # no text: left out with data.incomplete_rows=drop
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "scored"
    args = ["--model", str(config.run_dir), "--input", str(path), "--output", str(output), "data.incomplete_rows=drop"]
    assert evaluate_main(args) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    for key in ("micro_f1", "macro_f1", "accuracy", "hamming_loss", "num_samples"):
        assert metrics["test"][key] == pytest.approx(run_metrics["test"][key], abs=1e-12), key
    for when in ("before", "after"):  # sigmoids at the folded temperature and without it, over (text, class)
        ece = metrics["calibration"]["ece"]["test"][when]
        assert ece == pytest.approx(run_metrics["calibration"]["ece"]["test"][when], abs=1e-5), when
    with open(output / "removed_rows.csv", newline="", encoding="utf-8") as handle:
        assert [row["row_id"] for row in csv.DictReader(handle)] == [str(len(lines))]
    lengths = count_tokens([text for text, _ in rows], load_tokenizer_of(config)).lengths
    max_length = run_metrics["tokenization"]["max_length"]
    assert metrics["tokenization"]["truncated_fraction"] == {
        "train": run_metrics["tokenization"]["truncated_fraction"]["train"],
        "test": pytest.approx(float((lengths > max_length).mean())),
    }
