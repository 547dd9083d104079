"""The fitted TF-IDF baseline as plain arrays (`BaselineModel`), saved beside the model as model/baseline.safetensors
and model/ensemble.json, so that prediction combines it with the model as the run did.

Never pickle: a pickled model runs code when loaded. The saved form is the vectorizer's vocabulary and settings
(JSON) and the idf, coefficients and intercepts (safetensors). At predict time scikit-learn's own TfidfVectorizer is
rebuilt from them, so that texts are split into terms exactly as in training.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file, save_file

from pipeline.common.io import atomic_path, atomic_write_json
from pipeline.run.directory import BASELINE_WEIGHTS_FILE, ENSEMBLE_FILE, RunDirError, read_text

SOFTMAX, SIGMOID = "softmax", "sigmoid"
# The logit of a class the classifier never saw (or a multi-label class constant in train): exp() of it is 0.
ABSENT_LOGIT = -1.0e4
# The vectorizer's settings that decide how a text becomes features (the rest only chose the vocabulary).
TRANSFORM_SETTINGS = ("ngram_range", "sublinear_tf", "lowercase", "token_pattern", "norm", "smooth_idf", "use_idf")
ENSEMBLE_FORMAT = 1


@dataclass
class BaselineModel:
    """TF-IDF features times coefficients: (N, C) probabilities in the run's class order."""

    terms: list[str]  # the vocabulary, by feature index
    idf: np.ndarray  # (F,)
    coef: np.ndarray  # (C, F) float64, one row per class of the run
    intercept: np.ndarray  # (C,)
    link: str  # softmax over the classes (multi-class, binary), or one sigmoid per class (multi-label)
    vectorizer_settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_fitted(cls, vectorizer: Any, classifier: Any, num_classes: int) -> BaselineModel:
        """From scikit-learn's fitted TfidfVectorizer and LogisticRegression (or OneVsRestClassifier of them)."""
        terms = [""] * len(vectorizer.vocabulary_)
        for term, index in vectorizer.vocabulary_.items():
            terms[index] = term
        settings = {name: getattr(vectorizer, name) for name in TRANSFORM_SETTINGS}
        settings["ngram_range"] = list(settings["ngram_range"])
        features = len(terms)
        coef = np.zeros((num_classes, features), dtype=np.float64)
        intercept = np.full(num_classes, ABSENT_LOGIT, dtype=np.float64)
        if hasattr(classifier, "estimators_"):  # one-vs-rest: one binary regression per class
            for index, estimator in enumerate(classifier.estimators_):
                _one_vs_rest_row(estimator, coef, intercept, index)
            return cls(terms, np.asarray(vectorizer.idf_), coef, intercept, SIGMOID, settings)
        classes = [int(value) for value in classifier.classes_]
        if len(classes) == 2:  # sklearn's sigmoid of one logit is the softmax of (0, logit)
            coef[classes[1]] = classifier.coef_[0]
            intercept[classes[1]] = classifier.intercept_[0]
            intercept[classes[0]] = 0.0
        else:
            coef[classes] = classifier.coef_
            intercept[classes] = classifier.intercept_
        return cls(terms, np.asarray(vectorizer.idf_), coef, intercept, SOFTMAX, settings)

    @functools.cached_property
    def vectorizer(self) -> Any:
        """scikit-learn's vectorizer, set from the saved vocabulary and idf: built once per loaded model, since its
        vocabulary (up to 200,000 terms) would otherwise be rebuilt for every batch a server or predictor labels."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        settings = dict(self.vectorizer_settings)
        settings["ngram_range"] = tuple(settings["ngram_range"])
        vectorizer = TfidfVectorizer(
            vocabulary={term: index for index, term in enumerate(self.terms)}, dtype=np.float32, **settings
        )
        vectorizer.idf_ = self.idf
        return vectorizer

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """(N, C) float64 probabilities, as the fitted classifier's predict_proba gives them."""
        features = self.vectorizer.transform(list(texts))
        logits = np.asarray(features @ self.coef.T) + self.intercept[None, :]
        if self.link == SIGMOID:
            from scipy.special import expit

            return expit(logits)
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)


def _one_vs_rest_row(estimator: Any, coef: np.ndarray, intercept: np.ndarray, index: int) -> None:
    if hasattr(estimator, "coef_"):
        coef[index], intercept[index] = estimator.coef_[0], estimator.intercept_[0]
    else:  # scikit-learn's constant predictor: the class was always (or never) on in train
        intercept[index] = -ABSENT_LOGIT if float(np.ravel(estimator.y_)[0]) > 0.5 else ABSENT_LOGIT


@dataclass
class SavedEnsemble:
    """model/ensemble.json and model/baseline.safetensors: p = weight * p_model + (1 - weight) * p_baseline."""

    baseline: BaselineModel
    weight: float  # the model's share
    labels: list[str]
    description: str = ""
    # Validation figures of the model alone and of the ensemble (the model card quotes them).
    validation: dict[str, dict[str, float]] = field(default_factory=dict)

    def combine(self, model_probabilities: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """(N, C) model probabilities of `texts` (windows already pooled) -> the ensemble's, float32."""
        if len(texts) == 0:
            return model_probabilities
        return mix(model_probabilities, self.baseline.probabilities(texts), self.weight)

    def save(self, model_dir: Path) -> None:
        """The arrays first, then the JSON that prediction looks for: never a JSON without its arrays."""
        arrays = {"idf": self.baseline.idf, "coef": self.baseline.coef, "intercept": self.baseline.intercept}
        with atomic_path(Path(model_dir) / BASELINE_WEIGHTS_FILE) as temp_path:
            save_file({name: np.ascontiguousarray(value) for name, value in arrays.items()}, str(temp_path))
        record = {
            "format": ENSEMBLE_FORMAT,
            "description": self.description,
            "weight": self.weight,
            "labels": self.labels,
            "link": self.baseline.link,
            "vectorizer": self.baseline.vectorizer_settings,
            "validation": self.validation,
            "terms": self.baseline.terms,
        }
        atomic_write_json(Path(model_dir) / ENSEMBLE_FILE, record)


def mix(model: np.ndarray, baseline: np.ndarray, weight: float) -> np.ndarray:
    return (weight * np.asarray(model, dtype=np.float64) + (1.0 - weight) * baseline).astype(np.float32)


def load_ensemble(model_dir: Path, labels: Sequence[str]) -> SavedEnsemble | None:
    """model/ensemble.json with its arrays, or None where the run kept no ensemble; RunDirError naming the file when
    it is damaged or names other classes than the model."""
    path = Path(model_dir) / ENSEMBLE_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(read_text(path))
        arrays = _read_arrays(Path(model_dir) / BASELINE_WEIGHTS_FILE)
        baseline = BaselineModel(
            list(record["terms"]),
            arrays["idf"],
            arrays["coef"],
            arrays["intercept"],
            str(record["link"]),
            dict(record["vectorizer"]),
        )
        ensemble = SavedEnsemble(baseline, float(record["weight"]), list(record["labels"]))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise RunDirError(f"{path}: damaged ensemble record ({type(error).__name__}: {error})") from None
    if ensemble.labels != list(labels) or baseline.coef.shape != (len(labels), len(baseline.terms)):
        raise RunDirError(f"{path}: its classes or arrays do not match the model's {len(labels)} classes")
    ensemble.description, ensemble.validation = str(record.get("description", "")), record.get("validation") or {}
    return ensemble


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise ValueError(f"{path.name} is missing beside it")
    arrays = load_file(str(path))
    missing = [name for name in ("idf", "coef", "intercept") if name not in arrays]
    if missing:
        raise ValueError(f"{path.name} lacks {', '.join(missing)}")
    return arrays
