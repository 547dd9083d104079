"""Prediction from Python (notebooks): a list of texts, or a DataFrame, with a model loaded once.

predictor = Predictor.from_path("runs/ag_news_bert")
predict_texts(predictor, ["Stocks fell sharply", "A late goal won the cup"])   # [("Business", 0.93), ...]
predict_texts(predictor, texts, flags=True)   # [("Business", 0.93, False), ...]: low-confidence flags
labelled = predict_dataframe(predictor, frame, probabilities=True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.common.errors import DataError, shorten
from pipeline.data.text import TextSpec
from pipeline.predict.output import check_no_clash, predictor_columns
from pipeline.predict.predictor import DEFAULT_BATCH_SIZE, LabelledTexts, Predictor, as_predictor
from pipeline.predict.source import PredictError, check_pair_columns, empty_text_errors, reraised_as


def predict_texts(
    model_dir: str | Path | Predictor,
    texts: Sequence[Any] | str,
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: str = "auto",
    precision: str = "auto",
    backend: str = "auto",
    flags: bool = False,
) -> list[tuple]:
    """(label, score) for each text, in order; an empty or missing text gives ("", nan). A single string is one text.
    A sentence-pair model takes (text, text_pair) tuples or {"text": ..., "text_pair": ...} dicts.
    A multi-label model gives (labels, scores) ([] for none, and for an empty text).
    `flags`: each tuple gains a third item, the low-confidence flag (None for an empty text).
    Pass a Predictor to load the model once; `backend` as Predictor.from_source."""
    predictor = as_predictor(model_dir, batch_size=batch_size, device=device, precision=precision, backend=backend)
    one = isinstance(texts, str) or is_pair_dict(texts)  # a single text, or a single pair as transformers takes it
    texts = [input_text(predictor.text_spec, item) for item in ([texts] if one else texts)]
    result = predictor.label_texts(texts)
    if result.label_sets is not None:
        predictions = [
            ([predictor.labels[i] for i in row.nonzero()[0]], [float(p) for p in probabilities[row]])
            for row, probabilities in zip(result.label_sets, result.probabilities)
        ]
    else:
        predictions = [
            (predictor.labels[label_id], score) if label_id >= 0 else ("", math.nan)
            for label_id, score in zip(result.label_ids.tolist(), result.scores().tolist())
        ]
    if not flags:
        return predictions
    low_confidence = result.low_confidence if result.low_confidence is not None else [False] * len(texts)
    return [
        (*prediction, bool(flag) if label_id >= 0 else None)
        for prediction, flag, label_id in zip(predictions, low_confidence, result.label_ids.tolist())
    ]


PAIR_KEYS = ("text", "text_pair")


def is_pair_dict(item: Any) -> bool:
    return isinstance(item, dict) and bool(item) and set(item) <= set(PAIR_KEYS)


def input_text(spec: TextSpec, item: Any) -> str:
    """One item of predict_texts as the text the model reads: a cell's text, or for a pair model a pair's."""
    if not spec.pair_columns:
        if is_pair_dict(item) and "text_pair" in item:
            raise PredictError(
                "a {'text': ..., 'text_pair': ...} pair given to a model trained on single texts; give texts (a folder that does not record how it was trained: Predictor.from_path(..., text_pair_columns=[...]))"
            )
        return spec.cell_text(item)
    if is_pair_dict(item):
        item = tuple(item.get(key) for key in PAIR_KEYS)
    if not isinstance(item, (tuple, list)) or len(item) != 2:
        raise PredictError(
            f"the model reads sentence pairs ({', '.join(spec.columns)}; {', '.join(spec.pair_columns)}): give each "
            f"as a (text, text_pair) tuple or a {{'text': ..., 'text_pair': ...}} dict, got {shorten(repr(item), 80)}"
        )
    return spec.join_pair(spec.cell_text(item[0]), spec.cell_text(item[1]))


def predict_dataframe(
    model_dir: str | Path | Predictor,
    df: Any,
    text_columns: Sequence[str] | str | None = None,
    probabilities: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: str = "auto",
    precision: str = "auto",
    prefix: str = "",
    backend: str = "auto",
    text_separator: str | None = None,
    text_pair_columns: Sequence[str] | str | None = None,
) -> Any:
    """A copy of `df` with prediction's columns added (label_id nullable Int64). Text columns default to those the
    model was trained with; rows without text are kept, unlabelled, with the reason in `error`."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise PredictError(
            f"predict_dataframe takes a pandas DataFrame, got {type(df).__name__}; for a Series or a list of texts use predict_texts"
        )

    predictor = as_predictor(model_dir, batch_size=batch_size, device=device, precision=precision, backend=backend)
    # A bare string is one column's name, not a sequence of one-letter names.
    columns = [text_columns] if isinstance(text_columns, str) else text_columns
    pair_columns = [text_pair_columns] if isinstance(text_pair_columns, str) else text_pair_columns
    check_pair_columns(predictor.text_spec, pair_columns, predictor.reading_recorded, "text_pair_columns")
    spec = predictor.text_spec.with_columns(columns).with_pair_columns(pair_columns).with_separator(text_separator)
    header = [str(column) for column in df.columns]
    with reraised_as(PredictError, DataError):
        positions = spec.positions(
            header, "the DataFrame", ("the text_columns argument", "the text_pair_columns argument")
        )
    added = predictor_columns(predictor, probabilities, prefix)
    check_no_clash(header, added, "the DataFrame", "prefix=")
    parts = list(zip(*(df.iloc[:, position].tolist() for position in positions)))
    texts = [spec.text_of(values) for values in parts]
    result = predictor.label_texts(texts, empty_error=empty_text_errors(spec, parts, "empty or missing text"))
    return _with_columns(df.copy(), predictor, result, added)


def _with_columns(labelled: Any, predictor: Predictor, result: LabelledTexts, added: list[str]) -> Any:
    import pandas as pd

    if result.label_sets is not None:  # multi-label: labels, [prob_<class>...], error
        labels_column, *probability_columns, error_column = added
        labelled[labels_column], flag_column = predictor.joined_labels(result.label_sets), None
    else:
        flag_column = added.pop(-2) if result.low_confidence is not None else None  # before error
        label_column, label_id_column, score_column, *probability_columns, error_column = added
        ids = result.label_ids.tolist()
        labelled[label_column] = [predictor.labels[i] if i >= 0 else "" for i in ids]
        labelled[label_id_column] = pd.array([i if i >= 0 else None for i in ids], dtype="Int64")
        labelled[score_column] = result.scores()
    for index, column in enumerate(probability_columns):
        labelled[column] = result.probabilities[:, index]
    if flag_column is not None:  # multi-class thresholds: the label is kept, the row flagged (unset: no label)
        labelled[flag_column] = pd.array(
            [bool(flag) if i >= 0 else None for i, flag in zip(ids, result.low_confidence)], dtype="boolean"
        )
    labelled[error_column] = result.errors
    return labelled
