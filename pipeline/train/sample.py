"""The validation rows the training loop scores between steps (`eval.validation_sample_rows`): a fixed, seeded,
stratified sample of a large validation split, so that a pass costs what it is worth; the whole split is scored at
the end."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.text.batching import TokenizedRows


@dataclass
class ValidationSample:
    """`rows`: what a pass during training scores; `windows`: their positions in the whole split's rows (None: the
    sample is the whole split)."""

    rows: TokenizedRows
    windows: np.ndarray | None = None

    @property
    def is_whole(self) -> bool:
        return self.windows is None


def draw_sample(rows: TokenizedRows, size: int | None, seed: int) -> ValidationSample:
    """At most `size` documents of `rows` (every window of each), stratified by label; the whole split when it
    holds no more (or `size` is None)."""
    if size is None or rows.num_documents <= size:
        return ValidationSample(rows)
    documents = stratified_sample(_strata(rows.document_labels()), size, seed)
    if rows.documents is None:
        windows = documents
    else:  # every window of a chosen document, in the split's order
        windows = np.flatnonzero(np.isin(rows.documents, documents))
    return ValidationSample(rows.subset(windows), windows)


def _strata(labels: np.ndarray) -> np.ndarray:
    """One stratum per class; per label set (as its bits) under multi-label."""
    if labels.ndim == 1:
        return labels
    return np.unique(labels > 0.5, axis=0, return_inverse=True)[1].reshape(-1)


def stratified_sample(strata: np.ndarray, size: int, seed: int) -> np.ndarray:
    """`size` positions (sorted) drawn without replacement, each stratum's share as in `strata` (largest remainders
    round), the same for the same seed."""
    values, counts = np.unique(strata, return_counts=True)
    exact = counts * size / len(strata)
    taken = np.floor(exact).astype(np.int64)
    # The rounding's leftover rows go to the strata with the largest remainders (ties: the larger stratum first).
    order = np.lexsort((-counts, -(exact - taken)))
    taken[order[: size - int(taken.sum())]] += 1
    generator = np.random.default_rng([seed, size])
    chosen = [
        generator.permutation(np.flatnonzero(strata == value))[:count] for value, count in zip(values, taken.tolist())
    ]
    return np.sort(np.concatenate(chosen))
