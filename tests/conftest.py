"""Shared fixtures (plain helpers and constants are in tests/helpers.py).

Tests never touch the network: the Hub is switched off before anything imports it.
"""

import os

from tests.helpers import OFFLINE_ENVIRONMENT  # pathlib and pytest only: nothing that could reach the Hub

os.environ.update(OFFLINE_ENVIRONMENT)  # HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, TRANSFORMERS_OFFLINE
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pathlib import Path

import pytest
import torch

from tests.helpers import (
    AG_NEWS_TEST_CSV,
    AG_NEWS_TRAIN_CSV,
    MINILM_CONFIG,
    VOCAB_FILE,
    require,
    reset_accelerate,
    selects_gpu_tests,
    tiny_bert_config,
    tiny_run_overrides,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-bf16",
        choices=("native", "on", "off"),
        default="native",
        help="run as if the CPU had native bf16 (on: mixed_precision and --precision auto pick bf16, emulated where "
        "the CPU lacks it) or had none (off); native: as detected. In this process only, not in subprocesses.",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The default and slow tiers run on the CPU, as CI does, even where a GPU is visible: their exactness tests hold
    CPU arithmetic to tight tolerances, and CPU-only levers (fast dropout, thread counts) are part of what they check.
    `pytest -m gpu` keeps the GPU for the tests about it. Set before anything initialises CUDA.

    --cpu-bf16 on|off replaces the CPU probes that pipeline.common.hardware reads, so that one machine runs the tiers
    as a CPU with AVX-512 bf16 (or AMX) would, and as one without: a comparison that holds only on one kind fails."""
    if not selects_gpu_tests(config.option.markexpr):
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if config.option.cpu_bf16 != "native":
        native = config.option.cpu_bf16 == "on"
        torch.cpu._is_avx512_bf16_supported = lambda: native
        torch.cpu._is_amx_tile_supported = lambda: native


@pytest.fixture(scope="session")
def vocab_file() -> Path:
    return require(VOCAB_FILE)


@pytest.fixture(scope="session")
def ag_news_train_csv() -> Path:
    return require(AG_NEWS_TRAIN_CSV)


@pytest.fixture(scope="session")
def ag_news_test_csv() -> Path:
    return require(AG_NEWS_TEST_CSV)


@pytest.fixture(scope="session")
def bert_tokenizer(vocab_file):
    """The real uncased WordPiece vocabulary (30,522 tokens).

    Loaded from the folder: transformers 5 silently ignores BertTokenizerFast(vocab_file=...) and builds a
    five-token vocabulary that maps every word to [UNK].
    """
    from transformers import BertTokenizerFast

    tokenizer = BertTokenizerFast.from_pretrained(str(vocab_file.parent))
    assert tokenizer.vocab_size == 30522, tokenizer.vocab_size
    return tokenizer


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, bert_tokenizer) -> Path:
    """A 2-layer, 64-wide random BERT with the real uncased vocabulary, saved like a Hub checkpoint.

    Dropout is off so that runs which should be equal (gradient accumulation, resume) are equal bit for bit
    up to float rounding, not up to random masks.
    """
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    config = tiny_bert_config(
        bert_tokenizer.vocab_size,
        hidden_size=64,
        intermediate_size=128,
        max_position_embeddings=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    path = tmp_path_factory.mktemp("tiny_bert")
    BertForSequenceClassification(config).save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return path


@pytest.fixture()
def fresh_accelerate_state():
    reset_accelerate()
    yield
    reset_accelerate()


@pytest.fixture()
def tiny_run_config(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv, fresh_accelerate_state):
    """Build a PipelineConfig for a tiny run; extra overrides win over the defaults in tiny_run_overrides."""
    from pipeline.config.load import load_config

    base = tiny_run_overrides(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv)
    return lambda *overrides: load_config(MINILM_CONFIG, base + list(overrides))
