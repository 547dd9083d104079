"""Shared fixtures. Tests never touch the network: the Hub is switched off before anything imports it."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
AG_NEWS_DIR = SHARED / "data" / "ag_news"
MINILM_DIR = SHARED / "models" / "minilm-l6-h384-uncased"
VOCAB_FILE = MINILM_DIR / "vocab.txt"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is missing: the shared AG News rows and models live in ../shared beside the project")
    return path


@pytest.fixture(scope="session")
def vocab_file() -> Path:
    return _require(VOCAB_FILE)


@pytest.fixture(scope="session")
def ag_news_train_csv() -> Path:
    return _require(AG_NEWS_DIR / "train_20k.csv")


@pytest.fixture(scope="session")
def ag_news_test_csv() -> Path:
    return _require(AG_NEWS_DIR / "test.csv")


@pytest.fixture(scope="session")
def bert_tokenizer(vocab_file):
    from transformers import BertTokenizerFast

    return BertTokenizerFast(vocab_file=str(vocab_file), do_lower_case=True)
