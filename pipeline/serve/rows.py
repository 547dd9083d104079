"""The rows /predict answers with: for each text, the columns `pipeline.predict` adds to a row, with the values its
JSON Lines output holds (numbers to six significant digits, a multi-label row's classes as a list).

`label_requests` labels the texts of several requests in one call of the predictor, as one chunk of a file is
labelled: sorted by length and cut into batches each padded to its own longest row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.predict.output import PROBABILITY_FORMAT, added_values, predictor_columns
from pipeline.predict.predictor import LabelledTexts, Predictor
from pipeline.serve.inputs import Texts


@dataclass(frozen=True)
class Request:
    """One /predict call's share of a batch."""

    texts: Texts
    probabilities: bool = False

    @property
    def rows(self) -> int:
        return len(self.texts)


def label_requests(predictor: Predictor, requests: Sequence[Request]) -> list[list[dict[str, Any]]]:
    """Each request's rows, labelled together in one pass."""
    texts = [text for request in requests for text in request.texts.texts]
    errors = [error for request in requests for error in request.texts.empty_errors]
    result = predictor.label_texts(texts, empty_error=lambda row: errors[row])
    answers, start = [], 0
    for request in requests:
        part = rows_of(result, start, start + request.rows)
        answers.append(json_rows(predictor, part, request.probabilities))
        start += request.rows
    return answers


def rows_of(result: LabelledTexts, start: int, stop: int) -> LabelledTexts:
    """The rows start..stop of a result, as if they had been labelled alone."""

    def part(values: Any) -> Any:
        return None if values is None else values[start:stop]

    return LabelledTexts(
        result.label_ids[start:stop],
        result.probabilities[start:stop],
        result.errors[start:stop],
        label_sets=part(result.label_sets),
        low_confidence=part(result.low_confidence),
    )


def json_rows(predictor: Predictor, result: LabelledTexts, probabilities: bool) -> list[dict[str, Any]]:
    """One object per text: the prediction's columns by name, valued as the JSON Lines output values them."""
    columns = predictor_columns(predictor, probabilities)
    values = added_values(result, predictor.labels, probabilities, separator=None)  # None: classes as a list
    return [dict(zip(columns, map(json_number, row))) for row in values]


def json_number(value: Any) -> Any:
    """A probability as the output writes it (six significant digits: stable against float noise between batchings)."""
    return float(PROBABILITY_FORMAT % value) if isinstance(value, float) else value
