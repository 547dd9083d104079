"""The server's settings (pipeline/serve/settings.py): the PIPELINE_SERVE_* variables every worker reads them from,
their checks, and each worker's share of the threads."""

from __future__ import annotations

import pytest

from pipeline.common.hardware import available_cores
from pipeline.predict.predictor import DEFAULT_BATCH_SIZE
from pipeline.serve.settings import ServeError, ServeSettings, forward_rows


def test_the_environment_carries_every_setting_to_a_worker():
    settings = ServeSettings(
        "runs/x", backend="onnx", batching=False, max_wait_ms=2.5, max_texts=7, api_key="k", threads=3
    )
    environment = settings.to_environment()
    assert environment["PIPELINE_SERVE_BATCHING"] == "0" and environment["PIPELINE_SERVE_MAX_WAIT_MS"] == "2.5"
    assert ServeSettings.from_environment(environment) == settings
    assert "PIPELINE_SERVE_API_KEY" not in ServeSettings("runs/x").to_environment()  # unset stays unset
    assert ServeSettings.from_environment({"PIPELINE_SERVE_MODEL": "m", "PIPELINE_SERVE_BATCHING": "yes"}).batching


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({}, "PIPELINE_SERVE_MODEL is not set: name the run directory or model folder to serve"),
        ({"PIPELINE_SERVE_MAX_TEXTS": "many"}, "PIPELINE_SERVE_MAX_TEXTS: expected an integer, got 'many'"),
        ({"PIPELINE_SERVE_MAX_WAIT_MS": "soon"}, "PIPELINE_SERVE_MAX_WAIT_MS: expected a number, got 'soon'"),
        ({"PIPELINE_SERVE_BATCHING": "maybe"}, "PIPELINE_SERVE_BATCHING: expected one of 1, true, yes, on, 0"),
        ({"PIPELINE_SERVE_MAX_TEXTS": "0"}, "--max-texts (PIPELINE_SERVE_MAX_TEXTS) must be at least 1, got 0"),
        ({"PIPELINE_SERVE_MAX_WAIT_MS": "-1"}, "--max-wait-ms (PIPELINE_SERVE_MAX_WAIT_MS) must be 0 or more"),
        ({"PIPELINE_SERVE_THREADS": "0"}, "--threads (PIPELINE_SERVE_THREADS) must be at least 1, got 0"),
        ({"PIPELINE_SERVE_API_KEY": " "}, "--api-key (PIPELINE_SERVE_API_KEY) is empty"),
    ],
)
def test_a_bad_variable_is_one_line_naming_it(environment, message):
    if environment:
        environment = {"PIPELINE_SERVE_MODEL": "runs/x", **environment}
    with pytest.raises(ServeError) as raised:
        ServeSettings.from_environment(environment)
    assert str(raised.value).startswith(message)


def test_workers_share_the_cores_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert ServeSettings("m").threads_per_worker(1) == available_cores()
    assert ServeSettings("m").threads_per_worker(available_cores() * 2) == 1  # never none
    assert ServeSettings("m", threads=5).threads_per_worker(4) == 5
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert ServeSettings("m").threads_per_worker(4) == 3


@pytest.mark.parametrize(
    ("asked", "on_cpu", "threads", "rows"),
    [
        (None, True, 1, 4),
        (None, True, 2, 4),
        (None, True, 8, 16),
        (None, False, 2, DEFAULT_BATCH_SIZE),
        (32, True, 2, 32),
    ],
)
def test_rows_per_forward_pass_follow_the_device_unless_asked(asked, on_cpu, threads, rows):
    assert forward_rows(asked, on_cpu, threads) == rows


def test_batch_size_from_the_environment_may_be_left_to_the_device():
    assert ServeSettings.from_environment({"PIPELINE_SERVE_MODEL": "m"}).batch_size is None
    settings = ServeSettings.from_environment({"PIPELINE_SERVE_MODEL": "m", "PIPELINE_SERVE_BATCH_SIZE": "8"})
    assert settings.batch_size == 8
