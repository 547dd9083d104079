"""Plain helpers and constants shared by the tests (no fixtures: those live in conftest.py, which imports these).

Test files import from here (`from tests.helpers import ...`), never from tests.conftest.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
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


# Where libraries cache and keep state outside HOME when these are set: unset, so that everything lands under HOME.
HOME_REDIRECTS = ("XDG_CACHE_HOME", "HF_HOME", "HF_MODULES_CACHE", "HF_DATASETS_CACHE")


def run_with_private_home(code: str, home: Path, unset: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """`python -c code` with this checkout importable, run in `home` as HOME (and as its working directory), the
    variables in `unset` removed: what it leaves in `home` is what it would write into a user's home folder."""
    home.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO_ROOT)}
    for name in (*HOME_REDIRECTS, *unset):
        environment.pop(name, None)
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, cwd=home)
    assert result.returncode == 0, result.stderr
    return result


def require(path: Path) -> Path:
    """`path`, or skip the test saying that ../shared is missing."""
    if not path.exists():
        pytest.skip(f"{path} is missing: the shared AG News rows and models live in ../shared beside the project")
    return path


# Folders no output can be written into: one made read-only with chmod, and a path through a regular file.
UNWRITABLE_KINDS = ("read-only folder", "path through a file")


def unwritable_folder(root: Path, kind: str) -> Path:
    """A folder under `root` that nothing can be written into, of a kind in UNWRITABLE_KINDS. chmod does not stop
    root (as the user sweep ran), so the read-only kind skips where a file can still be made in it; a path through a
    file is refused to root too."""
    if kind == "path through a file":
        (root / "somefile.txt").write_text("not a folder\n")
        return root / "somefile.txt" / "out"
    folder = root / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "probe").touch()
    except PermissionError:
        return folder
    (folder / "probe").unlink()
    pytest.skip("chmod does not stop this user's writes (root); the path through a file is the same check")


def selects_gpu_tests(mark_expression: str) -> bool:
    """Whether `pytest -m <expression>` selects gpu-marked tests and nothing else (`gpu`, `gpu and not slow`), read by
    pytest's own parser: `slow or gpu` would show the GPU to the CPU tiers' exactness tests too."""
    from _pytest.mark.expression import Expression  # pytest's -m parser; no public name for it

    if not mark_expression.strip():
        return False
    expression = Expression.compile(mark_expression)

    def selects(*marks: str) -> bool:
        return expression.evaluate(lambda name, **_: name in marks)

    return selects("gpu") and not selects() and not selects("slow")


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """PyTorch on one thread inside the block: the tests' matrices are tiny and gain nothing from intra-op threads,
    and on a busy 2-core machine the threads' hand-offs dominate (a second one can cost 20x, never gains)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


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
        # MLflow's SQLite store costs a minute to create on a busy 2-core CPU: the tracker tests cover it (slow).
        "train.report_to=[tensorboard]",
        # A tiny model loses to the TF-IDF baseline, so `auto` would keep the ensemble: these runs check the model's own
        # outputs, and tests/scoring/test_ensemble.py checks the ensemble's.
        "eval.ensemble=none",
    ]


AG_NEWS_CLASSES = ["World", "Sports", "Business", "Sci/Tech"]


def multi_label_overrides(root: Path, train_csv: Path, test_csv: Path) -> list[str]:
    """tiny_run_overrides' data as a multi-label task: of every three AG News rows, the first stays one document
    with its class, the other two become one document with both classes (one if they share it). JSON Lines with a
    list column; the class names stay those of configs/ag_news_minilm.yaml."""
    import csv
    import json

    overrides = ["data.task=multi_label", "data.file_format=jsonl", "data.column_names=null"]
    overrides += ["data.text_columns=[text]", "data.label_column=labels", "data.label_index_base=0"]
    for split, source in (("train", train_csv), ("test", test_csv)):
        with open(source, newline="", encoding="utf-8") as handle:
            rows = [
                (f"{title} {description}", AG_NEWS_CLASSES[int(index) - 1])
                for index, title, description in csv.reader(handle)
                if index != "class_index"
            ]
        documents = []
        for start in range(0, len(rows) - 2, 3):
            (text, label), (text_a, label_a), (text_b, label_b) = rows[start : start + 3]
            documents.append({"text": text, "labels": [label]})
            documents.append({"text": f"{text_a} {text_b}", "labels": sorted({label_a, label_b})})
        path = root / f"multi_label_{split}.jsonl"
        path.write_text("".join(json.dumps(document) + "\n" for document in documents), encoding="utf-8")
        overrides.append(f"data.{split}_file={path}")
    return overrides


def tiny_bert_config(vocab_size: int, **overrides):
    """The tests' tiny BERT: hidden size 32, 2 layers of 2 heads; `overrides` are other BertConfig fields."""
    from transformers import BertConfig

    settings = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
    return BertConfig(vocab_size=vocab_size, **{**settings, **overrides})


def tiny_bert_classifier(
    tokenizer, labels: Sequence[str], layers: int = 2, positions: int = 512, seed: int = 0, segments: int = 2
):
    """A random BERT classifier of hidden size 32 over the tokenizer's vocabulary, naming `labels` (in eval mode),
    `positions` its longest input, `segments` its segment embeddings (type_vocab_size): the smallest model that every
    path (prediction, export, windows) treats as a real one."""
    import torch
    from transformers import BertForSequenceClassification

    config = tiny_bert_config(
        tokenizer.vocab_size,
        num_hidden_layers=layers,
        max_position_embeddings=positions,  # BERT's 512 unless a test needs a smaller cap
        type_vocab_size=segments,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={name: index for index, name in enumerate(labels)},
    )
    torch.manual_seed(seed)
    return BertForSequenceClassification(config).eval()


def spread_head(model, tokenizer, texts: Sequence[str]) -> None:
    """A random BERT pools nearly the same vector for every text, so a random head gives one class to all rows.

    Centre the head on the pooled vectors of sample texts and widen it: the tiny model then predicts all four
    classes with clear margins, which makes label comparisons meaningful. The widening (~1000x) magnifies float
    rounding too, so probabilities are compared to 1e-3 where other batch shapes are involved.
    """
    import torch

    encoded = tokenizer(list(texts), padding=True, return_tensors="pt")
    with torch.no_grad():
        pooled = model.bert(**encoded).pooler_output  # (N, 32)
        centred = pooled - pooled.mean(dim=0)
        weight = torch.randn(4, pooled.shape[1]) * (3.0 / centred.std(dim=0).mean() / pooled.shape[1] ** 0.5)
        model.classifier.weight.copy_(weight)
        model.classifier.bias.copy_(-(pooled.mean(dim=0) @ weight.T))
