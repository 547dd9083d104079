"""A classical baseline for every run (`eval.baseline: tfidf`): TF-IDF + logistic regression on the run's own
train and test splits, so that every report can say whether fine-tuning beat it (`run_baseline`).

Deterministic (newton-cg on a fixed feature matrix) and on one CPU thread, so that it neither fights training's
threads nor depends on the machine. Settings were chosen on AG News's validation split.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from pipeline.data.splits import column_values, label_column
from pipeline.run.directory import first_line
from pipeline.scoring.baseline_model import BaselineModel
from pipeline.scoring.evaluation import compute_metrics, compute_multilabel_metrics

logger = logging.getLogger("pipeline")

TFIDF = "tfidf"
NONE = "none"
DESCRIPTIONS = {TFIDF: "TF-IDF + logistic regression"}

NGRAM_RANGE = (1, 2)
# Terms seen in one training text only are mostly noise, unless there are fewer texts than this.
MIN_DF = 2
MIN_TEXTS_FOR_MIN_DF = 1000
MAX_FEATURES = 200_000
INVERSE_REGULARIZATION = 10.0
MAX_ITERATIONS = 1000


def tfidf_baseline(
    train_texts: Sequence[str],
    train_labels: Sequence[int] | Sequence[Sequence[float]],
    test_texts: Sequence[str],
    test_labels: Sequence[int] | Sequence[Sequence[float]],
    label_names: Sequence[str],
) -> dict[str, Any]:
    """Fit on train, score on test: the test metrics plus name, description, timings, sizes and settings. Raises
    ValueError when the training texts leave no vocabulary or hold fewer than two classes."""
    return tfidf_baseline_and_model(train_texts, train_labels, test_texts, test_labels, label_names)[0]


def tfidf_baseline_and_model(
    train_texts: Sequence[str],
    train_labels: Sequence[int] | Sequence[Sequence[float]],
    test_texts: Sequence[str],
    test_labels: Sequence[int] | Sequence[Sequence[float]],
    label_names: Sequence[str],
) -> tuple[dict[str, Any], BaselineModel]:
    """`tfidf_baseline`'s record, and the fitted baseline as arrays (for the ensemble with the model)."""
    from threadpoolctl import threadpool_limits

    start = time.perf_counter()
    train_texts, test_texts = list(train_texts), list(test_texts)
    train_ids = np.asarray(list(train_labels), dtype=np.int64)  # (N,) class ids or (N, C) indicator rows
    test_ids = np.asarray(list(test_labels), dtype=np.int64)
    multi_label = train_ids.ndim == 2
    min_df = MIN_DF if len(train_texts) >= MIN_TEXTS_FOR_MIN_DF else 1
    settings = {
        "ngram_range": list(NGRAM_RANGE),
        "sublinear_tf": True,
        "min_df": min_df,
        "max_features": MAX_FEATURES,
        "C": INVERSE_REGULARIZATION,
        "solver": "newton-cg",
    }
    # One BLAS thread: several threads on a CPU busy with (or shared by) training are slower, not faster.
    with threadpool_limits(limits=1):
        vectorizer, classifier = _fit(train_texts, train_ids, min_df, multi_label)
        train_seconds = time.perf_counter() - start
        predictions = np.asarray(classifier.predict(vectorizer.transform(test_texts)), dtype=np.int64)
        seconds = time.perf_counter() - start
    score = compute_multilabel_metrics if multi_label else compute_metrics
    metrics = score(test_ids, predictions, list(label_names))
    record = {
        "name": TFIDF,
        "description": DESCRIPTIONS[TFIDF],
        **metrics,
        "train_seconds": train_seconds,
        "seconds": seconds,
        "num_train_samples": len(train_texts),
        "num_features": len(vectorizer.vocabulary_),
        "settings": settings,
    }
    return record, BaselineModel.from_fitted(vectorizer, classifier, len(label_names))


def _fit(texts: list[str], ids: np.ndarray, min_df: int, multi_label: bool) -> tuple[Any, Any]:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    vectorizer = TfidfVectorizer(
        ngram_range=NGRAM_RANGE, sublinear_tf=True, min_df=min_df, max_features=MAX_FEATURES, dtype=np.float32
    )
    features = vectorizer.fit_transform(texts)
    classifier = LogisticRegression(C=INVERSE_REGULARIZATION, solver="newton-cg", max_iter=MAX_ITERATIONS)
    if multi_label:
        classifier = OneVsRestClassifier(classifier)
    with warnings.catch_warnings():
        # Few rows of many classes is not the regression scikit-learn suspects; a multi-label class without train
        # rows was named at stage 1 already.
        warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")
        warnings.filterwarnings("ignore", message="Label not .* is present in all training examples")
        classifier.fit(features, ids)
    return vectorizer, classifier


def run_baseline(kind: str, splits: Any, label_names: Sequence[str]) -> dict[str, Any] | None:
    """The baseline `eval.baseline` names; None for `none`. One that cannot be fitted must not cost the run: the
    failure is logged and recorded instead."""
    return baseline_and_model(kind, splits, label_names)[0]


def baseline_and_model(
    kind: str, splits: Any, label_names: Sequence[str]
) -> tuple[dict[str, Any] | None, BaselineModel | None]:
    """`run_baseline`'s record, and the fitted baseline (None where there is none or it failed)."""
    if kind == NONE:
        return None, None
    if kind != TFIDF:
        raise ValueError(f"eval.baseline: unknown baseline {kind!r} (expected '{TFIDF}' or '{NONE}')")
    train, test = splits["train"], splits["test"]
    labels = label_column(train.column_names if hasattr(train, "column_names") else list(train))
    try:
        result, model = tfidf_baseline_and_model(
            column_values(train, "text"),
            column_values(train, labels),
            column_values(test, "text"),
            column_values(test, labels),
            label_names,
        )
    except ValueError as error:
        message = first_line(error)
        logger.warning(f"Baseline {kind} skipped: {message}")
        return {"name": kind, "description": DESCRIPTIONS[kind], "error": message}, None
    micro_f1 = f"micro-F1 {result['micro_f1']:.4f}, subset " if "micro_f1" in result else ""
    logger.info(
        f"Baseline ({result['description']}): test {micro_f1}accuracy {result['accuracy']:.4f}, macro-F1 {result['macro_f1']:.4f}; trained in {result['train_seconds']:.1f} s on {result['num_train_samples']} texts"
    )
    return result, model
