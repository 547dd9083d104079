"""The app over HTTP (pipeline/serve/app.py): the rows `pipeline.predict` writes, for every model kind and body form;
/health, /info and /docs; errors as one line of JSON naming the field.

The flagged run is served by `python -m pipeline.serve` in a subprocess (conftest.py's `served`); the multi-label and
pair runs by the same app under uvicorn on a thread, which starts in a fraction of the time.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from pipeline.predict import Predictor, predict_texts
from pipeline.predict.cli import main as predict_main
from pipeline.serve.settings import ServeSettings
from tests.helpers import AG_NEWS_CLASSES
from tests.serve.helpers import SERVED_BATCH_SIZE, news_rows, news_texts, read_jsonl, server_in_thread, write_jsonl


def news_records(count: int) -> list[dict[str, str]]:
    return [
        {"id": number, "title": title, "description": description} for number, title, description in news_rows(count)
    ]


def predict_file(run: Path, records: list[dict[str, Any]], tmp_path: Path, *options: str) -> list[dict[str, Any]]:
    """The columns `python -m pipeline.predict` adds to each record of a JSON Lines file."""
    source = write_jsonl(tmp_path / "in.jsonl", records)
    output = tmp_path / "out.jsonl"
    options = ("--batch-size", str(SERVED_BATCH_SIZE), *options)  # the same cuts, so the same padding and sums
    predict_main(["--model", str(run), "--input", str(source), "--output", str(output), "--no-progress", *options])
    return [
        {key: value for key, value in row.items() if key not in record}
        for row, record in zip(read_jsonl(output), records)
    ]


def rounded(score: float) -> float:
    return float(f"{score:.6g}")  # six significant digits, as the output writes a probability


def test_records_get_the_rows_pipeline_predict_writes_for_them(served_run, client, tmp_path):
    records = news_records(24)
    expected = predict_file(served_run, records, tmp_path, "--probabilities")
    response = client.post("/predict", json={"records": records, "probabilities": True})
    assert response.status_code == 200, response.text
    assert response.json()["rows"] == expected
    flags = [row["low_confidence"] for row in expected if row["label"] is not None]
    assert any(flags) and not all(flags)  # the thresholds flag some rows: the column means something
    assert expected[6] == {**dict.fromkeys(expected[6], None), "error": "empty text in title, description"}


def test_texts_get_the_labels_predict_texts_gives(served_run, client):
    texts = [*news_texts(16), ""]
    expected = predict_texts(Predictor.from_path(served_run, batch_size=SERVED_BATCH_SIZE), texts, flags=True)
    rows = client.post("/predict", json={"texts": texts}).json()["rows"]
    assert [row["label"] or "" for row in rows] == [label for label, _, _ in expected]
    assert [row["score"] for row in rows] == [rounded(score) if label else None for label, score, _ in expected]
    assert [row["low_confidence"] for row in rows] == [flag for _, _, flag in expected]
    assert [row["error"] for row in rows if row["label"] is None] == ["empty text", "empty text"]  # 007's and ""
    assert set(rows[0]) == {"label", "label_id", "score", "low_confidence", "error"}


def test_inputs_are_read_as_the_inference_api_sends_them(client):
    texts = news_texts(3)
    alone = client.post("/predict", json={"texts": texts}).json()["rows"]
    assert client.post("/predict", json={"inputs": texts}).json()["rows"] == alone
    one = client.post("/predict", json={"inputs": texts[0]}).json()["rows"]
    assert [row["label"] for row in one] == [alone[0]["label"]]
    assert client.post("/predict", json={"texts": []}).json() == {"rows": []}


def test_a_multi_label_model_answers_with_label_sets(multi_label_run, tmp_path):
    records = news_records(20)
    expected = predict_file(multi_label_run, records, tmp_path, "--probabilities")
    texts = news_texts(20)
    sets = predict_texts(Predictor.from_path(multi_label_run, batch_size=SERVED_BATCH_SIZE), texts)
    with server_in_thread(ServeSettings(str(multi_label_run), threads=1)) as url:
        by_records = httpx.post(f"{url}/predict", json={"records": records, "probabilities": True}).json()["rows"]
        by_texts = httpx.post(f"{url}/predict", json={"texts": texts}).json()["rows"]
    assert by_records == expected
    assert {len(row["labels"]) for row in expected if row["labels"] is not None} >= {1, 2}  # sets, not single labels
    assert [row["labels"] or [] for row in by_texts] == [labels for labels, _ in sets]  # None: 007 has no text


def test_a_pair_model_reads_records_and_pairs_as_prediction_does(pair_run, tmp_path):
    pairs = [(title, description) for _, title, description in news_rows(16)]
    records = [{"question": question, "passage": passage} for question, passage in pairs]
    expected = predict_file(pair_run, records, tmp_path)
    labels = predict_texts(Predictor.from_path(pair_run, batch_size=SERVED_BATCH_SIZE), pairs)
    as_dicts = [{"text": question, "text_pair": passage} for question, passage in pairs]
    with server_in_thread(ServeSettings(str(pair_run), threads=1)) as url:
        by_records = httpx.post(f"{url}/predict", json={"records": records}).json()["rows"]
        by_lists = httpx.post(f"{url}/predict", json={"texts": [list(pair) for pair in pairs]}).json()["rows"]
        by_dicts = httpx.post(f"{url}/predict", json={"inputs": as_dicts}).json()["rows"]
        single = httpx.post(f"{url}/predict", json={"texts": ["one text"]})
    assert by_records == expected
    assert [row["label"] or "" for row in by_lists] == [label for label, _ in labels]
    assert by_dicts == by_lists
    assert single.status_code == 422 and single.json()["error"].startswith("texts[0]: the model reads sentence pairs")


def test_health_needs_no_token_and_info_describes_the_model(served):
    health = httpx.get(f"{served.url}/health")
    assert (health.status_code, health.json()) == (200, {"status": "ready"})
    with served.client() as client:
        info = client.get("/info").json()
    assert info["classes"] == AG_NEWS_CLASSES and info["text_columns"] == ["title", "description"]
    assert (info["max_length"], info["backend"], info["multi_label"]) == (64, "torch", False)
    assert info["decision"] == {"kind": "flag", "thresholds": {"World": 0.99, "Sports": 0.99}}
    assert info["columns"][-2:] == ["low_confidence", "error"] and info["long_text"]["truncation"] == "head"
    assert info["card"]["name"] == "flagged" and info["card"]["base_model"] == "minilm"  # no local path
    assert info["card"]["test"] == {"rows": 8, "accuracy": 0.5, "macro_f1": 0.4}
    assert info["limits"]["max_texts"] == 50 and info["limits"]["batch_size"] == 4  # on 1 thread


def test_the_openapi_docs_describe_predict(client):
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) >= {"/predict", "/health", "/info", "/metrics"}
    assert set(schema["components"]["schemas"]["PredictRequest"]["properties"]) == {
        "texts",
        "inputs",
        "records",
        "probabilities",
    }
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"texts": ["fine", 3]}, 422, "texts[1]: expected a string, got a number"),
        ({"texts": [["a", "b"]]}, 422, "texts[0]: expected a string, got a list (the model reads single texts"),
        ({"texts": "one text"}, 422, "texts: Input should be a valid list"),
        ({"records": [{"title": "x"}]}, 422, "records[0]: no column 'description'; the model reads title, description"),
        ({"records": [{"title": 1, "description": "x"}]}, 422, "records[0].title: expected a string or null"),
        ({"text": ["x"]}, 422, "text: unknown field"),
        ({}, 422, "the body names no texts: give texts, inputs or records"),
        ({"texts": ["a"], "records": []}, 422, "the body names texts and records"),
        ({"texts": ["a"], "probabilities": "yes"}, 422, "probabilities: "),
        ([1, 2], 422, "body: expected a JSON object"),
    ],
)
def test_a_bad_body_is_one_line_naming_the_field(client, body, status, message):
    response = client.post("/predict", json=body)
    assert response.status_code == status
    assert list(response.json()) == ["error"] and response.json()["error"].startswith(message), response.json()


def test_what_is_not_json_or_not_there_is_one_line_too(client):
    broken = client.post("/predict", content=b'{"texts": [', headers={"Content-Type": "application/json"})
    assert broken.status_code == 400 and broken.json()["error"].startswith("body: not JSON")
    form = client.post("/predict", data={"texts": "x"})
    assert form.status_code == 415 and "application/json" in form.json()["error"]
    assert client.get("/nowhere").json() == {"error": "Not Found"}
    assert client.get("/predict").status_code == 405


def has_settled(health: httpx.Response) -> bool:
    return health.json()["status"] != "loading"


def test_a_model_that_cannot_load_is_said_by_health_and_predict(served_run, tmp_path):
    """Kept alive (create_app(exit_on_failure=False)), the server says why; the command ends instead (test_cli.py)."""
    broken = tmp_path / "broken"
    shutil.copytree(served_run, broken)
    (broken / "model" / "model.safetensors").write_bytes(b"not weights")
    with server_in_thread(ServeSettings(str(broken)), until=has_settled) as url:
        health = httpx.get(f"{url}/health")
        predict = httpx.post(f"{url}/predict", json={"texts": ["x"]})
    assert health.status_code == 503 and health.json()["status"] == "failed"
    assert health.json()["error"].startswith("cannot load a sequence-classification model from")
    assert predict.status_code == 503 and predict.json()["error"].startswith("the model could not load: cannot load")
