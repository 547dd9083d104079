"""The bearer token and the size limits (pipeline/serve/limits.py, and --max-texts), over HTTP against the served
process: each refusal has its status and one line that names what to fix."""

from __future__ import annotations

import httpx

from tests.serve.conftest import MAX_REQUEST_BYTES, MAX_TEXTS


def test_more_texts_than_the_limit_are_refused_naming_the_option(client):
    response = client.post("/predict", json={"texts": ["a text"] * (MAX_TEXTS + 1)})
    assert response.status_code == 413
    assert response.json() == {"error": f"texts: {MAX_TEXTS + 1} texts, over the server's limit of 50 (--max-texts)"}
    assert client.post("/predict", json={"texts": ["a text"] * MAX_TEXTS}).status_code == 200


def test_a_body_over_the_limit_is_refused_before_it_is_read(client):
    body = b'{"texts": ["' + b"x" * MAX_REQUEST_BYTES + b'"]}'
    response = client.post("/predict", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json() == {"error": "body: over the server's limit of 20000 bytes (--max-request-bytes)"}


def test_a_body_sent_in_chunks_is_cut_off_once_it_grows_past_the_limit(client):
    """No Content-Length to refuse it by: the bytes are counted as they arrive."""

    def chunks():
        yield b'{"texts": ["'
        for _ in range(MAX_REQUEST_BYTES // 1000 + 1):
            yield b"x" * 1000
        yield b'"]}'

    response = client.post("/predict", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"].startswith("body: over the server's limit of 20000 bytes")


def test_a_token_is_needed_everywhere_but_health(served):
    predict = httpx.post(f"{served.url}/predict", json={"texts": ["x"]})
    assert predict.status_code == 401 and predict.headers["www-authenticate"] == "Bearer"
    assert predict.json() == {"error": "Authorization: this server needs a bearer token (Authorization: Bearer <key>)"}
    wrong = httpx.post(f"{served.url}/predict", json={"texts": ["x"]}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json() == {
        "error": "Authorization: the bearer token is not this server's key"
    }
    for path in ("/info", "/metrics", "/docs"):
        assert httpx.get(f"{served.url}{path}").status_code == 401
    assert httpx.get(f"{served.url}/health").status_code == 200
    with served.client() as client:
        assert client.post("/predict", json={"texts": ["x"]}).status_code == 200
