"""A /predict body's texts, read as `pipeline.predict` reads them: `texts` as `predict_texts` takes them, `inputs` as
the Hugging Face inference API sends them, `records` as rows of a file with the model's text columns.

Every problem is an `InputError`: an HTTP status and one line that names the field (`texts[2]`, `records[0].title`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.data.text import TextSpec
from pipeline.predict.api import input_text, is_pair_dict
from pipeline.predict.source import empty_text_error

# The error of a row without text, as predict_texts writes it (Predictor.label_texts' default).
EMPTY_TEXT = "empty text"
SOURCES = ("texts", "inputs", "records")
UNPROCESSABLE, TOO_LARGE = 422, 413


class InputError(ValueError):
    """A request the client must fix: its status, and one line naming the field."""

    def __init__(self, message: str, status: int = UNPROCESSABLE):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Texts:
    """What the model reads for each row of a request, and the error of each row it cannot label."""

    texts: list[str]
    empty_errors: list[str]  # "" where the row has a text

    def __len__(self) -> int:
        return len(self.texts)


def request_texts(spec: TextSpec, given: dict[str, Any], max_texts: int) -> Texts:
    """The texts of a body's one source (`given`: source name -> its value, None when absent)."""
    named = [name for name in SOURCES if given.get(name) is not None]
    if not named:
        raise InputError("the body names no texts: give texts, inputs or records")
    if len(named) > 1:
        raise InputError(f"the body names {' and '.join(named)}: give one of texts, inputs and records")
    source = named[0]
    value = given[source]
    if source == "inputs" and (isinstance(value, str) or is_pair_dict(value)):
        value = [value]  # one text, or one pair, as the inference API takes them
    if not isinstance(value, list):
        raise InputError(f"{source}: expected a list, got {json_type(value)}")
    if len(value) > max_texts:
        raise InputError(
            f"{source}: {len(value)} texts, over the server's limit of {max_texts} (--max-texts)", TOO_LARGE
        )
    if source == "records":
        return _records(spec, value)
    texts = [item_text(spec, item, f"{source}[{index}]") for index, item in enumerate(value)]
    return Texts(texts, [EMPTY_TEXT if not text else "" for text in texts])


def item_text(spec: TextSpec, item: Any, field: str) -> str:
    """One text, or one pair for a pair model, as predict_texts reads it."""
    if not spec.pair_columns:
        if not isinstance(item, str):
            raise InputError(f"{field}: expected a string, got {json_type(item)}{_pair_note(item)}")
        return input_text(spec, item)
    sides = [item.get("text"), item.get("text_pair")] if is_pair_dict(item) else item
    if not isinstance(sides, list) or len(sides) != 2 or not all(isinstance(side, str) for side in sides):
        raise InputError(
            f"{field}: the model reads sentence pairs ({', '.join(spec.columns)}; {', '.join(spec.pair_columns)}): "
            f'give ["text", "text_pair"] or {{"text": ..., "text_pair": ...}}, got {json_type(item)}'
        )
    return input_text(spec, tuple(sides))


def _pair_note(item: Any) -> str:
    if isinstance(item, list) or is_pair_dict(item):
        return " (the model reads single texts, not pairs)"
    return ""


def _records(spec: TextSpec, records: Sequence[Any]) -> Texts:
    """Each record's text from the model's text columns, joined as the command joins a file's."""
    texts, errors = [], []
    for index, record in enumerate(records):
        field = f"records[{index}]"
        if not isinstance(record, dict):
            raise InputError(f"{field}: expected an object of columns, got {json_type(record)}")
        values = [_cell(record, column, field, spec) for column in spec.input_columns]
        text = spec.text_of(values)
        texts.append(text)
        errors.append("" if text else empty_text_error(spec, values))
    return Texts(texts, errors)


def _cell(record: dict[str, Any], column: str, field: str, spec: TextSpec) -> str | None:
    if column not in record:
        raise InputError(f"{field}: no column '{column}'; the model reads {', '.join(spec.input_columns)}")
    value = record[column]
    if value is not None and not isinstance(value, str):
        raise InputError(f"{field}.{column}: expected a string or null, got {json_type(value)}")
    return value


def json_type(value: Any) -> str:
    """A value's type as JSON names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"
