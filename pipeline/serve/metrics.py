"""Prometheus metrics at /metrics: requests by path and status, rows labelled, batch sizes and latencies.

Each server process counts its own. Under several workers a scrape reaches one of them, so each worker's figures
are a sample of the whole; prometheus_client's multiprocess mode would add them up, at the cost of files on disk.
"""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipeline.serve.batching import BatchStats

PREFIX = "pipeline_serve_"
# The paths counted by name; any other (a typo, a scanner) is counted as "other", so that labels stay few.
PATHS = ("/predict", "/health", "/info", "/metrics", "/docs", "/openapi.json")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """One registry per app, so that two apps in one process (the tests') count apart."""

    def __init__(self):
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            PREFIX + "requests", "HTTP requests answered, by path and status", ["path", "status"], registry=registry
        )
        self.in_flight = Gauge(PREFIX + "predict_in_flight", "/predict requests being answered", registry=registry)
        self.latency = Histogram(
            PREFIX + "predict_seconds",
            "/predict latency, arrival to answer",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.rows = Counter(PREFIX + "rows", "texts labelled", registry=registry)
        self.batch_rows = Histogram(PREFIX + "batch_rows", "texts per batch", buckets=ROW_BUCKETS, registry=registry)
        self.batch_requests = Histogram(
            PREFIX + "batch_requests", "requests per batch", buckets=ROW_BUCKETS, registry=registry
        )
        self.batch_seconds = Histogram(
            PREFIX + "batch_seconds", "model time per batch", buckets=LATENCY_BUCKETS, registry=registry
        )

    def count_batch(self, stats: BatchStats) -> None:
        """Called on the model's thread after each batch (prometheus_client's metrics are thread-safe)."""
        self.rows.inc(stats.rows)
        self.batch_rows.observe(stats.rows)
        self.batch_requests.observe(stats.requests)
        self.batch_seconds.observe(stats.seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class CountRequests:
    """ASGI middleware, outermost: counts every answer (refusals too) and times /predict."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"] if scope["path"] in PATHS else "other"
        status = 500  # unless the app starts a response

        async def noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started = time.perf_counter()
        predicting = path == "/predict"
        if predicting:
            self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, noting_status)
        finally:
            self.metrics.requests.labels(path, str(status)).inc()
            if predicting:
                self.metrics.in_flight.dec()
                self.metrics.latency.observe(time.perf_counter() - started)
