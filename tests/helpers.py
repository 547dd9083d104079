"""Plain helpers and constants shared by the tests (no fixtures: those live in conftest.py, which imports these).

Test files import from here (`from tests.helpers import ...`), never from tests.conftest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# ../shared beside the project: the AG News CSVs and the small MiniLM BERT (tests that need them skip without).
SHARED = REPO_ROOT.parent / "shared"
AG_NEWS_DIR = SHARED / "data" / "ag_news"
AG_NEWS_TRAIN_CSV = AG_NEWS_DIR / "train_20k.csv"
AG_NEWS_TEST_CSV = AG_NEWS_DIR / "test.csv"
MINILM_DIR = SHARED / "models" / "minilm-l6-h384-uncased"
VOCAB_FILE = MINILM_DIR / "vocab.txt"

MINILM_CONFIG = REPO_ROOT / "configs" / "ag_news_minilm.yaml"

# Environment variables that keep a test (or a subprocess it starts) off the network.
OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def require(path: Path) -> Path:
    """`path`, or skip the test saying that ../shared is missing."""
    if not path.exists():
        pytest.skip(f"{path} is missing: the shared AG News rows and models live in ../shared beside the project")
    return path


def reset_accelerate() -> None:
    """accelerate keeps process-wide singletons; each in-process run in a test starts from a clean slate."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()


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
