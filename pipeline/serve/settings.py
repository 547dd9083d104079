"""The server's settings (`ServeSettings`): from the command's options, or from PIPELINE_SERVE_* environment variables.

The environment is how every worker gets them: uvicorn's workers and gunicorn's import the app by name and call
`create_app()` with no arguments, so the command writes its settings there and each worker reads them back.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.common.extras import extra_install
from pipeline.common.hardware import available_cores, configured_threads
from pipeline.predict.predictor import DEFAULT_BATCH_SIZE

ENVIRONMENT_PREFIX = "PIPELINE_SERVE_"
# What the serve extra installs; the command checks them before anything else.
SERVE_MODULES = ("fastapi", "uvicorn", "prometheus_client")
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off")

# Rows per forward pass on a CPU (forward_rows).
CPU_FORWARD_ROWS_PER_THREAD, CPU_MIN_FORWARD_ROWS = 2, 4


class ServeError(ValueError):
    """A setting or an install the user must fix: the command prints it on one line and exits non-zero."""


@dataclass(frozen=True)
class ServeSettings:
    """What one server process needs to answer requests. Host, port and workers belong to the process manager."""

    model: str
    backend: str = "auto"
    precision: str = "auto"
    device: str = "auto"
    # Rows per forward pass, as pipeline.predict's --batch-size; None: by device (forward_rows).
    batch_size: int | None = None
    # Dynamic batching: once the model is free, a batch takes the requests that arrive within max_wait_ms, up to
    # max_batch_rows texts. Off (batching=False), every request is labelled on its own.
    batching: bool = True
    max_wait_ms: float = 5.0
    max_batch_rows: int = 256
    max_request_bytes: int = 1 << 20
    max_texts: int = 1000
    api_key: str | None = None
    # PyTorch's and the export runtimes' threads in this process; None: OMP_NUM_THREADS, else all cores.
    threads: int | None = None

    def __post_init__(self):
        _check_settings(self)

    def to_environment(self) -> dict[str, str]:
        """The settings as PIPELINE_SERVE_* variables; unset ones (None) are left out."""
        values = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return {variable(name): _text(value) for name, value in values.items() if value is not None}

    @classmethod
    def from_environment(cls, environment: Mapping[str, str] | None = None) -> ServeSettings:
        environment = os.environ if environment is None else environment
        if variable("model") not in environment:
            raise ServeError(f"{variable('model')} is not set: name the run directory or model folder to serve")
        hints = typing.get_type_hints(cls)
        values = {}
        for field in dataclasses.fields(cls):
            text = environment.get(variable(field.name))
            if text is not None:
                values[field.name] = _parse(variable(field.name), text, hints[field.name])
        return cls(**values)

    def threads_per_worker(self, workers: int = 1) -> int:
        """This worker's threads: the setting, else OMP_NUM_THREADS, else its share of the cores it may run on."""
        return self.threads or configured_threads() or max(1, available_cores() // workers)


def variable(name: str) -> str:
    return ENVIRONMENT_PREFIX + name.upper()


def _text(value: object) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


def _parse(name: str, text: str, hint: object) -> object:
    """One variable's text as its field's type (`int | None` reads as int)."""
    kinds = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    kind = next(kind for kind in kinds if kind is not type(None))
    if kind is bool:
        if text.strip().lower() not in TRUE_WORDS + FALSE_WORDS:
            raise ServeError(f"{name}: expected one of {', '.join(TRUE_WORDS + FALSE_WORDS)}, got {text!r}")
        return text.strip().lower() in TRUE_WORDS
    try:
        return kind(text)
    except ValueError:
        raise ServeError(f"{name}: expected {'an integer' if kind is int else 'a number'}, got {text!r}") from None


def _check_settings(settings: ServeSettings) -> None:
    """Ranges that types cannot say, named by the command's option (and the variable, for workers)."""
    for name in ("batch_size", "max_batch_rows", "max_request_bytes", "max_texts"):
        if getattr(settings, name) is not None and getattr(settings, name) < 1:
            raise ServeError(f"{option(name)} must be at least 1, got {getattr(settings, name)}")
    if settings.threads is not None and settings.threads < 1:
        raise ServeError(f"{option('threads')} must be at least 1, got {settings.threads}")
    if settings.max_wait_ms < 0:
        raise ServeError(f"{option('max_wait_ms')} must be 0 or more, got {settings.max_wait_ms}")
    if settings.api_key is not None and not settings.api_key.strip():
        raise ServeError(f"{option('api_key')} is empty; give a key, or leave it out to serve without one")


def forward_rows(batch_size: int | None, on_cpu: bool, threads: int) -> int:
    """Rows per forward pass: the one asked for; else pipeline.predict's on a GPU, and on a CPU two per thread, at
    least 4. A CPU labels a lone text about as fast per row as a batch (a text of 128 tokens already fills its
    cores), and a bigger batch of texts of mixed lengths pads more: on 2 EPYC cores OpenVINO labelled 69-72 rows/s
    at batches of 1-4 and 56 at 16 (benchmarks/batch_sizes.py). The gathered requests are sorted by length and cut
    into such batches, so a batch pads little."""
    if batch_size is not None:
        return batch_size
    if not on_cpu:
        return DEFAULT_BATCH_SIZE
    return max(CPU_MIN_FORWARD_ROWS, CPU_FORWARD_ROWS_PER_THREAD * threads)


def option(name: str) -> str:
    """A setting as the command's option and the environment's variable: `--max-texts (PIPELINE_SERVE_MAX_TEXTS)`."""
    return f"--{name.replace('_', '-')} ({variable(name)})"


def require_serve_extra() -> None:
    """The serve extra's modules, or one line naming the extra that installs them."""
    for module in SERVE_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            raise ServeError(
                f"{module} is not installed: it comes with the optional extra 'serve' ({extra_install('serve')})"
            ) from None
