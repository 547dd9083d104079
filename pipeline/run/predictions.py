"""test_predictions.csv: one row per test example, as stage 4 writes it (docs/run-directory.md lists the columns;
pipeline.run.directory names them and reads the file back)."""

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
    """One row per example: text, gold and predicted class names, the predicted class's probability, the row's id
    (the data's id column, or its line number), [whether it is flagged low-confidence,] then every class's
    probability. `predicted`: the decision's class ids (default: the argmax); `low_confidence`: (N,) bool flags of
    a multi-class decision with thresholds. Multi-label (gold and predicted (N, C) indicator rows): gold and
    predicted are the class sets joined by `separator`, and score is the highest class probability."""
    if np.ndim(gold) == 2:
        if separator is None:
            raise ValueError("multi-label predictions need the label separator (data.label_separator)")
        _write_multilabel_predictions(path, texts, gold, probabilities, label_names, row_ids, predicted, separator)
        return
    predicted = probabilities.argmax(axis=1) if predicted is None else predicted
    row_ids = row_ids if row_ids is not None else [str(index + 1) for index in range(len(texts))]
    flag_columns = [PREDICTION_LOW_CONFIDENCE] if low_confidence is not None else []
    flags = [[bool(flag)] for flag in low_confidence] if low_confidence is not None else [[]] * len(texts)
    header = [
        *PREDICTION_COLUMNS,
        PREDICTION_ROW_ID,
        *flag_columns,
        *(f"{PROBABILITY_PREFIX}{name}" for name in label_names),
    ]
    with atomic_path(path) as temp_path, open(temp_path, "w", newline="", encoding="utf-8") as handle:
        writer = CsvRows(handle)
        writer.writerow(header)
        for text, gold_id, predicted_id, row, row_id, flag in zip(
            texts, gold, predicted, probabilities, row_ids, flags
        ):
            writer.writerow(
                [text, label_names[gold_id], label_names[predicted_id], f"{row[predicted_id]:.6f}", row_id, *flag]
                + [f"{p:.6f}" for p in row]
            )


def _write_multilabel_predictions(
    path: Path,
    texts: Sequence[str],
    gold: np.ndarray,
    probabilities: np.ndarray,
    label_names: Sequence[str],
    row_ids: Sequence[str] | None,
    predicted: np.ndarray | None,
    separator: str,
) -> None:
    predicted = probabilities >= 0.5 if predicted is None else predicted
    row_ids = row_ids if row_ids is not None else [str(index + 1) for index in range(len(texts))]
    header = [*PREDICTION_COLUMNS, PREDICTION_ROW_ID, *(f"{PROBABILITY_PREFIX}{name}" for name in label_names)]

    def joined(indicators: np.ndarray) -> str:
        return separator.join(name for name, on in zip(label_names, indicators) if on > 0.5)

    with atomic_path(path) as temp_path, open(temp_path, "w", newline="", encoding="utf-8") as handle:
        writer = CsvRows(handle)
        writer.writerow(header)
        for text, gold_row, predicted_row, row, row_id in zip(texts, gold, predicted, probabilities, row_ids):
            writer.writerow(
                [text, joined(gold_row), joined(predicted_row), f"{row.max():.6f}", row_id] + [f"{p:.6f}" for p in row]
            )
