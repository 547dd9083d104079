"""The ensemble of the model with the TF-IDF baseline: the saved baseline reproduces scikit-learn, the weight and the
choice are made on validation, and a kept ensemble is what prediction and evaluation apply."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from pipeline import finetune
from pipeline.predict import Predictor
from pipeline.run.directory import BASELINE_WEIGHTS_FILE, ENSEMBLE_FILE, PROBABILITY_PREFIX, RunDir, RunDirError
from pipeline.run.record import read_record
from pipeline.scoring.baseline import _fit
from pipeline.scoring.baseline_model import BaselineModel, SavedEnsemble, load_ensemble
from pipeline.scoring.ensemble import choose, combine_with_baseline, fit_weight, log_loss, mcnemar_exact_p
from pipeline.scoring.evaluation import result_from_probabilities
from tests.helpers import reset_accelerate

TEXTS = [
    "the cat sat on the mat",
    "dogs bark at the postman",
    "stocks fell sharply today",
    "the market rose on earnings",
    "cats purr when they sleep",
    "a dog ran across the park",
    "shares and bonds slid",
    "kittens chase a ball of yarn",
    "investors sold their stocks",
]
LABELS = [0, 1, 2, 2, 0, 1, 2, 0, 2]
NEW = ["the cat barks at stocks", "market news on dogs", "words never seen", ""]


def fitted(labels, num_classes: int, multi_label: bool = False):
    vectorizer, classifier = _fit(TEXTS * 2, np.asarray(labels * 2), 1, multi_label)
    return vectorizer, classifier, BaselineModel.from_fitted(vectorizer, classifier, num_classes)


@pytest.mark.parametrize(
    "labels, num_classes, multi_label",
    [
        (LABELS, 3, False),
        ([label % 2 for label in LABELS], 2, False),  # binary: one logit
        ([[label == 0, label == 1, False] for label in LABELS], 3, True),  # one class never on in train
    ],
    ids=["multi-class", "binary", "multi-label"],
)
def test_the_saved_baseline_reproduces_scikit_learns_probabilities(tmp_path, labels, num_classes, multi_label):
    vectorizer, classifier, model = fitted(labels, num_classes, multi_label)
    SavedEnsemble(model, 0.5, [f"c{i}" for i in range(num_classes)]).save(tmp_path)
    assert not list(tmp_path.glob("*.pkl"))
    loaded = load_ensemble(tmp_path, [f"c{i}" for i in range(num_classes)])
    expected = classifier.predict_proba(vectorizer.transform(NEW))
    np.testing.assert_allclose(loaded.baseline.probabilities(NEW), expected, atol=1e-6)


def test_a_class_absent_from_train_gets_probability_zero():
    _, _, model = fitted([label if label != 1 else 0 for label in LABELS], 4)
    probabilities = model.probabilities(NEW)
    assert (probabilities[:, [1, 3]] == 0).all() and np.allclose(probabilities.sum(axis=1), 1)


def test_an_ensemble_of_other_classes_or_without_its_arrays_is_an_error_naming_the_file(tmp_path):
    _, _, model = fitted(LABELS, 3)
    SavedEnsemble(model, 0.5, ["a", "b", "c"]).save(tmp_path)
    with pytest.raises(RunDirError, match=f"{ENSEMBLE_FILE}: its classes"):
        load_ensemble(tmp_path, ["a", "b", "x"])
    (tmp_path / BASELINE_WEIGHTS_FILE).unlink()
    with pytest.raises(RunDirError, match=f"{ENSEMBLE_FILE}: damaged.*{BASELINE_WEIGHTS_FILE} is missing"):
        load_ensemble(tmp_path, ["a", "b", "c"])
    assert load_ensemble(tmp_path / "none", ["a"]) is None


def test_the_weight_minimises_validation_log_loss():
    labels = np.array([0, 1, 0, 1])
    model = np.array([[0.9, 0.1], [0.6, 0.4], [0.8, 0.2], [0.3, 0.7]])  # wrong on row 1
    baseline = np.array([[0.6, 0.4], [0.2, 0.8], [0.4, 0.6], [0.4, 0.6]])  # wrong on row 2
    weight = fit_weight(model, baseline, labels)
    assert 0 < weight < 1
    mixed = lambda w: w * model + (1 - w) * baseline  # noqa: E731
    assert log_loss(mixed(weight), labels) <= min(log_loss(mixed(w), labels) for w in (0, weight - 0.05, 1))
    assert fit_weight(model, model, labels) == 1.0  # nothing to gain: the model alone


def test_auto_keeps_the_ensemble_only_where_it_beats_the_model_on_validation():
    names = ["a", "b"]
    gold = np.array([0, 1, 0, 1])
    model = result_from_probabilities(np.array([[0.9, 0.1], [0.6, 0.4], [0.8, 0.2], [0.3, 0.7]]), gold, names)
    better = result_from_probabilities(np.array([[0.8, 0.2], [0.4, 0.6], [0.7, 0.3], [0.3, 0.7]]), gold, names)
    worse = result_from_probabilities(np.array([[0.5, 0.5], [0.6, 0.4], [0.5, 0.5], [0.5, 0.5]]), gold, names)
    assert choose("auto", "accuracy", model, better, 0.5)[0] is True
    kept, why = choose("auto", "accuracy", model, worse, 0.5)
    assert kept is False and "does not beat the model alone on validation" in why
    assert choose("baseline", "accuracy", model, worse, 0.5)[0] is True
    assert choose("auto", "accuracy", model, better, 1.0)[0] is False


def test_mcnemar_exact_p():
    assert mcnemar_exact_p(0, 0) is None
    assert mcnemar_exact_p(5, 5) == 1.0
    assert mcnemar_exact_p(10, 0) == pytest.approx(2 / 2**10)


def test_a_multi_label_ensemble_averages_each_class_and_records_every_member():
    labels_list = [[label == 0, label == 2, label == 1] for label in LABELS]
    _, _, baseline = fitted(labels_list, 3, multi_label=True)
    gold = np.asarray(labels_list, dtype=np.float32)
    model_probs = np.clip(gold * 0.6 + 0.2, 0, 1)
    model = {name: result_from_probabilities(model_probs, gold, ["x", "y", "z"]) for name in ("validation", "test")}
    texts = {"validation": TEXTS, "test": TEXTS}
    outcome = combine_with_baseline("baseline", "micro_f1", model, baseline, texts, ["x", "y", "z"])
    weight = outcome.record["weight"]
    expected = weight * model_probs + (1 - weight) * baseline.probabilities(TEXTS)
    np.testing.assert_allclose(outcome.results["test"].probabilities, expected, atol=1e-6)
    assert set(outcome.record["test"]) == {"model", "baseline", "ensemble"}
    assert "micro_f1" in outcome.record["test"]["ensemble"] and outcome.record["mcnemar"]["baseline"]


@pytest.mark.slow
def test_a_kept_ensemble_is_what_the_run_records_and_prediction_applies(tiny_run_config):
    """A tiny chunked run with the ensemble forced: model/ holds the baseline, the run's test figures are the
    ensemble's, and Predictor on the run gives test_predictions.csv's probabilities again."""
    config = tiny_run_config(
        "run.name=ensembled",
        "train.max_steps=8",
        "eval.ensemble=baseline",
        "eval.predict_speed_rows=0",
        "tokenizer.max_length=32",
        "tokenizer.long_text=chunk",
        "tokenizer.chunk_stride=8",
    )
    finetune.run(config)
    reset_accelerate()
    run = RunDir(config.run_dir)
    record = read_record(run.metrics_path)
    ensemble = record.ensemble
    assert ensemble.kept and 0.0 <= ensemble.weight <= 1.0 and (run.model_dir / ENSEMBLE_FILE).is_file()
    assert record.test.accuracy == ensemble.test["ensemble"]["accuracy"]
    assert set(ensemble.mcnemar) == {"model", "baseline"}
    with open(run.predictions_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:40]
    predictor = Predictor.from_path(config.run_dir, backend="torch", precision="fp32")
    assert predictor.ensemble is not None
    _, probabilities = predictor.infer([row["text"] for row in rows])
    columns = [f"{PROBABILITY_PREFIX}{name}" for name in record.labels]
    saved = np.array([[float(row[column]) for column in columns] for row in rows])
    np.testing.assert_allclose(probabilities, saved, atol=2e-3)
    card = (run.model_dir / "README.md").read_text(encoding="utf-8")
    assert "transformers.pipeline" in card and "baseline" in card
    assert json.loads((run.model_dir / ENSEMBLE_FILE).read_text())["weight"] == ensemble.weight
