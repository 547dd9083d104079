"""The transfer set and the student's rows: train, plus data.unlabeled_file and augmented copies of the train texts
(Tang et al. 2019) as rows with label -1 (the soft loss alone); every row gets the teacher's logits.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from pipeline.common.errors import DataError
from pipeline.common.io import atomic_write_json
from pipeline.config.reading import PAIR_MARK
from pipeline.config.schema import DataConfig, DistillConfig, PipelineConfig
from pipeline.data.build import build_texts, texts_of
from pipeline.data.folders import is_folder
from pipeline.data.load import LoadedData
from pipeline.data.local import read_table, warn_repeated_headers
from pipeline.data.splits import column_values, duplicate_key
from pipeline.data.text import TextSpec, segments_of
from pipeline.distill.teacher import CACHE_FORMAT, TeacherLabeller, teacher_test_accuracy
from pipeline.predict import ModelSource
from pipeline.run import directory as rundir
from pipeline.text.batching import TokenizedRows
from pipeline.text.tokenization import texts_fingerprint

logger = logging.getLogger(__name__)

TRANSFER_SPLIT = "transfer"
# Label of a transfer row without a gold label: the loss gives it the soft term alone.
NO_LABEL = -1


def read_unlabeled(config: DataConfig) -> list[str]:
    """data.unlabeled_file's texts by the training text rule; an empty text is an error naming the row, or left out
    under `data.incomplete_rows: drop`.

    The file is read in the train file's layout (data.column_names) when it has that many columns, else its first
    row is the header: a file of just the text columns needs no label column.
    """
    path, key = config.unlabeled_file, "data.unlabeled_file"
    if is_folder(path):  # its texts have no classes: a folder of class folders would have them read as unlabelled
        raise DataError(
            f"{key}: {path} is a folder; unlabelled texts are read from a file (CSV, TSV, JSON Lines, Parquet)"
        )
    spec = TextSpec.from_data_config(config)
    attempts = [config.column_names, None] if config.column_names else [None]
    for number, column_names in enumerate(attempts, 1):
        try:
            table = read_table(path, key, config, column_names)
            for column in spec.input_columns:
                table.column(column, key)
            break
        except DataError:
            if number == len(attempts):
                raise
    if len(table.frame) == 0:
        raise DataError(f"{key}: {path} has no data rows")
    warn_repeated_headers(table, "left out")
    if config.incomplete_rows != "drop":
        return build_texts(table, spec)
    texts = texts_of(table, spec)
    kept = [text for text in texts if text]
    if len(kept) < len(texts):
        logger.warning(f"{path}: {len(texts) - len(kept)} empty texts left out (data.incomplete_rows: drop)")
    if not kept:
        raise DataError(f"{key}: every one of the {len(texts)} rows of {path} has an empty text")
    return kept


def augment(texts: Sequence[str], distill: DistillConfig, seed: int, mask_token: str) -> list[tuple[int, str]]:
    """(source row, augmented text) for train.distill.augment_copies seeded copies of every text, but those equal
    to their source."""
    out = []
    for copy in range(distill.augment_copies):
        rng = np.random.default_rng([seed, copy, CACHE_FORMAT])
        for row, text in enumerate(texts):
            # a sentence pair's two texts are each changed, and stay a pair
            changed = PAIR_MARK.join(augment_words(part, distill, rng, mask_token) for part in segments_of(text))
            if changed != text:
                out.append((row, changed))
    return out


def augment_words(text: str, distill: DistillConfig, rng: np.random.Generator, mask_token: str) -> str:
    """One copy of one text by train.distill.augment (words are whitespace-separated)."""
    words = text.split()
    if not words:
        return text
    kind, p = distill.augment, distill.augment_word_probability
    if kind in ("mask", "mask_ngram"):
        words = [mask_token if hit else word for word, hit in zip(words, rng.random(len(words)) < p)]
    elif kind == "dropout":
        kept = [word for word, hit in zip(words, rng.random(len(words)) < p) if not hit]
        words = kept or [words[int(rng.integers(len(words)))]]
    if kind in ("ngram", "mask_ngram") and rng.random() < distill.augment_ngram_probability:
        n = min(int(rng.integers(1, distill.augment_ngram_max + 1)), len(words))
        start = int(rng.integers(len(words) - n + 1))
        words = words[start : start + n]
    return " ".join(words)


def augmented_texts(
    train_texts: Sequence[str], distill: DistillConfig, seed: int, mask_token: str, cache_root: Path
) -> list[tuple[int, str]]:
    """`augment`, cached under data.cache_dir by a hash of the texts, the settings and the seed."""
    fields = ("augment", "augment_copies", "augment_word_probability", "augment_ngram_probability", "augment_ngram_max")
    settings = {field: getattr(distill, field) for field in fields}
    key = hashlib.sha256(json.dumps([CACHE_FORMAT, settings, seed, mask_token], sort_keys=True).encode())
    key.update(texts_fingerprint(train_texts).encode())
    path = Path(cache_root) / rundir.TRANSFER_CACHE_DIR / f"{key.hexdigest()[:24]}.json"
    if path.is_file():
        try:
            return [(int(row), str(text)) for row, text in json.loads(path.read_text(encoding="utf-8"))]
        except (OSError, ValueError, TypeError) as error:
            logger.warning(f"Ignoring unreadable augmentation cache {path} ({error})")
    copies = augment(train_texts, distill, seed, mask_token)
    atomic_write_json(path, copies)
    return copies


def transfer_dataset(config: PipelineConfig, data: LoadedData, mask_token: str) -> tuple[datasets.Dataset, dict]:
    """The rows without gold labels (label -1): data.unlabeled_file's texts (those that repeat a validation or test
    text are dropped: the teacher's view of them would leak into training) and the augmented copies."""
    texts, row_ids, counts = [], [], {"unlabeled": 0, "unlabeled_dropped_as_eval_duplicates": 0, "augmented": 0}
    if config.data.unlabeled_file:
        held_out = {
            duplicate_key(text) for name in ("validation", "test") for text in column_values(data.splits[name], "text")
        }
        for line, text in enumerate(read_unlabeled(config.data), 1):
            if duplicate_key(text) in held_out:
                counts["unlabeled_dropped_as_eval_duplicates"] += 1
                continue
            texts.append(text)
            row_ids.append(f"unlabeled:{line}")
        counts["unlabeled"] = len(texts)
    if config.train.distill.augment != "none":
        train = data.splits["train"]
        cache_root = Path(config.data.cache_dir).expanduser()
        copies = augmented_texts(
            column_values(train, "text"), config.train.distill, config.run.seed, mask_token, cache_root
        )
        train_ids = column_values(train, "row_id")
        texts += [text for _, text in copies]
        row_ids += [f"{config.train.distill.augment}:{train_ids[row]}" for row, _ in copies]
        counts["augmented"] = len(copies)
    features = data.splits["train"].features
    rows = {"text": texts, "label": [NO_LABEL] * len(texts), "row_id": row_ids}
    return datasets.Dataset.from_dict(rows, features=features), counts


def with_transfer_split(config: PipelineConfig, data: LoadedData, mask_token: str | None) -> tuple[dict, dict]:
    """The splits to tokenize: stage 1's, plus the transfer rows when distilling (tokenized to the same length,
    which train alone decides); and the transfer set's counts."""
    if not config.train.distill.teacher:
        return dict(data.splits), {}
    transfer, counts = transfer_dataset(config, data, mask_token or "[MASK]")
    splits = dict(data.splits)
    if len(transfer):
        splits[TRANSFER_SPLIT] = transfer
    return splits, counts


def student_rows(
    config: PipelineConfig, splits: dict, tokenized: Any, labels: list[str], source: ModelSource, counts: dict
) -> tuple[TokenizedRows, dict[str, Any]]:
    """Train (+ transfer) rows with the teacher's logits, and the record metrics.json keeps under `distill`.

    The teacher reads the texts of `splits` (with_transfer_split's): a tokenized split keeps no `text` column, and
    distillation's one row per text (long_text: truncate) makes row i of a tokenized split row i of its split."""
    distill = config.train.distill
    labeller = TeacherLabeller(source, labels, Path(config.data.cache_dir).expanduser(), distill.teacher_batch_size)
    names = ["train"] + ([TRANSFER_SPLIT] if TRANSFER_SPLIT in tokenized else [])
    logits = np.concatenate([labeller.logits(column_values(splits[name], "text")) for name in names])  # (N, K)
    parts = [tokenized[name] for name in names]
    rows = datasets.concatenate_datasets(parts) if len(parts) > 1 else parts[0]
    gold = np.asarray(column_values(tokenized["train"], "label"), dtype=np.int64)
    record = {
        "teacher": distill.teacher,
        "teacher_model_dir": str(source.model_dir),
        "teacher_test_accuracy": teacher_test_accuracy(source),
        "teacher_train_accuracy": float(np.mean(logits[: len(gold)].argmax(axis=1) == gold)) if len(gold) else None,
        "alpha": distill.alpha,
        "temperature": distill.temperature,
        "augment": distill.augment,
        "augment_copies": distill.augment_copies if distill.augment != "none" else 0,
        "unlabeled_file": config.data.unlabeled_file,
        "transfer_set": {"labelled": len(gold), **counts, "total": len(rows)},
        "teacher_logits_from_cache": labeller.misses == 0,
        "teacher_labelling_seconds": labeller.compute_seconds,
        "teacher_rows_per_second": (labeller.computed_rows / labeller.compute_seconds)
        if labeller.computed_rows
        else None,
    }
    return TokenizedRows(rows, teacher_logits=logits), record
