"""The label audit (issue 44): which labelled rows to read again, written to label_issues.csv.

`audit` turns each split's evidence (scoring/label_signals.py) and its near duplicates with conflicting labels
(data/near_duplicates.py) into ranked `LabelIssue`s and their summary (`LabelAudit` in metrics.json).
`audit_training_run` is stage 4's: train by cross-validated baseline and training dynamics, validation and test by
the model; `eval.label_audit: auto` leaves out the baseline's cross-validation where it would cost over 5% of the run.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from pipeline.common.io import atomic_path, atomic_write_csv
from pipeline.data.near_duplicates import NearRow, conflicting_groups
from pipeline.data.splits import column_values, labels_of
from pipeline.run.record import LabelAudit
from pipeline.scoring.evaluation import EvalResult
from pipeline.scoring.label_signals import (
    BASELINE_CV,
    DYNAMICS,
    FOLDS,
    MODEL,
    NEAR_DUPLICATE,
    baseline_cv_probabilities,
    combine,
    default_method,
    flag,
)

logger = logging.getLogger(__name__)

COLUMNS = ["id", "split", "text", "given_label", "suggested_label", "score", "signals"]
# auto: the baseline's cross-validation only where it costs at most this share of the run.
AUTO_COST_SHARE = 0.05


@dataclass
class Evidence:
    """One split's labelled rows and, per signal, their (N, C) class probabilities (NaN: a row it did not score)."""

    split: str
    row_ids: list[str]
    texts: list[str]
    labels: np.ndarray  # (N,) class ids
    signals: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, split: str, dataset: datasets.Dataset) -> Evidence:
        ids = [str(row_id) for row_id in column_values(dataset, "row_id")]
        return cls(split, ids, column_values(dataset, "text"), np.asarray(labels_of(dataset), dtype=np.int64))


@dataclass
class LabelIssue:
    """One row of label_issues.csv."""

    row_id: str
    split: str
    text: str
    given: str
    suggested: str
    score: float  # one minus the given class's probability, by the combined evidence
    signals: list[str]  # the signals whose own most probable class is not the given one; near_duplicate

    def row(self) -> list[Any]:
        return [
            self.row_id,
            self.split,
            self.text,
            self.given,
            self.suggested,
            f"{self.score:.4f}",
            " ".join(self.signals),
        ]


@dataclass
class Audit:
    issues: list[LabelIssue]
    record: LabelAudit


def audit(evidence: Sequence[Evidence], names: list[str], method: str | None = None) -> Audit:
    """Flag each split's contradicted rows and its near-duplicate conflicts, most suspect first within a split."""
    method = method or default_method()
    near = _near_duplicate_rows(evidence)
    issues, splits = [], {}
    for part in evidence:
        found, flagged = _split_issues(part, names, method, near.get(part.split, set()))
        issues += found
        splits[part.split] = {
            "rows": len(part.labels),
            "flagged": flagged,
            "near_duplicates": sum(NEAR_DUPLICATE in issue.signals for issue in found),
            "signals": sorted(part.signals),
        }
    pairs = Counter(f"{issue.given} -> {issue.suggested}" for issue in issues if issue.given != issue.suggested)
    record = LabelAudit(method=method, splits=splits, class_pairs=dict(pairs.most_common()))
    return Audit(issues, record)


def _split_issues(part: Evidence, names: list[str], method: str, near: set[int]) -> tuple[list[LabelIssue], int]:
    """The split's issues: the flagged rows, ranked, then its near duplicates not flagged; and how many were flagged."""
    if not part.signals:
        return [], 0
    ranking = combine(list(part.signals.values()))
    flags = flag(part.labels, ranking, method)
    rows = list(flags.rows) + sorted(near - set(flags.rows.tolist()), key=lambda row: -flags.score[row])
    issues = []
    for row in rows:
        agree = [name for name, signal in part.signals.items() if _contradicts(signal[row], part.labels[row])]
        issues.append(
            LabelIssue(
                part.row_ids[row],
                part.split,
                part.texts[row],
                names[part.labels[row]],
                names[flags.suggested[row]],
                float(flags.score[row]),
                agree + ([NEAR_DUPLICATE] if row in near else []),
            )
        )
    return issues, len(flags.rows)


def _contradicts(probabilities: np.ndarray, label: int) -> bool:
    return not np.isnan(probabilities).any() and int(probabilities.argmax()) != int(label)


def _near_duplicate_rows(evidence: Sequence[Evidence]) -> dict[str, set[int]]:
    """split -> positions of its rows in a group of near duplicates whose labels conflict (across splits too)."""
    rows = [
        NearRow(part.split, index, row_id, text, int(label))
        for part in evidence
        for index, (row_id, text, label) in enumerate(zip(part.row_ids, part.texts, part.labels))
    ]
    found: dict[str, set[int]] = {}
    for group in conflicting_groups(rows):
        for row in group:
            found.setdefault(row.split, set()).add(row.index)
    return found


def write_label_issues(path: Path, issues: Sequence[LabelIssue]) -> None:
    """label_issues.csv, atomically: one row per flagged row, header included when there are none."""
    atomic_write_csv(path, COLUMNS, [issue.row() for issue in issues])


def write_signals(path: Path, evidence: Sequence[Evidence]) -> None:
    """label_issues.npz, atomically: per split, `<split>/row_id`, `<split>/label` and `<split>/<signal>` (N, C), so
    that a benchmark or a user can re-rank every row by any one signal."""
    arrays = {}
    for part in evidence:
        arrays[f"{part.split}/row_id"] = np.asarray(part.row_ids, dtype=str)
        arrays[f"{part.split}/label"] = part.labels
        arrays.update({f"{part.split}/{name}": signal for name, signal in part.signals.items()})
    with atomic_path(path) as temporary, open(temporary, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def document_means(probabilities: np.ndarray, documents: np.ndarray | None) -> np.ndarray:
    """(D, C) from (W, C) windows' probabilities: each document's windows averaged (unchunked rows unchanged)."""
    if documents is None:
        return probabilities
    total = np.zeros((int(documents.max()) + 1, probabilities.shape[1]), dtype=np.float64)
    np.add.at(total, documents, probabilities)
    return (total / np.bincount(documents)[:, None]).astype(np.float32)


def audit_training_run(
    setting: str,
    seed: int,
    splits: dict[str, datasets.Dataset],
    names: list[str],
    dynamics: np.ndarray | None,
    results: dict[str, EvalResult],
    costs: tuple[float | None, float | None],
    path: Path,
) -> LabelAudit | None:
    """Stage 4's audit into `path` (label_issues.csv); its summary, or None when `setting` is off or the task is
    multi-label. `costs`: the run's seconds so far and the baseline's fit, which auto weighs the cross-validation by."""
    if setting == "off" or "train" not in splits or "labels" in splits["train"].column_names:
        return None
    tick = time.perf_counter()
    evidence = [Evidence.of(name, splits[name]) for name in ("train", "validation", "test") if name in splits]
    train, notes = evidence[0], []
    if dynamics is not None and len(dynamics) == len(train.labels):
        train.signals[DYNAMICS] = dynamics
    run_seconds, baseline_seconds = costs
    cost = None if baseline_seconds is None else (FOLDS - 1) * baseline_seconds
    if setting == "on" or (cost is not None and run_seconds and cost <= AUTO_COST_SHARE * run_seconds):
        try:
            train.signals[BASELINE_CV] = baseline_cv_probabilities(train.texts, train.labels, seed)
        except ValueError as error:
            notes.append(f"{BASELINE_CV} left out: {error}")
    else:
        why = "no baseline was fitted" if cost is None else f"about {cost:.0f} s, over 5% of the run"
        notes.append(f"{BASELINE_CV} left out under auto ({why}); eval.label_audit=on adds it")
    for part in evidence[1:]:
        result = results.get(part.split)
        if result is not None and result.probabilities.shape == (len(part.labels), len(names)):
            part.signals[MODEL] = result.probabilities
    found = audit(evidence, names)
    write_label_issues(path, found.issues)
    write_signals(path.with_suffix(".npz"), evidence)
    found.record.seconds = round(time.perf_counter() - tick, 3)
    found.record.note = "; ".join(notes) or None
    flagged = {split: figures["flagged"] for split, figures in found.record.splits.items()}
    logger.info(f"Label audit: {len(found.issues)} rows to read again in {path.name} (flagged per split: {flagged})")
    for note in notes:
        logger.info(f"Label audit: {note}")
    return found.record
