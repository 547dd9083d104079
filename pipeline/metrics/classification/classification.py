"""Classification metrics as a Hugging Face `evaluate` module: accuracy, macro-F1, per-class precision / recall / F1 /
support and the confusion matrix, computed by scikit-learn. The pipeline's stage 4 computes every metrics.json
block with it, and anyone can load it by path, offline:

    import evaluate
    metric = evaluate.load("path/to/pipeline/metrics/classification")
    metric.compute(predictions=[0, 1, 1], references=[0, 1, 0], label_names=["neg", "pos"])
    # {"accuracy": 0.667, "macro_f1": 0.667, "num_samples": 3,
    #  "balanced_accuracy": 0.75,
    #  "per_class": {"neg": {"precision": 1.0, "recall": 0.5, "f1": 0.667, "support": 2}, "pos": {...}},
    #  "confusion_matrix": [[1, 1], [0, 1]]}

Self-contained (numpy, scikit-learn, datasets, evaluate): `evaluate.load` copies this one file into its module cache.
"""

import datasets
import evaluate
import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

_DESCRIPTION = """Accuracy, macro-F1 (unweighted mean of the F1 scores of the classes that occur or are
predicted), per-class precision, recall, F1 and support, and the confusion matrix indexed [true][predicted], over a
fixed list of classes: a class that never occurs still gets its row (scores 0, support 0), so runs and splits
always line up."""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of int): predicted class ids, 0 <= id < number of classes.
    references (list of int): gold class ids.
    label_names (list of str, optional): class names in id order; they key `per_class`. Default: the ids from 0
        to the largest id seen, as strings.
Returns:
    accuracy (float), macro_f1 (float), balanced_accuracy (float: mean recall over the classes that occur),
    num_samples (int),
    per_class (dict: name -> {precision, recall, f1, support}), confusion_matrix (list of lists, [true][predicted]).
    Undefined precision or recall (no prediction of, or no example of, a class) counts as 0.
Examples:
    >>> metric = evaluate.load("pipeline/metrics/classification")
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
    precision, recall, f1, support = precision_recall_fscore_support(
        references, predictions, labels=class_ids, zero_division=0
    )
    present = support > 0
    # Macro-F1 over the classes that occur or are predicted (scikit-learn's default set): a class absent from both
    # has no F1 to average, and counting it as 0 would lower the score of a split that merely lacks it.
    scored = present | (np.bincount(predictions, minlength=len(class_ids))[: len(class_ids)] > 0)
    return {
        "accuracy": float(accuracy_score(references, predictions)),
        "macro_f1": float(f1[scored].mean()) if scored.any() else 0.0,
        # The mean recall over the classes that occur: what accuracy would be if every class were equally common.
        "balanced_accuracy": float(recall[present].mean()) if present.any() else 0.0,
        "num_samples": int(len(references)),
        "per_class": {
            str(name): {
                "precision": float(precision[i]),
                "recall": float(recall[i]),
                "f1": float(f1[i]),
                "support": int(support[i]),
            }
            for i, name in enumerate(label_names)
        },
        "confusion_matrix": confusion_matrix(references, predictions, labels=class_ids).tolist(),
    }


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Classification(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}),
            reference_urls=["https://scikit-learn.org/stable/modules/model_evaluation.html"],
        )

    def _compute(self, predictions, references, label_names=None):
        if label_names is None:
            largest = max([*predictions, *references], default=-1)
            label_names = [str(i) for i in range(largest + 1)]
        ids = np.concatenate([np.asarray(predictions, dtype=np.int64), np.asarray(references, dtype=np.int64)])
        if len(ids) and (ids.min() < 0 or ids.max() >= len(label_names)):
            raise ValueError(f"class ids must lie in [0, {len(label_names)}), got {int(ids.min())}..{int(ids.max())}")
        return classification_metrics(references, predictions, list(label_names))
