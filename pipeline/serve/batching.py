"""Dynamic batching: requests that arrive close together are labelled in one call, on one worker thread.

    batcher = Batcher(work, BatchPolicy(max_wait_seconds=0.005, max_rows=256))
    batcher.start()
    answer = await batcher.submit(request, rows=len(texts))   # from the event loop
    batcher.stop()                                             # answers what is queued, then ends the thread

`work` takes the gathered requests and returns one answer per request. It runs on the worker thread alone: the
model is never called from two threads, and the event loop keeps accepting requests while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

# What the worker thread takes from its queue to end.
_STOP = object()


@dataclass(frozen=True)
class BatchPolicy:
    """How long a batch waits for requests to join it once the model is free, and how many rows it holds at most. A
    request with more rows than that is a batch of its own. `gather` False: every request is a batch of its own."""

    max_wait_seconds: float
    max_rows: int
    gather: bool = True


@dataclass(frozen=True)
class BatchStats:
    """What one batch was: what the metrics count."""

    requests: int
    rows: int
    seconds: float  # the work's time, not the wait


@dataclass(eq=False)
class _Job:
    payload: Any
    rows: int
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop


class Batcher:
    def __init__(
        self,
        work: Callable[[list[Any]], Sequence[Any]],
        policy: BatchPolicy,
        on_batch: Callable[[BatchStats], None] | None = None,
        initializer: Callable[[], None] | None = None,
    ):
        self._work = work
        self.policy = policy
        self.on_batch = on_batch
        self._initializer = initializer  # run first on the worker thread (per-thread settings such as threads)
        self._queue: queue.Queue = queue.Queue()
        self._held: Any = None  # taken from the queue, but for the next batch (it did not fit)
        # A daemon: a process told to exit never waits for a batch that hangs; stop() joins it in a normal shutdown.
        self._thread = threading.Thread(target=self._run, name="pipeline-serve-model", daemon=True)

    def start(self) -> None:
        self._thread.start()

    async def submit(self, payload: Any, rows: int) -> Any:
        """The answer to one request, from the batch it joins; the work's exception if the batch failed."""
        loop = asyncio.get_running_loop()
        job = _Job(payload, rows, loop.create_future(), loop)
        self._queue.put(job)
        return await job.future

    def stop(self, timeout: float | None = None) -> None:
        """Answer every request queued so far, then end the worker thread."""
        self._queue.put(_STOP)
        self._thread.join(timeout)

    def _run(self) -> None:
        if self._initializer is not None:
            self._initializer()
        while jobs := self._next_batch():
            self._answer(jobs)

    def _next_batch(self) -> list[_Job]:
        """The next batch: the first request waiting, and those that join it within the wait and the row cap.
        Empty when told to stop."""
        first = self._held if self._held is not None else self._queue.get()
        self._held = None
        if first is _STOP:
            return []
        jobs, rows = [first], first.rows
        if not self.policy.gather:
            return jobs
        # The wait counts from now, when the model is free, not from the first request's arrival. Under load the
        # requests that queued while the model was busy have waited already, but the clients it has just answered
        # are sending their next: a batch that takes them in too is bigger, and labels each text for less.
        deadline = time.monotonic() + self.policy.max_wait_seconds
        while rows < self.policy.max_rows:
            try:
                job = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if job is _STOP or rows + job.rows > self.policy.max_rows:
                self._held = job
                break
            jobs.append(job)
            rows += job.rows
        return jobs

    def _answer(self, jobs: list[_Job]) -> None:
        started = time.perf_counter()
        try:
            answers = self._work([job.payload for job in jobs])
        except Exception as error:  # the batch's requests get the error; the thread serves the next batch
            logger.exception("a batch of %d requests failed", len(jobs))
            for job in jobs:
                _settle(job, error=error)
            return
        for job, answer in zip(jobs, answers):
            _settle(job, answer=answer)
        if self.on_batch is not None:
            self.on_batch(BatchStats(len(jobs), sum(job.rows for job in jobs), time.perf_counter() - started))


def _settle(job: _Job, answer: Any = None, error: BaseException | None = None) -> None:
    """Hand a result to the request's event loop (futures are not thread-safe)."""

    def settle() -> None:
        if job.future.done():  # the client went away and its request was cancelled
            return
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(answer)

    with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits for this answer
        job.loop.call_soon_threadsafe(settle)
