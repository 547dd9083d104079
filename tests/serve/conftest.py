"""The runs the serve tests serve, and the one server process most of them call (started once per session)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

# The serve extra, and the client the tests call the server with; the dev extra installs them.
MISSING = [name for name in ("fastapi", "uvicorn", "prometheus_client", "httpx") if not importlib.util.find_spec(name)]
if MISSING:
    pytest.skip(
        f"{', '.join(MISSING)} not installed: pip install -e '.[serve]' httpx (or '.[dev]')", allow_module_level=True
    )

import httpx  # noqa: E402

from tests.helpers import AG_NEWS_CLASSES, one_torch_thread  # noqa: E402
from tests.serve.helpers import API_KEY, ServerProcess, save_run, start_server  # noqa: E402

SINGLE_TEXT_SETTINGS = "data:\n  text_columns: [title, description]\n  text_separator: ' '\n  unescape_newlines: true\n"
PAIR_SETTINGS = "data:\n  text_columns: [question]\n  text_pair_columns: [passage]\n"
# The served server's limits, small enough for the tests to reach.
MAX_TEXTS, MAX_REQUEST_BYTES = 50, 20_000


@pytest.fixture(scope="module", autouse=True)
def single_thread():
    """The reference predictions run on one thread, as the servers do (--threads 1): the same arithmetic."""
    with one_torch_thread():
        yield


@pytest.fixture(scope="session")
def served_run(tmp_path_factory, bert_tokenizer) -> Path:
    """A multi-class run with thresholds on two classes: its rows carry low_confidence."""
    from pipeline.scoring.thresholds import KIND_FLAG, Decision

    decision = Decision(KIND_FLAG, AG_NEWS_CLASSES, {"World": 0.99, "Sports": 0.99}).to_dict()
    return save_run(tmp_path_factory.mktemp("serve") / "flagged", bert_tokenizer, SINGLE_TEXT_SETTINGS, decision)


@pytest.fixture(scope="session")
def multi_label_run(tmp_path_factory, bert_tokenizer) -> Path:
    from pipeline.scoring.thresholds import KIND_MULTI_LABEL, Decision

    thresholds = dict.fromkeys(AG_NEWS_CLASSES, 0.3)
    decision = {**Decision(KIND_MULTI_LABEL, AG_NEWS_CLASSES, thresholds).to_dict(), "label_separator": "|"}
    return save_run(tmp_path_factory.mktemp("serve") / "multi", bert_tokenizer, SINGLE_TEXT_SETTINGS, decision)


@pytest.fixture(scope="session")
def pair_run(tmp_path_factory, bert_tokenizer) -> Path:
    return save_run(tmp_path_factory.mktemp("serve") / "pairs", bert_tokenizer, PAIR_SETTINGS)


@pytest.fixture(scope="session")
def served(served_run, tmp_path_factory) -> Iterator[ServerProcess]:
    """`python -m pipeline.serve` on served_run, with a key and small limits, for the whole session."""
    log = tmp_path_factory.mktemp("logs") / "served.log"
    options = ["--threads", "1", "--max-texts", str(MAX_TEXTS), "--max-request-bytes", str(MAX_REQUEST_BYTES)]
    server = start_server(served_run, log, *options, api_key=API_KEY)
    yield server
    server.stop()


@pytest.fixture()
def client(served) -> Iterator[httpx.Client]:
    with served.client() as session:
        yield session
