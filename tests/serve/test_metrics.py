"""/metrics (pipeline/serve/metrics.py): Prometheus text that counts requests by path and status, rows, batches and
latency, read back with prometheus_client's own parser."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


def samples(client: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_requests_rows_and_batches_are_counted(served, client):
    before = samples(client)
    assert client.post("/predict", json={"texts": ["one", "two", "three"]}).status_code == 200
    assert client.post("/predict", json={"texts": [4]}).status_code == 422
    assert httpx.post(f"{served.url}/predict", json={"texts": ["x"]}).status_code == 401
    after = samples(client)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    requests = "pipeline_serve_requests_total"
    assert grew(requests, path="/predict", status="200") == 1
    assert grew(requests, path="/predict", status="422") == 1
    assert grew(requests, path="/predict", status="401") == 1  # refused before the app: counted all the same
    assert grew("pipeline_serve_rows_total") == 3
    assert grew("pipeline_serve_batch_rows_count") == 1 and grew("pipeline_serve_batch_rows_sum") == 3
    assert grew("pipeline_serve_batch_requests_sum") == 1
    assert grew("pipeline_serve_predict_seconds_count") == 3 and grew("pipeline_serve_predict_seconds_sum") > 0
    assert after[("pipeline_serve_predict_in_flight", ())] == 0
