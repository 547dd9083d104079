"""`python -m pipeline.serve` (pipeline/serve/cli.py): what is wrong before the server starts is one line and status
1; SIGTERM lets the requests in flight finish, then the process exits 0; several workers; a model that cannot load."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time

import httpx
import pytest

from pipeline.serve.cli import main
from tests.helpers import OFFLINE_ENVIRONMENT, REPO_ROOT
from tests.serve.helpers import free_port, start_server


def one_line_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_a_missing_extra_is_named_with_its_install_command(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as when it is not installed: import fails
    message = one_line_error(capsys, ["--model", str(tmp_path)])
    assert (
        message
        == "error: uvicorn is not installed: it comes with the optional extra 'serve' (pip install -e \".[serve]\")"
    )


def test_a_wrong_model_or_setting_is_said_before_the_server_starts(capsys, served_run, tmp_path):
    assert (
        one_line_error(capsys, ["--model", str(tmp_path / "nowhere")])
        == f"error: model not found: {tmp_path / 'nowhere'}"
    )
    message = one_line_error(capsys, ["--model", str(served_run), "--max-wait-ms", "-1"])
    assert message == "error: --max-wait-ms (PIPELINE_SERVE_MAX_WAIT_MS) must be 0 or more, got -1.0"


@pytest.mark.slow  # its own server subprocess: 15 s
def test_sigterm_lets_the_request_in_flight_finish_then_exits_0(served_run, tmp_path):
    """The request waits 3 s for company in its batch (--max-wait-ms): SIGTERM arrives meanwhile."""
    server = start_server(served_run, tmp_path / "server.log", "--threads", "1", "--max-wait-ms", "3000")
    answer = {}

    def ask() -> None:
        answer["response"] = httpx.post(f"{server.url}/predict", json={"texts": ["Stocks fell"]}, timeout=60)
        answer["at"] = time.monotonic()

    asking = threading.Thread(target=ask)
    asking.start()
    deadline = time.monotonic() + 30
    while "pipeline_serve_predict_in_flight 1.0" not in httpx.get(f"{server.url}/metrics").text:
        assert time.monotonic() < deadline, "the request never arrived"
        time.sleep(0.02)
    signalled = time.monotonic()
    assert server.stop() == 0, server.output()
    asking.join(60)
    assert answer["at"] > signalled
    assert answer["response"].status_code == 200, answer["response"].text
    assert [row["label"] is not None for row in answer["response"].json()["rows"]] == [True]
    assert "Traceback" not in server.output()


@pytest.mark.slow  # two worker processes, each importing torch and loading the model
def test_several_workers_serve_and_drain_on_sigterm(served_run, tmp_path):
    server = start_server(served_run, tmp_path / "server.log", "--workers", "2")
    deadline = time.monotonic() + 120
    while server.output().count("pipeline.serve.app: ready:") < 2:
        assert time.monotonic() < deadline, server.output()
        time.sleep(0.1)
    with server.client() as client:
        assert all(client.post("/predict", json={"texts": ["A text"]}).status_code == 200 for _ in range(6))
    assert server.stop() == 0, server.output()
    assert server.output().count("Finished server process") == 2


@pytest.mark.slow  # a server process that imports torch, then fails
def test_a_model_that_cannot_load_ends_the_process_with_status_3_and_one_line(served_run, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(served_run, broken)
    (broken / "model" / "model.safetensors").write_bytes(b"not weights")
    command = [sys.executable, "-m", "pipeline.serve", "--model", str(broken), "--port", str(free_port())]
    environment = {**os.environ, **OFFLINE_ENVIRONMENT, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 3, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and f"cannot serve {broken}: cannot load a sequence-classification model" in errors[0]
    assert "Traceback" not in result.stderr
