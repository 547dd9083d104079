"""A body's texts (pipeline/serve/inputs.py): read as predict_texts and the command read them, and every problem
an InputError with its status and one line naming the field."""

from __future__ import annotations

import pytest

from pipeline.config.reading import PAIR_MARK
from pipeline.data.text import TextSpec
from pipeline.serve.inputs import InputError, request_texts

SINGLE = TextSpec(("title", "description"), " ", True)
PAIRS = TextSpec(("question",), " ", False, ("passage",))


def texts_of(spec: TextSpec, **given):
    return request_texts(spec, given, max_texts=10)


def test_texts_inputs_and_records_give_the_texts_the_model_reads():
    assert texts_of(SINGLE, texts=["a", ""]).texts == ["a", ""]
    assert texts_of(SINGLE, texts=["a", ""]).empty_errors == ["", "empty text"]
    assert texts_of(SINGLE, inputs="one").texts == ["one"]
    records = texts_of(SINGLE, records=[{"title": "Big\\nnews", "description": "today", "id": 3}])
    assert records.texts == ["Big\nnews today"]  # joined and unescaped as the run's files were
    empty = texts_of(SINGLE, records=[{"title": None, "description": " "}])
    assert empty.texts == [""] and empty.empty_errors == ["empty text in title, description"]


def test_pairs_come_as_lists_or_objects_and_records_of_both_columns():
    joined = f"q{PAIR_MARK}p"
    assert texts_of(PAIRS, texts=[["q", "p"], {"text": "q", "text_pair": "p"}]).texts == [joined, joined]
    assert texts_of(PAIRS, inputs={"text": "q", "text_pair": "p"}).texts == [joined]
    assert texts_of(PAIRS, records=[{"question": "q", "passage": "p"}]).texts == [joined]
    half = texts_of(PAIRS, records=[{"question": "q", "passage": ""}])
    assert half.texts == [""] and half.empty_errors == ["no text in passage (a pair needs both)"]


@pytest.mark.parametrize(
    ("spec", "given", "message"),
    [
        (SINGLE, {}, "the body names no texts: give texts, inputs or records"),
        (SINGLE, {"texts": ["a"], "inputs": "b"}, "the body names texts and inputs: give one of"),
        (SINGLE, {"texts": ["a", None]}, "texts[1]: expected a string, got null"),
        (
            SINGLE,
            {"inputs": [{"text": "a", "text_pair": "b"}]},
            "inputs[0]: expected a string, got an object (the model reads single texts, not pairs)",
        ),
        (SINGLE, {"records": ["a"]}, "records[0]: expected an object of columns, got a string"),
        (
            SINGLE,
            {"records": [{"title": "a"}]},
            "records[0]: no column 'description'; the model reads title, description",
        ),
        (
            SINGLE,
            {"records": [{"title": "a", "description": ["b"]}]},
            "records[0].description: expected a string or null, got a list",
        ),
        (PAIRS, {"texts": ["a"]}, "texts[0]: the model reads sentence pairs (question; passage): give"),
        (PAIRS, {"texts": [["a", 1]]}, "texts[0]: the model reads sentence pairs"),
        (PAIRS, {"texts": [["a", "b", "c"]]}, "texts[0]: the model reads sentence pairs"),
    ],
)
def test_each_problem_names_its_field(spec, given, message):
    with pytest.raises(InputError) as raised:
        texts_of(spec, **given)
    assert raised.value.status == 422 and str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_more_texts_than_allowed_is_too_large():
    with pytest.raises(InputError, match=r"records: 11 texts, over the server's limit of 10 \(--max-texts\)") as raised:
        texts_of(SINGLE, records=[{"title": "a", "description": "b"}] * 11)
    assert raised.value.status == 413
