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
    from transformers import BertConfig, BertForSequenceClassification

    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=bert_tokenizer.vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    path = tmp_path_factory.mktemp("tiny_bert")
    BertForSequenceClassification(config).save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return path


def reset_accelerate() -> None:
    """accelerate keeps process-wide singletons; each in-process run in a test starts from a clean slate."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()


@pytest.fixture()
def fresh_accelerate_state():
    reset_accelerate()
    yield
    reset_accelerate()


MINILM_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "ag_news_minilm.yaml"


def tiny_run_overrides(root: Path, model_dir: Path, train_csv: Path, test_csv: Path) -> list[str]:
    """configs/ag_news_minilm.yaml, pointed at the tiny BERT, a few hundred rows and a private output folder."""
    return [
        f"run.output_dir={root / 'runs'}",
        f"data.train_file={train_csv}",
        f"data.test_file={test_csv}",
        f"data.cache_dir={root / 'cache'}",
        f"tokenizer.name_or_path={model_dir}",
        f"model.name_or_path={model_dir}",
        "data.max_train_samples=400",
        "data.max_eval_samples=200",
        "train.log_every_steps=5",
    ]


@pytest.fixture()
def tiny_run_config(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv, fresh_accelerate_state):
    """Build a PipelineConfig for a tiny run; extra overrides win over the defaults above."""
    from pipeline.config import load_config

    base = tiny_run_overrides(tmp_path, tiny_bert_dir, ag_news_train_csv, ag_news_test_csv)
    return lambda *overrides: load_config(MINILM_CONFIG, base + list(overrides))
