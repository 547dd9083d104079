"""Dynamic batching (pipeline/serve/batching.py): requests that arrive together share one call of the model, each
answered with its own rows; the row cap and the wait close a batch; the event loop runs on while a batch is labelled.

The batches run through the real predictor (rows.label_requests) where what they answer matters, and through plain
functions where only the order of events does.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from pipeline.predict import Predictor
from pipeline.serve.batching import Batcher, BatchPolicy, BatchStats
from pipeline.serve.inputs import EMPTY_TEXT, Texts
from pipeline.serve.rows import Request, label_requests
from tests.serve.helpers import news_texts


@pytest.fixture(scope="module")
def predictor(served_run) -> Predictor:
    return Predictor.from_path(served_run)


def requests_of(sizes: list[int]) -> list[Request]:
    texts, requests = news_texts(sum(sizes) + 8)[8:], []  # past the awkward rows: every text has words
    for size in sizes:
        part, texts = texts[:size], texts[size:]
        requests.append(Request(Texts(part, [""] * size), probabilities=True))
    return requests


def run_together(batcher: Batcher, payloads: list, rows: list[int]) -> list:
    """Submit every payload at once from one event loop; their answers, in order."""

    async def together() -> list:
        return await asyncio.gather(*(batcher.submit(payload, count) for payload, count in zip(payloads, rows)))

    batcher.start()
    try:
        return asyncio.run(together())
    finally:
        batcher.stop(timeout=30)


def test_requests_that_arrive_together_share_a_batch_and_get_their_own_rows(predictor):
    requests = requests_of([1, 3, 2, 1, 4])
    batches: list[BatchStats] = []
    batcher = Batcher(lambda chunk: label_requests(predictor, chunk), BatchPolicy(30.0, max_rows=11), batches.append)
    answers = run_together(batcher, requests, [request.rows for request in requests])
    assert [(batch.requests, batch.rows) for batch in batches] == [(5, 11)]  # the cap closed it, not the wait
    for request, answer in zip(requests, answers):
        alone = label_requests(predictor, [request])[0]
        assert [row["label"] for row in answer] == [row["label"] for row in alone]
        # Other batch shapes pad otherwise: the same probabilities up to float noise (magnified by spread_head).
        np.testing.assert_allclose([row["score"] for row in answer], [row["score"] for row in alone], atol=1e-3)


def test_the_row_cap_closes_a_batch_and_a_bigger_request_is_a_batch_alone():
    batches: list[BatchStats] = []
    batcher = Batcher(lambda payloads: payloads, BatchPolicy(30.0, max_rows=4), batches.append)
    answers = run_together(batcher, ["a", "b", "c", "d"], [2, 2, 3, 6])
    assert answers == ["a", "b", "c", "d"]
    assert [(batch.requests, batch.rows) for batch in batches] == [(2, 4), (1, 3), (1, 6)]


def test_without_gathering_every_request_is_a_batch_of_its_own():
    batches: list[BatchStats] = []
    batcher = Batcher(lambda payloads: payloads, BatchPolicy(30.0, max_rows=100, gather=False), batches.append)
    assert run_together(batcher, ["a", "b", "c"], [1, 1, 1]) == ["a", "b", "c"]
    assert [batch.requests for batch in batches] == [1, 1, 1]


def test_the_event_loop_takes_requests_while_a_batch_is_labelled():
    """The first batch holds the worker until the event loop lets it go: were the model's work on the loop, the
    loop could never let it go, nor queue the second request meanwhile."""
    started, release, batches = threading.Event(), threading.Event(), []

    def work(payloads: list) -> list:
        if payloads == ["first"]:
            started.set()
            assert release.wait(30), "the event loop never released the batch"
        return payloads

    async def scenario() -> list:
        first = asyncio.ensure_future(batcher.submit("first", 1))
        while not started.is_set():
            await asyncio.sleep(0.01)
        second = asyncio.ensure_future(batcher.submit("second", 1))
        await asyncio.sleep(0.05)
        assert not first.done() and not second.done()
        release.set()
        return await asyncio.gather(first, second)

    batcher = Batcher(work, BatchPolicy(0.0, max_rows=10), batches.append)
    batcher.start()
    try:
        assert asyncio.run(scenario()) == ["first", "second"]
    finally:
        batcher.stop(timeout=30)
    assert [batch.requests for batch in batches] == [1, 1]


def test_the_wait_counts_from_when_the_model_is_free():
    """Under load: "second" queued long before the model was free, "third" comes from the client just answered.
    They share the next batch, though "second" has waited past --max-wait-ms already."""
    release, batches = threading.Event(), []

    def work(payloads: list) -> list:
        if payloads == ["first"]:
            assert release.wait(30), "the event loop never released the batch"
        return payloads

    async def scenario() -> list:
        first = asyncio.ensure_future(batcher.submit("first", 10))  # a full batch: it goes at once
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(batcher.submit("second", 1))
        await asyncio.sleep(0.6)  # past the wait, counted from its arrival
        release.set()
        await first
        return await asyncio.gather(second, batcher.submit("third", 1))

    batcher = Batcher(work, BatchPolicy(0.5, max_rows=10), batches.append)
    batcher.start()
    try:
        assert asyncio.run(scenario()) == ["second", "third"]
    finally:
        batcher.stop(timeout=30)
    assert [batch.requests for batch in batches] == [1, 2]


def test_a_failed_batch_answers_its_requests_with_the_error_and_the_next_is_served():
    def work(payloads: list) -> list:
        if "bad" in payloads:
            raise ValueError("the model broke")
        return payloads

    batcher = Batcher(work, BatchPolicy(0.0, max_rows=1))
    batcher.start()

    async def scenario() -> tuple:
        with pytest.raises(ValueError, match="the model broke"):
            await batcher.submit("bad", 1)
        return await batcher.submit("good", 1)

    try:
        assert asyncio.run(scenario()) == "good"
    finally:
        batcher.stop(timeout=30)


def test_stopping_answers_the_requests_queued_without_waiting_out_the_wait():
    batches: list[BatchStats] = []
    batcher = Batcher(lambda payloads: payloads, BatchPolicy(60.0, max_rows=100), batches.append)
    batcher.start()

    async def scenario() -> list:
        queued = [asyncio.ensure_future(batcher.submit(name, 1)) for name in ("a", "b")]
        await asyncio.sleep(0.05)
        await asyncio.wait_for(asyncio.to_thread(batcher.stop, 30), timeout=20)  # well before the 60 s wait
        return await asyncio.gather(*queued)

    assert asyncio.run(scenario()) == ["a", "b"]
    assert [batch.requests for batch in batches] == [2]


def test_rows_without_text_keep_their_own_error(predictor):
    request = Request(Texts(["A text", ""], ["", EMPTY_TEXT]))
    other = Request(Texts(["", "Another"], ["empty text in title, description", ""]))
    first, second = label_requests(predictor, [request, other])
    assert [row["error"] for row in first + second] == ["", EMPTY_TEXT, "empty text in title, description", ""]
