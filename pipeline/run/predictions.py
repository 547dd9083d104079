"""test_predictions.csv: one row per test example, as stage 4 writes it (pipeline.run.directory reads it back)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pipeline.common.io import CsvRows, atomic_path
from pipeline.run.directory import (
    PREDICTION_COLUMNS,
    PREDICTION_LOW_CONFIDENCE,
    PREDICTION_ROW_ID,
    PROBABILITY_PREFIX,
)


def write_test_predictions(
    path: Path,
    texts: Sequence[str],
    gold: np.ndarray,
    probabilities: np.ndarray,
    label_names: Sequence[str],
    row_ids: Sequence[str] | None = None,
    predicted: np.ndarray | None = None,
    separator: str | None = None,
    low_confidence: np.ndarray | None = None,
) -> None:
    """One row per example: text, gold and predicted class names, the predicted class's probability, the row's id,
    [its low-confidence flag,] then every class's probability. `predicted`: the decision's class ids (default: the
    argmax). Multi-label (gold and predicted (N, C) indicator rows): the class sets joined by `separator`, and score
    the highest class probability."""
    row_ids = row_ids if row_ids is not None else [str(index + 1) for index in range(len(texts))]
    if np.ndim(gold) == 2:
        if separator is None:
            raise ValueError("multi-label predictions need the label separator (data.label_separator)")
        predicted = probabilities >= 0.5 if predicted is None else predicted

        def joined(indicators: np.ndarray) -> str:
            return separator.join(name for name, on in zip(label_names, indicators) if on > 0.5)

        named = [[joined(g), joined(p), f"{row.max():.6f}"] for g, p, row in zip(gold, predicted, probabilities)]
        low_confidence = None
    else:
        predicted = probabilities.argmax(axis=1) if predicted is None else predicted
        named = [[label_names[g], label_names[p], f"{row[p]:.6f}"] for g, p, row in zip(gold, predicted, probabilities)]
    flag_columns = [PREDICTION_LOW_CONFIDENCE] if low_confidence is not None else []
    flags = [[bool(flag)] for flag in low_confidence] if low_confidence is not None else [[]] * len(texts)
    header = [*PREDICTION_COLUMNS, PREDICTION_ROW_ID, *flag_columns, *(f"{PROBABILITY_PREFIX}{n}" for n in label_names)]
    with atomic_path(path) as temp_path, open(temp_path, "w", newline="", encoding="utf-8") as handle:
        writer = CsvRows(handle)
        writer.writerow(header)
        for text, labels, row, row_id, flag in zip(texts, named, probabilities, row_ids, flags):
            writer.writerow([text, *labels, row_id, *flag] + [f"{p:.6f}" for p in row])
