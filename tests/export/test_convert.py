"""Tests for the ONNX export (pipeline/export/) and the prediction backends it feeds (--backend auto|torch|onnx).

Offline, CPU, on a tiny random BERT (2 layers, hidden 32, the head spread so that all four classes are predicted
with clear margins, as in tests/predict/test_cli.py) and a tiny from-scratch encoder, each saved into a run directory
whose config.yaml points at a small CSV, so that verification re-creates the validation split as it does for a
real run. Skipped without the optional extra `onnx`.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("onnxruntime", reason="the optional extra 'onnx' is not installed (pip install -e '.[onnx]')")
onnx = pytest.importorskip("onnx", reason="the optional extra 'onnx' is not installed (pip install -e '.[onnx]')")

from transformers import BertConfig, BertForSequenceClassification, BertModel  # noqa: E402

from pipeline.common.extras import installed  # noqa: E402
from pipeline.export import (  # noqa: E402
    ExportError,
    choose_export,
    convert,
    export_run,
    read_export_record,
    weights_sha256,
)
from pipeline.export import cli as export_cli  # noqa: E402
from pipeline.predict import PredictError, Predictor, main, predict_dataframe, predict_texts  # noqa: E402
from pipeline.predict.runtime import onnx_threads, open_session  # noqa: E402
from pipeline.run.directory import RunDir  # noqa: E402
from pipeline.run.exports import MIN_VERIFICATION_ROWS, PRECISIONS, backend_name  # noqa: E402
from tests.helpers import REPO_ROOT, one_torch_thread, run_with_private_home, tiny_bert_classifier  # noqa: E402
from tests.helpers import spread_head as helpers_spread_head  # noqa: E402

LABELS = ["World", "Sports", "Business", "Sci/Tech"]
TOPICS = [
    "election results",
    "football match",
    "oil prices",
    "new smartphone",
    "space launch",
    "bank merger",
    "film festival",
    "chip shortage",
    "tennis final",
    "climate summit",
]
ROWS = 400  # train.csv: half of it becomes the validation split (200 rows) that verifies an export
TEST_ROWS = 20  # test.csv: the first texts that top up a validation split smaller than the verification sample
ADDED = ["label", "label_id", "score", *[f"prob_{name}" for name in LABELS], "error"]


@pytest.fixture(autouse=True, scope="module")
def single_thread():
    with one_torch_thread():
        yield


@pytest.fixture(autouse=True)
def one_onnx_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def texts_and_rows(count: int, offset: int = 0) -> list[list[str]]:
    return [
        [f"Report {i} on {TOPICS[i % len(TOPICS)]}", f"Details about the {TOPICS[(i * 7) % len(TOPICS)]}, day {i}."]
        for i in range(offset, offset + count)
    ]


def spread_head(model: BertForSequenceClassification, tokenizer) -> None:
    helpers_spread_head(model, tokenizer, [" ".join(row) for row in texts_and_rows(60)])


def tiny_bert(tokenizer) -> BertForSequenceClassification:
    model = tiny_bert_classifier(tokenizer, LABELS, positions=128)
    spread_head(model, tokenizer)
    return model


def tiny_encoder(tokenizer):
    from pipeline.models.encoder import EncoderClassifierConfig, EncoderForSequenceClassification, EncoderSettings

    settings = EncoderSettings(
        hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=128
    )
    config = EncoderClassifierConfig.from_settings(
        settings, vocab_size=tokenizer.vocab_size, pad_token_id=0, id2label=LABELS
    )
    torch.manual_seed(0)
    model = EncoderForSequenceClassification(config).eval()
    with torch.no_grad():  # widen the head so that the four classes all occur
        model.classifier.weight.mul_(40.0)
    return model


def write_run(run: Path, model, tokenizer) -> Path:
    """A run directory: model/, config.yaml pointing at train.csv/test.csv, metrics.json. The gold labels are
    the model's own fp32 predictions for most rows, so that accuracy is high and losing it is visible."""
    model.save_pretrained(run / "model")
    tokenizer.save_pretrained(run / "model")
    rows = texts_and_rows(ROWS + TEST_ROWS)
    encoded = tokenizer(
        [" ".join(row) for row in rows], padding=True, truncation=True, max_length=64, return_tensors="pt"
    )
    with torch.no_grad():
        predicted = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits.argmax(-1)
    gold = [LABELS[(p + 1) % 4] if i % 10 == 0 else LABELS[p] for i, p in enumerate(predicted.tolist())]
    for name, part in (("train.csv", slice(0, ROWS)), ("test.csv", slice(ROWS, None))):
        with open(run / name, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["title", "description", "label"])
            writer.writerows([*row, label] for row, label in zip(rows[part], gold[part]))
    (run / "config.yaml").write_text(
        "run:\n  seed: 0\n"
        f"data:\n  source: files\n  train_file: {run / 'train.csv'}\n  test_file: {run / 'test.csv'}\n"
        f"  text_columns: [title, description]\n  label_column: label\n  label_names: {json.dumps(LABELS)}\n"
        f"  validation_fraction: 0.5\n  cache_dir: {run / 'cache'}\n"
    )
    metrics = {
        "labels": LABELS,
        "tokenization": {"max_length": 64},
        "test": {"accuracy": 0.9, "macro_f1": 0.9, "num_samples": 20},
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run


@pytest.fixture(scope="module")
def bare_run(tmp_path_factory, bert_tokenizer) -> Path:
    """The tiny BERT run, never exported."""
    return write_run(tmp_path_factory.mktemp("runs") / "tiny", tiny_bert(bert_tokenizer), bert_tokenizer)


@pytest.fixture(scope="module")
def exported_run(tmp_path_factory, bare_run) -> tuple[Path, dict]:
    """A copy of the tiny BERT run with its fp32 and int8 exports, verified."""
    run = tmp_path_factory.mktemp("exported") / "tiny"
    shutil.copytree(bare_run, run)
    return run, export_run(run, "int8", rounds=1)


def copy_run(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def run_main(argv: list) -> int:
    try:
        main([str(arg) for arg in argv])
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    return 0


def hide_module(monkeypatch, module: str) -> None:
    """As if `module` were not installed, for code that checks with importlib.util.find_spec."""
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else real_find_spec(name, *a)
    )


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "Traceback" not in stderr, stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def input_csv(path: Path, count: int = 40) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "title", "description"])
        writer.writerows([f"{i:03d}", *row] for i, row in enumerate(texts_and_rows(count, offset=1000)))
    return path


def predict(run: Path, source: Path, output: Path, *extra: str) -> int:
    return run_main(["--model", run, "--input", source, "--output", output, "--no-progress", "--probabilities", *extra])


# ---------------------------------------------------------------------------------------------------------------
# Export and verification


def test_export_writes_verified_models_and_a_record(exported_run, capsys):
    run, record = exported_run
    folder = RunDir(run).export_dir
    assert read_export_record(run) == record
    assert record["model_sha256"] == weights_sha256(run / "model")
    assert record["inputs"] == ["input_ids", "attention_mask"] and record["outputs"] == ["logits"]
    verification = record["verification"]
    assert verification["source"].startswith("validation split") and verification["parts"]["validation"] == ROWS // 2
    assert verification["accuracy_rows"] == ROWS // 2 and verification["rows"] == sum(verification["parts"].values())
    fp32 = record["variants"]["fp32"]
    assert fp32["status"] == "verified" and fp32["file"] == "model.onnx" and (folder / "model.onnx").is_file()
    assert fp32["label_agreement"] == 1.0 and fp32["max_probability_difference"] < 1e-3
    assert fp32["accuracy"] == pytest.approx(record["torch"]["fp32"]["accuracy"])
    assert 0.8 < fp32["accuracy"] <= 0.95  # gold is the model's own label on 9 rows in 10
    for variant in record["variants"].values():
        assert variant["rows_per_second"] > 0 and variant["speedup_vs_torch"] > 0
    # int8 on this random model, whose head amplifies every rounding, disagrees a lot: refused and kept aside.
    int8 = record["variants"]["int8"]
    assert 0.0 <= int8["label_agreement"] <= 1.0
    too_different = int8["disagreeing_rows"] > 0.005 * verification["rows"] or int8["accuracy_change_points"] < -0.5
    assert (int8["status"] == "refused") == too_different
    if int8["status"] == "refused":
        assert int8["file"] == "refused/model.int8.onnx" and (folder / int8["file"]).is_file()
        assert not (folder / "model.int8.onnx").exists()
    assert record["auto"] in (None, *record["variants"])
    assert record["auto"] is None or record["variants"][record["auto"]]["status"] == "verified"
    # The shapes are dynamic: a batch and a length never seen at export run.
    session = open_session(folder / "model.onnx")
    (logits,) = session.run(
        ["logits"],
        {"input_ids": np.full((5, 37), 1000, dtype=np.int64), "attention_mask": np.ones((5, 37), dtype=np.int64)},
    )
    assert logits.shape == (5, 4)
    text = export_cli.format_record(record)
    assert "torch fp32" in text and "onnx fp32" in text and "--backend auto:" in text


def test_a_broken_export_is_refused_and_never_used(bare_run, tmp_path, monkeypatch, capsys):
    """Perturb the exported classifier so labels change: verification refuses it, and prediction will not use it."""
    run = copy_run(bare_run, tmp_path / "broken")
    original = convert.export_fp32

    def export_then_break(model, tokenizer, path, max_length, segments):
        original(model, tokenizer, path, max_length, segments)
        graph = onnx.load(str(path))
        for tensor in graph.graph.initializer:
            if "classifier.weight" in tensor.name:
                weight = onnx.numpy_helper.to_array(tensor)
                tensor.CopyFrom(onnx.numpy_helper.from_array(weight[::-1].copy(), tensor.name))  # swap the classes
        onnx.save(graph, str(path))

    monkeypatch.setattr(convert, "export_fp32", export_then_break)
    record = export_run(run, rounds=1)
    capsys.readouterr()
    fp32 = record["variants"]["fp32"]
    assert fp32["status"] == "refused" and "labels differ from PyTorch fp32" in fp32["reason"]
    assert fp32["label_agreement"] < 0.9 and fp32["accuracy_change_points"] < -0.5
    assert record["auto"] is None and record["auto_reason"] == "no export passed verification"
    assert (run / "onnx" / "refused" / "model.onnx").is_file() and not (run / "onnx" / "model.onnx").exists()

    source = input_csv(tmp_path / "in.csv", 5)
    assert predict(run, source, tmp_path / "out.csv", "--backend", "onnx") == 1
    assert_one_line_error(capsys.readouterr().err, "--backend onnx", "no verified export", "refused")
    assert Predictor.from_path(run, device="cpu").backend_name == "torch"

    # The command says so, keeps the refused model aside and exits 3.
    assert export_cli.main(["--model", str(run), "--rounds", "1"]) == 3
    assert "refused fp32: labels differ" in capsys.readouterr().err


@pytest.mark.slow  # 5-10 s of training or export: the default tier stays under five minutes
def test_files_a_converter_leaves_in_the_working_directory_stay_out_of_it(bare_run, tmp_path, monkeypatch):
    """ONNX Runtime's shape inference, when it gives up, saves sym_shape_infer_temp.onnx and a uuid-named .data file
    as large as the model into the working directory: the converters run from a scratch one, and a run named by a
    relative path still exports."""
    run = copy_run(bare_run, tmp_path / "run")
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    monkeypatch.chdir(user_dir)
    original = convert.quantize_int8

    def quantize_like_a_failed_shape_inference(source, target):
        Path("sym_shape_infer_temp.onnx").write_bytes(b"graph")
        Path("2a7909d0.data").write_bytes(b"weights")
        original(source, target)

    monkeypatch.setattr(convert, "quantize_int8", quantize_like_a_failed_shape_inference)
    record = export_run(Path("..") / "run", "int8", rounds=1)
    assert record["variants"]["fp32"]["status"] == "verified"
    assert sorted(path.name for path in user_dir.iterdir()) == []
    left = {path.name for path in (run / "onnx").rglob("*")}
    assert "model.onnx" in left and not left & {"sym_shape_infer_temp.onnx", "2a7909d0.data"}


def test_without_the_training_data_the_test_predictions_verify(bare_run, tmp_path):
    run = copy_run(bare_run, tmp_path / "moved")
    config = (run / "config.yaml").read_text()
    (run / "config.yaml").write_text(config.replace(str(bare_run / "train.csv"), str(run / "train.csv")))
    (run / "train.csv").unlink()  # the data moved away since training
    rows = texts_and_rows(60, offset=5000)
    with open(run / "test_predictions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label", "predicted", "score"])
        writer.writerows([" ".join(row), LABELS[i % 4], LABELS[i % 4], "0.5"] for i, row in enumerate(rows))
    record = export_run(run, max_rows=40, rounds=1)
    assert record["verification"]["source"].startswith("test predictions file (the validation split could not be")
    assert "train.csv" in record["verification"]["source"] and record["verification"]["rows"] == 40
    assert record["variants"]["fp32"]["status"] == "verified"


def small_validation_run(bare_run: Path, target: Path) -> Path:
    """A copy of the tiny BERT run whose validation split is 40 rows (10% of train.csv), as a small dataset gives:
    420 texts in all (40 validation, 20 test, 360 train), fewer than a sample of MIN_VERIFICATION_ROWS."""
    run = copy_run(bare_run, target)
    config = run / "config.yaml"
    config.write_text(config.read_text().replace("validation_fraction: 0.5", "validation_fraction: 0.1"))
    return run


def test_a_small_validation_split_is_topped_up_with_the_runs_other_texts(bare_run, tmp_path):
    """Agreement with PyTorch needs no gold label: a validation split smaller than the sample is topped up with the
    run's test texts, then train's, up to --max-rows; accuracy stays on the labelled validation rows."""
    from pipeline.export import verify
    from pipeline.predict.source import load_model_and_tokenizer, resolve_model_source

    run = small_validation_run(bare_run, tmp_path / "small")
    record = export_run(run, max_rows=300, openvino=False, rounds=1)
    verification = record["verification"]
    assert verification["parts"] == {"validation": 40, "test": TEST_ROWS, "train": 300 - 40 - TEST_ROWS}
    assert verification["rows"] == 300 and verification["accuracy_rows"] == 40
    assert verification["accuracy_source"] == "validation"
    assert verification["source"] == (
        f"validation split (re-created from config.yaml), topped up with {TEST_ROWS} test, 240 train texts "
        "(no labels used)"
    )
    assert record["variants"]["fp32"]["status"] == "verified"
    text = export_cli.format_record(record)
    assert "on 300 rows (validation 40, test 20, train 240); accuracy on the 40 labelled validation rows" in text

    # The sample: the validation rows first, then distinct texts; accuracy counts the validation rows alone.
    rows = verify.verification_rows(RunDir(run))
    sample = rows.sample(300, 0, calibrating=False)
    assert sample.source == verification["source"] and sample.gold == rows.gold and len(rows.gold) == 40
    assert sample.texts[:40] == rows.texts and len(set(sample.texts)) == 300
    source = resolve_model_source(run)
    model, tokenizer = load_model_and_tokenizer(source.model_dir)
    ids = verify.reference_predictor(model, tokenizer, source, 64).infer(rows.texts)[1].argmax(axis=1)
    expected = np.mean([LABELS[index] == gold for index, gold in zip(ids, rows.gold)])
    assert record["torch"]["fp32"]["accuracy"] == pytest.approx(expected)
    # When a static int8 model calibrates on train rows (OpenVINO's), those rows never verify it.
    kept_apart = rows.sample(300, 0, calibrating=True)
    assert kept_apart.parts == {"validation": 40, "test": TEST_ROWS, "train": 360 - verify.CALIBRATION_ROWS}
    assert not set(kept_apart.texts) & set(kept_apart.calibration)


def test_a_multi_label_run_verifies_on_its_validation_split_without_accuracy(bare_run, tmp_path):
    """A multi-label run's validation rows hold sets: they verify agreement (no label needed) and are topped up like
    any run's; reading a `label` column failed, and verification fell back to the test predictions file alone."""
    from pipeline.export import verify
    from pipeline.run import exports as export_record

    run = small_validation_run(bare_run, tmp_path / "multi")
    config = run / "config.yaml"
    config.write_text(config.read_text().replace("data:\n", "data:\n  task: multi_label\n"))
    rows = verify.verification_rows(RunDir(run))
    assert rows.source == "validation split (re-created from config.yaml)" and rows.gold is None
    sample = rows.sample(300, 0, calibrating=False)
    assert sample.parts == {"validation": 40, "test": TEST_ROWS, "train": 300 - 40 - TEST_ROWS}
    line = export_record.rows_used({"verification": {"rows": 300, "parts": sample.parts, "accuracy_rows": 0}})
    assert line.endswith("on 300 rows (validation 40, test 20, train 240); no accuracy (no single gold class per row)")


def test_a_multi_label_export_is_held_to_the_label_sets_prediction_writes(monkeypatch):
    """Agreement compares each row's set at its thresholds: an export that puts a second class over its threshold
    labels that row otherwise, though the top class is the same (argmax agreement called it 100%)."""
    from pipeline.data.text import TextSpec
    from pipeline.export import verify

    reference = Predictor(
        None, None, LABELS, 16, torch.device("cpu"), TextSpec(("text",), " ", False), multi_label=True
    )
    torch_probabilities = np.array([[0.9, 0.4, 0.1, 0.1], [0.2, 0.8, 0.1, 0.1]], dtype=np.float32)
    export_probabilities = np.array([[0.9, 0.6, 0.1, 0.1], [0.2, 0.8, 0.1, 0.1]], dtype=np.float32)  # row 0: +class 1
    measured = {"torch-fp32": torch_probabilities, "onnx-fp32": export_probabilities}
    monkeypatch.setattr(verify, "_predictors", lambda reference, files: dict.fromkeys(measured, reference))
    monkeypatch.setattr(verify, "_measure", lambda predictors, texts, rounds: (measured, dict.fromkeys(measured, 1.0)))
    rows = verify.VerificationRows(["a text", "another"], None, "validation split")
    results = verify.verify_exports(reference, {"fp32": Path("model.onnx")}, rows, rounds=1)
    assert results.variants["fp32"]["disagreeing_rows"] == 1 and results.variants["fp32"]["accuracy"] is None


def measured_verification(monkeypatch, reference, measured: dict, count: int, rounds: int = 2):
    """verify_exports on `count` rows with the probabilities `measured` by backend, no model run; the number of
    timed passes it asked for."""
    from pipeline.export import verify

    passes = []

    def measure(predictors, texts, rounds):
        passes.append(rounds)
        return measured, dict.fromkeys(measured, 1.0)

    monkeypatch.setattr(verify, "_predictors", lambda reference, files: dict.fromkeys(measured, reference))
    monkeypatch.setattr(verify, "_measure", measure)
    rows = verify.VerificationRows([f"text {i}" for i in range(count)], None, "validation split")
    return verify.verify_exports(reference, {"fp32": Path("model.onnx")}, rows, rounds=rounds), passes


def test_a_flagging_export_is_held_to_the_flags_prediction_writes(monkeypatch):
    """A multi-class model with thresholds flags a row whose top score is below its class's threshold: an export
    that moves a score across it writes another flag, though the argmax is the same (argmax agreement said 100%)."""
    from pipeline.data.text import TextSpec
    from pipeline.scoring.thresholds import KIND_FLAG, Decision

    decision = Decision(KIND_FLAG, LABELS, {"Sports": 0.6})
    reference = Predictor(
        None, None, LABELS, 16, torch.device("cpu"), TextSpec(("text",), " ", False), decision=decision
    )
    torch_probabilities = np.array([[0.1, 0.62, 0.2, 0.08], [0.7, 0.1, 0.1, 0.1]], dtype=np.float32)
    export_probabilities = np.array([[0.1, 0.58, 0.22, 0.1], [0.7, 0.1, 0.1, 0.1]], dtype=np.float32)
    assert (decision.predict(torch_probabilities) == decision.predict(export_probabilities)).all()
    measured = {"torch-fp32": torch_probabilities, "onnx-fp32": export_probabilities}
    results, _ = measured_verification(monkeypatch, reference, measured, count=2)
    assert results.variants["fp32"]["disagreeing_rows"] == 1 and results.variants["fp32"]["label_agreement"] == 0.5


def test_speed_is_timed_over_rounds_only_where_it_can_choose_for_auto(monkeypatch):
    """Below MIN_VERIFICATION_ROWS no export is auto's, whatever its speed: one pass, the labelling one, is timed."""
    from pipeline.data.text import TextSpec

    reference = Predictor(None, None, LABELS, 16, torch.device("cpu"), TextSpec(("text",), " ", False))
    for count, expected in ((MIN_VERIFICATION_ROWS - 1, 1), (MIN_VERIFICATION_ROWS, 3)):
        probabilities = np.tile(np.array([[0.7, 0.1, 0.1, 0.1]], dtype=np.float32), (count, 1))
        measured = {"torch-fp32": probabilities, "onnx-fp32": probabilities}
        results, passes = measured_verification(monkeypatch, reference, measured, count, rounds=3)
        assert passes == [expected] and results.timed_passes == expected


def verified_int8_run(exported_run, target: Path) -> Path:
    """A copy of the exported run whose int8 model counts as verified (the tiny random model's may be refused),
    faster than fp32 and, as in a small run, verified on too few rows for auto."""
    run = copy_run(exported_run[0], target)
    folder = RunDir(run).export_dir
    record = read_export_record(run)
    int8 = record["variants"]["int8"]
    if int8["file"] != "model.int8.onnx":
        (folder / int8["file"]).rename(folder / "model.int8.onnx")
    int8.update(file="model.int8.onnx", status="verified", reason="verified")
    int8["rows_per_second"] = 2 * record["variants"]["fp32"]["rows_per_second"]
    record["auto"] = None
    record["variants"] = {name: record["variants"][name] for name in ("fp32", "int8")}  # as with --no-openvino
    assert record["verification"]["rows"] < MIN_VERIFICATION_ROWS
    RunDir(run).export_record_path.write_text(json.dumps(record))
    return run


def test_backend_onnx_runs_fp32_and_int8_only_when_named(exported_run, tmp_path, capsys):
    """A run exported with int8 (eval.export: int8): --backend onnx is its fp32 model, not the faster int8 one,
    which a sharp model's thresholds turn into flipped labels; onnx-int8 runs int8. Each says which and how to get
    the other."""
    run = verified_int8_run(exported_run, tmp_path / "both")
    onnx = choose_export(run, run / "model", "onnx")
    assert onnx.variant == "fp32" and onnx.reason.startswith("asked for, fp32; not eligible for auto")
    assert onnx.reason.endswith(f"Also verified: --backend onnx-int8 ({PRECISIONS['int8']})")
    int8 = choose_export(run, run / "model", "onnx-int8")
    assert int8.variant == "int8" and int8.reason.startswith(f"asked for, {PRECISIONS['int8']}; not eligible")
    assert int8.reason.endswith("Also verified: --backend onnx-fp32 (fp32)")
    assert choose_export(run, run / "model", "auto").variant is None  # too few rows, whatever the speed

    source = input_csv(tmp_path / "in.csv", 8)
    assert predict(run, source, tmp_path / "int8.csv", "--backend", "onnx-int8") == 0
    err = capsys.readouterr().err
    assert "backend onnx-int8" in err and f"asked for, {PRECISIONS['int8']}" in err
    with pytest.raises(ExportError, match="has no openvino-int8 export .* the optional extra 'openvino'"):
        choose_export(run, run / "model", "openvino-int8")


def test_exports_verified_on_too_few_rows_are_never_chosen_by_auto(bare_run, tmp_path, capsys, caplog):
    """A 0.5% limit cannot be checked on a few hundred rows: when the run has fewer texts than
    MIN_VERIFICATION_ROWS in all, its exports are verified and kept, but auto runs PyTorch; --backend onnx still
    runs the export, with a warning. Recorded in export.json, printed in the table and logged, with the reason."""
    from pipeline.export import verify

    run = small_validation_run(bare_run, tmp_path / "few")
    with caplog.at_level(logging.WARNING, logger="pipeline.export"):
        assert export_cli.main(["--model", str(run), "--no-openvino", "--rounds", "3"]) == 0
    printed = capsys.readouterr().out
    reason = "verified on 420 rows, fewer than the 1,000 that checking a 0.5% disagreement limit needs"
    assert reason in caplog.text
    record = read_export_record(run)
    verification, fp32 = record["verification"], record["variants"]["fp32"]
    assert verification["parts"] == {"validation": 40, "test": TEST_ROWS, "train": 360}
    assert verification["rows"] == 420 and verification["min_rows_for_auto"] == MIN_VERIFICATION_ROWS == 1000
    assert verification["eligible_for_auto"] is False
    # Speed decides nothing on so few rows: the pass that labelled them is the only one timed, not --rounds 3.
    assert verification["timed_passes"] == 1
    assert fp32["status"] == "verified" and fp32["label_agreement"] == 1.0
    assert fp32["reason"].startswith(f"verified, kept, but not chosen by --backend auto: {reason}")
    assert record["auto"] is None and record["auto_reason"].startswith(f"no export is eligible: {reason}")
    assert "onnx fp32" in printed and "verified, not for auto (too few rows)" in printed
    assert f"--backend auto: torch (no export is eligible: {reason}" in printed

    choice = choose_export(run, run / "model", "auto")
    assert choice.variant is None and reason in choice.reason
    assert Predictor.from_path(run, device="cpu").backend_name == "torch"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pipeline.export"):
        asked = choose_export(run, run / "model", "onnx")
    assert asked.variant == "fp32" and f"not eligible for auto: {reason}" in asked.reason
    assert "--backend onnx runs onnx-fp32, which auto would not choose" in caplog.text

    # The rule is applied where the export is used too: an export.json written before it, naming an export verified
    # on 420 rows, no longer makes auto run it; verified on enough rows, it does.
    path = RunDir(run).export_record_path
    record["auto"] = "fp32"
    del verification["eligible_for_auto"], verification["min_rows_for_auto"]
    path.write_text(json.dumps(record))
    assert choose_export(run, run / "model", "auto").variant is None
    verification["rows"] = MIN_VERIFICATION_ROWS
    path.write_text(json.dumps(record))
    assert choose_export(run, run / "model", "auto").variant == "fp32"
    # and at verification, the same boundary
    faster = {"fp32": {**fp32, "status": "verified", "speedup_vs_torch": 2.0}}
    assert verify._auto_choice(faster, "fp32", MIN_VERIFICATION_ROWS)[0] == "fp32"
    assert verify._auto_choice(faster, "fp32", MIN_VERIFICATION_ROWS - 1)[0] is None


def test_the_from_scratch_encoder_exports_and_predicts_alike(tmp_path, bert_tokenizer):
    run = write_run(tmp_path / "encoder", tiny_encoder(bert_tokenizer), bert_tokenizer)
    record = export_run(run, rounds=1)
    fp32 = record["variants"]["fp32"]
    assert fp32["status"] == "verified" and fp32["label_agreement"] == 1.0, fp32
    assert fp32["max_probability_difference"] < 1e-4
    texts = [" ".join(row) for row in texts_and_rows(30, offset=500)]
    by_torch = Predictor.from_path(run, device="cpu", precision="fp32", backend="torch", batch_size=7).infer(texts)
    by_onnx = Predictor.from_path(run, backend="onnx", batch_size=7).infer(texts)
    assert by_onnx[0].tolist() == by_torch[0].tolist()
    assert len(set(by_torch[0].tolist())) > 1
    np.testing.assert_allclose(by_onnx[1], by_torch[1], atol=1e-4)


# ---------------------------------------------------------------------------------------------------------------
# Prediction through the export


def test_both_backends_write_the_same_file(exported_run, tmp_path, capsys):
    run, record = exported_run
    source = input_csv(tmp_path / "in.csv", 40)
    assert (
        predict(
            run,
            source,
            tmp_path / "torch.csv",
            "--backend",
            "torch",
            "--precision",
            "fp32",
            "--batch-size",
            "8",
            "--chunk-size",
            "15",
        )
        == 0
    )
    assert "backend torch (fp32): asked for" in capsys.readouterr().err
    assert (
        predict(run, source, tmp_path / "onnx.csv", "--backend", "onnx", "--batch-size", "8", "--chunk-size", "15") == 0
    )
    err = capsys.readouterr().err
    assert "backend onnx-fp32" in err and "model.onnx" in err
    by_torch, by_onnx = pd.read_csv(tmp_path / "torch.csv", dtype=str), pd.read_csv(tmp_path / "onnx.csv", dtype=str)
    assert list(by_onnx.columns) == ["id", "title", "description", *ADDED] == list(by_torch.columns)
    assert by_onnx[["id", "title", "description", "label", "label_id", "error"]].equals(
        by_torch[["id", "title", "description", "label", "label_id", "error"]]
    )
    assert by_torch["label"].nunique() > 1
    numbers = ["score", *[f"prob_{name}" for name in LABELS]]
    np.testing.assert_allclose(by_onnx[numbers].astype(float), by_torch[numbers].astype(float), atol=1e-3)

    # auto takes what verification chose, and says so
    assert predict(run, source, tmp_path / "auto.csv") == 0
    expected = f"backend onnx-{record['auto']}" if record["auto"] else "backend torch"
    assert expected in capsys.readouterr().err


def test_an_export_predicts_in_a_process_that_never_imports_torch(exported_run, tmp_path, capsys):
    """Start-up is most of a short job's time, and torch and transformers' model classes are most of start-up (issue
    41): an export needs neither. The fresh process writes what the in-process command writes."""
    run, _ = exported_run
    source = input_csv(tmp_path / "in.csv", 30)
    assert predict(run, source, tmp_path / "here.csv", "--backend", "onnx") == 0
    argv = ["--model", run, "--input", source, "--output", tmp_path / "fresh.csv", "--no-progress", "--probabilities"]
    code = (
        "import sys\nfrom pipeline.predict.cli import main\n"
        f"main({[str(arg) for arg in [*argv, '--backend', 'onnx']]!r})\n"
        "print(sorted(name for name in ('torch', 'transformers') if name in sys.modules))"
    )
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]" and "backend onnx-fp32" in result.stderr
    assert (tmp_path / "fresh.csv").read_bytes() == (tmp_path / "here.csv").read_bytes()


def test_python_api_takes_a_backend(exported_run):
    run, _ = exported_run
    texts = [" ".join(row) for row in texts_and_rows(12, offset=2000)] + [""]
    torch_results = predict_texts(run, texts, device="cpu", precision="fp32", backend="torch")
    onnx_results = predict_texts(run, texts, backend="onnx")
    assert [label for label, _ in onnx_results] == [label for label, _ in torch_results]
    np.testing.assert_allclose([s for _, s in onnx_results[:-1]], [s for _, s in torch_results[:-1]], atol=1e-3)
    frame = pd.DataFrame(texts_and_rows(6, offset=3000), columns=["title", "description"])
    by_onnx = predict_dataframe(run, frame, backend="onnx", probabilities=True)
    by_torch = predict_dataframe(run, frame, backend="torch", precision="fp32", probabilities=True)
    assert by_onnx["label"].tolist() == by_torch["label"].tolist()
    predictor = Predictor.from_path(run, backend="onnx")
    assert predictor.model is None and predictor.backend_name == "onnx-fp32"


def test_auto_without_an_export_is_torch_and_onnx_is_an_error(bare_run, tmp_path, capsys):
    predictor = Predictor.from_path(bare_run, device="cpu")
    assert predictor.backend_name == "torch" and "no verified ONNX export" in predictor.choice.reason
    source = input_csv(tmp_path / "in.csv", 5)
    assert predict(bare_run, source, tmp_path / "out.csv", "--backend", "onnx") == 1
    assert_one_line_error(capsys.readouterr().err, "--backend onnx", "no verified ONNX export", "pipeline.export")
    assert not (tmp_path / "out.csv").exists()
    assert predict(bare_run / "model", source, tmp_path / "out.csv", "--backend", "auto") == 0
    assert "backend torch" in capsys.readouterr().err
    with pytest.raises(PredictError, match="--precision bf16 applies to the torch backend"):
        Predictor.from_path(bare_run, backend="onnx", precision="bf16")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU, and none is visible")
def test_an_export_runs_on_the_cpu_beside_a_visible_gpu(exported_run, tmp_path, capsys):
    """`--device auto` means the GPU for PyTorch, and the CPU where an export is asked for."""
    run, _ = exported_run
    source = input_csv(tmp_path / "in.csv", 20)
    assert predict(run, source, tmp_path / "onnx.csv", "--backend", "onnx") == 0
    assert "backend onnx" in capsys.readouterr().err
    assert predict(run, source, tmp_path / "auto.csv", "--precision", "fp32") == 0
    assert "backend torch" in capsys.readouterr().err  # on the GPU
    assert predict(run, source, tmp_path / "cuda.csv", "--backend", "onnx", "--device", "cuda") == 1
    assert_one_line_error(capsys.readouterr().err, "--backend onnx", "exports run on the CPU", "--device cpu")
    labels = [pd.read_csv(tmp_path / f"{name}.csv", dtype=str)["label"].tolist() for name in ("onnx", "auto")]
    assert labels[0] == labels[1]


def test_an_export_of_other_weights_is_refused(exported_run, tmp_path, capsys):
    run = copy_run(exported_run[0], tmp_path / "retrained")
    model = BertForSequenceClassification.from_pretrained(run / "model")
    with torch.no_grad():
        model.classifier.bias.add_(0.01)
    model.save_pretrained(run / "model")  # as if training went on after the export
    source = input_csv(tmp_path / "in.csv", 5)
    assert predict(run, source, tmp_path / "out.csv", "--backend", "onnx") == 1
    assert_one_line_error(capsys.readouterr().err, "exported from other weights", "refused", "re-export")
    predictor = Predictor.from_path(run, device="cpu")
    assert predictor.backend_name == "torch" and "other weights" in predictor.choice.reason


def test_a_corrupted_onnx_file_is_a_one_line_error(exported_run, tmp_path, capsys):
    run = copy_run(exported_run[0], tmp_path / "corrupted")
    model_file = run / "onnx" / "model.onnx"
    model_file.write_bytes(model_file.read_bytes()[: model_file.stat().st_size // 2])
    source = input_csv(tmp_path / "in.csv", 5)
    assert predict(run, source, tmp_path / "out.csv", "--backend", "onnx") == 1
    assert_one_line_error(capsys.readouterr().err, "model.onnx", "changed or corrupted")
    with pytest.raises(ExportError, match="ONNX Runtime cannot load it"):
        open_session(model_file)
    (run / "onnx" / "export.json").write_text("{not json")
    assert predict(run, source, tmp_path / "out.csv", "--backend", "onnx") == 1
    assert_one_line_error(capsys.readouterr().err, "export.json", "cannot be read")


# ---------------------------------------------------------------------------------------------------------------
# Bad input to the export command


def test_export_of_something_that_is_not_a_classifier(tmp_path, bert_tokenizer, capsys):
    assert export_cli.main(["--model", str(tmp_path / "nothing")]) == 1
    assert_one_line_error(capsys.readouterr().err, "model not found")
    assert export_cli.main(["--model", str(tmp_path)]) == 1
    assert_one_line_error(capsys.readouterr().err, "neither a run directory")

    run = tmp_path / "headless"
    config = BertConfig(
        vocab_size=bert_tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
    )
    BertModel(config).save_pretrained(run / "model")
    bert_tokenizer.save_pretrained(run / "model")
    (run / "config.yaml").write_text("data:\n  text_columns: [text]\n")
    assert export_cli.main(["--model", str(run)]) == 1
    assert_one_line_error(capsys.readouterr().err, "metrics.json is missing, so the run has not finished")
    (run / "metrics.json").write_text('{"labels": ["a", "b"]}')
    assert export_cli.main(["--model", str(run)]) == 1
    assert_one_line_error(capsys.readouterr().err, "not a sequence-classification model", "BertModel")

    shutil.copytree(run / "model", tmp_path / "bare")
    assert export_cli.main(["--model", str(tmp_path / "bare")]) == 1
    assert_one_line_error(capsys.readouterr().err, "not in a run directory")


def test_a_run_still_training_is_not_exported(bare_run, tmp_path, capsys):
    import os

    from pipeline.run.directory import LOCK_FILE

    run = copy_run(bare_run, tmp_path / "training")
    (run / LOCK_FILE).write_text(str(os.getppid()))  # a live process holds it, as a training run does
    assert export_cli.main(["--model", str(run)]) == 1
    assert_one_line_error(capsys.readouterr().err, "in use by another run")
    assert not (run / "onnx").exists()


def test_a_missing_optional_dependency_names_the_extra(bare_run, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime now raises ImportError
    assert export_cli.main(["--model", str(bare_run)]) == 1
    assert_one_line_error(capsys.readouterr().err, "onnxruntime is not installed", "'onnx'", ".[onnx]")
    with pytest.raises(ExportError, match=r"pip install -e \"\.\[onnx\]\""):
        open_session(Path("model.onnx"))

    from pipeline.config.schema import ConfigError, EvalConfig

    hide_module(monkeypatch, "onnxruntime")
    with pytest.raises(ConfigError, match=r"eval.export: 'int8' needs onnxruntime.*\.\[onnx\]"):
        EvalConfig(export="int8")
    assert EvalConfig().export == "none"


# ---------------------------------------------------------------------------------------------------------------
# Threads, finetune's eval.export and the report


def test_onnx_threads_follow_affinity_and_processes(monkeypatch):
    import os

    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert onnx_threads() == cores
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert onnx_threads() == max(1, cores // 2)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert onnx_threads() == 3


@pytest.mark.filterwarnings("ignore::UserWarning")  # the copied run has no history or test predictions
def test_eval_export_in_stage_4_needs_no_finished_run(exported_run, tmp_path, capsys):
    """What finetune calls when eval.export is set, before its test pass: no metrics.json yet (the length is given),
    and the run's own lock held by this process."""
    import datasets

    from pipeline.run.ownership import claimed

    run = copy_run(exported_run[0], tmp_path / "running")
    shutil.rmtree(run / "onnx")
    (run / "metrics.json").unlink()
    rows = texts_and_rows(50, offset=4000)
    validation = datasets.Dataset.from_dict(
        {"text": [" ".join(row) for row in rows], "label": [i % 4 for i in range(len(rows))]},
        features=datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=LABELS)}),
    )
    with claimed(run):
        record = convert.export_in_run(end_of_run_config(run, "single_label"), 64, validation)
    assert record["verification"]["source"] == "validation split" and record["verification"]["rows"] == 50
    assert set(record["variants"]) - {"openvino"} == {"fp32"}  # OpenVINO's model where its extra is installed
    assert record["variants"]["fp32"]["status"] == "verified" and (run / "onnx" / "model.onnx").is_file()
    assert "onnx fp32" in capsys.readouterr().out


def end_of_run_config(run: Path, task: str) -> SimpleNamespace:
    """The settings export_in_run reads from a run's config: ONNX, on validation, in batches of 16."""
    return SimpleNamespace(
        run_dir=run,
        data=SimpleNamespace(task=task),
        eval=SimpleNamespace(export="onnx", batch_size=16),
        run=SimpleNamespace(seed=0),
    )


def test_export_logits_are_the_models_in_row_order(exported_run, bert_tokenizer):
    """The test pass on an export (finetune's stage 4): the tiny model's logits through ONNX Runtime, row for row."""
    import datasets

    from pipeline.predict.runtime import open_backend
    from pipeline.scoring.evaluation import export_logits
    from pipeline.text.batching import TokenizedRows

    run, _ = exported_run
    texts = [" ".join(row) for row in texts_and_rows(37, offset=5000)]
    encoded = bert_tokenizer(texts, truncation=True, max_length=64, padding="max_length", return_tensors="pt")
    lengths = encoded["attention_mask"].sum(dim=1)
    columns = {name: encoded[name].tolist() for name in ("input_ids", "attention_mask")}
    split = datasets.Dataset.from_dict({**columns, "label": [0] * len(texts), "length": lengths.tolist()})
    rows = TokenizedRows(split)
    engine = open_backend("fp32", run / "onnx" / "model.onnx")
    got = export_logits(engine.logits, engine.inputs, rows, batch_size=8, max_tokens=256)
    model = BertForSequenceClassification.from_pretrained(run / "model").eval()
    with torch.no_grad():
        expected = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).logits
    assert got.shape == (37, len(LABELS))
    torch.testing.assert_close(got, expected, atol=5e-3, rtol=0)  # the optimised graph fuses, as verification allows
    assert (expected - expected.roll(1, dims=0)).abs().max() > 0.05  # rows differ: a row out of place would show


@pytest.mark.filterwarnings("ignore::UserWarning")  # the copied run has no history or test predictions
def test_eval_export_at_the_end_of_a_multi_label_run(bare_run, tmp_path, capsys):
    """A multi-label run's validation split holds label sets (`labels`, multi-hot), no `label` column: the export at
    the end of the run verifies agreement on it with no accuracy, as `python -m pipeline.export` does."""
    import datasets

    run = copy_run(bare_run, tmp_path / "multi")
    model_config = json.loads((run / "model" / "config.json").read_text())
    model_config["problem_type"] = "multi_label_classification"
    (run / "model" / "config.json").write_text(json.dumps(model_config))
    rows = texts_and_rows(30, offset=4000)
    validation = datasets.Dataset.from_dict(
        {"text": [" ".join(row) for row in rows], "labels": [[float(i % 4 == c) for c in range(4)] for i in range(30)]}
    )
    record = convert.export_in_run(end_of_run_config(run, "multi_label"), 64, validation)
    capsys.readouterr()
    assert record["verification"]["source"] == "validation split" and record["verification"]["rows"] == 30
    assert record["verification"]["accuracy_rows"] == 0 and record["variants"]["fp32"]["status"] == "verified"


def test_choose_export_rules(exported_run, bare_run):
    run, _ = exported_run
    assert choose_export(run, run / "model", "torch").backend == "torch"
    assert choose_export(run, run / "model", "auto", "cuda").backend == "torch"
    with pytest.raises(ExportError, match="run on the CPU"):
        choose_export(run, run / "model", "onnx", "cuda")
    with pytest.raises(ExportError, match="unknown backend"):
        choose_export(run, run / "model", "tensorrt")
    assert choose_export(run, run / "model", "onnx").variant == "fp32"  # the runtime's unquantized export
    assert choose_export(run, run / "model", "onnx-fp32").variant == "fp32"
    assert choose_export(bare_run, bare_run / "model", "auto").variant is None


@pytest.mark.slow
def test_finetune_with_eval_export_exports_verifies_and_reports(tiny_run_config):
    """eval.export=int8 end to end: a few training steps, then the export, verified on the run's validation split."""
    from pipeline import finetune

    config = tiny_run_config(
        "run.name=exported",
        "data.max_train_samples=200",
        "train.max_steps=2",
        "train.per_device_batch_size=16",
        "eval.export=int8",
    )
    finetune.run(config)
    record = read_export_record(config.run_dir)
    verification = record["verification"]
    assert verification["source"].startswith("validation split, topped up with") and verification["rows"] > 0
    assert verification["parts"]["test"] > 0  # the run's test texts top up its small validation split
    assert set(record["variants"]) - {"openvino", "openvino-int8"} == {"fp32", "int8"}
    assert record["variants"]["fp32"]["status"] == "verified"
    assert record["model_sha256"] == weights_sha256(config.run_dir / "model")
    report = (config.run_dir / "report.md").read_text(encoding="utf-8")
    assert "ONNX export: parity and speed" in report
    # The export is timed, in stage 4 before the test pass, and the report shows it in the run's split.
    saved = RunDir(config.run_dir).read_record()
    timings = saved.timings
    assert timings.export_seconds > 0 and f"export {timings.export_seconds:.1f} s" in report
    # A phase of its own: stage 4's seconds (and its rows/s) are calibration and the test pass alone.
    assert timings.eval_seconds == pytest.approx(timings.calibration_seconds + timings.test_seconds)
    # The test pass ran on what --backend auto chooses, and its rate is the speed figure: no pass of its own.
    chosen = record["auto"]
    assert saved.throughput.predict_backend == (backend_name(chosen) if chosen else "torch-fp32")
    test_rows = saved.test.num_samples
    assert saved.throughput.predict_rows_timed == test_rows and timings.predict_speed_seconds is None
    assert saved.throughput.predict_rows_per_second == pytest.approx(test_rows / timings.test_seconds)


@pytest.mark.slow
def test_the_test_pass_runs_on_the_export_auto_chooses(tiny_run_config, monkeypatch):
    """With eval.export and enough rows to verify it for `auto` (1,000), the test split is scored by the export that
    `--backend auto` runs: the run's test predictions are what `pipeline.predict` gives on those texts."""
    from pipeline import finetune
    from pipeline.export import verify

    real_measure = verify._measure

    def onnx_ahead(predictors, texts, rounds):
        """The models run for real; the machine's speed, which decides auto's choice, is not under test here."""
        probabilities, rates = real_measure(predictors, texts, rounds)
        return probabilities, {name: rate * (3.0 if name == "onnx-fp32" else 1.0) for name, rate in rates.items()}

    monkeypatch.setattr(verify, "_measure", onnx_ahead)

    config = tiny_run_config(
        "run.name=test_on_export",
        "data.max_train_samples=1200",
        "data.max_eval_samples=600",
        "train.max_steps=2",
        "train.per_device_batch_size=16",
        "eval.export=onnx",
    )
    finetune.run(config)
    record = read_export_record(config.run_dir)
    assert record["auto"] == "fp32", record["variants"]
    saved = RunDir(config.run_dir).read_record()
    assert saved.throughput.predict_backend == backend_name(record["auto"])
    assert saved.throughput.predict_rows_timed == saved.test.num_samples == 600
    written = pd.read_csv(config.run_dir / "test_predictions.csv", keep_default_na=False)
    again = predict_texts(config.run_dir, written["text"].tolist(), backend="auto")
    assert [label for label, _ in again] == written["predicted"].tolist()
    np.testing.assert_allclose([score for _, score in again], written["score"], atol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# OpenVINO (the optional extra `openvino`): its models are made, verified and used like ONNX Runtime's


@pytest.fixture(scope="module")
def openvino_run(tmp_path_factory, bert_tokenizer) -> tuple[Path, dict]:
    """The tiny from-scratch encoder, exported with int8. Not the tiny BERT: its pooled vectors are so alike that
    bf16 rounding alone flips most labels (refused, as its int8 is), while the encoder keeps clear margins."""
    # Found, not imported: importing them directly would start their telemetry (pipeline.predict.runtime hides it).
    if not (installed("openvino") and installed("nncf")):
        pytest.skip("the optional extra 'openvino' is not installed (pip install -e '.[openvino]')")
    run = write_run(tmp_path_factory.mktemp("openvino") / "encoder", tiny_encoder(bert_tokenizer), bert_tokenizer)
    return run, export_run(run, "int8", rounds=1)


def test_openvino_models_are_exported_verified_and_calibrated_on_training_rows(openvino_run):
    run, record = openvino_run
    folder = RunDir(run).export_dir
    assert {"openvino", "openvino-int8"} <= set(record["variants"])
    float_model, int8_model = record["variants"]["openvino"], record["variants"]["openvino-int8"]
    assert float_model["file"] == "model.openvino.onnx" and (folder / float_model["file"]).is_file()
    assert int8_model["precision"] == "f32" and float_model["precision"] in ("bf16", "f32")
    assert float_model["status"] == "verified" and float_model["label_agreement"] == 1.0, float_model
    # int8 is judged by the same rule as ONNX Runtime's: refused exactly when it is too different
    too_different = int8_model["disagreeing_rows"] > 0.005 * record["verification"]["rows"]
    assert (int8_model["status"] == "refused") == (too_different or int8_model["accuracy_change_points"] < -0.5)
    # NNCF set the int8 model's activation ranges on training rows, not on the rows that verify it
    assert record["calibration"] == {
        "variant": "openvino-int8",
        "rows": ROWS // 2,
        "source": f"{ROWS // 2} of train split",
    }
    assert {"openvino", "nncf"} <= set(record["versions"])
    graph = onnx.load(str(folder / int8_model["file"]))
    assert sum(node.op_type == "QuantizeLinear" for node in graph.graph.node) > 0
    text = export_cli.format_record(record)
    assert "openvino (" in text and "openvino int8 (f32)" in text


def test_backend_openvino_writes_the_file_torch_writes(openvino_run, tmp_path, capsys):
    run, _ = openvino_run
    source = input_csv(tmp_path / "in.csv", 30)
    torch_args = ("--backend", "torch", "--precision", "fp32", "--batch-size", "8")
    assert predict(run, source, tmp_path / "torch.csv", *torch_args) == 0
    assert predict(run, source, tmp_path / "openvino.csv", "--backend", "openvino", "--batch-size", "8") == 0
    err = capsys.readouterr().err
    assert "backend openvino" in err and "model.openvino" in err
    by_torch = pd.read_csv(tmp_path / "torch.csv", dtype=str)
    by_openvino = pd.read_csv(tmp_path / "openvino.csv", dtype=str)
    assert list(by_openvino.columns) == list(by_torch.columns)
    assert by_openvino[["id", "title", "description", "error"]].equals(
        by_torch[["id", "title", "description", "error"]]
    )
    assert by_torch["label"].nunique() > 1
    # OpenVINO computes in bf16 here where the CPU has it: labels must agree wherever PyTorch fp32 is not near a tie
    numbers = [f"prob_{name}" for name in LABELS]
    top_two = np.sort(by_torch[numbers].astype(float).to_numpy(), axis=1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 0.05
    assert clear.mean() > 0.5
    assert (by_openvino["label"] == by_torch["label"])[clear].all()
    np.testing.assert_allclose(by_openvino[numbers].astype(float), by_torch[numbers].astype(float), atol=0.05)
    predictor = Predictor.from_path(run, backend="openvino")
    assert predictor.model is None and predictor.backend_name.startswith("openvino")


@pytest.mark.slow  # a fresh process or a real-sized fit: about 7-10 s on 2 cores
def test_openvino_and_nncf_are_imported_without_telemetry(openvino_run, tmp_path):
    """Both set up opt-out usage telemetry on import (a client id under ~/intel, events sent): the export hides it."""
    code = (
        "import sys; from pipeline.predict.runtime import require_openvino; "
        "require_openvino('openvino'); require_openvino('nncf'); "
        "from nncf.telemetry import wrapper; print(type(wrapper.telemetry).__name__)"
    )
    result = run_with_private_home(code, tmp_path, unset=["NNCF_CI"])
    assert result.stdout.strip() != "NNCFTelemetry"  # its stub, which sends nothing
    assert not any(tmp_path.iterdir()), sorted(path.name for path in tmp_path.iterdir())


def test_onnx_runtime_is_imported_without_writing_to_the_home_folder(tmp_path):
    """On import it writes a device id and a database under ~/.cache/Microsoft unless its telemetry is off."""
    code = "from pipeline.run.exports import require; print(require('onnxruntime').get_available_providers())"
    result = run_with_private_home(code, tmp_path, unset=["ORT_DISABLE_TELEMETRY"])
    assert "CPUExecutionProvider" in result.stdout
    assert not any(tmp_path.iterdir()), sorted(str(path) for path in tmp_path.rglob("*"))


def test_openvino_missing_or_damaged_is_a_one_line_error(openvino_run, tmp_path, monkeypatch, capsys):
    from pipeline.predict.runtime import open_openvino, require_openvino

    run = copy_run(openvino_run[0], tmp_path / "damaged")
    model_file = run / "onnx" / "model.openvino.onnx"
    model_file.write_bytes(model_file.read_bytes()[:4096])
    with pytest.raises(ExportError, match="OpenVINO cannot load it"):
        open_openvino(model_file)
    source = input_csv(tmp_path / "in.csv", 5)
    assert predict(run, source, tmp_path / "out.csv", "--backend", "openvino") == 1
    assert_one_line_error(capsys.readouterr().err, "model.openvino", "changed or corrupted")

    hide_module(monkeypatch, "openvino")
    with pytest.raises(
        ExportError, match=r"--backend openvino: openvino.* needs openvino, not installed.*\.\[openvino\]"
    ):
        choose_export(openvino_run[0], openvino_run[0] / "model", "openvino")
    monkeypatch.setitem(sys.modules, "nncf", None)
    with pytest.raises(ExportError, match=r"nncf is not installed: it comes with the optional extra 'openvino'"):
        require_openvino("nncf")


def test_auto_takes_the_fastest_export_this_install_can_run(openvino_run, tmp_path, monkeypatch):
    """An export verified where OpenVINO was installed, used where it is not: auto falls back to the fastest verified
    ONNX Runtime model that beat PyTorch, else to PyTorch, and says why."""
    run = copy_run(openvino_run[0], tmp_path / "elsewhere")
    path = RunDir(run).export_record_path
    record = json.loads(path.read_text())
    assert record["variants"]["openvino"]["status"] == "verified"
    record["verification"]["rows"] = MIN_VERIFICATION_ROWS  # as if verified on enough rows for auto to choose
    record["auto"] = "openvino"
    record["variants"]["fp32"]["speedup_vs_torch"] = 1.5
    path.write_text(json.dumps(record))
    assert choose_export(run, run / "model", "auto").variant == "openvino"  # installed here: as recorded

    hide_module(monkeypatch, "openvino")
    choice = choose_export(run, run / "model", "auto")
    assert (
        choice.variant == "fp32" and "openvino, chosen at verification, needs openvino, not installed" in choice.reason
    )
    record["variants"]["fp32"]["speedup_vs_torch"] = 0.5
    path.write_text(json.dumps(record))
    choice = choose_export(run, run / "model", "auto")
    assert choice.variant is None and "no other verified export was faster than PyTorch" in choice.reason

    # An export made without OpenVINO: --backend openvino says there is none and how to make one.
    for name in ("openvino", "openvino-int8"):
        record["variants"].pop(name)
    record["auto"] = None
    path.write_text(json.dumps(record))
    monkeypatch.undo()
    with pytest.raises(ExportError, match=r"has no openvino export \(made by python -m pipeline.export .*'openvino'"):
        choose_export(run, run / "model", "openvino")


def test_without_nncf_the_openvino_float_model_is_still_made(openvino_run, tmp_path, monkeypatch):
    from pipeline.predict.runtime import openvino_precision

    run = copy_run(openvino_run[0], tmp_path / "no_nncf")
    shutil.rmtree(run / "onnx")
    hide_module(monkeypatch, "nncf")
    record = export_run(run, "int8", rounds=1, max_rows=60)
    assert set(record["variants"]) == {"fp32", "int8", "openvino"} and "calibration" not in record
    # what OpenVINO reports, in the record's spelling
    for reported, expected in (("<Type: 'bfloat16'>", "bf16"), ("<Type: 'float16'>", "f16"), ("f32", "f32")):
        assert openvino_precision(SimpleNamespace(get_property=lambda _name, value=reported: value)) == expected


def test_the_teacher_logit_cache_key_follows_the_export_auto_takes(openvino_run, tmp_path):
    """Distillation caches a teacher's logits by what computes them: an export chosen by auto gives other logits."""
    from pipeline.distill.teacher import teacher_fingerprint
    from pipeline.predict.source import resolve_model_source

    run = copy_run(openvino_run[0], tmp_path / "teacher")
    path = RunDir(run).export_record_path
    record = json.loads(path.read_text())
    record["verification"]["rows"] = MIN_VERIFICATION_ROWS  # as if verified on enough rows for auto to choose
    keys = {}
    for auto in (None, "fp32", "openvino"):
        record["auto"] = auto
        path.write_text(json.dumps(record))
        keys[auto] = teacher_fingerprint(resolve_model_source(run))
        assert teacher_fingerprint(resolve_model_source(run)) == keys[auto]  # stable
    assert len(set(keys.values())) == 3


def test_verification_reads_long_texts_as_prediction_does(bare_run, tmp_path):
    """A chunked run: the reference every export is held to windows and pools long texts as pipeline.predict does
    (it used to cut them at the fixed length, so verification scored other inputs than prediction runs)."""
    from pipeline.export import verify
    from pipeline.predict.source import load_model_and_tokenizer, resolve_model_source

    run = copy_run(bare_run, tmp_path / "chunked")
    with open(run / "config.yaml", "a", encoding="utf-8") as handle:
        handle.write("tokenizer:\n  long_text: chunk\n  chunk_stride: 8\n")
    source = resolve_model_source(run)
    texts = [" ".join(" ".join(row) for row in texts_and_rows(12, offset=7 * i)) for i in range(6)]  # > 64 tokens
    model, tokenizer = load_model_and_tokenizer(source.model_dir)
    reference = verify.reference_predictor(model, tokenizer, source, 4)
    as_predicted = Predictor.from_source(source, device="cpu", precision="fp32", backend="torch", batch_size=4)
    assert sum(len(batch["input_ids"]) for batch in reference.padded_batches(texts)) > len(
        texts
    )  # several windows per text
    np.testing.assert_allclose(reference.infer(texts)[1], as_predicted.infer(texts)[1], atol=1e-5)
