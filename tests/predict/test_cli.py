"""Tests for batch prediction (pipeline/predict.py): the CLI contract, bad input, streaming, the Python API.

Everything runs offline on a tiny random BERT (2 layers, hidden 32) saved into a run directory; most CLI tests
call `main(argv)` in-process, a few go through a subprocess to check what a shell user sees.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from transformers import BertConfig, BertForSequenceClassification

from pipeline.config.schema import MAX_BATCH_TOKENS
from pipeline.models import encoder
from pipeline.predict import PredictError, Predictor, main, predict_dataframe, predict_texts, resolve_model_source
from pipeline.run.directory import RunDir
from tests.helpers import REPO_ROOT, UNWRITABLE_KINDS, one_torch_thread, tiny_bert_classifier, unwritable_folder
from tests.helpers import spread_head as helpers_spread_head

LABELS = ["World", "Sports", "Business", "Sci/Tech"]
HEADER = ["id", "title", "description", "note"]
ADDED = ["label", "label_id", "score", "error"]


@pytest.fixture(autouse=True, scope="module")
def single_thread():
    with one_torch_thread():
        yield


def save_tiny_bert(model_dir: Path, tokenizer) -> BertForSequenceClassification:
    model = tiny_bert_classifier(tokenizer, LABELS)
    spread_head(model, tokenizer)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return model


def spread_head(model: BertForSequenceClassification, tokenizer) -> None:
    helpers_spread_head(model, tokenizer, [ag_text(row) for row in news_rows(60)])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, bert_tokenizer) -> Path:
    run = tmp_path_factory.mktemp("runs") / "tiny"
    save_tiny_bert(run / "model", bert_tokenizer)
    (run / "config.yaml").write_text(
        "data:\n  text_columns: [title, description]\n  text_separator: ' '\n  unescape_newlines: true\n"
    )
    (run / "metrics.json").write_text(json.dumps({"labels": LABELS, "tokenization": {"max_length": 64}}))
    return run


@pytest.fixture(scope="module")
def predictor(run_dir) -> Predictor:
    return Predictor.from_path(run_dir, device="cpu", precision="fp32")


TRICKY_ROWS = [
    ["001", "NA", "Stocks fell sharply on Wall Street", "NA"],
    ["002", "Cup final", 'A late goal, then "extra time", then penalties', ""],
    ["003", "Multi\nline title", "first line\nsecond line, with a comma", "001"],
    ["004", "Escaped", "A second\\nline as ag_news writes it", "N/A"],
    ["005", "Ünïcødé — “quotes”", "Café prices rise in Zürich 😀", "null"],
    ["006", "", "Only a description here", " leading space"],
    ["007", "Only a title", "", "trailing space "],
    ["008", "Chip maker", "New processors launched " * 30, "long text is truncated"],
]


def news_rows(count: int) -> list[list[str]]:
    """`count` varied rows: the tricky ones first, then generated headlines."""
    topics = ["election results", "football match", "oil prices", "new smartphone", "space launch", "bank merger"]
    rows = [list(row) for row in TRICKY_ROWS[:count]]
    for index in range(len(rows), count):
        topic = topics[index % len(topics)]
        rows.append(
            [f"{index:03d}", f"Report {index} on {topic}", f"Details about the {topic}, day {index}.", str(index)]
        )
    return rows


def write_table(path: Path, rows: list[list[str]], header: list[str] | None = HEADER, delimiter: str = ",") -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
        if header:
            writer.writerow(header)
        writer.writerows(rows)
    return path


def read_table(path: Path, delimiter: str = ",") -> list[list[str]]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle, delimiter=delimiter))


def run_main(argv: list[str]) -> int:
    """Exit code of main(argv) in-process: 0 when it returns, else the SystemExit code."""
    try:
        main([str(arg) for arg in argv])
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    return 0


def predict_cli(run_dir: Path, input_path: Path, output_path: Path, *extra: str) -> int:
    return run_main(
        [
            "--model",
            run_dir,
            "--input",
            input_path,
            "--output",
            output_path,
            "--precision",
            "fp32",
            "--no-progress",
            *extra,
        ]
    )


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def reference_predictions(run_dir: Path, texts: list[str], tokenizer) -> tuple[np.ndarray, np.ndarray]:
    """The straightforward way: every row padded to the fixed length, one forward pass, full precision."""
    model = BertForSequenceClassification.from_pretrained(run_dir / "model").eval()
    encoded = tokenizer(texts, padding="max_length", truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        logits = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits
    probabilities = logits.softmax(dim=-1).numpy()
    return probabilities.argmax(axis=1), probabilities


def ag_text(row: list[str]) -> str:
    return " ".join(part.replace("\\n", "\n").strip() for part in row[1:3] if part.strip())


MESSY_FILE = (
    "ID , TITLE, Description \n"  # header in another case, with stray spaces
    "1,  Padded title  ,\\nescaped start\n"
    "2,Title only,   \n"
    "3,,Description only\n"
    '4,"Multi\nline",a\\nb  \n'
    "5,  ,  both parts  \n"
)


def test_stage_1_and_prediction_read_messy_rows_into_identical_texts(run_dir, tmp_path, monkeypatch):
    """One file through stage 1 (as a training file) and through `pipeline.predict` (with the run's text rule):
    both go through pipeline.data.tables, so the texts are the same by construction; this checks they stay so."""
    from pipeline.config.schema import DataConfig
    from pipeline.data.load import load_splits

    messy = tmp_path / "messy.csv"
    messy.write_text(MESSY_FILE)
    config = DataConfig(
        source="files",
        train_file=str(messy),
        test_file=str(messy),
        validation_file=str(messy),
        label_column="id",
        label_names=[str(i) for i in range(1, 6)],
        label_index_base=0,
        text_columns=["title", "description"],
        unescape_newlines=True,
        validation_fraction=0.2,
        deduplicate="none",
    )
    stage_1 = sorted(load_splits(config, seed=0)["test"]["text"])

    seen: list[str] = []
    label_texts = Predictor.label_texts
    monkeypatch.setattr(
        Predictor, "label_texts", lambda self, texts, **kw: seen.extend(texts) or label_texts(self, texts, **kw)
    )
    assert predict_cli(run_dir, messy, tmp_path / "out.csv") == 0
    assert sorted(seen) == stage_1
    assert {"Padded title escaped start", "Title only", "Multi\nline a\nb", "both parts"} <= set(seen)


# ---------------------------------------------------------------------------------------------------------------
# Round trip


def test_round_trip_keeps_rows_and_matches_full_padding_forward_pass(run_dir, tmp_path, bert_tokenizer, capsys):
    rows = news_rows(40)
    source = write_table(tmp_path / "in.csv", rows)
    assert predict_cli(run_dir, source, tmp_path / "out.csv", "--batch-size", "7") == 0

    output = read_table(tmp_path / "out.csv")
    assert output[0] == HEADER + ADDED
    body = output[1:]
    assert len(body) == len(rows)
    assert [row[:4] for row in body] == rows  # order and every input field exactly, "NA", "001", "" included
    labelled = [row for row in body if row[7] == ""]
    assert len(labelled) == len(rows)

    expected_ids, expected_probabilities = reference_predictions(
        run_dir, [ag_text(row) for row in rows], bert_tokenizer
    )
    assert [int(row[5]) for row in body] == expected_ids.tolist()
    assert [row[4] for row in body] == [LABELS[i] for i in expected_ids]
    scores = np.array([float(row[6]) for row in body])
    np.testing.assert_allclose(scores, expected_probabilities.max(axis=1), atol=1e-3)
    assert len(set(expected_ids.tolist())) > 1, "the tiny model should not predict one class for everything"
    assert f"labelled {len(rows)} rows" in capsys.readouterr().err


def test_bf16_precision_gives_valid_probabilities(run_dir):
    """Agreement of bf16 with fp32 (>= 99.5% of labels) is measured on a trained-size model by
    benchmarks/predict_speed.py: this random model's head is tuned to amplify tiny differences between
    nearly identical pooled vectors, which amplifies bf16 rounding just as much."""
    predictor = Predictor.from_path(run_dir, device="cpu", precision="bf16", batch_size=8)
    assert predictor.precision == "bf16"
    ids, probabilities = predictor.infer([ag_text(row) for row in news_rows(20)])
    assert probabilities.dtype == np.float32 and np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    assert ids.tolist() == probabilities.argmax(axis=1).tolist()
    assert Predictor.from_path(run_dir, device="cpu", precision="fp32").precision == "fp32"


def test_bf16_near_ties_are_rechecked_in_fp32(run_dir, predictor):
    texts = [ag_text(row) for row in news_rows(30)]
    full_ids, full_probabilities = predictor.infer(texts)
    rechecked = Predictor.from_path(run_dir, device="cpu", precision="bf16", recheck_margin=1.0)  # every row
    ids, probabilities = rechecked.infer(texts)
    assert ids.tolist() == full_ids.tolist()
    np.testing.assert_allclose(probabilities, full_probabilities, atol=1e-3)
    unchecked = Predictor.from_path(run_dir, device="cpu", precision="bf16", recheck_margin=0.0)
    assert np.abs(unchecked.infer(texts)[1] - full_probabilities).max() > 1e-3  # bf16 really was used


def test_bf16_runs_a_bf16_copy_of_the_weights_and_keeps_the_fp32_model():
    import torch
    from transformers import BertForSequenceClassification

    from pipeline.predict.torch_backend import TorchBackend

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, num_labels=3
    )
    model = BertForSequenceClassification(config).eval()
    ids = np.random.default_rng(0).integers(1, 100, size=(8, 16))
    mask = np.ones_like(ids)
    mask[:4, 10:] = 0  # some padded rows

    def logits(backend, dtype):
        with backend.running(dtype):
            return backend.logits({"input_ids": ids, "attention_mask": mask}), backend.running_model

    backend = TorchBackend(model, torch.device("cpu"))
    fp32, ran_fp32 = logits(backend, None)
    bf16, ran_bf16 = logits(backend, torch.bfloat16)
    assert ran_fp32 is model and {p.dtype for p in model.parameters()} == {torch.float32}  # the model is untouched
    assert {p.dtype for p in ran_bf16.parameters()} == {torch.bfloat16}
    assert logits(backend, torch.bfloat16)[1] is ran_bf16  # one copy, made once
    autocast, ran_autocast = logits(TorchBackend(model, torch.device("cpu"), bf16_weights=False), torch.bfloat16)
    assert ran_autocast is model
    spread = np.abs(fp32).max()
    for reduced in (bf16, autocast):
        assert 0 < np.abs(reduced - fp32).max() < 0.05 * spread  # bf16 rounding, not another computation


def test_chunk_boundaries_do_not_change_the_output(run_dir, tmp_path):
    source = write_table(tmp_path / "in.csv", news_rows(23))
    assert predict_cli(run_dir, source, tmp_path / "small.csv", "--chunk-size", "5", "--batch-size", "3") == 0
    assert predict_cli(run_dir, source, tmp_path / "large.csv", "--chunk-size", "1000") == 0
    small, large = read_table(tmp_path / "small.csv"), read_table(tmp_path / "large.csv")
    assert len(small) == len(large) == 24
    # Everything but the score is identical; the score may differ in its last digit, as batches are composed
    # differently (matrix kernels round differently for other shapes).
    assert [row[:6] + row[7:] for row in small] == [row[:6] + row[7:] for row in large]
    np.testing.assert_allclose([float(r[6]) for r in small[1:]], [float(r[6]) for r in large[1:]], atol=1e-3)


def test_probabilities_columns_sum_to_one(run_dir, tmp_path):
    source = write_table(tmp_path / "in.csv", news_rows(12))
    assert predict_cli(run_dir, source, tmp_path / "out.csv", "--probabilities") == 0
    output = read_table(tmp_path / "out.csv")
    probability_columns = [f"prob_{name}" for name in LABELS]
    assert output[0] == HEADER + ["label", "label_id", "score", *probability_columns, "error"]
    for row in output[1:]:
        probabilities = np.array([float(value) for value in row[7:11]])
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-5)
        assert float(row[6]) == probabilities.max()
        assert LABELS[int(np.argmax(probabilities))] == row[4]


def test_tsv_in_and_out(run_dir, tmp_path):
    rows = news_rows(10)
    write_table(tmp_path / "in.csv", rows)
    write_table(tmp_path / "in.tsv", rows, delimiter="\t")
    assert predict_cli(run_dir, tmp_path / "in.csv", tmp_path / "out.csv") == 0
    assert predict_cli(run_dir, tmp_path / "in.tsv", tmp_path / "out.tsv") == 0
    assert read_table(tmp_path / "out.tsv", delimiter="\t") == read_table(tmp_path / "out.csv")
    assert "\t" in (tmp_path / "out.tsv").read_text().splitlines()[0]


def test_gzip_input_and_output(run_dir, tmp_path):
    rows = news_rows(10)
    plain = write_table(tmp_path / "in.csv", rows)
    with gzip.open(tmp_path / "in.csv.gz", "wb") as handle:
        handle.write(plain.read_bytes())
    assert predict_cli(run_dir, plain, tmp_path / "out.csv") == 0
    assert predict_cli(run_dir, tmp_path / "in.csv.gz", tmp_path / "out_gz.csv") == 0
    assert predict_cli(run_dir, tmp_path / "in.csv.gz", tmp_path / "out.csv.gz") == 0
    assert (tmp_path / "out_gz.csv").read_bytes() == (tmp_path / "out.csv").read_bytes()
    assert read_table(tmp_path / "out.csv.gz") == read_table(tmp_path / "out.csv")


def test_headerless_input_with_column_names(run_dir, tmp_path, ag_news_test_csv):
    lines = ag_news_test_csv.read_text(encoding="utf-8").splitlines(keepends=True)[:15]
    source = tmp_path / "test15.csv"
    source.write_text("".join(lines), encoding="utf-8")
    code = predict_cli(run_dir, source, tmp_path / "out.csv", "--column-names", "class_index,title,description")
    assert code == 0
    output = read_table(tmp_path / "out.csv")
    assert output[0] == ["class_index", "title", "description", *ADDED]
    assert [row[:3] for row in output[1:]] == list(csv.reader(io.StringIO("".join(lines))))


def test_bare_model_directory_reads_text_column(run_dir, tmp_path, caplog, capsys):
    """A folder that does not record how its texts were built (saved before decision.json held it, or by another
    tool) is read with the default settings, and says so: which ones, and how to give the training ones."""
    rows = [["a", "Stocks fell"], ["b", "A late goal won the cup"]]
    source = write_table(tmp_path / "in.csv", rows, header=["id", "text"])
    assert predict_cli(run_dir / "model", source, tmp_path / "out.csv") == 1  # model/ of a run: run's columns apply
    assert predict_cli(run_dir / "model", source, tmp_path / "out.csv", "--text-columns", "text") == 0
    bare = tmp_path / "bare"
    shutil.copytree(run_dir / "model", bare)
    with caplog.at_level(logging.WARNING, logger="pipeline.predict.predictor"):
        predictor = Predictor.from_path(bare, device="cpu")
    assert predictor.text_spec.columns == ("text",)
    assert predictor.max_length == 512  # the tokenizer sets no limit, so BERT's 512 positions cap it
    (warning,) = [record.getMessage() for record in caplog.records if "does not record" in record.getMessage()]
    assert "reading the column 'text', cut to 512 tokens" in warning
    assert "pass --text-columns, --text-separator and --max-length as in training" in warning
    assert predict_cli(bare, source, tmp_path / "bare.csv") == 0
    assert len(read_table(tmp_path / "bare.csv")) == 3
    capsys.readouterr()
    news = write_table(tmp_path / "news.csv", news_rows(2))
    assert predict_cli(bare, news, tmp_path / "news_out.csv") == 1
    assert_one_line_error(capsys.readouterr().err, "'text'", "does not record the columns it was trained on")


def test_texts_the_vocabulary_cannot_read_are_warned_about_once_for_the_whole_input(run_dir, tmp_path, caplog):
    """A quarter of the rows Chinese, which an English vocabulary reads as [UNK]: one warning, as training gives of
    train's, counted over every chunk (its wording and thresholds are windows.unknown_tokens_warning's); none for
    English rows."""
    rows = news_rows(12)
    for row in rows[2::4]:
        row[1:3] = ["快递太慢了", "等了两个星期"]
    mixed = write_table(tmp_path / "mixed.csv", rows)
    with caplog.at_level(logging.WARNING, logger="pipeline.predict.cli"):
        assert predict_cli(run_dir, mixed, tmp_path / "mixed_out.csv", "--chunk-size", "3") == 0
    (warning,) = [record.getMessage() for record in caplog.records if "unknown token" in record.getMessage()]
    assert (
        "of the input's tokens are the unknown token [UNK], and 25.0% of its texts are more than 50% [UNK]" in warning
    )
    assert "multilingual" in warning
    caplog.clear()
    english = write_table(tmp_path / "english.csv", news_rows(12)[8:])
    with caplog.at_level(logging.WARNING, logger="pipeline.predict.cli"):
        assert predict_cli(run_dir, english, tmp_path / "english_out.csv") == 0
    assert "unknown token" not in caplog.text


def test_a_model_folder_copied_out_of_its_run_predicts_as_the_run(run_dir, tmp_path, caplog):
    """model/decision.json records how the run built and read its texts (what stage 4 saves), so the folder alone,
    copied anywhere, reads them as the run does: two columns, a separator other than the default, a short length,
    head+tail truncation."""
    from pipeline.config.load import load_config, save_config
    from pipeline.run.directory import write_decision
    from pipeline.scoring.decide import decision_record
    from pipeline.scoring.thresholds import default_decision

    settings = ["data.text_columns=[title,description]", "data.text_separator=' || '", "tokenizer.max_length=16"]
    config = load_config(None, [*settings, "tokenizer.chunk_stride=4", "tokenizer.truncation=head_tail"])
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    save_config(config, run / "config.yaml")
    (run / "metrics.json").write_text(json.dumps({"labels": LABELS, "tokenization": {"max_length": 16}}))
    write_decision(run / "model", decision_record(config, 1.0, default_decision(LABELS, False), 16))
    copied = tmp_path / "elsewhere" / "model"
    shutil.copytree(run / "model", copied)

    source = write_table(tmp_path / "in.csv", news_rows(12))
    assert predict_cli(run, source, tmp_path / "run.csv", "--probabilities") == 0
    with caplog.at_level(logging.WARNING):
        assert predict_cli(copied, source, tmp_path / "copied.csv", "--probabilities") == 0
    assert "does not record" not in caplog.text
    assert read_table(tmp_path / "copied.csv") == read_table(tmp_path / "run.csv")

    # Without the record, the same folder (told its columns) reads 512 tokens joined by " ": other probabilities.
    decision = json.loads((copied / "decision.json").read_text())
    del decision["input"]
    (copied / "decision.json").write_text(json.dumps(decision))
    assert (
        predict_cli(copied, source, tmp_path / "guessed.csv", "--probabilities", "--text-columns", "title,description")
        == 0
    )
    assert read_table(tmp_path / "guessed.csv") != read_table(tmp_path / "run.csv")


def test_text_separator_joins_the_columns_in_the_command_and_the_dataframe(run_dir, predictor, tmp_path):
    """--text-separator (text_separator= in Python) joins the text columns otherwise than the model recorded: what a
    folder that does not record its separator needs."""
    rows = news_rows(14)[len(TRICKY_ROWS) :]
    expected = predict_texts(predictor, [f"{row[1]} || {row[2]}" for row in rows])
    source = write_table(tmp_path / "in.csv", rows)
    assert predict_cli(run_dir, source, tmp_path / "out.csv", "--text-separator", " || ") == 0
    cli = read_table(tmp_path / "out.csv")[1:]
    assert [row[4] for row in cli] == [label for label, _ in expected]
    np.testing.assert_allclose([float(row[6]) for row in cli], [score for _, score in expected], rtol=1e-6)
    frame = pd.DataFrame(rows, columns=HEADER)
    labelled = predict_dataframe(predictor, frame, text_separator=" || ")
    np.testing.assert_allclose(labelled["score"], [score for _, score in expected], rtol=1e-6)
    assert not np.allclose(predict_dataframe(predictor, frame)["score"], labelled["score"])  # " " as recorded


def test_fewer_text_columns_than_the_model_was_trained_on_are_said_in_one_line(run_dir, tmp_path, caplog):
    """A model trained on title and description, given the description alone, labelled every row without a word: one
    warning names what it was trained on and what it reads now. Renamed columns of the same count are no loss."""
    rows = news_rows(12)[len(TRICKY_ROWS) :]
    source = write_table(tmp_path / "in.csv", rows)
    with caplog.at_level(logging.WARNING, logger="pipeline.predict.source"):
        assert predict_cli(run_dir, source, tmp_path / "one.csv", "--text-columns", "description") == 0
    (warning,) = [record.getMessage() for record in caplog.records if "trained on" in record.getMessage()]
    assert warning.startswith(
        "the model was trained on 2 columns joined (title, description); --text-columns reads 1 now (description)"
    )
    assert "\n" not in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pipeline.predict.source"):
        assert predict_cli(run_dir, source, tmp_path / "two.csv", "--text-columns", "note,description") == 0
        Predictor.from_path(run_dir, text_columns=["title"], device="cpu")
    (warning,) = [record.getMessage() for record in caplog.records if "trained on" in record.getMessage()]
    assert "; text_columns reads 1 now (title)" in warning  # the Python API's argument, named as such


# ---------------------------------------------------------------------------------------------------------------
# Rows without text


def test_empty_text_rows_are_kept_with_an_error(run_dir, tmp_path, capsys):
    rows = news_rows(6)
    rows.insert(2, ["100", "", "", "no text at all"])
    rows.insert(5, ["101", "  ", " \t ", "whitespace only"])
    source = write_table(tmp_path / "in.csv", rows)
    assert predict_cli(run_dir, source, tmp_path / "out.csv", "--probabilities") == 0
    output = read_table(tmp_path / "out.csv")[1:]
    assert [row[:4] for row in output] == rows
    for index in (2, 5):
        assert output[index][4:11] == ["", "", "", "", "", "", ""]
        assert output[index][11] == "empty text in title, description"
    assert all(row[4] and row[11] == "" for i, row in enumerate(output) if i not in (2, 5))
    assert "2 rows had no text, left unlabelled" in capsys.readouterr().err


def test_a_header_row_repeated_by_cat_is_kept_in_its_place_unlabelled(run_dir, tmp_path, capsys, caplog):
    """`cat a.csv b.csv` leaves b.csv's header row among the rows: it was labelled as a text. It is no row to label,
    but the output keeps every input row in its place (as any reader, pandas included, counts the rows), with the
    error column saying why it has no label; the other rows are labelled as without it."""
    rows = news_rows(6)
    first = write_table(tmp_path / "a.csv", rows[:3]).read_bytes()
    source = tmp_path / "joined.csv"
    source.write_bytes(first + write_table(tmp_path / "b.csv", rows[3:]).read_bytes())
    with caplog.at_level(logging.WARNING):
        assert predict_cli(run_dir, source, tmp_path / "out.csv") == 0
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("; 1 row repeated the header row, left unlabelled (see the error column)")
    )
    output = read_table(tmp_path / "out.csv")
    assert output[0] == [*HEADER, *ADDED]
    assert [row[:4] for row in output[1:]] == [*rows[:3], HEADER, *rows[3:]]
    assert output[4][4:] == ["", "", "", "the header row again (files joined with cat?): not labelled"]
    assert predict_cli(run_dir, write_table(tmp_path / "plain.csv", rows), tmp_path / "plain_out.csv") == 0
    assert output[1:4] + output[5:] == read_table(tmp_path / "plain_out.csv")[1:]
    line = first.count(b"\n") + 1  # the physical line b.csv's header starts on
    assert caplog.messages == [
        f"{source}, line {line}: the header row (id, title, description, note) again, as files joined with cat repeat "
        "it; not labelled, kept in its place in the output with the error column saying so"
    ]


# ---------------------------------------------------------------------------------------------------------------
# Bad input: non-zero exit, one line on stderr naming the file, line or columns


def test_missing_input_file(run_dir, tmp_path, capsys):
    assert predict_cli(run_dir, tmp_path / "nope.csv", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "not found", "nope.csv")
    assert not (tmp_path / "out.csv").exists()


def test_unreadable_input(run_dir, tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    locked = write_table(tmp_path / "locked.csv", news_rows(2))
    locked.chmod(0)
    assert predict_cli(run_dir, locked, tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "cannot read", "locked.csv")
    inbox = tmp_path / "inbox"  # a folder's file: named by its path
    inbox.mkdir()
    (inbox / "1.txt").write_text("Stocks fall")
    (inbox / "1.txt").chmod(0)
    assert predict_cli(run_dir, inbox, tmp_path / "out.csv", "--text-columns", "text") != 0
    assert_one_line_error(capsys.readouterr().err, f"cannot read {inbox}/1.txt")


def test_empty_input_file(run_dir, tmp_path, capsys):
    (tmp_path / "empty.csv").write_text("")
    assert predict_cli(run_dir, tmp_path / "empty.csv", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "empty.csv is empty")
    (tmp_path / "blank.csv").write_text("\n\n")
    assert predict_cli(run_dir, tmp_path / "blank.csv", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "blank.csv is empty")
    assert not (tmp_path / "out.csv").exists()


def test_a_one_column_file_with_empty_texts_keeps_every_row(run_dir, tmp_path):
    """pandas writes an empty text as `""`; such rows come back, unlabelled with the reason, in input order."""
    source = tmp_path / "one.csv"
    pd.DataFrame({"text": ["Federer wins again", "", "   ", "Stocks fall"]}).to_csv(source, index=False)
    assert predict_cli(run_dir, source, tmp_path / "out.csv", "--text-columns", "text") == 0
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert out["text"].tolist() == ["Federer wins again", "", "   ", "Stocks fall"]
    assert (out["label"] == "").tolist() == [False, True, True, False]
    assert out["error"].tolist()[1:3] == ["empty text in text"] * 2


def test_a_text_file_of_one_text_per_line_keeps_its_empty_lines_as_rows(run_dir, tmp_path):
    """tweet_eval's test_text.txt lines up with test_labels.txt line by line: an empty line dropped from the output
    would shift every later prediction onto another tweet's label."""
    source = tmp_path / "test_text.txt"
    source.write_text("Federer wins again\n\n\nStocks fall\n\n")  # the last empty line ends the file
    arguments = ["--format", "tsv", "--column-names", "text", "--text-columns", "text"]
    assert predict_cli(run_dir, source, tmp_path / "out.csv", *arguments) == 0
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert out["text"].tolist() == ["Federer wins again", "", "", "Stocks fall"]
    assert out["error"].tolist() == ["", "empty text in text", "empty text in text", ""]


def test_missing_text_column_lists_the_columns(run_dir, tmp_path, capsys):
    source = write_table(tmp_path / "in.csv", [["1", "x"]], header=["id", "headline"])
    assert predict_cli(run_dir, source, tmp_path / "out.csv") != 0
    assert_one_line_error(
        capsys.readouterr().err, "in.csv", "'title', 'description'", "'id', 'headline'", "--text-columns"
    )
    assert predict_cli(run_dir, source, tmp_path / "out.csv", "--text-columns", "title") != 0
    assert_one_line_error(capsys.readouterr().err, "'title'", "'id', 'headline'")


def test_a_run_trained_on_headerless_files_reads_an_input_laid_out_as_they_were(
    run_dir, tmp_path, ag_news_test_csv, capsys, caplog
):
    """Trained with data.column_names: an input whose first row is plainly data (a class index, a text) is read by
    those names, with a warning saying so and how to name the columns otherwise; one whose first row is a header of
    other names is an error naming the exact --column-names. So from the run, and from its model folder copied out
    (decision.json records the names)."""
    from pipeline.config.load import load_config, save_config
    from pipeline.run.directory import write_decision
    from pipeline.scoring.decide import decision_record
    from pipeline.scoring.thresholds import default_decision

    run = tmp_path / "headerless_run"
    shutil.copytree(run_dir, run)
    names = "class_index,title,description"
    config = load_config(None, [f"data.column_names=[{names}]", "data.text_columns=[title,description]"])
    config.data.unescape_newlines = True
    save_config(config, run / "config.yaml")
    write_decision(run / "model", decision_record(config, 1.0, default_decision(LABELS, False), 64))
    copied = tmp_path / "elsewhere" / "model"
    shutil.copytree(run / "model", copied)
    source = tmp_path / "test5.csv"
    source.write_text("".join(ag_news_test_csv.read_text(encoding="utf-8").splitlines(keepends=True)[:5]))

    assert predict_cli(run, source, tmp_path / "named.csv", "--column-names", names) == 0
    capsys.readouterr()
    for model in (run, copied):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert predict_cli(model, source, tmp_path / "out.csv", "--overwrite") == 0
        assert read_table(tmp_path / "out.csv") == read_table(tmp_path / "named.csv")  # 5 rows, the names as header
        capsys.readouterr()
        assert caplog.messages == [
            f"{source}: its first row (3, Fears for T N pension after talks, Unions representing w…) is data, not a "
            "header naming title, description: read without a header row, as the run's training files were, by their "
            f"data.column_names (--column-names {names}); pass --column-names to name the columns otherwise"
        ]
    other = write_table(tmp_path / "other.csv", [["1", "Wall St. Bears", "Short-sellers"]], ["id", "headline", "body"])
    for model in (run, copied):
        assert predict_cli(model, other, tmp_path / "other_out.csv") != 0
        assert_one_line_error(
            capsys.readouterr().err,
            "'title', 'description'",
            f"for a file without a header row, as the run's were, pass --column-names {names}",
        )
    assert predict_cli(run_dir, source, tmp_path / "plain.csv") != 0  # a run without column names: no such hint
    assert "--column-names" not in capsys.readouterr().err


def test_malformed_csv_reports_the_line(run_dir, tmp_path, capsys):
    text = 'id,title,description,note\n1,a,"b\nc",d\n2,a,b,c,EXTRA\n'
    (tmp_path / "bad.csv").write_text(text)
    assert predict_cli(run_dir, tmp_path / "bad.csv", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "bad.csv", "line 4", "5 fields, expected 4")

    (tmp_path / "quote.csv").write_text('id,title,description,note\n1,a,b,c\n2,"a"x,b,c\n')
    assert predict_cli(run_dir, tmp_path / "quote.csv", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "quote.csv", "line 3", "malformed CSV")

    (tmp_path / "unclosed.csv").write_text('id,title,description,note\n1,a,b,c\n2,"never closed,b,c\n3,a,b,c\n')
    assert predict_cli(run_dir, tmp_path / "unclosed.csv", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "unclosed.csv", "line 3", "unclosed quote")
    assert not (tmp_path / "out.csv").exists()


def test_quoting_reads_an_input_that_quotes_nothing(run_dir, tmp_path, capsys):
    text = 'id\ttitle\tdescription\tnote\n1\t"Free" entry\tb\tc\n2\tHe said "hi"\tb\tc\n'
    (tmp_path / "sms.tsv").write_text(text)
    (tmp_path / "sms.csv").write_text(text.replace("\t", ","))
    assert predict_cli(run_dir, tmp_path / "sms.tsv", tmp_path / "auto.csv") == 0  # its first lines show it
    assert [row[1] for row in read_table(tmp_path / "auto.csv")[1:]] == ['"Free" entry', 'He said "hi"']
    capsys.readouterr()
    assert predict_cli(run_dir, tmp_path / "sms.csv", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "sms.csv", "line 2", "malformed CSV", "set --quoting to none")
    assert predict_cli(run_dir, tmp_path / "sms.csv", tmp_path / "out.csv", "--quoting", "none") == 0
    assert read_table(tmp_path / "out.csv") == read_table(tmp_path / "auto.csv")


def test_delimiter_reads_an_input_separated_by_another_character(run_dir, tmp_path, capsys):
    """Sentences with commas and quotes, one "sentence@label" a line, as the Financial PhraseBank writes them."""
    (tmp_path / "phrases.txt").write_text(
        'id@title@description@note\n1@Sales up , "a" said@b@c\n2@" Net " , sales@b@c\n'
    )
    assert predict_cli(run_dir, tmp_path / "phrases.txt", tmp_path / "out.csv", "--format", "csv") != 0
    assert_one_line_error(capsys.readouterr().err, "phrases.txt", "its columns: 'id@title@description@note'")
    code = predict_cli(run_dir, tmp_path / "phrases.txt", tmp_path / "out.csv", "--format", "csv", "--delimiter", "@")
    assert code == 0
    written = read_table(tmp_path / "out.csv")
    assert [row[:4] for row in written] == [
        ["id", "title", "description", "note"],
        ["1", 'Sales up , "a" said', "b", "c"],
        ["2", '" Net " , sales', "b", "c"],
    ]
    assert all(row[4] for row in written[1:])  # labelled
    assert predict_cli(run_dir, tmp_path / "phrases.txt", tmp_path / "bad.csv", "--delimiter", "@@") == 2
    assert "must be one character" in capsys.readouterr().err


def test_quoting_help_gives_the_bytes_that_auto_reads(monkeypatch, capsys):
    """The size is tables.HEAD_BYTES, the one place it is set, not a number of its own in the help."""
    from pipeline.predict import cli

    monkeypatch.setattr(cli, "HEAD_BYTES", 128 * 1024)
    with pytest.raises(SystemExit):
        cli.parse_args(["--help"])
    assert "a TSV file whose first 128 KiB (from a pipe, what has arrived) hold" in " ".join(
        capsys.readouterr().out.split()
    )


def test_bytes_that_are_not_utf8_report_the_line_and_the_option(run_dir, tmp_path, capsys, caplog):
    content = "id,title,description,note\n1,a,b,c\n2,Caf\xe9,cr\xe8me,x\n".encode("latin-1")
    (tmp_path / "latin.csv").write_bytes(content)
    assert predict_cli(run_dir, tmp_path / "latin.csv", tmp_path / "out.csv", "--encoding", "utf-8") != 0
    assert_one_line_error(
        capsys.readouterr().err, "latin.csv", "line 3", "utf-8", "--encoding to auto", "--decode-errors"
    )
    assert predict_cli(run_dir, tmp_path / "latin.csv", tmp_path / "out.csv", "--encoding", "UTF8") != 0
    assert_one_line_error(capsys.readouterr().err, "not valid UTF8 (")  # as given, not Python's name for it (utf-8)
    # --encoding auto (the default): a file that holds no UTF-8 is read as Windows-1252, with a warning naming it.
    assert predict_cli(run_dir, tmp_path / "latin.csv", tmp_path / "out.csv") == 0
    assert read_table(tmp_path / "out.csv")[2][:4] == ["2", "Café", "crème", "x"]
    assert "Windows-1252, not UTF-8 (--encoding: auto" in caplog.text and "latin.csv" in caplog.text
    capsys.readouterr()
    (tmp_path / "mixed.csv").write_bytes(content + "3,Caf\u00e9,b,c\n".encode())
    assert predict_cli(run_dir, tmp_path / "mixed.csv", tmp_path / "out.csv", "--overwrite") != 0
    assert_one_line_error(capsys.readouterr().err, "mixed.csv, lines 3 and 4", "--decode-errors to replace")
    assert (
        predict_cli(run_dir, tmp_path / "mixed.csv", tmp_path / "out.csv", "--overwrite", "--decode-errors", "replace")
        == 0
    )
    # Its Windows-1252 line came first, so it was read so; its UTF-8 line then as UTF-8.
    assert [row[1] for row in read_table(tmp_path / "out.csv")[2:4]] == ["Café", "Café"]


def test_a_run_trained_on_another_encoding_is_named_but_not_assumed(run_dir, tmp_path, capsys):
    """The input is read as UTF-8 unless --encoding says otherwise, whatever the run's data.encoding: UTF-8 shows a
    bad byte, where cp1252 would read a UTF-8 file's é as Ã© without a word. The error offers the run's encoding."""
    run = tmp_path / "cp1252_run"
    shutil.copytree(run_dir, run)
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "data": {**config["data"], "encoding": "cp1252"}}))
    (tmp_path / "windows.csv").write_bytes(
        "id,title,description,note\n1,a,b,c\n2,\u2019Caf\xe9\u2019,x,y\n".encode("cp1252")
    )
    assert predict_cli(run, tmp_path / "windows.csv", tmp_path / "out.csv", "--encoding", "utf-8") != 0
    assert_one_line_error(
        capsys.readouterr().err, "windows.csv", "line 3", "not valid utf-8", "--encoding cp1252", "data.encoding"
    )
    assert not (tmp_path / "out.csv").exists()
    (tmp_path / "utf8.csv").write_text("id,title,description,note\n1,Café,crème,x\n", encoding="utf-8")
    assert predict_cli(run, tmp_path / "utf8.csv", tmp_path / "out.csv") == 0  # read as UTF-8, not as cp1252
    assert read_table(tmp_path / "out.csv")[1][:4] == ["1", "Café", "crème", "x"]
    assert predict_cli(run, tmp_path / "windows.csv", tmp_path / "out.csv", "--encoding", "cp1252", "--overwrite") == 0
    assert read_table(tmp_path / "out.csv")[2][1] == "\u2019Caf\xe9\u2019"
    assert (
        predict_cli(run_dir, tmp_path / "windows.csv", tmp_path / "out.csv", "--overwrite", "--encoding", "utf-8") != 0
    )
    assert "data.encoding" not in capsys.readouterr().err  # a run read as UTF-8 offers nothing more


def test_unknown_encoding_and_label_column_clash(run_dir, tmp_path, capsys):
    source = write_table(tmp_path / "in.csv", news_rows(2))
    assert predict_cli(run_dir, source, tmp_path / "out.csv", "--encoding", "klingon") != 0
    assert_one_line_error(capsys.readouterr().err, "unknown encoding 'klingon'")
    clash = write_table(tmp_path / "gold.csv", [["a", "b", "Sports"]], header=["title", "description", "label"])
    assert predict_cli(run_dir, clash, tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "gold.csv", "'label'", "--prefix")
    assert predict_cli(run_dir, clash, tmp_path / "out.csv", "--prefix", "pred_") == 0
    output = read_table(tmp_path / "out.csv")
    assert output[0] == ["title", "description", "label", "pred_label", "pred_label_id", "pred_score", "pred_error"]
    assert output[1][2] == "Sports"
    # Header names are found ignoring case and spaces, clash the same way, and are written back as they were.
    spaced = write_table(tmp_path / "spaced.csv", [["a", "b", "Sports"]], header=[" Title", "description ", " Label "])
    capsys.readouterr()
    assert predict_cli(run_dir, spaced, tmp_path / "spaced_out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "spaced.csv", "'label'", "--prefix")
    assert predict_cli(run_dir, spaced, tmp_path / "spaced_out.csv", "--prefix", "pred_") == 0
    assert read_table(tmp_path / "spaced_out.csv")[0][:4] == [" Title", "description ", " Label ", "pred_label"]


def test_an_output_name_without_a_known_ending_offers_only_the_formats_prediction_writes(run_dir, tmp_path, capsys):
    """The hint used to offer the input formats (parquet among them), which --output-format then refused."""
    from pipeline.data.tables import EXTENSIONS
    from pipeline.predict.output import OUTPUT_FORMATS

    source = write_table(tmp_path / "in.csv", news_rows(2))
    assert predict_cli(run_dir, source, tmp_path / "out" / "x6.ods") != 0
    error = capsys.readouterr().err
    assert_one_line_error(error, "x6.ods", "cannot tell the file format")
    offered = error.strip().split("set --output-format to ")[1].split(", ")
    endings = error.split("known endings: ")[1].split(", optionally")[0].split(", ")
    assert offered == list(OUTPUT_FORMATS) and "parquet" not in error
    assert endings and all(EXTENSIONS[ending] in OUTPUT_FORMATS for ending in endings)
    for format_ in offered:  # every format the hint offers is one prediction writes
        assert predict_cli(run_dir, source, tmp_path / f"x6_{format_}.ods", "--output-format", format_) == 0


def test_bad_model_path(tmp_path, capsys):
    source = write_table(tmp_path / "in.csv", news_rows(2))
    assert run_main(["--model", tmp_path / "no-run", "--input", source, "--output", tmp_path / "out.csv"]) != 0
    assert_one_line_error(capsys.readouterr().err, "model not found", "no-run")
    assert run_main(["--model", tmp_path, "--input", source, "--output", tmp_path / "out.csv"]) != 0
    assert_one_line_error(capsys.readouterr().err, "neither a run directory")


# ---------------------------------------------------------------------------------------------------------------
# Never a partial or clobbered output


def test_failure_after_the_first_chunk_leaves_no_output(run_dir, tmp_path, capsys):
    rows = news_rows(23)
    source = write_table(tmp_path / "in.csv", rows)
    bad_line = source.read_text(encoding="utf-8").count("\n") + 1  # quoted newlines make rows span lines
    with open(source, "a", encoding="utf-8") as handle:
        handle.write("024,too,many,fields,here\n")
    output = tmp_path / "out" / "labelled.csv"
    assert predict_cli(run_dir, source, output, "--chunk-size", "5") != 0
    assert_one_line_error(capsys.readouterr().err, f"line {bad_line}:", "5 fields, expected 4")
    assert not output.exists()
    assert list(output.parent.iterdir()) == []  # no temporary file left behind either

    output.write_text("precious\n")
    assert predict_cli(run_dir, source, output, "--chunk-size", "5", "--overwrite") != 0
    assert output.read_text() == "precious\n"  # a failed run does not replace it, even with --overwrite
    assert sorted(p.name for p in output.parent.iterdir()) == ["labelled.csv"]


def test_existing_output_needs_overwrite(run_dir, tmp_path, capsys):
    source = write_table(tmp_path / "in.csv", news_rows(3))
    output = tmp_path / "out.csv"
    output.write_text("precious\n")
    assert predict_cli(run_dir, source, output) != 0
    assert_one_line_error(capsys.readouterr().err, "out.csv already exists", "--overwrite")
    assert output.read_text() == "precious\n"
    assert predict_cli(run_dir, source, output, "--overwrite") == 0
    assert len(read_table(output)) == 4
    assert oct(output.stat().st_mode & 0o777) != oct(0o600)  # not the private mode of the temporary file


def test_the_input_is_never_the_output_even_with_overwrite(run_dir, tmp_path, capsys, monkeypatch):
    source = write_table(tmp_path / "in.csv", news_rows(3))
    original = source.read_bytes()
    (tmp_path / "link.csv").symlink_to(source)
    os.link(source, tmp_path / "hard.csv")
    monkeypatch.chdir(tmp_path)
    for output in ["in.csv", "./in.csv", tmp_path / "link.csv", tmp_path / "hard.csv"]:
        assert predict_cli(run_dir, source, output, "--overwrite") != 0
        assert_one_line_error(capsys.readouterr().err, "is the input file", str(source))
        assert source.read_bytes() == original


def test_an_output_folder_that_cannot_be_made_is_named_before_loading_anything(tmp_path, capsys):
    source = write_table(tmp_path / "in.csv", news_rows(2))
    for output in [source / "out.csv", source / "deeper" / "out.csv"]:
        code = run_main(["--model", tmp_path / "no-model", "--input", source, "--output", output])
        assert code != 0
        assert_one_line_error(capsys.readouterr().err, f"cannot write output {output}", f"{source} is a file")


@pytest.mark.parametrize("kind", UNWRITABLE_KINDS)
def test_an_output_folder_that_cannot_be_written_is_named_before_loading_anything(tmp_path, capsys, kind):
    """The check pipeline.evaluate and pipeline.finetune share (io.check_can_write): a read-only folder was found
    only once the model had labelled every row, as the temporary file's error."""
    source = write_table(tmp_path / "in.csv", news_rows(2))
    output = unwritable_folder(tmp_path, kind) / "labelled.csv"
    assert run_main(["--model", tmp_path / "no-model", "--input", source, "--output", output]) != 0
    assert_one_line_error(capsys.readouterr().err, f"cannot write output {output}: ")


def test_existing_output_is_checked_before_loading_anything(tmp_path, capsys):
    output = tmp_path / "out.csv"
    output.write_text("precious\n")
    code = run_main(["--model", tmp_path / "no-model", "--input", tmp_path / "no-input", "--output", output])
    assert code != 0
    assert_one_line_error(capsys.readouterr().err, "already exists")


# ---------------------------------------------------------------------------------------------------------------
# Through a real process: stdin/stdout, and what a shell user sees on error


def run_process(args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.predict", *map(str, args)],
        check=False,
        input=stdin,
        capture_output=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=120,
    )


@pytest.mark.slow  # a Python process that imports torch and transformers
def test_stdin_to_stdout_in_a_subprocess(run_dir, tmp_path):
    rows = news_rows(9)
    source = write_table(tmp_path / "in.tsv", rows, delimiter="\t")
    assert predict_cli(run_dir, source, tmp_path / "file.tsv") == 0
    result = run_process(
        ["--model", run_dir, "--input", "-", "--output", "-", "--format", "tsv", "--precision", "fp32"],
        stdin=source.read_bytes(),
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == (tmp_path / "file.tsv").read_bytes()
    assert "labelled 9 rows -> stdout" in result.stderr.decode()


@pytest.mark.slow  # a Python process that imports torch and transformers
def test_error_in_a_subprocess_is_one_line_without_traceback(run_dir, tmp_path):
    source = write_table(tmp_path / "in.csv", [["1", "x"]], header=["id", "headline"])
    result = run_process(["--model", run_dir, "--input", source, "--output", tmp_path / "out.csv"])
    assert result.returncode == 1
    assert_one_line_error(result.stderr.decode(), "'id', 'headline'")
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.slow  # a prediction process, stopped by a signal midway
def test_sigterm_midway_removes_the_temporary_file(run_dir, tmp_path):
    source = write_table(tmp_path / "in.csv", news_rows(6000))
    output = tmp_path / "out" / "labelled.csv"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "pipeline.predict", "--model", run_dir, "--input", source, "--output", output]
    process = subprocess.Popen(
        [*map(str, command), "--chunk-size", "50", "--batch-size", "8"], cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while not (output.parent.exists() and any(output.parent.iterdir())):  # the temporary file is being written
        assert process.poll() is None and time.monotonic() < deadline, "the run ended before it could be stopped"
        time.sleep(0.02)
    process.terminate()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + 15
    assert_one_line_error(stderr.decode(), "interrupted")
    assert list(output.parent.iterdir()) == []


# ---------------------------------------------------------------------------------------------------------------
# Python API


def test_predict_texts_matches_the_command(run_dir, predictor, tmp_path, bert_tokenizer):
    rows = news_rows(15)
    texts = [ag_text(row) for row in rows]
    results = predict_texts(predictor, texts + [""], batch_size=4)
    assert len(results) == 16
    expected_ids, expected_probabilities = reference_predictions(run_dir, texts, bert_tokenizer)
    assert [label for label, _ in results[:15]] == [LABELS[i] for i in expected_ids]
    np.testing.assert_allclose([score for _, score in results[:15]], expected_probabilities.max(axis=1), atol=1e-3)
    assert results[15][0] == "" and math.isnan(results[15][1])
    by_path = predict_texts(run_dir, texts[:3], device="cpu", precision="fp32")
    assert [label for label, _ in by_path] == [label for label, _ in results[:3]]


def test_predict_texts_takes_a_columns_gaps_and_non_strings(predictor):
    """A DataFrame column as list or Series has NaN for its gaps, and may hold numbers: each is read as
    predict_dataframe reads a cell (a gap is an empty text, a number its str), not an AttributeError."""
    texts = [ag_text(row) for row in news_rows(2)]
    column = pd.Series([texts[0], np.nan, None, pd.NA, 42, texts[1]], index=[5, 3, 9, 1, 0, 2], dtype=object)
    results = predict_texts(predictor, column, flags=True)
    assert [label for label, _, _ in results[1:4]] == ["", "", ""]
    assert all(math.isnan(score) and flag is None for _, score, flag in results[1:4])
    alone = predict_texts(predictor, ["42"])[0]
    assert results[4][0] == alone[0] and results[4][1] == pytest.approx(alone[1], abs=1e-3)  # other batch shapes
    assert [result[0] for result in (results[0], results[5])] == [label for label, _ in predict_texts(predictor, texts)]


def test_predict_dataframe_takes_one_text_column_as_a_string(predictor):
    frame = pd.DataFrame({"body": [ag_text(row) for row in news_rows(3)], "title": ["x", "y", "z"]})
    by_name = predict_dataframe(predictor, frame, text_columns="body")
    by_list = predict_dataframe(predictor, frame, text_columns=["body"])
    pd.testing.assert_frame_equal(by_name, by_list)
    assert by_name["error"].tolist() == ["", "", ""]
    with pytest.raises(PredictError, match="takes a pandas DataFrame, got Series; .* use predict_texts"):
        predict_dataframe(predictor, frame["body"])


def test_predict_dataframe_returns_a_labelled_copy(run_dir, predictor, tmp_path):
    rows = news_rows(12)
    frame = pd.DataFrame(rows, columns=HEADER)
    frame.loc[3, ["title", "description"]] = [None, np.nan]
    original = frame.copy()
    labelled = predict_dataframe(predictor, frame, probabilities=True)
    pd.testing.assert_frame_equal(frame, original)  # the input is not modified
    assert list(labelled.columns) == HEADER + ["label", "label_id", "score", *[f"prob_{n}" for n in LABELS], "error"]
    assert (
        labelled.loc[3, "label"] == "" and pd.isna(labelled.loc[3, "label_id"]) and np.isnan(labelled.loc[3, "score"])
    )
    assert "missing text" in labelled.loc[3, "error"]

    write_table(tmp_path / "in.csv", [row for i, row in enumerate(rows) if i != 3])
    assert predict_cli(run_dir, tmp_path / "in.csv", tmp_path / "out.csv") == 0
    cli = read_table(tmp_path / "out.csv")[1:]
    others = labelled.drop(index=3)
    assert others["label"].tolist() == [row[4] for row in cli]
    assert others["label_id"].tolist() == [int(row[5]) for row in cli]
    np.testing.assert_allclose(others["score"].to_numpy(), [float(row[6]) for row in cli], rtol=1e-6)
    probabilities = others[[f"prob_{n}" for n in LABELS]].to_numpy()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)

    by_column = predict_dataframe(predictor, frame.rename(columns={"description": "body"}), text_columns=["body"])
    assert by_column.loc[0, "error"] == ""
    with pytest.raises(PredictError, match="'description'"):
        predict_dataframe(predictor, frame.rename(columns={"description": "body"}))


def test_infer_is_a_pure_function_of_the_texts(predictor):
    texts = [ag_text(row) for row in news_rows(20)]
    ids, probabilities = predictor.infer(texts)
    assert ids.shape == (20,) and probabilities.shape == (20, 4)
    split_ids = np.concatenate([predictor.infer(texts[:7])[0], predictor.infer(texts[7:])[0]])
    assert split_ids.tolist() == ids.tolist()
    empty_ids, empty_probabilities = predictor.infer([])
    assert empty_ids.shape == (0,) and empty_probabilities.shape == (0, 4)


def test_a_token_budget_cuts_batches_by_length_and_changes_no_probability(run_dir, tmp_path, capsys):
    texts = [ag_text(row) for row in news_rows(40)]
    capped = Predictor.from_path(run_dir, device="cpu", precision="fp32", batch_size=16, max_batch_tokens=96)
    uncapped = Predictor.from_path(run_dir, device="cpu", precision="fp32", batch_size=16, max_batch_tokens=None)
    batches = capped.padded_batches(texts)
    assert sum(len(batch["input_ids"]) for batch in batches) == 40
    assert all(batch["input_ids"].size <= 96 or len(batch["input_ids"]) == 1 for batch in batches)
    assert len(batches) > len(uncapped.padded_batches(texts)) == 3  # long rows went in smaller batches
    (capped_ids, capped_probabilities), (ids, probabilities) = capped.infer(texts), uncapped.infer(texts)
    assert capped_ids.tolist() == ids.tolist()
    np.testing.assert_allclose(capped_probabilities, probabilities, atol=1e-4)  # other batch shapes: float rounding
    # The command takes the cap, 0 for none; a negative one is refused by the argument parser.
    source = write_table(tmp_path / "in.csv", news_rows(12))
    assert predict_cli(run_dir, source, tmp_path / "none.csv", "--max-batch-tokens", "0") == 0
    assert predict_cli(run_dir, source, tmp_path / "small.csv", "--max-batch-tokens", "40") == 0
    uncapped_rows, capped_rows = read_table(tmp_path / "none.csv"), read_table(tmp_path / "small.csv")
    assert [row[:6] for row in capped_rows] == [row[:6] for row in uncapped_rows]  # inputs, label, label_id
    np.testing.assert_allclose(
        [float(row[6]) for row in capped_rows[1:]], [float(row[6]) for row in uncapped_rows[1:]], atol=1e-3
    )
    assert predict_cli(run_dir, source, tmp_path / "bad.csv", "--max-batch-tokens", "-1") == 2
    assert "expected a non-negative integer, got -1" in capsys.readouterr().err
    # "auto", the default: the CPU budget here.
    assert Predictor.from_path(run_dir, device="cpu", precision="fp32").max_batch_tokens == MAX_BATCH_TOKENS
    assert predict_cli(run_dir, source, tmp_path / "auto.csv", "--max-batch-tokens", "auto") == 0
    assert [row[:6] for row in read_table(tmp_path / "auto.csv")] == [row[:6] for row in uncapped_rows]


def test_the_from_scratch_encoder_loads_and_trims_padding_exactly(tmp_path, bert_tokenizer):
    settings = encoder.EncoderSettings(
        hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=128
    )
    config = encoder.EncoderClassifierConfig.from_settings(
        settings, vocab_size=bert_tokenizer.vocab_size, pad_token_id=0, id2label=LABELS
    )
    torch.manual_seed(0)
    model = encoder.EncoderForSequenceClassification(config).eval()
    model.save_pretrained(tmp_path / "encoder")
    bert_tokenizer.save_pretrained(tmp_path / "encoder")

    predictor = Predictor.from_path(tmp_path / "encoder", device="cpu", precision="fp32", batch_size=4)
    assert predictor.max_length == 128  # the encoder's position table caps the length
    texts = [ag_text(row) for row in news_rows(10)]
    ids, probabilities = predictor.infer(texts)
    encoded = bert_tokenizer(texts, padding="max_length", truncation=True, max_length=128, return_tensors="pt")
    with torch.no_grad():
        expected = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits.softmax(-1)
    np.testing.assert_allclose(probabilities, expected.numpy(), atol=1e-5)
    assert ids.tolist() == expected.argmax(-1).tolist()


# ---------------------------------------------------------------------------------------------------------------
# Outputs that are not regular files, and inputs that used to give tracebacks


def test_overwrite_writes_through_devices_and_fifos_and_refuses_symlinks(run_dir, tmp_path, capsys):
    source = write_table(tmp_path / "in.csv", news_rows(4))
    assert predict_cli(run_dir, source, "/dev/null", "--overwrite") == 0
    assert Path("/dev/null").is_char_device()  # still a device, not a regular file

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = __import__("threading").Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    assert predict_cli(run_dir, source, fifo, "--overwrite") == 0
    reader.join(timeout=30)
    assert fifo.is_fifo() and received and received[0].splitlines()[0].startswith("id,title")

    target = write_table(tmp_path / "target.csv", [["keep"]], header=["x"])
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    capsys.readouterr()
    assert predict_cli(run_dir, source, link, "--overwrite") != 0
    assert_one_line_error(capsys.readouterr().err, "symbolic link", "target.csv")
    assert link.is_symlink() and target.read_text() == "x\nkeep\n"


def test_other_formats_and_encodings_read_as_training_does(run_dir, tmp_path):
    rows = news_rows(6)
    frame = pd.DataFrame(rows, columns=HEADER)
    frame.to_json(tmp_path / "in.jsonl", orient="records", lines=True)
    frame.to_parquet(tmp_path / "in.parquet")
    (tmp_path / "in16.csv").write_bytes(frame.to_csv(index=False).encode("utf-16"))
    assert predict_cli(run_dir, write_table(tmp_path / "in.csv", rows), tmp_path / "csv_out.csv") == 0
    expected = read_table(tmp_path / "csv_out.csv")
    assert predict_cli(run_dir, tmp_path / "in.parquet", tmp_path / "parquet_out.csv") == 0
    assert predict_cli(run_dir, tmp_path / "in16.csv", tmp_path / "utf16_out.csv", "--encoding", "utf-16") == 0
    # By default too: the byte-order mark says UTF-16 (README "Batch prediction"); and a zip archive of one CSV file.
    assert predict_cli(run_dir, tmp_path / "in16.csv", tmp_path / "utf16_marked_out.csv") == 0
    with zipfile.ZipFile(tmp_path / "in.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(tmp_path / "in.csv", "in.csv")
    assert predict_cli(run_dir, tmp_path / "in.zip", tmp_path / "zip_out.csv") == 0
    for name in ("parquet_out.csv", "utf16_out.csv", "utf16_marked_out.csv", "zip_out.csv"):
        assert [row[4:] for row in read_table(tmp_path / name)] == [row[4:] for row in expected], name
    assert predict_cli(run_dir, tmp_path / "in.jsonl", tmp_path / "out.jsonl") == 0
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [record["label"] for record in records] == [row[4] for row in expected[1:]]
    assert records[0]["title"] == rows[0][1] and isinstance(records[0]["label_id"], int)


def test_inputs_that_used_to_give_tracebacks_give_one_line(run_dir, tmp_path, capsys):
    good = write_table(tmp_path / "in.csv", news_rows(40))
    (tmp_path / "cut.csv.gz").write_bytes(gzip.compress(good.read_bytes())[:-40])
    assert predict_cli(run_dir, tmp_path / "cut.csv.gz", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "cut.csv.gz")
    (tmp_path / "twice.csv").write_text("text,text\na,b\n")
    assert predict_cli(run_dir, tmp_path / "twice.csv", tmp_path / "out.csv", "--text-columns", "text") != 0
    assert_one_line_error(capsys.readouterr().err, "twice.csv", "repeated")
    frame = pd.DataFrame(news_rows(3), columns=HEADER)
    frame.to_parquet(tmp_path / "really_parquet.csv")
    assert predict_cli(run_dir, tmp_path / "really_parquet.csv", tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "is a Parquet file")
    assert not (tmp_path / "out.csv").exists()


def test_a_single_string_is_one_text(predictor):
    ((label, score),) = predict_texts(predictor, "Stocks fell sharply on Wall Street")
    assert label in LABELS and 0 < score <= 1


def test_an_unfinished_run_is_refused_unless_its_model_folder_is_named(run_dir, tmp_path, caplog):
    """A run without metrics.json (still training, or crashed before evaluation) holds a checkpoint without
    calibration or thresholds: its directory is refused with the way round it, its model/ is used with a warning."""
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run_dir, unfinished)
    (unfinished / "metrics.json").unlink()
    with pytest.raises(PredictError, match=r"metrics\.json is missing, so the run has not finished .* pass .*model"):
        Predictor.from_path(unfinished, device="cpu", precision="fp32")
    with caplog.at_level(logging.WARNING, logger="pipeline.predict.source"):
        predictor = Predictor.from_path(unfinished / "model", device="cpu", precision="fp32", max_length=64)
    assert "has not finished" in caplog.text
    assert predictor.text_spec.columns == ("title", "description"), "the run's settings still apply"


def test_a_run_stopped_before_saving_a_model_is_told_how_to_resume(run_dir, tmp_path):
    """The user sweep's interrupted run (config, history and checkpoints, no model/ yet) was "neither a run
    directory nor a saved model"; it is the unfinished run evaluation and reports describe (RunDir.unfinished)."""
    stopped = tmp_path / "stopped"
    (stopped / "checkpoints" / "step_6").mkdir(parents=True)
    shutil.copy(run_dir / "config.yaml", stopped / "config.yaml")
    (stopped / "history.jsonl").write_text('{"step": 5, "loss": 1.2}\n')
    with pytest.raises(PredictError) as caught:
        resolve_model_source(stopped)
    message = str(caught.value)
    assert message == RunDir(stopped).unfinished() and "neither" not in message
    assert "continue it from its last checkpoint (step_6): python -m pipeline.finetune --config" in message
    assert "train.resume=true" in message


# ---------------------------------------------------------------------------------------------------------------
# A folder as the input (pipeline/data/folders.py): a folder of files, or of class folders


@pytest.fixture(scope="module")
def folder_run(run_dir, tmp_path_factory) -> Path:
    """The tiny run as a run trained on a folder reads texts: from the column `text`, each file's whole text."""
    run = tmp_path_factory.mktemp("folder_runs") / "tiny"
    shutil.copytree(run_dir, run)
    (run / "config.yaml").write_text("data:\n  text_columns: [text]\n")
    return run


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    """`files` by their path under `root` ("pos/0_9.txt"); bytes are written as they are."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    root.mkdir(parents=True, exist_ok=True)
    return root


INBOX = {
    "0010.txt": "Stocks fell sharply on Wall Street\n",
    "0002.txt": 'A late goal, then "extra time", then penalties.\n\nSecond paragraph, with a comma.\n',
    "0001.txt": "Chip maker launches new processors " * 40,  # longer than the run's 64 tokens: written back whole
    "empty.txt": "",
    ".DS_Store": b"\x00\x01\xff",  # hidden: not a document, nor is anything in a hidden folder
    ".ipynb_checkpoints/0001-checkpoint.txt": "not data",
}


def test_a_folder_of_files_is_a_row_per_file_in_name_order_each_text_written_back_whole(folder_run, tmp_path, capsys):
    inbox = write_files(tmp_path / "inbox", INBOX)
    assert predict_cli(folder_run, inbox, tmp_path / "out.csv") == 0
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False, dtype=str)
    assert list(out.columns[:2]) == ["text", "id"] and list(out.columns[-1:]) == ["error"]
    names = sorted(name for name in INBOX if not name.startswith("."))
    assert out["id"].tolist() == names
    assert out["text"].tolist() == [INBOX[name] for name in names]  # the whole file, as it is, line breaks and all
    expected = predict_texts(folder_run, [INBOX[name] for name in names[:3]], device="cpu", precision="fp32")
    assert out["label"].tolist()[:3] == [label for label, _ in expected]
    assert out["label"].tolist()[3] == "" and out["error"].tolist()[3] == "empty text in text"
    assert "labelled 4 rows" in capsys.readouterr().err
    assert predict_cli(folder_run, inbox, tmp_path / "chunked.csv", "--chunk-size", "1") == 0
    chunked = pd.read_csv(tmp_path / "chunked.csv", keep_default_na=False, dtype=str)
    assert chunked.drop(columns="score").equals(out.drop(columns="score"))  # a score may differ in its last digit


def test_a_folder_of_documents_named_apart_from_a_shared_start_is_a_row_per_file(folder_run, tmp_path):
    """An inbox of tickets (ticket.1001.txt, ...: more lines each than files) was read a line per row, labelled
    1001, 1002, 1003 as class files: those are not the model's classes, so each file is one row."""
    ticket = "Dear support,\nmy order has not arrived.\nIt was due last week.\nRegards\n"
    names = [f"ticket.{number}.txt" for number in (1001, 1002, 1003)]
    inbox = write_files(tmp_path / "inbox", dict.fromkeys(names, ticket))
    assert predict_cli(folder_run, inbox, tmp_path / "out.csv") == 0
    out = pd.read_csv(tmp_path / "out.csv", keep_default_na=False, dtype=str)
    assert out["id"].tolist() == names and out["text"].tolist() == [ticket] * 3


def test_a_folder_of_class_folders_keeps_its_label_column_which_needs_a_prefix(folder_run, tmp_path, capsys, caplog):
    """aclImdb/test as it ships: class folders, loose files beside them (not rows, said in a warning)."""
    test = write_files(
        tmp_path / "test",
        {
            "pos/1_9.txt": "A wonderful film",
            "neg/2_1.txt": "Dull and too long",
            "neg/0_2.txt": "Not worth it",
            "urls_pos.txt": "http://",
            "pos/.DS_Store": b"\x00",
        },
    )
    assert predict_cli(folder_run, test, tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, str(test), "'label'", "--prefix")
    assert not (tmp_path / "out.csv").exists()
    with caplog.at_level(logging.WARNING, logger="pipeline.data.load"):
        assert predict_cli(folder_run, test, tmp_path / "out.csv", "--prefix", "pred_") == 0
    assert any("1 file beside the class folders, not rows: urls_pos.txt" in r.getMessage() for r in caplog.records)
    output = read_table(tmp_path / "out.csv")
    assert output[0] == ["text", "label", "id", "pred_label", "pred_label_id", "pred_score", "pred_error"]
    assert [row[:3] for row in output[1:]] == [
        ["Not worth it", "neg", "neg/0_2.txt"],
        ["Dull and too long", "neg", "neg/2_1.txt"],
        ["A wonderful film", "pos", "pos/1_9.txt"],
    ]
    assert all(row[3] in LABELS for row in output[1:])


def test_a_folder_that_training_would_refuse_is_refused_naming_it(folder_run, run_dir, tmp_path, capsys):
    empty = write_files(tmp_path / "empty", {})
    hidden = write_files(tmp_path / "hidden", {".DS_Store": "x", ".git/HEAD": "ref"})
    for folder in (empty, hidden):
        assert predict_cli(folder_run, folder, tmp_path / "out.csv") != 0
        assert_one_line_error(capsys.readouterr().err, f"{folder} (--input)", "holds no files to label")
    nested = write_files(tmp_path / "aclImdb", {"test/pos/1_9.txt": "good", "test/neg/1_1.txt": "bad"})
    assert predict_cli(folder_run, nested, tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "aclImdb/test holds folders (neg, pos)", "level deeper")
    inbox = write_files(tmp_path / "inbox", {"1.txt": "Stocks fall"})
    assert predict_cli(run_dir, inbox, tmp_path / "out.csv") != 0  # a run trained on a CSV's title, description
    assert_one_line_error(capsys.readouterr().err, "'title', 'description'", "'text', 'id'", "--text-columns text")
    assert predict_cli(run_dir, inbox, tmp_path / "out.csv", "--text-columns", "text") == 0
    capsys.readouterr()
    for output in (inbox / "out.csv", inbox / "new" / "out.csv"):  # a later run would read it as a document
        assert predict_cli(folder_run, inbox, output) != 0
        assert_one_line_error(capsys.readouterr().err, f"output {output} is inside the input folder {inbox}")
    assert sorted(path.name for path in inbox.iterdir()) == ["1.txt"]


def test_an_undecodable_file_of_a_folder_is_named_with_its_line(folder_run, tmp_path, capsys):
    inbox = write_files(tmp_path / "inbox", {"1.txt": "plain", "2.txt": "one\ncaf\xe9 cr\xe8me".encode("latin-1")})
    assert predict_cli(folder_run, inbox, tmp_path / "out.csv", "--encoding", "utf-8") != 0
    assert_one_line_error(capsys.readouterr().err, f"{inbox}/2.txt, line 2", "not valid utf-8", "--encoding")
    assert not (tmp_path / "out.csv").exists()
    assert predict_cli(folder_run, inbox, tmp_path / "out.csv") == 0  # --encoding auto: that file as Windows-1252
    assert read_table(tmp_path / "out.csv")[2][:2] == ["one\ncafé crème", "2.txt"]


def test_file_layout_options_given_for_a_folder_are_named_in_a_warning(folder_run, tmp_path, caplog):
    inbox = write_files(tmp_path / "inbox", {"1.txt": "Stocks fall", "2.txt": "Federer wins"})
    options = ["--format", "tsv", "--delimiter", "@", "--quoting", "auto", "--encoding", "utf-8"]
    with caplog.at_level(logging.WARNING, logger="pipeline.predict.cli"):
        assert predict_cli(folder_run, inbox, tmp_path / "out.csv", *options) == 0
    (warning,) = [record.getMessage() for record in caplog.records if "file options" in record.getMessage()]
    assert warning.endswith("do not describe: --format, --delimiter")  # --quoting auto is its default
    assert len(read_table(tmp_path / "out.csv")) == 3


# ---------------------------------------------------------------------------------------------------------------
# Layouts real data sets ship: a saved dataset, one JSON object holding the records, another delimiter


def test_a_folder_that_save_to_disk_wrote_is_refused_not_labelled_file_by_file(folder_run, tmp_path, capsys):
    """Read as a folder of class folders (its split folders) or of files, its .arrow files were texts to label."""
    import datasets

    saved = tmp_path / "saved"
    datasets.DatasetDict({"test": datasets.Dataset.from_dict({"text": ["a", "b"]})}).save_to_disk(str(saved))
    capsys.readouterr()  # its progress bar
    assert predict_cli(folder_run, saved, tmp_path / "out.csv") != 0
    assert_one_line_error(
        capsys.readouterr().err,
        f"{saved} (--input) is a dataset saved by the datasets library (save_to_disk: dataset_dict.json)",
        f"datasets.load_from_disk('{saved}')['test'].to_json('test.jsonl')",
    )
    assert not (tmp_path / "out.csv").exists()


def test_json_field_reads_the_records_of_one_json_object(run_dir, tmp_path, capsys, caplog):
    rows = [{"title": f"Report {index}", "description": f"Details {index}."} for index in range(3)]
    source = tmp_path / "export.json"
    source.write_text(json.dumps({"version": "2", "data": rows}, indent=2))
    assert predict_cli(run_dir, source, tmp_path / "out.csv") != 0
    assert_one_line_error(capsys.readouterr().err, "its columns: 'version', 'data'", "set --json-field=data")
    assert predict_cli(run_dir, source, tmp_path / "out.jsonl", "--json-field", "data") == 0
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["title"] for row in written] == ["Report 0", "Report 1", "Report 2"] and "label" in written[0]
    plain = write_table(tmp_path / "in.csv", news_rows(2))
    with caplog.at_level(logging.WARNING, logger="pipeline.predict.cli"):
        assert predict_cli(run_dir, plain, tmp_path / "plain.csv", "--json-field", "data") == 0
    assert any(record.getMessage().endswith("do not describe: --json-field") for record in caplog.records)


def test_a_csv_of_another_delimiter_names_the_delimiter_option(folder_run, tmp_path, capsys):
    source = tmp_path / "pipes.csv"
    source.write_text("text|source\nStocks fell, sharply|wire\nMatch won|desk\n")
    assert predict_cli(folder_run, source, tmp_path / "out.csv", "--column-names", "text") != 0
    assert_one_line_error(capsys.readouterr().err, "pipes.csv, line 2: 2 fields, expected 1", "set --delimiter to it")
    assert predict_cli(folder_run, source, tmp_path / "out.csv", "--delimiter", "|") == 0


@pytest.mark.slow  # a fresh process or a real-sized fit: about 7-10 s on 2 cores
def test_the_command_starts_without_the_libraries_it_does_not_use_to_start():
    """Start-up is most of a short job's time: pandas, datasets, scikit-learn, matplotlib and the export runtimes load
    where they are used, not on import (issue 41: `python -X importtime -m pipeline.predict`)."""
    heavy = ("pandas", "datasets", "sklearn", "matplotlib", "onnxruntime", "openvino")
    code = f"import sys\nimport pipeline.predict.cli\nprint(sorted(name for name in {heavy!r} if name in sys.modules))"
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"
