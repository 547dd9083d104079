"""The ASGI app: /predict, /health, /info and /metrics in front of one model (`create_app`).

    uvicorn --factory pipeline.serve.app:create_app        # settings from PIPELINE_SERVE_* variables
    gunicorn -k uvicorn_worker.UvicornWorker 'pipeline.serve.app:create_app()'

The model loads after the server has started, on a thread of its own: /health says "loading" until the model has
labelled a first text, then "ready". A model that cannot load ends the process with status 3, which uvicorn's and
gunicorn's supervisors read as a worker that failed to boot (they stop, rather than restart it in a loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from starlette.exceptions import HTTPException
from starlette.requests import Request as HTTPRequest
from transformers.utils import logging as hf_logging

from pipeline.common.errors import one_line
from pipeline.predict.predictor import Predictor
from pipeline.predict.source import ModelSource, resolve_model_source
from pipeline.serve.batching import Batcher, BatchPolicy
from pipeline.serve.info import model_info
from pipeline.serve.inputs import SOURCES, InputError, Texts, request_texts
from pipeline.serve.limits import BearerToken, BodyLimit
from pipeline.serve.metrics import CONTENT_TYPE, CountRequests, Metrics
from pipeline.serve.rows import Request, label_requests
from pipeline.serve.settings import ServeSettings, forward_rows

logger = logging.getLogger(__name__)

LOADING, READY, FAILED = "loading", "ready", "failed"
# uvicorn's STARTUP_FAILURE and gunicorn's WORKER_BOOT_ERROR: a worker that cannot start, not one to restart.
STARTUP_FAILURE = 3
UNAVAILABLE, UNSUPPORTED_MEDIA_TYPE = 503, 415
WARM_UP_TEXT = "warm-up"


class PredictRequest(BaseModel):
    """The body of /predict: one of texts, inputs and records."""

    model_config = ConfigDict(extra="forbid")

    texts: list[Any] | None = Field(
        None,
        description="Texts to label. A sentence-pair model takes [text, text_pair] lists or "
        '{"text": ..., "text_pair": ...} objects.',
        examples=[["Stocks rally as oil prices fall", "Federer wins in five sets"]],
    )
    inputs: Any = Field(
        None,
        description="As the Hugging Face inference API sends them: a text, a list of texts, or pairs as in texts.",
    )
    records: list[dict[str, Any]] | None = Field(
        None, description="Rows by column name, holding the model's text columns (see /info), as a file's rows."
    )
    probabilities: StrictBool = Field(False, description="Add prob_<class>, each class's probability.")


class PredictResponse(BaseModel):
    rows: list[dict[str, Any]] = Field(
        description="One row per text, in order: the columns pipeline.predict adds (label, label_id, score, "
        "[prob_<class>...], [low_confidence], error; a multi-label model: labels, [prob_<class>...], error)."
    )


class Service:
    """The model and its batcher, and whether they are ready."""

    def __init__(self, settings: ServeSettings, metrics: Metrics, exit_on_failure: bool = True):
        self.settings = settings
        self.metrics = metrics
        self.exit_on_failure = exit_on_failure
        self.status, self.error = LOADING, ""
        self.predictor: Predictor | None = None
        self.batcher: Batcher | None = None
        self.info: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(self, app: FastAPI) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        # A daemon: SIGTERM while the model loads need not wait for the load to end.
        threading.Thread(target=self._load, args=(loop,), name="pipeline-serve-load", daemon=True).start()
        yield
        if self.batcher is not None:  # uvicorn has answered every request in flight by now
            await asyncio.to_thread(self.batcher.stop)

    def _load(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            source = resolve_model_source(self.settings.model)
            predictor = load_predictor(source, self.settings)
            info = model_info(predictor, source, self.settings)
        except Exception as error:  # whatever stops the model loading (a user's files): one line, then exit
            with contextlib.suppress(RuntimeError):  # the server stopped while the model loaded: nothing to say
                loop.call_soon_threadsafe(self._failed, one_line(error))
            return
        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(self._start(predictor, info), loop)

    async def _start(self, predictor: Predictor, info: dict[str, Any]) -> None:
        settings = self.settings
        policy = BatchPolicy(settings.max_wait_ms / 1000, settings.max_batch_rows, settings.batching)
        self.batcher = Batcher(
            lambda requests: label_requests(predictor, requests),
            policy,
            initializer=lambda: _set_threads(settings.threads),
        )
        self.batcher.start()
        try:
            # One text through the whole path first: the first request should not pay for lazy set-up (a bf16
            # copy of the weights, kernel selection).
            await self.batcher.submit(Request(Texts([WARM_UP_TEXT], [""])), 1)
        except Exception as error:  # a model that loads but cannot label is no more use than one that cannot load
            self._failed(one_line(error))
            return
        self.batcher.on_batch = self.metrics.count_batch  # counted from here: the warm-up is no request
        self.predictor, self.info, self.status = predictor, info, READY
        logger.info("ready: %s, %s", info["model"], predictor.describe_backend())

    def _failed(self, message: str) -> None:
        logger.error("cannot serve %s: %s", self.settings.model, message)
        self.status, self.error = FAILED, message
        if self.exit_on_failure:
            logging.shutdown()
            os._exit(STARTUP_FAILURE)  # nothing is in flight: no request can be answered without the model

    def ready_predictor(self) -> Predictor:
        if self.status == FAILED:
            raise HTTPException(UNAVAILABLE, f"the model could not load: {self.error}")
        if self.predictor is None:
            raise HTTPException(UNAVAILABLE, "the model is still loading; GET /health says when it is ready")
        return self.predictor


def load_predictor(source: ModelSource, settings: ServeSettings) -> Predictor:
    _quiet_libraries()
    predictor = Predictor.from_source(
        source,
        device=settings.device,
        precision=settings.precision,
        backend=settings.backend,
    )
    threads = settings.threads or torch.get_num_threads()
    predictor.batch_size = forward_rows(settings.batch_size, predictor.on_cpu, threads)
    return predictor


def _set_threads(threads: int | None) -> None:
    """PyTorch's intra-op threads, set on the thread that runs the model (OpenMP keeps the count per thread)."""
    if threads is not None:
        torch.set_num_threads(threads)


def _quiet_libraries() -> None:
    """Library warnings and progress bars would clutter the server's log."""
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def create_app(settings: ServeSettings | None = None, exit_on_failure: bool = True) -> FastAPI:
    """The app for `settings`, else for the PIPELINE_SERVE_* environment variables (uvicorn's and gunicorn's
    workers). `exit_on_failure` False keeps the process alive when the model cannot load (/health says why)."""
    settings = settings or ServeSettings.from_environment()
    metrics = Metrics()
    service = Service(settings, metrics, exit_on_failure)
    app = FastAPI(
        title="pipeline.serve",
        summary=f"Text classification with {Path(settings.model).name}",  # not the path on this machine
        lifespan=service.lifespan,
    )
    # The last added runs first: count every answer, then check the token, then the body's size.
    app.add_middleware(BodyLimit, limit=settings.max_request_bytes)
    app.add_middleware(BearerToken, api_key=settings.api_key)
    app.add_middleware(CountRequests, metrics=metrics)
    _add_error_handlers(app)
    _add_routes(app, service)
    return app


def _add_routes(app: FastAPI, service: Service) -> None:
    @app.post("/predict", response_model=PredictResponse, summary="Label texts")
    async def predict(body: PredictRequest) -> Response:
        predictor = service.ready_predictor()
        given = {name: getattr(body, name) for name in SOURCES}
        texts = request_texts(predictor.text_spec, given, service.settings.max_texts)
        try:
            rows = await service.batcher.submit(Request(texts, body.probabilities), len(texts)) if len(texts) else []
        except Exception as error:  # the batcher has logged the traceback; the client gets one line
            raise HTTPException(500, f"prediction failed: {one_line(error)}") from None
        # A Response is sent as it is: FastAPI validates and converts nothing more, which costs at every request.
        return JSONResponse({"rows": rows})

    @app.get("/health", summary="Whether the model is loaded")
    async def health() -> Response:
        answer = {"status": service.status, **({"error": service.error} if service.error else {})}
        return JSONResponse(answer, status_code=200 if service.status == READY else UNAVAILABLE)

    @app.get("/info", summary="The model: classes, text columns, length, backend, run facts")
    async def info() -> Response:
        service.ready_predictor()
        return JSONResponse(service.info)

    @app.get("/metrics", summary="Prometheus metrics")
    async def metrics() -> Response:
        return Response(service.metrics.exposition(), media_type=CONTENT_TYPE)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(InputError)
    async def input_error(request: HTTPRequest, error: InputError) -> Response:
        return error_response(error.status, str(error))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: HTTPRequest, error: RequestValidationError) -> Response:
        content_type = request.headers.get("content-type", "")
        if content_type and "json" not in content_type.lower():  # FastAPI reads such a body as no JSON at all
            message = f"Content-Type: the body must be JSON (application/json), not {content_type}"
            return error_response(UNSUPPORTED_MEDIA_TYPE, message)
        return error_response(*validation_message(error.errors()))

    @app.exception_handler(HTTPException)
    async def http_error(request: HTTPRequest, error: HTTPException) -> Response:
        return error_response(error.status_code, str(error.detail), error.headers)

    @app.exception_handler(Exception)
    async def failed(request: HTTPRequest, error: Exception) -> Response:
        return error_response(500, f"prediction failed: {one_line(error)}")


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": one_line(message)}, status_code=status, headers=headers)


def validation_message(errors: list[dict[str, Any]]) -> tuple[int, str]:
    """(status, one line naming the field) for the first of pydantic's errors."""
    error = errors[0]
    kind, location = error.get("type"), [part for part in error.get("loc", ()) if part != "body"]
    if kind == "json_invalid":
        return 400, f"body: not JSON ({error.get('ctx', {}).get('error', 'decode error')})"
    field = field_name(location) or "body"
    if kind == "extra_forbidden":
        return 422, f"{field}: unknown field; the body takes texts, inputs or records, and probabilities"
    if field == "body":
        return 422, "body: expected a JSON object with texts, inputs or records"
    return 422, f"{field}: {error.get('msg', 'invalid')}"


def field_name(location: list[Any]) -> str:
    """pydantic's location as the body's field: ["records", 0, "title"] -> records[0].title."""
    name = ""
    for part in location:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name
