"""The model card (pipeline/card/write.py): model/README.md in the Hub's format, written from a run directory alone.

Run directories here are written by hand (config.yaml from the real config classes, a metrics.json of the shape
finetune writes), so the file runs in a few seconds; tests/models/test_roberta.py checks the card a real run writes.
"""

import json
from pathlib import Path

import pytest
import yaml
from huggingface_hub import EvalResult, ModelCard, ModelCardData
from huggingface_hub.repocard_data import model_index_to_eval_results

from pipeline.card.write import hub_id, write_model_card
from pipeline.config.load import load_config, save_config, to_dict
from pipeline.report.tools import main as report_main
from pipeline.run.directory import RunDir, RunDirError
from pipeline.run.record import RunRecord

LABELS = ["World", "Sports", "Business", "Sci/Tech"]


def per_class(values):
    return {label: {"precision": p, "recall": r, "f1": f, "support": s} for label, (p, r, f, s) in zip(LABELS, values)}


def fake_run(root: Path, *overrides: str, extra_metrics: dict | None = None, model_type: str = "bert") -> Path:
    config = load_config(None, [f"run.output_dir={root}", "run.name=card_run", *overrides])
    run = RunDir(config.run_dir)
    run.model_dir.mkdir(parents=True)
    save_config(config, run.config_path)
    saved_model_config = {"model_type": model_type, "id2label": dict(enumerate(LABELS))}
    (run.model_dir / "config.json").write_text(json.dumps(saved_model_config))
    test = {
        "accuracy": 0.8712345678901234,
        "macro_f1": 0.8654321,
        "loss": 0.41,
        "num_samples": 400,
        "per_class": per_class(
            [(0.9, 0.85, 0.874, 100), (0.95, 0.97, 0.96, 100), (0.8, 0.82, 0.81, 100), (0.84, 0.84, 0.84, 100)]
        ),
        "confusion_matrix": [[85, 5, 5, 5], [1, 97, 1, 1], [6, 2, 82, 10], [5, 2, 9, 84]],
    }
    metrics = {
        "run": {
            "name": "card_run",
            "model_kind": config.model.kind,
            "model_name_or_path": config.model.name_or_path,
            "num_parameters": 4_385_796,
            "started_at": "2025-05-01T10:00:00+00:00",
            "finished_at": "2025-05-01T10:21:13+00:00",
        },
        "labels": LABELS,
        "validation": {**test, "accuracy": 0.88},
        "test": test,
        "best": {"step": 150, "validation_accuracy": 0.88},
        "tokenization": {
            "max_length": 64,
            "max_length_setting": "auto",
            "truncated_fraction": {"train": 0.0098, "validation": 0.011, "test": 0.0123},
        },
        "timings": {"train_seconds": 1234.5, "total_seconds": 1271.0},
        "training": {
            "global_steps": 200,
            "epochs_completed": 2.0,
            "effective_batch_size": 32,
            "mixed_precision": "bf16",
            "num_processes": 1,
            "stopped_early": False,
        },
        "device": {"type": "cuda", "name": "NVIDIA H200", "num_processes": 1},
        "versions": {"python": "3.11.7", "torch": "2.13.0", "transformers": "5.23.0"},
        "data": {
            "sizes": {"train": 3600, "validation": 400, "test": 400},
            "seed": 42,
            "carved_from_train": {"validation": 0.1},
        },
        **(extra_metrics or {}),
    }
    run.write_record(RunRecord.from_dict(metrics))
    (run.path / "test_predictions.csv").write_text(
        "text,label,predicted,score,prob_World,prob_Sports,prob_Business,prob_Sci/Tech\n"
        '"Federer wins ""again"" in Basel",Sports,Sports,0.9,0.03,0.9,0.03,0.04\n'
    )
    return run.path


def section(markdown: str, heading: str) -> str:
    start = markdown.index(f"\n## {heading}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end != -1 else None]


def test_card_parses_validates_and_carries_the_test_metrics(tmp_path):
    run_dir = fake_run(tmp_path, "run.license=apache-2.0")
    path = write_model_card(run_dir)
    assert path == run_dir / "model" / "README.md"

    card = ModelCard.load(path)
    data = card.data.to_dict()
    # The metadata the Hub reads, rebuilt strictly (ignore_metadata_errors=False raises on a malformed model-index).
    strict = ModelCardData(**data, ignore_metadata_errors=False)
    assert strict.pipeline_tag == "text-classification" and strict.library_name == "transformers"
    assert strict.base_model == "bert-base-uncased"  # the default checkpoint is a Hub model
    assert strict.datasets == ["fancyzhx/ag_news"]  # the default data come from the Hub
    assert strict.license == "apache-2.0"
    assert set(strict.metrics) == {"accuracy", "f1"}

    metrics = json.loads((run_dir / "metrics.json").read_text())
    name, results = model_index_to_eval_results(data["model-index"])
    assert name == "card_run"
    by_type = {result.metric_type: result for result in results}
    assert isinstance(by_type["accuracy"], EvalResult)
    assert by_type["accuracy"].metric_value == metrics["test"]["accuracy"]  # exactly, not a rounded copy
    assert by_type["f1"].metric_value == metrics["test"]["macro_f1"]
    assert by_type["f1"].metric_args == {"average": "macro"}
    assert {result.dataset_split for result in results} == {"test"}
    assert {result.task_type for result in results} == {"text-classification"}

    text = card.text
    assert text.lstrip().startswith("# card_run")
    assert "**87.12% accuracy**" in text
    per_class_rows = [line for line in section(text, "Evaluation").splitlines() if line.startswith("| Sports |")]
    assert per_class_rows[0] == "| Sports | 0.9500 | 0.9700 | 0.9600 | 100 |"
    data = section(text, "Training data")
    assert "| train | 3,600 |" in data and "10% of the source's train split" in data and "Duplicate" not in data
    limitations = section(text, "Limitations")
    assert "cut to 64 tokens" in limitations and "train 0.98%" in limitations and "test 1.23%" in limitations
    usage = section(text, "How to use")
    assert 'pipeline("text-classification", model="your-username/card_run")' in usage
    assert "trust_remote_code" not in usage
    # The first test text, quoted for Python, cut where training cut texts.
    assert 'classifier("Federer wins \\"again\\" in Basel", truncation=True, max_length=64)' in usage
    assert f"python -m pipeline.predict --model {run_dir.parent.name}/{run_dir.name} --input" in usage
    assert "Licence: `apache-2.0`." in text and "Set `run.license`" not in text
    assert "| model kept | step 150, the best validation accuracy (88.00%) |" in section(text, "Training")
    assert "| transformers | 5.23.0 |" in section(text, "Environment")
    assert "## Baseline" not in text and "## Calibration" not in text and "baseline is more accurate" not in text


def test_optional_records_appear_when_metrics_json_has_them(tmp_path):
    duplicates = {
        "mode": "across",
        "within": {"train": 12, "validation": 0, "test": 1},
        "across": {"test_in_train": 3},
        "conflicts": 2,
        "conflict_examples": [],
        "removed": {"train": 12, "validation": 0, "test": 4},
    }
    extra = {
        # As pipeline/scoring/baseline.py records it: the metrics of compute_metrics, plus what it is.
        "baseline": {
            "name": "tfidf",
            "description": "TF-IDF + logistic regression",
            "accuracy": 0.8012,
            "macro_f1": 0.799,
            "num_samples": 400,
            "train_seconds": 1.5,
        },
        "calibration": {"ece": 0.0312, "temperature": 1.42, "bins": 15},
        "data": {"sizes": {"train": 3600, "validation": 400, "test": 396}, "seed": 7, "duplicates": duplicates},
    }
    text = ModelCard.load(write_model_card(fake_run(tmp_path, extra_metrics=extra))).text
    baseline = section(text, "Baseline")
    assert "| TF-IDF + logistic regression | 80.12% | 0.7990 | +7.00 points |" in baseline
    calibration = section(text, "Calibration")
    assert "| ece | 0.0312 |" in calibration and "| temperature | 1.4200 |" in calibration
    assert "| bins | 15 |" in calibration  # a count, not a score
    data = section(text, "Training data")
    assert "| test | 396 |" in data and "Seed: 7" in data
    assert "repeated within a split: train 12, validation 0, test 1" in data
    assert "across splits: test in train 3" in data and "more than one label: 2" in data
    assert "Removed before training and evaluation: train 12, validation 0, test 4." in data
    assert "incomplete_rows" not in data  # none were left out

    incomplete = {**extra["data"], "incomplete_rows": {"setting": "drop", "removed": {"train": 5, "test": 0}}}
    text = ModelCard.load(write_model_card(fake_run(tmp_path / "dropped", extra_metrics={"data": incomplete}))).text
    assert "without a text or a label, left out (`data.incomplete_rows: drop`): train 5, test 0." in text
    assert "Double quotes" not in text  # no record of them (JSON Lines, Parquet, the Hub, older runs)

    quoting = {
        **extra["data"],
        "quoting": {"setting": "auto", "read": {"train": "none", "test": "csv", "validation": "none"}},
    }
    text = ModelCard.load(write_model_card(fake_run(tmp_path / "quoting", extra_metrics={"data": quoting}))).text
    assert (
        "Double quotes in the files (`data.quoting: auto`): are read as text in train, validation; enclose fields in "
        "test." in section(text, "Training data")
    )
    assert "Fields separated" not in text  # no delimiter record: nothing to say

    commas_and_tabs = {"setting": None, "read": {"train": ",", "test": "\t"}}
    semicolons = {"setting": None, "read": {"train": ";", "validation": ";", "test": ","}}
    for index, (delimiter, said) in enumerate(
        [
            (commas_and_tabs, None),  # what a reader of CSV and TSV files assumes
            (semicolons, "Fields separated by `;` in train, validation; `,` in test (`data.delimiter` unset: read off"),
            ({"setting": "@", "read": {"train": "@"}}, "Fields separated by `@` in train (`data.delimiter: @`)."),
        ]
    ):
        data = {**extra["data"], "delimiter": delimiter}
        text = ModelCard.load(
            write_model_card(fake_run(tmp_path / f"delimiter{index}", extra_metrics={"data": data}))
        ).text
        training_data = section(text, "Training data")
        assert (said in training_data) if said else ("Fields separated" not in training_data)

    assert "baseline is more accurate" not in section(text, "Limitations")  # 87% against 80%
    beaten = {"baseline": {"description": "TF-IDF + logistic regression", "accuracy": 0.9, "macro_f1": 0.9}}
    text = ModelCard.load(write_model_card(fake_run(tmp_path / "beaten", extra_metrics=beaten))).text
    assert "baseline is more accurate on the same test split (90.00% against 87.12%)" in section(text, "Limitations")

    failed = {"baseline": {"name": "tfidf", "description": "TF-IDF + logistic regression", "error": "empty vocabulary"}}
    text = ModelCard.load(write_model_card(fake_run(tmp_path / "failed", extra_metrics=failed))).text
    assert "could not be fitted: empty vocabulary" in section(text, "Baseline")


def test_a_calibration_record_reads_as_before_and_after(tmp_path):
    ece = {"validation": {"before": 0.0337, "after": 0.0206}, "test": {"before": 0.0172, "after": 0.0093}}
    record = {"enabled": True, "method": "temperature scaling", "temperature": 1.123, "bins": 15, "ece": ece}
    record["loss"] = {"test": {"before": 0.3412, "after": 0.3301}}
    record["reliability"] = {"test": {"before": [{"count": 3}], "after": [{"count": 3}]}}
    text = ModelCard.load(write_model_card(fake_run(tmp_path, extra_metrics={"calibration": record}))).text
    calibration = section(text, "Calibration")
    assert "| temperature | 1.123 |" in calibration
    assert "| expected calibration error, test (before → after) | 0.0172 → 0.0093 |" in calibration
    assert "| negative log-likelihood, test (before → after) | 0.3412 → 0.3301 |" in calibration
    assert "| confidence bins (expected calibration error) | 15 |" in calibration
    assert "ece.test" not in calibration and "reliability" not in calibration


def test_local_checkpoint_and_files_give_no_hub_ids_and_encoder_card_says_trust_remote_code(tmp_path):
    local_model = tmp_path / "my_bert"
    local_model.mkdir()
    run_dir = fake_run(
        tmp_path / "a",
        f"model.name_or_path={local_model}",
        "data.source=files",
        "data.train_file=data/ag/train.csv",
        "data.test_file=data/ag/test.csv",
    )
    card = ModelCard.load(write_model_card(run_dir))
    assert card.data.base_model is None and card.data.datasets is None and card.data.license is None
    (result, *_) = card.data.eval_results
    assert result.dataset_type == "csv" and result.dataset_name == "train.csv, test.csv (local files)"
    assert "`my_bert` (a local folder)" in card.text
    assert "| base model | `my_bert`, a local folder: the metadata names no base_model" in section(
        card.text, "Training"
    )
    assert str(local_model) not in card.text  # a published card names no folder of this machine as its base

    encoder_dir = fake_run(tmp_path / "b", "model.kind=encoder", model_type="pipeline_encoder")
    card = ModelCard.load(write_model_card(encoder_dir))
    assert card.data.base_model is None and "custom_code" in card.data.tags
    usage = section(card.text, "How to use")
    assert "trust_remote_code=True" in usage
    # This hand-made model/ has no auto_map, like a folder saved before the code was stored with the weights.
    assert f"--upgrade-model {encoder_dir.parent.name}/{encoder_dir.name}` adds it" in usage
    assert hub_id("bert-base-uncased") == "bert-base-uncased" and hub_id("../shared/models/x") is None


# How a folder's splits were read, as metrics.json `data` records it.
FOLDERS_READ = {"class_folders": {"train": {"World": 1800, "Sports": 1800}}}
CLASS_FILES_READ = {"class_files": {"train": {"neg": "rt-polarity.neg", "pos": "rt-polarity.pos"}}}


@pytest.mark.parametrize(
    ("files", "read", "dataset_type", "dataset_name"),
    [
        (["data/ag/train.csv", "data/ag/test.csv.gz"], {}, "csv", "train.csv, test.csv.gz (local files)"),
        (["data/ag/train.jsonl", None], {}, "json", "train.jsonl (local file)"),
        # fastText's own files: no ending of their own, read as fastText by their content, or by the setting.
        (
            ["data/dbpedia/dbpedia.train", "data/dbpedia/dbpedia.test"],
            {},
            "text",
            "dbpedia.train, dbpedia.test (local files)",
        ),
        (["data/cooking/cooking.txt", None, "data.file_format=fasttext"], {}, "text", "cooking.txt (local file)"),
        # Folders of class folders: the folder given alone is the data set; train and test side by side, their folder.
        (["data/bbc", None], FOLDERS_READ, "text", "bbc (local files)"),
        (
            ["data/aclImdb/train", "data/aclImdb/test"],
            {"class_folders": {"train": {"neg": 9, "pos": 9}, "test": {"neg": 9, "pos": 9}}},
            "text",
            "aclImdb (local files)",
        ),
        # A folder of class files (rt-polarity.neg, rt-polarity.pos): a line a text.
        (["data/rt-polaritydata", None], CLASS_FILES_READ, "text", "rt-polaritydata (local files)"),
    ],
    ids=["csv", "jsonl", "fasttext-by-content", "fasttext-set", "folder", "folders-side-by-side", "class-files"],
)
def test_local_data_is_named_by_its_format_and_folder(tmp_path, files, read, dataset_type, dataset_name):
    train, test, *settings = files
    overrides = ["data.source=files", f"data.train_file={train}", *settings]
    overrides += [f"data.test_file={test}"] if test else []
    data = {"sizes": {"train": 3600, "validation": 400, "test": 400}, "seed": 42, **read}
    card = ModelCard.load(write_model_card(fake_run(tmp_path, *overrides, extra_metrics={"data": data})))
    (result, *_) = card.data.eval_results
    assert (result.dataset_type, result.dataset_name) == (dataset_type, dataset_name)
    assert f"trained with the `pipeline` package on {dataset_name}." in card.text
    training_data = section(card.text, "Training data")
    # A folder's rows are its files (or lines), not a table's columns: said so instead of the column rule.
    assert ("Each text is the `text` column" in training_data) is not bool(read)
    if read is CLASS_FILES_READ:
        assert (
            "Read from folders of class files, each non-blank line one text of the class its file names: train: "
            "`neg` rt-polarity.neg, `pos` rt-polarity.pos." in training_data
        )
    if read is FOLDERS_READ:
        assert "files per class: train: `World` 1,800, `Sports` 1,800." in training_data


def test_missing_metrics_is_a_one_line_error_naming_the_file(tmp_path, capsys):
    run_dir = fake_run(tmp_path)
    (run_dir / "metrics.json").unlink()
    with pytest.raises(RunDirError, match="metrics.json is missing"):
        write_model_card(run_dir)
    assert report_main(["--model-card", str(run_dir)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "metrics.json is missing" in err
    assert not (run_dir / "model" / "README.md").exists()


def test_report_cli_regenerates_the_card_of_an_old_run(tmp_path, capsys):
    run_dir = fake_run(tmp_path)
    assert not (run_dir / "model" / "README.md").exists()  # runs made before cards existed have none
    assert report_main(["--model-card", str(run_dir)]) == 0
    assert capsys.readouterr().out.strip() == str(run_dir / "model" / "README.md")
    assert ModelCard.load(run_dir / "model" / "README.md").data.model_name == "card_run"
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["run"]["license"] is None
    assert to_dict(load_config(run_dir / "config.yaml"))["model"]["kind"] == "pretrained"  # the new default name


def test_multi_label_run_names_subset_accuracy_and_micro_f1(tmp_path):
    extra = {
        "best": {"step": 40, "metric": "micro_f1", "validation_micro_f1": 0.61},
        "data": {"task": "multi_label", "sizes": {"train": 900, "validation": 100, "test": 100}},
        "thresholds": {"kind": "multi_label", "thresholds": {"World": 0.31, "Sports": 0.5, "Business": 0.27}},
    }
    run_dir = fake_run(tmp_path, "data.task=multi_label", extra_metrics=extra)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for split in ("test", "validation"):  # multi-label metrics have micro-F1 and no confusion matrix
        metrics[split]["micro_f1"] = 0.6234
        del metrics[split]["confusion_matrix"]
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    card = ModelCard.load(write_model_card(run_dir))
    results = {(r.metric_type, (r.metric_args or {}).get("average")): r for r in card.data.eval_results}
    assert results["accuracy", None].metric_name == "Subset accuracy"
    assert results["f1", "micro"].metric_value == 0.6234 and results["f1", "macro"].metric_value == 0.8654321
    assert "says which of its 4 labels (World, Sports, Business, Sci/Tech) apply" in card.text
    # The opening leads with what picked the model, as the report and the run's last line do.
    assert "it reaches **0.6234 micro-F1**, **87.12% subset accuracy** and **0.8654 macro-F1**" in card.text
    assert "| micro-F1 | 0.6234 | 0.6234 |" in section(card.text, "Evaluation")
    assert "Confusion matrix" not in card.text
    # Scored at 0.5 per class during training: not the thresholded validation micro-F1 of the table above.
    kept = "| model kept | step 40, the best validation micro-F1 (0.6100, at the 0.5 cut-off, before the thresholds "
    assert kept + "chosen after training) |" in section(card.text, "Training")
    usage = section(card.text, "How to use")
    assert "top_k=None)  # every label's sigmoid score" in usage  # else transformers.pipeline returns one label
    assert "`decision.json`" in usage and "World 0.3100, Sports 0.5000, Business 0.2700" in usage
    assert "(the other classes' threshold is 0.5)" in usage  # Sci/Tech was given none: 0.5, as predict applies


def test_a_flagging_run_with_some_classes_thresholded_says_the_others_are_never_flagged(tmp_path):
    extra = {"thresholds": {"kind": "flag", "thresholds": {"Sports": 0.6}}}
    usage = section(ModelCard.load(write_model_card(fake_run(tmp_path, extra_metrics=extra))).text, "How to use")
    assert (
        "(Sports 0.6000): a row whose top score is below its class's threshold is flagged as low-confidence " in usage
    )
    assert "(a row of another class is never flagged)" in usage


def test_the_card_says_which_columns_held_the_labels(tmp_path):
    single = ModelCard.load(write_model_card(fake_run(tmp_path / "single", "data.label_column=topic")))
    assert "the label is the `topic` column." in section(single.text, "Training data")
    columns = "data.label_columns=[World,Sports,Business]"
    indicators = ModelCard.load(write_model_card(fake_run(tmp_path / "columns", "data.task=multi_label", columns)))
    assert "a row has each class whose own column (`World`, `Sports`, `Business`) holds 1, true or yes." in section(
        indicators.text, "Training data"
    )


def test_a_label_train_lacked_is_a_limitation_and_has_no_recall_or_f1(tmp_path):
    """A data.label_columns column all 0 in train (or a data.label_names class train lacks): the card that goes to
    the Hub says the model never learned it, and shows, as the report does, no recall or F1 for a class without test
    rows instead of scikit-learn's 0."""
    counts = {"train": {"rows": 900, "per_class": {"World": 300, "Sports": 300, "Business": 300, "Sci/Tech": 0}}}
    extra = {"data": {"task": "multi_label", "sizes": {"train": 900, "validation": 100, "test": 100}}}
    extra["data"]["class_counts"] = counts
    run_dir = fake_run(tmp_path, "data.task=multi_label", extra_metrics=extra)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["test"]["per_class"]["Sci/Tech"] = {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    text = ModelCard.load(write_model_card(run_dir)).text
    assert "| Sci/Tech | 0.0000 | — | — | 0 |" in section(text, "Evaluation")
    assert "| Sports | 0.9500 | 0.9700 | 0.9600 | 100 |" in section(text, "Evaluation")
    assert "- No training text had `Sci/Tech`: the model never learned it" in section(text, "Limitations")
    assert "No training text" not in ModelCard.load(write_model_card(fake_run(tmp_path / "full"))).text


def test_a_class_the_model_found_none_of_is_a_limitation(tmp_path):
    """A class too rare in train to be learnt (1:200) has recall 0 in the per-class table only: the card's reader is
    told plainly not to rely on the model to find it."""
    run_dir = fake_run(tmp_path)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["test"]["per_class"]["Business"] = {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 3}
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    limitations = section(ModelCard.load(write_model_card(run_dir)).text, "Limitations")
    assert (
        "- It found none of the test texts of `Business` (3 test texts): recall 0, most often for too few training "
        "texts of it. Do not rely on this model to find it." in limitations
    )
    assert "found none" not in section(
        ModelCard.load(write_model_card(fake_run(tmp_path / "full"))).text, "Limitations"
    )


def test_multi_label_card_compares_with_the_baseline_on_micro_f1(tmp_path):
    """Subset accuracy is not what picked a multi-label model: the baseline table leads with micro-F1 and the lead
    is measured in it, and the limitation is raised on micro-F1 even where the baseline's subset accuracy is higher."""
    baseline = {"description": "TF-IDF + logistic regression", "accuracy": 0.95, "macro_f1": 0.6, "micro_f1": 0.7}
    extra = {
        "best": {"step": 40, "metric": "micro_f1", "validation_micro_f1": 0.61},
        "data": {"task": "multi_label", "sizes": {"train": 900, "validation": 100, "test": 100}},
        "baseline": baseline,
    }
    run_dir = fake_run(tmp_path, "data.task=multi_label", extra_metrics=extra)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["test"]["micro_f1"] = 0.6234
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    text = ModelCard.load(write_model_card(run_dir)).text
    table = section(text, "Baseline")
    assert "| model | test micro-F1 | test subset accuracy | test macro-F1 | this model's micro-F1 lead |" in table
    assert "| TF-IDF + logistic regression | 0.7000 | 95.00% | 0.6000 | -7.66 points |" in table
    assert "baseline scores a higher micro-F1 on the same test split (0.7000 against 0.6234)" in text


@pytest.mark.parametrize(
    ("overrides", "read_as", "differs"),
    [
        ((), "keeping their first tokens: a long document is judged on its beginning only", False),
        (("tokenizer.truncation=head_tail",), "keeping their first 25% and last 75% of that length", True),
        (("tokenizer.long_text=chunk", "tokenizer.max_chunks=4"), "overlapping windows of 64 tokens (at most 4", True),
    ],
)
def test_the_card_says_how_long_texts_were_read(tmp_path, overrides, read_as, differs):
    """A run that read long texts in windows or by head and tail must not be described as cutting at the head, and
    its card warns that transformers.pipeline (head only) can score those texts differently."""
    text = ModelCard.load(write_model_card(fake_run(tmp_path, *overrides))).text
    assert read_as in section(text, "Limitations")
    usage = section(text, "How to use")
    assert ("on texts longer than its training length its scores can differ" in usage) is differs
    assert "reads long texts as training did" in usage


def test_the_model_index_names_the_hub_split_scored_as_test(tmp_path):
    run_dir = fake_run(
        tmp_path, "data.hub_name=nyu-mll/glue", "data.hub_config=mnli", "data.hub_splits={test: validation_mismatched}"
    )
    _, results = model_index_to_eval_results(ModelCard.load(write_model_card(run_dir)).data.to_dict()["model-index"])
    assert {(result.dataset_type, result.dataset_config, result.dataset_split) for result in results} == {
        ("nyu-mll/glue", "mnli", "validation_mismatched")
    }


def test_a_local_folder_read_as_a_hub_dataset_is_named_by_its_own_name(tmp_path):
    """data.source=hub reads a local folder too (save_to_disk's, the Hub's data/ layout of Parquet shards), as the
    README advises for both: the published card names it as a local file is named, never by its path here."""
    folder = tmp_path / "private" / "tickets_2024"
    folder.mkdir(parents=True)
    card = ModelCard.load(write_model_card(fake_run(tmp_path, "data.source=hub", f"data.hub_name={folder}")))
    (result, *_) = card.data.eval_results
    assert (result.dataset_type, result.dataset_name) == ("tickets_2024", "tickets_2024")
    assert card.data.datasets is None  # no Hub dataset to link in the metadata
    assert "Source: the local dataset folder `tickets_2024`." in section(card.text, "Training data")
    assert str(tmp_path) not in str(card)


def distill_record(teacher: Path, **changes) -> dict:
    """metrics.json's `distill` record, as pipeline.distill.teacher.student_rows and init_student_embeddings write it."""
    record = {
        "teacher": str(teacher),
        "teacher_model_dir": str(teacher / "model"),
        "teacher_test_accuracy": 0.9123,
        "teacher_train_accuracy": 0.9456,
        "alpha": 0.3,
        "temperature": 2.5,
        "augment": "mask",
        "augment_copies": 2,
        "unlabeled_file": str(teacher.parent / "extra" / "unlabelled.csv"),
        "transfer_set": {
            "labelled": 3600,
            "unlabeled": 500,
            "unlabeled_dropped_as_eval_duplicates": 3,
            "augmented": 7200,
            "total": 11300,
        },
        "teacher_logits_from_cache": False,
        "teacher_labelling_seconds": 12.5,
        "teacher_rows_per_second": 904.0,
        "init_embeddings": {"from": str(teacher / "model"), "dimensions": 32, "variance_kept": 0.6585},
    }
    return {**record, **changes}


def test_a_distilled_students_card_says_how_it_was_made_from_its_distill_record(tmp_path):
    teacher = tmp_path / "runs" / "bert_teacher"
    record = distill_record(teacher)
    # config.yaml's train.distill says otherwise: the card must read the record (what the run did), not the settings.
    run_dir = fake_run(
        tmp_path / "student",
        "model.kind=encoder",
        f"train.distill.teacher={tmp_path / 'elsewhere' / 'other_teacher'}",
        "train.distill.alpha=0.9",
        "train.distill.temperature=7",
        model_type="pipeline_encoder",
        extra_metrics={"distill": record},
    )
    text = ModelCard.load(write_model_card(run_dir)).text
    intro = text[: text.index("\n## ")]
    assert "distilled from the teacher `bert_teacher`, whose token embeddings it started from" in intro
    assert "trained from scratch" not in intro and "other_teacher" not in text
    distillation = section(text, "Distillation")
    assert "| teacher | `bert_teacher` |" in distillation
    assert f"| teacher's test accuracy (its own run's test split) | {100 * record['teacher_test_accuracy']:.2f}% |" in (
        distillation
    )
    loss = f"{record['alpha']:g} × KL(teacher ‖ student) at temperature {record['temperature']:g}"
    assert loss in distillation and f"+ {1 - record['alpha']:g} × cross-entropy" in distillation
    transfer = record["transfer_set"]
    assert (
        f"| transfer set | {transfer['total']:,} texts: {transfer['labelled']:,} labelled train texts, "
        f"{transfer['unlabeled']:,} unlabelled texts, {transfer['augmented']:,} augmented copies |" in distillation
    )
    assert "| unlabelled texts from | `unlabelled.csv` |" in distillation
    assert f"| augmentation | `mask`, {record['augment_copies']} copies per train text |" in distillation
    embeddings = record["init_embeddings"]
    assert f"first {embeddings['dimensions']} principal components, {100 * embeddings['variance_kept']:.2f}%" in (
        distillation
    )
    assert str(tmp_path) not in text  # teacher and files by their own names only

    # train.distill.teacher may name the teacher run's model/ folder: the run is still the teacher's name. Without
    # init_embeddings and a teacher run's metrics, those rows are left out; without a record, no section.
    bare = {**distill_record(teacher / "model", teacher_test_accuracy=None, augment="none", unlabeled_file=None)}
    del bare["init_embeddings"]
    text = ModelCard.load(
        write_model_card(
            fake_run(
                tmp_path / "bare", "model.kind=encoder", model_type="pipeline_encoder", extra_metrics={"distill": bare}
            )
        )
    ).text
    distillation = section(text, "Distillation")
    assert "| teacher | `bert_teacher` |" in distillation and "| augmentation | none |" in distillation
    assert "test accuracy" not in distillation and "token embeddings" not in distillation
    assert "whose token embeddings" not in text and "distilled from the teacher `bert_teacher`" in text
    plain = ModelCard.load(write_model_card(fake_run(tmp_path / "plain", "model.kind=encoder"))).text
    assert "## Distillation" not in plain and "trained from scratch, without pretraining" in plain


def test_without_a_licence_the_card_says_how_to_give_one_and_names_no_path_of_this_machine(tmp_path):
    data = tmp_path / "data"
    run_dir = fake_run(
        tmp_path / "runs",
        f"model.name_or_path={tmp_path / 'models' / 'my_bert'}",
        "data.source=files",
        f"data.train_file={data / 'tickets_train.csv'}",
        f"data.test_file={data / 'tickets_test.csv'}",
    )
    path = write_model_card(run_dir)
    card = ModelCard.load(path)
    # The metadata the Hub reads, rebuilt strictly, and its model-index parsed back.
    strict = ModelCardData(**card.data.to_dict(), ignore_metadata_errors=False)
    assert strict.license is None and strict.base_model is None
    _, results = model_index_to_eval_results(card.data.to_dict()["model-index"])
    assert {r.dataset_name for r in results} == {"tickets_train.csv, tickets_test.csv (local files)"}
    assert str(tmp_path) not in path.read_text()  # neither in the metadata nor in the text
    assert "Source: local files: train `tickets_train.csv`, test `tickets_test.csv`." in card.text
    licence = next(line for line in card.text.splitlines() if line.startswith("Licence:"))
    assert "Set `run.license`" in licence and "the checkpoint it was fine-tuned from" in licence
    command = licence[licence.index("`python -m") + 1 : licence.rindex("`")]
    assert command == f"python -m pipeline.report --model-card {run_dir.parent.name}/{run_dir.name}"

    # The setting the card names exists, and what it gives reaches the metadata.
    licensed = fake_run(tmp_path / "licensed", "run.license=mit")
    assert ModelCardData(**ModelCard.load(write_model_card(licensed)).data.to_dict()).license == "mit"


def test_an_encoder_card_shows_how_its_tokenizer_loads_without_custom_code(tmp_path):
    from pipeline.card.phrases import tokenizer_code

    run_dir = fake_run(tmp_path, "model.kind=encoder", model_type="pipeline_encoder")
    config_path = run_dir / "model" / "config.json"
    saved = json.loads(config_path.read_text())
    saved["auto_map"] = {"AutoModelForSequenceClassification": "modeling_encoder.EncoderForSequenceClassification"}
    config_path.write_text(json.dumps(saved))
    (run_dir / "model" / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer"}))
    usage = section(ModelCard.load(write_model_card(run_dir)).text, "How to use")
    assert 'model="your-username/card_run", trust_remote_code=True)' in usage
    # The code tests/models/test_modeling_encoder.py runs where only torch and transformers are installed.
    code = tokenizer_code("your-username/card_run", "BertTokenizer")
    assert "trust_remote_code=False" in code[-1] and "BertTokenizer" in code[-1]
    assert "\n".join(code) in usage
    assert "--upgrade-model" not in usage
