"""Classification metrics as a Hugging Face `evaluate` module: accuracy, macro-F1, per-class precision / recall / F1 /
support and the confusion matrix, computed by scikit-learn; with the configuration "multilabel", a multi-label task's
(subset accuracy, micro-, macro- and samples-F1, Hamming loss, per-class scores). The pipeline's stage 4 computes every
metrics.json block with it, and anyone can load it by path, offline:

    import evaluate
    metric = evaluate.load("path/to/pipeline/scoring/metrics/classification")
    metric.compute(predictions=[0, 1, 1], references=[0, 1, 0], label_names=["neg", "pos"])
    # {"accuracy": 0.667, "macro_f1": 0.667, "num_samples": 3,
    #  "balanced_accuracy": 0.75,
    #  "per_class": {"neg": {"precision": 1.0, "recall": 0.5, "f1": 0.667, "support": 2}, "pos": {...}},
    #  "confusion_matrix": [[1, 1], [0, 1]]}
    multi = evaluate.load("path/to/pipeline/scoring/metrics/classification", "multilabel")
    multi.compute(predictions=[[1, 0], [1, 1]], references=[[1, 0], [0, 1]], label_names=["sports", "politics"])

Self-contained (numpy, scikit-learn, datasets, evaluate): `evaluate.load` copies this one file into its module cache.
"""

import datasets
import evaluate
import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, hamming_loss, precision_recall_fscore_support

_DESCRIPTION = """Accuracy, macro-F1 (unweighted mean of the F1 scores of the classes that occur or are
predicted), per-class precision, recall, F1 and support, and the confusion matrix indexed [true][predicted], over a
fixed list of classes: a class that never occurs still gets its row (scores 0, support 0), so runs and splits
always line up. The configuration "multilabel" takes rows of 0/1 per class instead of class ids: `accuracy` is then
subset accuracy (every class of the row right), and samples-F1 counts a row with no gold and no predicted class as 1
(nothing to find, nothing claimed)."""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of int): predicted class ids, 0 <= id < number of classes; "multilabel": rows of 0/1, one
        per class.
    references (list of int): gold class ids; "multilabel": rows of 0/1.
    label_names (list of str, optional): class names in id order; they key `per_class`. Default: the ids from 0
        to the largest id seen, as strings.
Returns:
    accuracy (float), macro_f1 (float), balanced_accuracy (float: mean recall over the classes that occur),
    num_samples (int),
    per_class (dict: name -> {precision, recall, f1, support}), confusion_matrix (list of lists, [true][predicted]).
    "multilabel": accuracy and subset_accuracy, micro_f1, macro_f1, samples_f1, hamming_loss, num_samples, per_class.
    Undefined precision or recall (no prediction of, or no example of, a class) counts as 0.
Examples:
    >>> metric = evaluate.load("pipeline/scoring/metrics/classification")
    >>> metric.compute(predictions=[0, 1, 1], references=[0, 1, 0], label_names=["neg", "pos"])["accuracy"]
    0.6666666666666666
"""

_CITATION = """@article{scikit-learn, title={Scikit-learn: Machine Learning in {P}ython},
author={Pedregosa, F. and others}, journal={Journal of Machine Learning Research}, volume={12},
pages={2825--2830}, year={2011}}"""


def classification_metrics(references, predictions, label_names) -> dict:
    """The metrics dict for gold `references` and `predictions` (class ids) over the classes `label_names`."""
    references = np.asarray(references, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    class_ids = list(range(len(label_names)))
    scores = precision_recall_fscore_support(references, predictions, labels=class_ids, zero_division=0)
    present = scores[3] > 0
    predicted = np.bincount(predictions, minlength=len(class_ids))[: len(class_ids)] > 0
    return {
        "accuracy": float(accuracy_score(references, predictions)),
        "macro_f1": macro_f1(scores[2], present | predicted),
        # The mean recall over the classes that occur: what accuracy would be if every class were equally common.
        "balanced_accuracy": float(scores[1][present].mean()) if present.any() else 0.0,
        "num_samples": int(len(references)),
        "per_class": per_class(scores, label_names),
        "confusion_matrix": confusion_matrix(references, predictions, labels=class_ids).tolist(),
    }


def multilabel_metrics(references, predictions, label_names) -> dict:
    """The metrics dict for (N, C) gold and predicted rows of 0/1 over the classes `label_names`."""
    gold = np.asarray(references).reshape(-1, len(label_names)) > 0
    guess = np.asarray(predictions).reshape(-1, len(label_names)) > 0
    scores = precision_recall_fscore_support(gold, guess, average=None, zero_division=0)
    rows = len(gold)
    subset = float(accuracy_score(gold, guess)) if rows else 0.0
    return {
        "accuracy": subset,
        "subset_accuracy": subset,
        "micro_f1": float(f1_score(gold, guess, average="micro", zero_division=0)),
        "macro_f1": macro_f1(scores[2], gold.any(axis=0) | guess.any(axis=0)),
        "samples_f1": float(f1_score(gold, guess, average="samples", zero_division=1.0)) if rows else 0.0,
        "hamming_loss": float(hamming_loss(gold, guess)) if rows else 0.0,
        "num_samples": int(rows),
        "per_class": per_class(scores, label_names),
    }


def macro_f1(f1: np.ndarray, scored: np.ndarray) -> float:
    """Macro-F1 over the classes that occur or are predicted (`scored`: scikit-learn's default set): a class absent
    from both has no F1 to average, and counting it as 0 would lower the score of a split that merely lacks it."""
    return float(f1[scored].mean()) if scored.any() else 0.0


def per_class(scores: tuple[np.ndarray, ...], label_names) -> dict:
    """precision_recall_fscore_support's (precision, recall, F1, support) arrays as name -> {precision, ...}."""
    precision, recall, f1, support = scores
    return {
        str(name): {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1": float(f1[i]),
            "support": int(support[i]),
        }
        for i, name in enumerate(label_names)
    }


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Classification(evaluate.Metric):
    def _info(self):
        value = datasets.Value("int64")
        # "multilabel": a row of 0/1 per class, as scikit-learn's multi-label indicator format
        kind = datasets.Sequence(value) if self.config_name == "multilabel" else value
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": kind, "references": kind}),
            reference_urls=["https://scikit-learn.org/stable/modules/model_evaluation.html"],
        )

    def _compute(self, predictions, references, label_names=None):
        if self.config_name == "multilabel":
            width = len(references[0]) if len(references) else len(label_names or [])
            names = [str(i) for i in range(width)] if label_names is None else list(label_names)
            if any(len(row) != len(names) for row in (*predictions, *references)):
                raise ValueError(f"every row must hold one 0/1 per class ({len(names)})")
            return multilabel_metrics(references, predictions, names)
        if label_names is None:
            largest = max([*predictions, *references], default=-1)
            label_names = [str(i) for i in range(largest + 1)]
        ids = np.concatenate([np.asarray(predictions, dtype=np.int64), np.asarray(references, dtype=np.int64)])
        if len(ids) and (ids.min() < 0 or ids.max() >= len(label_names)):
            raise ValueError(f"class ids must lie in [0, {len(label_names)}), got {int(ids.min())}..{int(ids.max())}")
        return classification_metrics(references, predictions, list(label_names))
