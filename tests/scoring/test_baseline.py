"""The TF-IDF + logistic regression baseline: it learns, it is deterministic, and `eval.baseline: none` skips it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError
from pipeline.scoring.baseline import run_baseline, tfidf_baseline
from pipeline.scoring.evaluation import compute_metrics
from tests.helpers import MINILM_CONFIG

LABELS = ["World", "Sports", "Business", "Sci/Tech"]
TOPIC_WORDS = [
    ["minister", "election", "embassy", "ceasefire", "parliament", "refugees", "treaty", "protest"],
    ["striker", "league", "coach", "tournament", "goal", "playoff", "champion", "inning"],
    ["shares", "profit", "merger", "investors", "quarterly", "earnings", "retailer", "bank"],
    ["software", "chip", "satellite", "researchers", "internet", "genome", "browser", "laptop"],
]
SHARED_WORDS = ["the", "said", "on", "tuesday", "new", "report", "after", "year", "people", "first", "week", "over"]
COMPUTE_METRICS_KEYS = set(compute_metrics(np.array([0, 1]), np.array([0, 1]), ["a", "b"]))
TIMING_KEYS = {"train_seconds", "seconds"}


def synthetic_corpus(num_rows: int, seed: int) -> tuple[list[str], list[int]]:
    """Texts of mostly shared words with a few topic words, and one topic word in four borrowed from another
    class, so the task is learnable but not trivial."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(num_rows):
        label = int(rng.integers(len(LABELS)))
        words = list(rng.choice(SHARED_WORDS, size=8))
        for _ in range(3):
            source = label if rng.random() > 0.25 else int(rng.integers(len(LABELS)))
            words.append(str(rng.choice(TOPIC_WORDS[source])))
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append(label)
    return texts, labels


@pytest.fixture(scope="module")
def corpus():
    return synthetic_corpus(600, seed=1), synthetic_corpus(300, seed=2)


def test_baseline_learns_far_above_chance_with_compute_metrics_keys(corpus):
    (train_texts, train_labels), (test_texts, test_labels) = corpus
    result = tfidf_baseline(train_texts, train_labels, test_texts, test_labels, LABELS)
    assert set(result) >= COMPUTE_METRICS_KEYS
    assert result["name"] == "tfidf"
    assert result["accuracy"] > 0.85, result["accuracy"]  # chance is 0.25
    assert result["macro_f1"] > 0.85
    assert result["num_samples"] == len(test_texts)
    assert list(result["per_class"]) == LABELS
    assert np.array(result["confusion_matrix"]).sum() == len(test_texts)
    assert 0 < result["train_seconds"] <= result["seconds"] < 60
    assert result["num_train_samples"] == len(train_texts)
    json.dumps(result)  # goes into metrics.json as it is


def test_baseline_is_deterministic(corpus):
    (train_texts, train_labels), (test_texts, test_labels) = corpus
    first, second = (tfidf_baseline(train_texts, train_labels, test_texts, test_labels, LABELS) for _ in range(2))
    assert {k: v for k, v in first.items() if k not in TIMING_KEYS} == {
        k: v for k, v in second.items() if k not in TIMING_KEYS
    }


def test_none_skips_and_an_unfittable_baseline_is_recorded_not_raised():
    splits = {"train": {"text": ["a", "b"], "label": [0, 1]}, "test": {"text": ["c"], "label": [0]}}
    assert run_baseline("none", splits, LABELS[:2]) is None
    # One-letter words give no vocabulary: the run it accompanies must still finish.
    record = run_baseline("tfidf", splits, LABELS[:2])
    assert record["name"] == "tfidf" and "accuracy" not in record and record["error"]


def test_eval_baseline_config_key():
    assert load_config(None, []).eval.baseline == "tfidf"
    assert load_config(None, ["eval.baseline=none"]).eval.baseline == "none"
    with pytest.raises(ConfigError, match="eval.baseline"):
        load_config(None, ["eval.baseline=bow"])


@pytest.mark.slow  # a whole tiny run (about 10 s): the default tier stays under 5 minutes
def test_finetune_with_baseline_none_writes_no_baseline(tiny_run_config):
    from pipeline import finetune

    config = tiny_run_config("run.name=no_baseline", "train.max_steps=1", "eval.baseline=none")
    metrics = finetune.run(config)
    assert "baseline" not in metrics
    assert "baseline" not in json.loads((config.run_dir / "metrics.json").read_text())
    assert "Baseline test accuracy" not in (config.run_dir / "report.md").read_text()


@pytest.mark.slow  # a fresh process or a real-sized fit: about 7-10 s on 2 cores
def test_ag_news_5000_rows_scores_like_a_real_baseline(tmp_path, ag_news_train_csv, ag_news_test_csv):
    """configs/ag_news_minilm.yaml's data section with 5,000 training rows; scored on all 7,600 test rows."""
    from pipeline.data.load import load_splits

    config = load_config(
        MINILM_CONFIG,
        [
            f"data.train_file={ag_news_train_csv}",
            f"data.test_file={ag_news_test_csv}",
            "data.max_train_samples=5000",
            f"data.cache_dir={tmp_path}",
        ],
    )
    splits = load_splits(config.data, config.run.seed)
    labels = splits["train"].features["label"].names
    result = run_baseline("tfidf", splits, labels)
    assert result["num_train_samples"] == 5000 and result["num_samples"] == len(splits["test"]) == 7600
    assert result["accuracy"] > 0.85, result["accuracy"]
    assert result["train_seconds"] < 60


def test_multi_label_baseline_is_one_vs_rest_and_finds_both_topics_of_a_two_topic_text():
    """Texts made of one or two topics' words carry one or two labels: one logistic regression per class learns
    each topic, so two-topic test texts get both labels, and run_baseline reads the multi-hot `labels` column."""
    rng = np.random.default_rng(3)

    def corpus(rows: int) -> tuple[list[str], list[list[float]]]:
        texts, sets = [], []
        for _ in range(rows):
            topics = rng.choice(len(LABELS), size=int(rng.integers(1, 3)), replace=False)
            words = list(rng.choice(SHARED_WORDS, size=6))
            words += [str(rng.choice(TOPIC_WORDS[topic])) for topic in topics for _ in range(3)]
            rng.shuffle(words)
            texts.append(" ".join(words))
            sets.append([float(index in topics) for index in range(len(LABELS))])
        return texts, sets

    train, test = corpus(500), corpus(200)
    splits = {"train": {"text": train[0], "labels": train[1]}, "test": {"text": test[0], "labels": test[1]}}
    result = run_baseline("tfidf", splits, LABELS)
    assert result["micro_f1"] > 0.9 and result["num_samples"] == 200
    assert set(result["per_class"]) == set(LABELS)
    two_topic = [row for row, labels in enumerate(test[1]) if sum(labels) == 2]
    assert len(two_topic) > 50
    assert result["subset_accuracy"] > 0.8  # most rows, two-topic ones included, get exactly their set


def test_a_multi_label_class_without_train_rows_is_a_constant_no_without_a_warning(recwarn):
    """An all-zero indicator column: stage 1 names the class; scikit-learn's own warning would only repeat it."""
    texts = [f"{word} report {index}" for index in range(40) for word in ("goal", "chip")]
    sets = [[1.0, 0.0, 0.0] if text.startswith("goal") else [0.0, 1.0, 0.0] for text in texts]
    splits = {"train": {"text": texts, "labels": sets}, "test": {"text": texts[:10], "labels": sets[:10]}}
    result = run_baseline("tfidf", splits, ["sports", "tech", "never_seen"])
    assert result["per_class"]["never_seen"]["support"] == 0 and result["micro_f1"] == 1.0
    assert not [warning for warning in recwarn if "present in all training examples" in str(warning.message)]
