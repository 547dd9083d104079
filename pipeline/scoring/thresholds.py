"""Decision thresholds: chosen on validation (`eval.threshold`), stored with the model (model/decision.json), and
applied the same way by evaluation and prediction: `choose_decision(...)`, then `decision.predict(probabilities)`.

A threshold t_c per class c: multi-label predicts c when p_c >= t_c; binary predicts the second (positive) class
when p_1 >= t; multi-class keeps the argmax and flags a row whose top probability is below its class's t_c.
Settings (for every class, or a mapping class -> setting): a number, `best_f1`, `{precision: p}` (the most recall
at that precision) or `{recall: r}` (the most precision keeping that recall).

A chosen threshold sits midway between the validation score it admits and the next lower one, so that a score a
rounding error away (another runtime, bf16, ONNX) is labelled as on validation.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.config.checks import is_threshold_target
from pipeline.config.schema import ConfigError
from pipeline.run.directory import DECISION_FILE, MODEL_DIR
from pipeline.run.record import RunRecord, Thresholds

logger = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.5
# Below this many positive validation rows a threshold chosen for a target is kept, with a warning and a note.
FEW_POSITIVES = 20
KIND_ARGMAX, KIND_BINARY, KIND_FLAG, KIND_MULTI_LABEL = "argmax", "binary", "flag", "multi_label"


@dataclass
class Decision:
    """How probabilities become labels. `thresholds` maps class name -> threshold (binary: the positive class only)."""

    kind: str  # argmax | binary | flag | multi_label
    labels: list[str]
    thresholds: dict[str, float] = field(default_factory=dict)
    chosen: dict[str, dict[str, Any]] = field(default_factory=dict)
    setting: Any = None

    @property
    def multi_label(self) -> bool:
        return self.kind == KIND_MULTI_LABEL

    def vector(self) -> np.ndarray:
        """(C,) one threshold per class; where none was set, 0.5, or for a multi-class flag 0 (never flagged)."""
        unset = 0.0 if self.kind == KIND_FLAG else DEFAULT_THRESHOLD
        return np.array([self.thresholds.get(name, unset) for name in self.labels], dtype=np.float64)

    def predict(self, probabilities: np.ndarray) -> np.ndarray:
        """(N, C) probabilities -> class ids (N,) int64, or (N, C) bool for multi-label."""
        probabilities = np.asarray(probabilities)
        if self.kind == KIND_MULTI_LABEL:
            return probabilities >= self.vector()[None, :]
        if self.kind == KIND_BINARY:
            return (probabilities[:, 1] >= self.vector()[1]).astype(np.int64)
        return probabilities.argmax(axis=1).astype(np.int64)

    def low_confidence(self, probabilities: np.ndarray) -> np.ndarray:
        """(N,) bool: multi-class rows whose top probability is below its class's threshold (else all False)."""
        probabilities = np.asarray(probabilities)
        if self.kind != KIND_FLAG:
            return np.zeros(len(probabilities), dtype=bool)
        top = probabilities.argmax(axis=1)
        return probabilities[np.arange(len(top)), top] < self.vector()[top]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, record: dict[str, Any], labels: list[str]) -> Decision:
        kind = record.get("kind", KIND_ARGMAX)
        if kind not in (KIND_ARGMAX, KIND_BINARY, KIND_FLAG, KIND_MULTI_LABEL):
            raise ValueError(f"unknown decision kind {kind!r}")
        thresholds = {str(name): float(value) for name, value in (record.get("thresholds") or {}).items()}
        unknown = [name for name in thresholds if name not in labels]
        if unknown:
            raise ValueError(f"threshold for {unknown[0]!r}, which is not a class of the model")
        return cls(kind, list(labels), thresholds, record.get("chosen") or {}, record.get("setting"))


def default_decision(labels: list[str], multi_label: bool) -> Decision:
    """No eval.threshold: 0.5 per class for multi-label, argmax otherwise."""
    if multi_label:
        return Decision(KIND_MULTI_LABEL, list(labels), {name: DEFAULT_THRESHOLD for name in labels})
    return Decision(KIND_ARGMAX, list(labels))


def check_setting(setting: Any, labels: list[str], multi_label: bool) -> None:
    """Before training: a per-class mapping names real classes; a binary task thresholds its positive class only."""
    if setting is None or not isinstance(setting, dict) or is_threshold_target(setting):
        return
    unknown = [name for name in setting if name not in labels]
    if unknown:
        raise ConfigError(f"eval.threshold.{unknown[0]}: no such class (classes: {', '.join(labels[:20])})")
    if not multi_label and len(labels) == 2 and labels[0] in setting:
        raise ConfigError(
            f"eval.threshold.{labels[0]}: a binary task thresholds its positive (second) class {labels[1]!r} only; to threshold {labels[0]!r}, list it second: data.label_names=[{labels[1]}, {labels[0]}]"
        )


def choose_decision(
    setting: Any, probabilities: np.ndarray, labels: np.ndarray, names: list[str], multi_label: bool
) -> Decision:
    """Thresholds for `setting` (eval.threshold) from validation probabilities (N, C) and gold labels."""
    if setting is None:
        return default_decision(names, multi_label)
    kind = KIND_MULTI_LABEL if multi_label else KIND_BINARY if len(names) == 2 else KIND_FLAG
    if kind == KIND_BINARY:
        logger.info(
            f"eval.threshold acts on the positive class {names[1]!r}, the second of {names} (data.label_names sets the order)"
        )
    per_class = _settings_per_class(setting, names, kind)
    decision = Decision(kind, list(names), setting=setting)
    probabilities, labels = np.asarray(probabilities, dtype=np.float64), np.asarray(labels)
    problems: dict[str, list[str]] = {}  # kind of problem -> the classes it hit, each with its detail
    for index, name in enumerate(names):
        if name not in per_class:
            continue
        scores, positives = _scores_and_positives(probabilities, labels, index, kind)
        threshold, record, problem = choose_threshold(per_class[name], scores, positives)
        if problem is None and not isinstance(per_class[name], float) and 0 < positives.sum() < FEW_POSITIVES:
            record["note"] = f"chosen on only {int(positives.sum())} validation rows of the class: a rough estimate"
            problem = Problem(FEW_ROWS, f"{int(positives.sum())} rows")
        if problem is not None:
            problems.setdefault(problem.kind, []).append(problem.naming(name))
        decision.thresholds[name] = threshold
        decision.chosen[name] = record
    for problem_kind, classes in problems.items():
        logger.warning(problems_message(problem_kind, classes))
    return decision


@dataclass(frozen=True)
class Problem:
    """Why a class's threshold is not what was asked, or not to be trusted: one of the kinds below (the same words for
    every class, so that classes are logged together) and this class's figures."""

    kind: str
    detail: str = ""

    def naming(self, name: str) -> str:
        return f"{name!r} ({self.detail})" if self.detail else repr(name)


# The kinds of Problem (each class's own record keeps its `fallback` or `note` in its own words).
NO_POSITIVES = f"no positive validation rows: kept {DEFAULT_THRESHOLD}"
NEVER_PREDICTED = f"no validation row is predicted as the class: kept {DEFAULT_THRESHOLD}"
PRECISION_UNREACHED = "no threshold reaches the precision asked on validation: best_f1 used instead"
RECALL_UNKEPT = "no threshold keeps the recall asked on validation: a threshold below every validation score of the class used instead"
FEW_ROWS = f"chosen on fewer than {FEW_POSITIVES} validation rows of the class: a rough estimate; for more validation rows, raise data.validation_fraction (when validation is carved from train) or give a larger data.validation_file"
# Classes named in one warning (the records hold all).
NAMED_CLASSES = 5


def selection_cut_off(metrics: RunRecord) -> str:
    """Where thresholds chosen after training decide labels otherwise, how the score that kept the model did
    (training scores each checkpoint at the 0.5 cut-off); "" otherwise."""
    record = metrics.thresholds or Thresholds()
    thresholds = record.thresholds or {}
    if record.kind not in (KIND_BINARY, KIND_MULTI_LABEL) or all(
        value == DEFAULT_THRESHOLD for value in thresholds.values()
    ):
        return ""
    return f"at the {DEFAULT_THRESHOLD} cut-off, before the thresholds chosen after training"


def problems_message(kind: str, classes: list[str]) -> str:
    """One warning for every class one kind of problem hit: the first few named, the rest counted."""
    if len(classes) == 1:
        return f"eval.threshold for class {classes[0]}: {kind}"
    named = ", ".join(classes[:NAMED_CLASSES])
    more = f" and {len(classes) - NAMED_CLASSES:,} more" if len(classes) > NAMED_CLASSES else ""
    return f"eval.threshold for {len(classes):,} classes ({named}{more}): {kind} (each class's record: {MODEL_DIR}/{DECISION_FILE})"


def _settings_per_class(setting: Any, names: list[str], kind: str) -> dict[str, Any]:
    """class -> its setting; a binary task thresholds its positive class only."""
    if isinstance(setting, dict) and not is_threshold_target(setting):
        return dict(setting)
    if kind == KIND_BINARY:
        return {names[1]: setting}
    return {name: setting for name in names}


def _scores_and_positives(
    probabilities: np.ndarray, labels: np.ndarray, index: int, kind: str
) -> tuple[np.ndarray, np.ndarray]:
    """The scores a class's threshold acts on and whether each row truly is that class."""
    if kind == KIND_MULTI_LABEL:
        return probabilities[:, index], labels[:, index] > 0.5
    scores = probabilities[:, index]
    if kind == KIND_FLAG:  # only rows whose argmax is the class can be labelled it
        scores = np.where(probabilities.argmax(axis=1) == index, scores, -np.inf)
    return scores, labels == index


def choose_threshold(
    setting: Any, scores: np.ndarray, positives: np.ndarray
) -> tuple[float, dict[str, Any], Problem | None]:
    """(threshold, record, problem) for one class: the record holds the setting and the validation precision and
    recall there; problem, when the setting could not be met, is what choose_decision logs."""
    if isinstance(setting, float):
        return setting, _record(setting, setting, scores, positives), None
    candidates, precision, recall = _curve(scores, positives)
    # No positives, or (multi-class) no validation row has this class as its top prediction: the default stays.
    if not positives.any() or not len(candidates):
        kind = NO_POSITIVES if not positives.any() else NEVER_PREDICTED
        record = _record(setting, DEFAULT_THRESHOLD, scores, positives, fallback=kind, applied=f"{DEFAULT_THRESHOLD}")
        return DEFAULT_THRESHOLD, record, Problem(kind)
    if setting == "best_f1":
        threshold = _midway(candidates, _best_f1(precision, recall))
        return threshold, _record(setting, threshold, scores, positives), None
    ((target, value),) = setting.items()
    if target == "precision":
        reaching = np.flatnonzero(precision >= value - 1e-12)
        if not len(reaching):
            threshold = _midway(candidates, _best_f1(precision, recall))
            fallback = f"no threshold reaches precision {value:g} on validation (best {precision.max():.4f}): best_f1 used instead"
            record = _record(setting, threshold, scores, positives, fallback=fallback, applied="best_f1")
            return threshold, record, Problem(PRECISION_UNREACHED, f"precision {value:g}, best {precision.max():.4f}")
        best = reaching[np.argmax(recall[reaching])]  # the most recall among those reaching the precision
    else:
        keeping = np.flatnonzero(recall >= value - 1e-12)
        if not len(keeping):  # multi-class: rows whose top prediction is another class are lost to any threshold
            threshold = _midway(candidates, len(candidates) - 1)
            fallback = f"no threshold keeps recall {value:g} on validation (at most {recall.max():.4f}): {threshold:.4f}, below every validation score of the class, used instead"
            record = _record(setting, threshold, scores, positives, fallback=fallback, applied=f"{threshold:.4f}")
            return threshold, record, Problem(RECALL_UNKEPT, f"recall {value:g}, at most {recall.max():.4f}")
        best = keeping[np.argmax(candidates[keeping])]  # the highest threshold still keeping the recall
    threshold = _midway(candidates, int(best))
    return threshold, _record(setting, threshold, scores, positives), None


def _midway(candidates: np.ndarray, index: int) -> float:
    """A threshold admitting the scores down to candidates[index] (high to low): midway to the next lower one."""
    lower = float(candidates[index + 1]) if index + 1 < len(candidates) else 0.0
    return (float(candidates[index]) + lower) / 2


def _curve(scores: np.ndarray, positives: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every distinct finite score as a candidate threshold (predict when score >= t), with precision and recall."""
    finite = np.isfinite(scores)
    candidates = np.unique(scores[finite])[::-1]  # high to low
    order = np.argsort(-scores[finite], kind="stable")
    sorted_scores, sorted_positive = scores[finite][order], positives[finite][order]
    true_positive = np.cumsum(sorted_positive)
    # At threshold t every row with score >= t is predicted: the last position of each distinct score.
    last = np.searchsorted(-sorted_scores, -candidates, side="right") - 1
    predicted = last + 1
    precision = true_positive[last] / predicted
    recall = true_positive[last] / max(int(positives.sum()), 1)
    return candidates, precision, recall


def _best_f1(precision: np.ndarray, recall: np.ndarray) -> int:
    """The candidate threshold of the highest F1."""
    f1 = np.where(precision + recall > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-12), 0.0)
    return int(np.argmax(f1))


def _record(setting: Any, threshold: float, scores: np.ndarray, positives: np.ndarray, **fallback: str) -> dict:
    """A class's record: its setting, threshold and validation precision and recall there; with `fallback` and
    `applied` where the setting could not be met."""
    predicted = scores >= threshold
    true_positive = int((predicted & positives).sum())
    return {
        "setting": setting,
        "threshold": float(threshold),
        "validation_precision": true_positive / int(predicted.sum()) if predicted.any() else None,
        "validation_recall": true_positive / int(positives.sum()) if positives.any() else None,
        **fallback,
    }
