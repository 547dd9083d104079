"""Splits of one labelled set: carving validation and test out of train, caps, and duplicate texts.

Splits are `datasets.Dataset`s with `text`, `label` (ClassLabel; multi-label: `labels`, multi-hot) and `row_id`.
Carving and caps are stratified by label (multi-label: iterative stratification), seeded, and keep file order;
every removed row is returned with its reason.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.common.errors import DataError
from pipeline.common.io import atomic_write_csv
from pipeline.data.near_duplicates import NearRow, conflicting_groups
from pipeline.data.rows import SPLITS

if TYPE_CHECKING:  # a type only: `pipeline.predict` imports this module without loading datasets
    import datasets

logger = logging.getLogger(__name__)
CONFLICT_EXAMPLES = 5


def column_values(dataset: datasets.Dataset, name: str) -> list:
    """A column's values as a list, read at once: iterating `dataset[name]` (lazy since datasets 4) is ~250x slower."""
    return dataset[name][:]


def labels_of(dataset: datasets.Dataset) -> np.ndarray:
    """Class ids (N,), or (N, C) float32 multi-hot rows for a multi-label split."""
    if label_column(dataset.column_names) == MULTI_LABEL_COLUMN:
        column = dataset.with_format("arrow")[MULTI_LABEL_COLUMN].combine_chunks()
        return np.asarray(column.flatten(), dtype=np.float32).reshape(len(dataset), -1)
    return dataset.with_format("arrow")[SINGLE_LABEL_COLUMN].to_numpy()


SINGLE_LABEL_COLUMN = "label"
MULTI_LABEL_COLUMN = "labels"


def label_column(column_names: list[str]) -> str:
    return MULTI_LABEL_COLUMN if MULTI_LABEL_COLUMN in column_names else SINGLE_LABEL_COLUMN


def carve(
    train: datasets.Dataset, fraction: float, seed: int, split: str, key: str, give: Callable[[str], str]
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Split `fraction` of train off as `split`, stratified and seeded; `give(split)` ends errors."""
    size = math.ceil(fraction * len(train))
    if size >= len(train):
        raise DataError(
            f"The train split has {len(train)} rows: too few to carve a {split} split of {fraction:g} ({key}); add rows or {give(split)}"
        )
    require_rows_per_class(train, [(split, key)], give)  # multi-label: iterative stratification, no minimum
    chosen, rest = sample_indices(labels_of(train), size, seed, minimum=1)
    return train.select(rest), train.select(chosen)


MAX_NAMED_CLASSES = 10


def require_rows_per_class(train: datasets.Dataset, carved: list[tuple[str, str]], give: Callable[[str], str]) -> None:
    """Error naming the classes with too few rows to keep one in train and in each carved split (`(split, key)`)."""
    labels = labels_of(train)
    if labels.ndim == 2 or not carved:
        return
    needed = 1 + len(carved)
    classes, counts = np.unique(labels, return_counts=True)
    names = train.features["label"].names
    small = [f"'{names[c]}' ({n} row{'s' if n > 1 else ''})" for c, n in zip(classes, counts) if n < needed]
    if not small:
        return
    splits, keys = " and ".join(split for split, _ in carved), ", ".join(key for _, key in carved)
    more = f" and {len(small) - MAX_NAMED_CLASSES:,} more" if len(small) > MAX_NAMED_CLASSES else ""
    shown = ", ".join(small[:MAX_NAMED_CLASSES]) + more
    which = f"the class {small[0]} has" if len(small) == 1 else f"the classes {shown} have"
    raise DataError(
        f"cannot carve stratified {splits} out of train ({keys}): a class needs {needed} rows, one in train and one in each carved split, but {which} fewer; add rows, drop the class, or {give(carved[-1][0])}"
    )


def cap_rows(split: datasets.Dataset, limit: int | None, seed: int) -> datasets.Dataset:
    """At most `limit` rows: a seeded sample, stratified by label, in file order."""
    if limit is None or len(split) <= limit:
        return split
    chosen, _ = sample_indices(labels_of(split), limit, seed)
    return split.select(chosen)


def sample_indices(labels: np.ndarray, size: int, seed: int, minimum: int = 0) -> tuple[list[int], list[int]]:
    """About `size` indices stratified by label (largest remainder) and the rest, both sorted."""
    labels = np.asarray(labels)
    if labels.ndim == 2:
        return iterative_sample(labels, size, seed)
    classes, counts = np.unique(labels, return_counts=True)
    quotas = np.maximum(_proportional_quotas(counts, size), np.minimum(minimum, counts - 1))
    rng = np.random.default_rng(seed)
    chosen = np.zeros(len(labels), dtype=bool)
    for label, quota in zip(classes, quotas):
        rows = np.flatnonzero(labels == label)
        chosen[rng.permutation(rows)[:quota]] = True
    return np.flatnonzero(chosen).tolist(), np.flatnonzero(~chosen).tolist()


def _proportional_quotas(counts: np.ndarray, size: int) -> np.ndarray:
    """Split `size` over classes in proportion to `counts` by largest remainder; each quota <= its count."""
    exact = counts * size / counts.sum()
    quotas = np.floor(exact).astype(int)
    order = sorted(range(len(counts)), key=lambda i: (-(exact[i] - quotas[i]), -counts[i], i))
    for i in order[: size - quotas.sum()]:
        quotas[i] += 1
    return quotas


def iterative_sample(multi_hot: np.ndarray, size: int, seed: int) -> tuple[list[int], list[int]]:
    """Iterative stratification (Sechidis et al. 2011) of (N, C) multi-hot rows: `size` chosen, and the rest."""
    positive = np.asarray(multi_hot) > 0.5  # (N, C)
    rows = len(positive)
    rng = np.random.default_rng(seed)
    share = np.array([size / rows, 1.0 - size / rows])  # chosen, rest
    wanted_rows = share * rows  # (2,)
    wanted = share[:, None] * positive.sum(axis=0)[None, :]  # (2, C)
    side = np.full(rows, -1)
    left = positive.sum(axis=0).astype(np.int64)  # (C,) unplaced rows per class
    tie_order = rng.permutation(positive.shape[1])
    while left.any():
        rarest = min(np.flatnonzero(left), key=lambda c: (left[c], tie_order[c]))
        for row in rng.permutation(np.flatnonzero(positive[:, rarest] & (side < 0))):
            classes = positive[row]
            need = wanted[:, rarest]
            pick = 0 if (need[0], wanted_rows[0]) > (need[1], wanted_rows[1]) else 1
            side[row] = pick
            wanted[pick, classes] -= 1
            wanted_rows[pick] -= 1
            left[classes] -= 1
    empty = rng.permutation(np.flatnonzero(side < 0))
    to_chosen = int(np.clip(round(wanted_rows[0]), 0, len(empty)))
    side[empty[:to_chosen]] = 0
    side[empty[to_chosen:]] = 1
    _fix_size(side, size, rng)
    return np.flatnonzero(side == 0).tolist(), np.flatnonzero(side == 1).tolist()


def _fix_size(side: np.ndarray, size: int, rng: np.random.Generator) -> None:
    """Move random rows so that exactly `size` are chosen (side 0): the greedy pass can miss by a few."""
    chosen = np.flatnonzero(side == 0)
    if len(chosen) > size:
        side[rng.choice(chosen, len(chosen) - size, replace=False)] = 1
    elif len(chosen) < size:
        rest = np.flatnonzero(side == 1)
        side[rng.choice(rest, size - len(chosen), replace=False)] = 0


def duplicate_key(text: str) -> str:
    """Texts are the same after whitespace is normalised."""
    return " ".join(text.split())


@dataclass
class RemovedRow:
    split: str
    row_id: str
    reason: str
    text: str


def write_removed_rows(path: Path, rows: list[RemovedRow]) -> None:
    """removed_rows.csv: every row left out of its split, with why."""
    atomic_write_csv(path, ["split", "row_id", "reason", "text"], [[r.split, r.row_id, r.reason, r.text] for r in rows])


@dataclass
class DuplicateReport:
    """What metrics.json records under data.duplicates."""

    mode: str
    within: dict[str, int] = field(default_factory=dict)  # repeated texts inside each split (beyond the first)
    across: dict[str, int] = field(default_factory=dict)  # e.g. "test_in_train": test rows whose text is in train
    conflicts: int = 0  # distinct texts that carry more than one label (within or across splits)
    conflict_examples: list[dict] = field(default_factory=list)
    # Groups of texts equal but for case, punctuation, whitespace or a URL whose labels differ (not exact copies).
    near_conflicts: int = 0
    removed: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(vars(self))


def deduplicate(
    splits: dict[str, datasets.Dataset], mode: str, label_names: list[str]
) -> tuple[dict[str, datasets.Dataset], list[RemovedRow], DuplicateReport]:
    """Count duplicate texts within and across splits (earlier ones first) and remove them as `mode` says."""
    report, order = DuplicateReport(mode), [name for name in SPLITS if name in splits]
    keys = {name: [duplicate_key(text) for text in column_values(splits[name], "text")] for name in order}
    conflicts = _count_conflicts(splits, keys, report, label_names)
    report.near_conflicts = len(conflicting_groups(near_rows(splits)))
    seen: set[str] = set()
    kept, removed = {}, []
    for name in order:
        drop_within, drop_across = _duplicate_rows(keys[name], seen, name, report)
        drop = (drop_within if mode in ("within", "across") else set()) | (drop_across if mode == "across" else set())
        if drop_across:
            what = "removed (data.deduplicate: across)"
            if mode != "across":
                what = "kept, so its scores count texts seen before (data.deduplicate: across removes them)"
            logger.warning(f"{len(drop_across)} {name} texts also occur in an earlier split: {what}")
        seen |= set(keys[name])
        kept[name], report.removed[name] = splits[name], len(drop)
        if drop:  # each removed row listed with why
            ids, texts = column_values(splits[name], "row_id"), column_values(splits[name], "text")
            for row in sorted(drop):
                reason = "duplicate within split" if row in drop_within else "text found in an earlier split"
                if conflicts.get(keys[name][row]):
                    reason += f"; its copies' labels conflict ({conflicts[keys[name][row]]}), the first copy's stays"
                removed.append(RemovedRow(name, ids[row], reason, texts[row]))
            kept[name] = splits[name].select([row for row in range(len(splits[name])) if row not in drop])
    return kept, removed, report


def near_rows(splits: dict[str, datasets.Dataset]) -> list[NearRow]:
    """Every row of the splits, for near_duplicates.conflicting_groups; a multi-label row's label is its class ids."""
    rows = []
    for name, split in splits.items():
        columns = zip(column_values(split, "row_id"), column_values(split, "text"), labels_of(split).tolist())
        for index, (row_id, text, label) in enumerate(columns):
            label = tuple(np.flatnonzero(label).tolist()) if isinstance(label, list) else label
            rows.append(NearRow(name, index, str(row_id), text, label))
    return rows


def _duplicate_rows(keys: list[str], seen: set[str], name: str, report: DuplicateReport) -> tuple[set[int], set[int]]:
    first: dict[str, int] = {}
    within, across = set(), set()
    for row, key in enumerate(keys):
        if key in first:
            within.add(row)
        else:
            first[key] = row
            if key in seen:
                across.add(row)
    report.within[name] = len(within)
    if seen:
        report.across[f"{name}_in_earlier_splits"] = len(across)
    return within, across


def _describe_label(label: int | tuple[int, ...], names: list[str]) -> str:
    return "|".join(names[index] for index in label) if isinstance(label, tuple) else names[label]


def _count_conflicts(
    splits: dict[str, datasets.Dataset],
    keys: dict[str, list[str]],
    report: DuplicateReport,
    names: list[str],
) -> dict[str, str]:
    """Count the texts whose copies carry different labels; returns text key -> those labels, joined."""
    labels_by_text: dict[str, set] = {}
    for name, split_keys in keys.items():
        for key, label in zip(split_keys, labels_of(splits[name]).tolist()):
            label = tuple(np.flatnonzero(label).tolist()) if isinstance(label, list) else label
            labels_by_text.setdefault(key, set()).add(label)
    conflicting = {
        key: sorted(_describe_label(label, names) for label in labels)
        for key, labels in labels_by_text.items()
        if len(labels) > 1
    }
    report.conflicts = len(conflicting)
    report.conflict_examples = [
        {"text": key[:200], "labels": labels} for key, labels in list(conflicting.items())[:CONFLICT_EXAMPLES]
    ]
    if conflicting:
        carry = "text carries" if len(conflicting) == 1 else "texts carry"
        logger.warning(f"{len(conflicting)} {carry} more than one label (e.g. {next(iter(conflicting))[:80]!r})")
    return {key: " vs ".join(labels) for key, labels in conflicting.items()}
