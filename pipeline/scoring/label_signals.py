"""The label audit's evidence: out-of-sample class probabilities for labelled rows, and the rows they contradict.

- `baseline_cv`: the TF-IDF baseline (scoring/baseline.py) cross-validated over the training rows, k folds.
- `training_dynamics`: the probabilities the training loop saw (train/dynamics.py).
- `model`: the trained model's calibrated probabilities (validation, test, or a file it never saw).

`flag` ranks the rows whose given label the evidence contradicts: cleanlab's confident learning when the `audit`
extra is installed, the margin rule otherwise.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.common.extras import installed
from pipeline.scoring.baseline import INVERSE_REGULARIZATION, MAX_FEATURES, MAX_ITERATIONS, MIN_DF, NGRAM_RANGE

logger = logging.getLogger(__name__)

BASELINE_CV, DYNAMICS, MODEL, NEAR_DUPLICATE = "baseline_cv", "training_dynamics", "model", "near_duplicate"
CONFIDENT_LEARNING, MARGIN = "confident_learning", "margin"
FOLDS = 5
# The margin rule: flagged when another class is this much more probable than the given one.
MARGIN_CUT = 0.5


def baseline_cv_probabilities(texts: Sequence[str], labels: np.ndarray, seed: int, folds: int = FOLDS) -> np.ndarray:
    """(N, C) each row's probabilities from the TF-IDF baseline fitted on the other folds (stratified, seeded).
    Raises ValueError when a class has fewer rows than two folds need."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from threadpoolctl import threadpool_limits

    smallest = int(np.bincount(labels).min()) if len(labels) else 0
    folds = min(folds, smallest)
    if folds < 2:
        raise ValueError(f"a class has {smallest} training rows: cross-validation needs at least 2")
    min_df = MIN_DF if len(texts) >= 1000 else 1
    model = make_pipeline(
        TfidfVectorizer(ngram_range=NGRAM_RANGE, sublinear_tf=True, min_df=min_df, max_features=MAX_FEATURES),
        LogisticRegression(C=INVERSE_REGULARIZATION, solver="newton-cg", max_iter=MAX_ITERATIONS),
    )
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The least populated class")
        probabilities = cross_val_predict(model, list(texts), labels, cv=splitter, method="predict_proba")
    return _all_classes(probabilities, labels, int(labels.max()) + 1)


def _all_classes(probabilities: np.ndarray, labels: np.ndarray, num_classes: int) -> np.ndarray:
    """cross_val_predict's columns are the classes present; a class id without rows gets a column of zeros."""
    if probabilities.shape[1] == num_classes:
        return probabilities.astype(np.float32)
    full = np.zeros((len(probabilities), num_classes), dtype=np.float32)
    full[:, np.unique(labels)] = probabilities
    return full


def combine(signals: Sequence[np.ndarray]) -> np.ndarray:
    """(N, C) the mean of the signals' probabilities, per row over those that scored it (NaN rows left out)."""
    stacked = np.stack(signals)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row no signal scored stays NaN
        return np.nanmean(stacked, axis=0).astype(np.float32)


@dataclass
class Flags:
    """Rows whose given label the evidence contradicts, most suspect first."""

    rows: np.ndarray  # (F,) row indices, ranked
    suggested: np.ndarray  # (N,) the most probable class of every row
    # (N,) one minus the given class's probability: cleanlab's self-confidence ranking, which found more of the flips
    # planted in benchmarks/label_noise.py than the lead of the most probable class over the given one
    score: np.ndarray


def margins(labels: np.ndarray, probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's most probable class (suggested), and how far its probability leads the given class's."""
    suggested = probabilities.argmax(axis=1)
    given = probabilities[np.arange(len(labels)), labels]
    return suggested, probabilities[np.arange(len(labels)), suggested] - given


def default_method() -> str:
    return CONFIDENT_LEARNING if installed("cleanlab") else MARGIN


def flag(labels: np.ndarray, probabilities: np.ndarray, method: str) -> Flags:
    """The contradicted rows among those every signal scored (no NaN), ranked by `score`, highest first."""
    suggested, lead = margins(labels, np.nan_to_num(probabilities, nan=0.0))
    score = 1.0 - np.nan_to_num(probabilities, nan=1.0)[np.arange(len(labels)), labels]
    scored = np.flatnonzero(~np.isnan(probabilities).any(axis=1))
    if method == CONFIDENT_LEARNING and len(scored):
        chosen = scored[_confident_learning(labels[scored], probabilities[scored])]
    else:
        chosen = scored[lead[scored] > MARGIN_CUT]
    chosen = chosen[suggested[chosen] != labels[chosen]]
    ranked = chosen[np.argsort(-score[chosen], kind="stable")]
    return Flags(ranked, suggested, score)


def _confident_learning(labels: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """cleanlab's prune-by-noise-rate filter (Northcutt et al. 2021): row positions flagged."""
    from cleanlab.filter import find_label_issues

    num_classes = probabilities.shape[1]
    present = np.unique(labels)
    if len(present) < 2:
        return np.array([], dtype=np.int64)
    # cleanlab wants every class among the labels: classes no row carries are left out, their mass renormalised.
    remap = np.full(num_classes, -1)
    remap[present] = np.arange(len(present))
    kept = probabilities[:, present]
    kept = kept / np.clip(kept.sum(axis=1, keepdims=True), 1e-12, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mask = find_label_issues(remap[labels], kept, filter_by="prune_by_noise_rate", n_jobs=1)
    return np.flatnonzero(mask)
