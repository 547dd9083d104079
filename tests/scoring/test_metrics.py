"""The project's classification metrics as an `evaluate` module (pipeline/scoring/metrics/classification), loaded by path
offline, checked against scikit-learn, and the one implementation behind stage 4's metrics.json."""

import fnmatch
import os
from pathlib import Path

import evaluate
import numpy as np
import pytest
import tomllib
from sklearn.metrics import classification_report, confusion_matrix, f1_score

from pipeline.scoring.evaluation import (
    METRIC_DIR,
    METRIC_FILE,
    classification_metric,
    compute_metrics,
    compute_multilabel_metrics,
)
from tests.helpers import run_with_private_home

ROOT = Path(__file__).resolve().parents[2]
LABELS = ["World", "Sports", "Business", "Sci/Tech", "Never"]  # the last class occurs nowhere


@pytest.fixture(scope="module")
def metric():
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # conftest: any attempt to reach the Hub would fail
    return evaluate.load(str(METRIC_DIR), keep_in_memory=True)


def sample(seed=0, size=500):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 4, size)
    predicted = np.where(rng.random(size) < 0.7, gold, rng.integers(0, 4, size))
    predicted[predicted == 2] = 3  # class 2 is never predicted: its precision is undefined, reported as 0
    return gold, predicted


def test_loaded_by_path_it_matches_scikit_learn(metric):
    gold, predicted = sample()
    result = metric.compute(predictions=predicted, references=gold, label_names=LABELS)

    report = classification_report(
        gold, predicted, labels=list(range(len(LABELS))), target_names=LABELS, output_dict=True, zero_division=0
    )
    assert result["accuracy"] == pytest.approx(np.mean(gold == predicted), abs=1e-12)
    # Macro-F1 over the classes that occur or are predicted (scikit-learn's default): "Never" is not averaged in as
    # a 0, while "Business", never predicted, is.
    assert result["macro_f1"] == pytest.approx(f1_score(gold, predicted, average="macro", zero_division=0), abs=1e-12)
    assert result["macro_f1"] > f1_score(
        gold, predicted, labels=list(range(len(LABELS))), average="macro", zero_division=0
    )
    assert result["num_samples"] == len(gold)
    assert list(result["per_class"]) == LABELS
    for name in LABELS:
        expected = report[name]
        assert result["per_class"][name] == pytest.approx(
            {
                "precision": expected["precision"],
                "recall": expected["recall"],
                "f1": expected["f1-score"],
                "support": expected["support"],
            },
            abs=1e-12,
        )
    assert result["per_class"]["Business"]["precision"] == 0.0 and result["per_class"]["Business"]["support"] > 0
    assert result["per_class"]["Never"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert result["confusion_matrix"] == confusion_matrix(gold, predicted, labels=range(len(LABELS))).tolist()
    assert np.sum(result["confusion_matrix"]) == len(gold)


def test_stage_4_uses_the_same_module_and_returns_the_same_dict(metric):
    gold, predicted = sample(seed=1)
    assert compute_metrics(gold, predicted, LABELS) == metric.compute(
        predictions=predicted, references=gold, label_names=LABELS
    )
    assert classification_metric() is classification_metric()  # loaded once per process, not per evaluation
    assert classification_metric().name == "classification"


def test_the_multilabel_configuration_loaded_by_path_is_stage_4s_multi_label_metrics():
    rng = np.random.default_rng(2)
    gold = (rng.random((300, 4)) < [0.5, 0.3, 0.1, 0.0]).astype(np.int64)  # the last class occurs nowhere
    predicted = np.where(rng.random((300, 4)) < 0.8, gold, 1 - gold)
    predicted[:, 3] = 0  # and is never predicted: no F1 to average into macro-F1
    names = ["a", "b", "c", "never"]
    multilabel = evaluate.load(str(METRIC_DIR), "multilabel", keep_in_memory=True)
    result = multilabel.compute(predictions=predicted, references=gold, label_names=names)
    assert result == compute_multilabel_metrics(gold.astype(np.float32), predicted.astype(bool), names)
    assert result["micro_f1"] == pytest.approx(f1_score(gold, predicted, average="micro"))
    assert result["macro_f1"] == pytest.approx(f1_score(gold[:, :3], predicted[:, :3], average="macro"))
    assert result["per_class"]["never"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    with pytest.raises(ValueError, match=r"every row must hold one 0/1 per class \(4\)"):
        multilabel.compute(predictions=[[1, 0]], references=[[1, 0]], label_names=names)


@pytest.mark.slow  # a fresh interpreter importing the package (about 8 s): the default tier stays under 5 minutes
def test_stage_4_writes_nothing_to_the_hugging_face_caches(tmp_path):
    """evaluate.load would copy the module into HF_MODULES_CACHE (under the home folder): stage 4 builds it from its
    file instead."""
    home = tmp_path / "home"
    code = (
        "from pipeline.scoring.evaluation import compute_metrics; "
        "print(compute_metrics([0, 1, 1], [0, 1, 0], ['a', 'b'])['accuracy'])"
    )
    result = run_with_private_home(code, home)
    assert float(result.stdout) == pytest.approx(2 / 3)
    assert not home.exists() or not any(path.is_file() for path in home.rglob("*"))


def test_without_label_names_and_with_bad_ids(metric):
    result = metric.compute(predictions=[0, 1, 1], references=[0, 1, 0])
    assert list(result["per_class"]) == ["0", "1"] and result["confusion_matrix"] == [[1, 1], [0, 1]]
    with pytest.raises(ValueError, match=r"class ids must lie in \[0, 2\)"):
        metric.compute(predictions=[0, 2], references=[0, 1], label_names=["a", "b"])


def test_module_is_self_contained_and_ships_with_the_package():
    module_file = METRIC_DIR / METRIC_FILE
    source = module_file.read_text()
    assert "import pipeline" not in source and "from pipeline" not in source
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["pipeline"]
    relative = module_file.relative_to(ROOT / "pipeline").as_posix()
    assert any(fnmatch.fnmatch(relative, pattern) and pattern.count("/") == relative.count("/") for pattern in patterns)
