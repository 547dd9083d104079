"""python -m pipeline.audit, and the audit stage 4 writes: a tiny run (a random 2-layer BERT, a few steps on AG
News rows) audited in-run, then a labelled file audited against it."""

import csv

import pytest

from pipeline import finetune
from pipeline.audit.cli import main
from pipeline.config.load import load_config
from pipeline.run.directory import RunDir
from pipeline.scoring.label_audit import COLUMNS
from pipeline.scoring.label_signals import BASELINE_CV, DYNAMICS, MODEL, NEAR_DUPLICATE
from tests.helpers import MINILM_CONFIG, reset_accelerate, tiny_run_overrides


@pytest.fixture(scope="module")
def audited_run(tmp_path_factory, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv):
    reset_accelerate()
    root = tmp_path_factory.mktemp("audit")
    overrides = tiny_run_overrides(root, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv)
    overrides += ["run.name=audited", "train.max_steps=12", "train.per_device_batch_size=16", "train.epochs=1"]
    overrides += ["train.learning_rate=1e-3", "eval.predict_speed_rows=0", "eval.label_audit=on"]
    finetune.run(load_config(MINILM_CONFIG, overrides))
    reset_accelerate()
    return RunDir(root / "runs" / "audited")


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_a_run_audits_its_splits_into_label_issues_csv_and_its_record(audited_run):
    record = audited_run.read_record()
    audit = record.label_audit
    assert audit is not None and audit.method == "confident_learning"
    splits = audit.splits
    assert set(splits) == {"train", "validation", "test"}
    assert splits["train"]["signals"] == sorted([BASELINE_CV, DYNAMICS])
    assert splits["validation"]["signals"] == [MODEL] == splits["test"]["signals"]
    assert splits["train"]["rows"] == record.data.sizes["train"]
    header, *rows = read_rows(audited_run.label_issues_path)
    assert header == COLUMNS
    flagged = sum(part["flagged"] + part["near_duplicates"] for part in splits.values())
    assert len(rows) >= sum(part["flagged"] for part in splits.values()) and len(rows) <= flagged
    assert sum(audit.class_pairs.values()) <= len(rows)
    for row in rows:
        assert row[3] in record.labels and row[4] in record.labels and row[6]
    report = (audited_run.path / "report.md").read_text()
    assert "## Labels to read again" in report and "label_issues.csv" in report


def write_file(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


def test_a_labelled_file_is_audited_against_the_run(audited_run, ag_news_test_csv, tmp_path, capsys):
    rows = read_rows(ag_news_test_csv)[:60]
    title, description = rows[0][1], rows[0][2]
    other = "1" if rows[0][0] != "1" else "2"
    rows.append([other, title.upper() + "!", description + " http://example.com/story"])  # a near duplicate
    source, output = tmp_path / "new.csv", tmp_path / "issues.csv"
    write_file(source, rows)
    code = main(["--model", str(audited_run.path), "--input", str(source), "--output", str(output)])
    assert code == 0
    assert "of 61 rows flagged" in capsys.readouterr().out
    header, *issues = read_rows(output)
    assert header == COLUMNS
    near = {row[0] for row in issues if NEAR_DUPLICATE in row[6].split()}
    assert near == {"1", "61"}  # the rows' lines in the file
    assert {row[1] for row in issues} == {"input"}


def test_a_file_that_cannot_be_read_is_one_line_naming_it(audited_run, tmp_path, capsys):
    missing = tmp_path / "nowhere.csv"
    assert main(["--model", str(audited_run.path), "--input", str(missing), "--output", str(tmp_path / "o.csv")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "nowhere.csv" in error and "\n" not in error
