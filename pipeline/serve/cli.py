"""`python -m pipeline.serve`: a trained model behind HTTP, until SIGTERM or Ctrl-C.

Checks what is cheap first (the serve extra, the settings, the model's path), then hands the app to uvicorn by
name: every worker builds it from the PIPELINE_SERVE_* variables this command sets, as gunicorn's workers do.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import ipaddress
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from pipeline.common import hardware
from pipeline.common.errors import one_line
from pipeline.config.options import positive_int
from pipeline.predict.source import PredictError, resolve_model_source
from pipeline.run.exports import BACKENDS
from pipeline.serve.settings import ServeError, ServeSettings, require_serve_extra, variable

APP = "pipeline.serve.app:create_app"
# uvicorn's and gunicorn's status for a worker that failed to boot.
STARTUP_FAILURE = 3
# After SIGTERM, requests in flight get this long to finish (Kubernetes waits 30 s before SIGKILL).
DRAIN_SECONDS = 25
# Model loading keeps a worker busy: uvicorn's supervisor must not take a slow answer to its ping for a hang.
WORKER_HEALTHCHECK_SECONDS = 60
DEFAULTS = ServeSettings(model="-")

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.serve",
        description="Serve a trained text classifier over HTTP: POST /predict, GET /health, /info, /metrics, /docs.",
    )
    add = parser.add_argument
    add("--model", required=True, help="run directory (runs/<name>) or saved model directory")
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    add("--port", type=int, default=8000, help="port (default 8000)")
    add("--backend", choices=BACKENDS, default=DEFAULTS.backend, help="as pipeline.predict's --backend (default auto)")
    add("--precision", choices=hardware.INFERENCE_PRECISIONS, default=DEFAULTS.precision, help="PyTorch's precision")
    add("--device", default=DEFAULTS.device, help="cpu, cuda, cuda:<index> or auto (default)")
    add(
        "--batch-size",
        type=positive_int,
        default=DEFAULTS.batch_size,
        help="rows per forward pass, at most (default: 128 on a GPU; on a CPU 2 per thread, at least 4)",
    )
    _add_batching_arguments(add)
    _add_limit_arguments(add)
    add("--workers", type=positive_int, default=1, help="server processes, each with its own copy of the model")
    add(
        "--threads",
        type=positive_int,
        help="threads per worker (default: OMP_NUM_THREADS, else the cores shared among the workers)",
    )
    add("--access-log", action="store_true", help="log every request (off by default: /metrics counts them)")
    add("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    return parser.parse_args(argv)


def _add_batching_arguments(add: Any) -> None:
    add(
        "--max-wait-ms",
        type=float,
        default=DEFAULTS.max_wait_ms,
        help=f"how long a batch waits for requests to join it once the model is free (default {DEFAULTS.max_wait_ms:g})",
    )
    add(
        "--max-batch-rows",
        type=positive_int,
        default=DEFAULTS.max_batch_rows,
        help=f"texts per batch, at most (default {DEFAULTS.max_batch_rows}); a bigger request is a batch alone",
    )
    add("--no-batching", action="store_true", help="label every request on its own")


def _add_limit_arguments(add: Any) -> None:
    add(
        "--max-request-bytes",
        type=positive_int,
        default=DEFAULTS.max_request_bytes,
        help=f"largest body accepted (default {DEFAULTS.max_request_bytes}); larger: 413",
    )
    add(
        "--max-texts",
        type=positive_int,
        default=DEFAULTS.max_texts,
        help=f"most texts in one request (default {DEFAULTS.max_texts}); more: 413",
    )
    add(
        "--api-key",
        help=f"require 'Authorization: Bearer <key>' (default: {variable('api_key')}, which keeps the key out of "
        "the process list)",
    )


def settings_from(args: argparse.Namespace) -> ServeSettings:
    return ServeSettings(
        model=args.model,
        backend=args.backend,
        precision=args.precision,
        device=args.device,
        batch_size=args.batch_size,
        batching=not args.no_batching,
        max_wait_ms=args.max_wait_ms,
        max_batch_rows=args.max_batch_rows,
        max_request_bytes=args.max_request_bytes,
        max_texts=args.max_texts,
        api_key=args.api_key if args.api_key is not None else os.environ.get(variable("api_key")),
        threads=args.threads,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """The command. Errors before the server starts print one line on stderr and exit 1."""
    args = parse_args(argv)
    try:
        require_serve_extra()
        settings = settings_from(args)
        resolve_model_source(settings.model)  # a wrong path or an unfinished run is said before the server starts
    except (ServeError, PredictError) as error:
        print(f"error: {one_line(error)}", file=sys.stderr)
        raise SystemExit(1) from None
    raise SystemExit(serve(settings, args))


def serve(settings: ServeSettings, args: argparse.Namespace) -> int:
    """Run the server until told to stop; the exit status: 0 after a drain, 3 when a worker could not start."""
    import uvicorn

    threads = settings.threads_per_worker(args.workers)
    settings = dataclasses.replace(settings, threads=threads)
    os.environ.update(settings.to_environment())
    # Read by ONNX Runtime and OpenVINO when they start, and by PyTorch in a new worker process.
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if settings.api_key is None and not _is_loopback(args.host):
        logger.warning("serving on %s without --api-key: anyone who reaches the port can use the model", args.host)
    config = uvicorn.Config(
        APP,
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_config=log_config(),
        log_level=args.log_level,
        access_log=args.access_log,
        timeout_graceful_shutdown=DRAIN_SECONDS,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
    )
    if args.workers > 1:
        return _serve_workers(config)
    server = uvicorn.Server(config)
    # uvicorn drains on SIGTERM or SIGINT, then raises the signal again so that the default action ends the
    # process: by the signal, not with status 0. Once drained, a stop asked for is a clean exit.
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, _drained)
    server.run()
    return 0 if server.started else STARTUP_FAILURE


def _serve_workers(config: Any) -> int:
    from uvicorn.supervisors import Multiprocess

    supervisor = Multiprocess(config, sockets=[config.bind_socket()])
    supervisor.run()  # on SIGTERM it passes the signal on to each worker, which drains, then returns
    failed = any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes)
    return STARTUP_FAILURE if failed else 0


def _drained(signum: int, frame: Any) -> None:
    """What SIGTERM or SIGINT does once uvicorn has drained: nothing; the command returns and exits 0."""


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def log_config() -> dict[str, Any]:
    """uvicorn's logging, with the package's loggers (`ready: ...`, warnings) beside its own, in every worker."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["pipeline"] = {
        "()": "uvicorn.logging.DefaultFormatter",
        "fmt": "%(levelprefix)s %(name)s: %(message)s",
    }
    config["handlers"]["pipeline"] = {
        "formatter": "pipeline",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["pipeline"] = {"handlers": ["pipeline"], "level": "INFO", "propagate": False}
    return config
