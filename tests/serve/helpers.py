"""Starting a real server for the tests: `python -m pipeline.serve` in a subprocess, or the same app under uvicorn on
a thread of the test process (for the model variants, where a process start would cost more than the test). Both
bind 127.0.0.1 on a free port and are called over HTTP with httpx. Tiny runs to serve are built here too."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from pipeline.serve.settings import forward_rows
from tests.helpers import AG_NEWS_CLASSES, OFFLINE_ENVIRONMENT, REPO_ROOT, spread_head, tiny_bert_classifier

API_KEY = "test-key"
# Rows per forward pass of a server on one CPU thread, as every server here is: what a reference prediction takes too,
# so that both cut the same batches and pad them alike.
SERVED_BATCH_SIZE = forward_rows(None, on_cpu=True, threads=1)
# A server process imports torch and transformers before it answers: seconds on a quiet machine, more on a busy one.
START_SECONDS = 180


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class ServerProcess:
    process: subprocess.Popen
    url: str
    log: Path
    api_key: str | None = None

    def client(self, **options: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **options)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, and the exit status once the process has drained and ended."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)


def start_server(model: Path, log: Path, *options: str, api_key: str | None = None) -> ServerProcess:
    """`python -m pipeline.serve --model <model>` on a free port, once /health says ready."""
    port = free_port()
    environment = {**os.environ, **OFFLINE_ENVIRONMENT, "OMP_NUM_THREADS": "1"}
    environment.pop("PIPELINE_SERVE_API_KEY", None)
    if api_key:
        environment["PIPELINE_SERVE_API_KEY"] = api_key  # as the docs advise: out of the process list
    command = [sys.executable, "-m", "pipeline.serve", "--model", str(model), "--port", str(port), *options]
    with open(log, "wb") as handle:
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=environment, stdout=handle, stderr=subprocess.STDOUT)
    server = ServerProcess(process, f"http://127.0.0.1:{port}", log, api_key)
    try:
        wait_until_ready(server.url, lambda: process.poll() is None, server.output)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return server


def is_ready(response: httpx.Response) -> bool:
    return response.status_code == 200


def wait_until_ready(url: str, alive: Any, output: Any = lambda: "", until: Any = is_ready) -> None:
    """Poll /health until `until` holds for its answer (by default: ready)."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        assert alive(), f"the server ended before it was ready:\n{output()}"
        with contextlib.suppress(httpx.TransportError):
            if until(httpx.get(f"{url}/health", timeout=5)):
                return
        time.sleep(0.1)
    raise AssertionError(f"the server was not ready within {START_SECONDS} s:\n{output()}")


@contextlib.contextmanager
def server_in_thread(settings: Any, until: Any = is_ready) -> Iterator[str]:
    """The app for `settings` under uvicorn on a thread of this process; its URL while the block runs."""
    import uvicorn

    from pipeline.serve.app import create_app

    port = free_port()
    config = uvicorn.Config(create_app(settings, exit_on_failure=False), host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(url, thread.is_alive, until=until)
        yield url
    finally:
        server.should_exit = True
        thread.join(60)


# AG News-like rows (id, title, description): the awkward ones first, then generated headlines.
AWKWARD_ROWS = [
    ["001", "NA", "Stocks fell sharply on Wall Street"],
    ["002", "Cup final", 'A late goal, then "extra time", then penalties'],
    ["003", "Multi\nline title", "first line\nsecond line, with a comma"],
    ["004", "Escaped", "A second\\nline as ag_news writes it"],
    ["005", "Ünïcødé — “quotes”", "Café prices rise in Zürich 😀"],
    ["006", "", "Only a description here"],
    ["007", "", ""],
    ["008", "Chip maker", "New processors launched " * 30],
]
TOPICS = ["election results", "football match", "oil prices", "new smartphone", "space launch", "bank merger"]


def news_rows(count: int) -> list[list[str]]:
    rows = [list(row) for row in AWKWARD_ROWS[:count]]
    for index in range(len(rows), count):
        topic = TOPICS[index % len(TOPICS)]
        rows.append([f"{index:03d}", f"Report {index} on {topic}", f"Details about the {topic}, day {index}."])
    return rows


def news_texts(count: int) -> list[str]:
    return [f"{title} {description}".strip() for _, title, description in news_rows(count)]


def save_run(run: Path, tokenizer: Any, settings: str, decision: dict[str, Any] | None = None, **model: Any) -> Path:
    """A finished run of a tiny BERT (its head spread over the news texts): model/, config.yaml with `settings`'
    data section, metrics.json, and model/decision.json when given. `model`: tiny_bert_classifier's options."""
    from pipeline.run.directory import write_decision

    classifier = tiny_bert_classifier(tokenizer, AG_NEWS_CLASSES, **model)
    spread_head(classifier, tokenizer, news_texts(60))
    if decision and decision.get("kind") == "multi_label":
        classifier.config.problem_type = "multi_label_classification"
    classifier.save_pretrained(run / "model")
    tokenizer.save_pretrained(run / "model")
    (run / "config.yaml").write_text(settings)
    metrics = {
        "labels": AG_NEWS_CLASSES,
        "run": {"name": run.name, "model_name_or_path": "/somewhere/minilm", "num_parameters": 1000},
        "test": {"accuracy": 0.5, "macro_f1": 0.4, "num_samples": 8},
        "tokenization": {"max_length": 64},
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    if decision:
        write_decision(run / "model", decision)
    return run


def write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
