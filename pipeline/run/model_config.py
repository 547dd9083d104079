"""What a saved model's config.json says, read without transformers: its class names, its head (a softmax, or a
sigmoid per class) and how many tokens its position table takes. Prediction on an export needs no more, so it
never imports transformers (about 2 s) or a model class. The rules take a transformers config as well: the same
attribute names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.run.directory import MODEL_CONFIG_FILE
from pipeline.run.record import RunDirError

# transformers' name for a sigmoid per class (config.json "problem_type").
MULTI_LABEL_PROBLEM_TYPE = "multi_label_classification"

# transformers architectures whose position ids start after the padding index (create_position_ids_from_input_ids),
# for callers that have only a config (ONNX prediction); with the model at hand its modules are read instead.
PADDING_OFFSET_MODEL_TYPES = frozenset(
    {
        "roberta",
        "roberta-prelayernorm",
        "xlm-roberta",
        "xlm-roberta-xl",
        "camembert",
        "longformer",
        "data2vec-text",
        "ibert",
        "luke",
        "markuplm",
        "mpnet",
        "xmod",
        "esm",
    }
)


@dataclass(frozen=True)
class ModelConfigFile:
    """The fields of config.json these rules read, under transformers' attribute names."""

    id2label: dict[int, str]
    problem_type: str | None = None
    max_position_embeddings: int | None = None
    pad_token_id: int | None = None
    model_type: str | None = None

    @property
    def num_labels(self) -> int:
        return len(self.id2label)


def read_model_config(model_dir: Path) -> ModelConfigFile:
    """config.json of a saved model; RunDirError naming the file and the key when it cannot be read."""
    path = Path(model_dir) / MODEL_CONFIG_FILE
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RunDirError(f"{path}: cannot read it as JSON: {error}") from None
    if not isinstance(fields, dict) or not isinstance(fields.get("id2label"), dict):
        raise RunDirError(f"{path}: no id2label (the class names of a sequence-classification model)")
    try:
        id2label = {int(index): str(name) for index, name in fields["id2label"].items()}
    except ValueError:
        raise RunDirError(f"{path}: id2label keys must be class indices 0..K-1") from None
    if sorted(id2label) != list(range(len(id2label))):
        raise RunDirError(f"{path}: id2label keys must be class indices 0..K-1, found {sorted(id2label)}")
    return ModelConfigFile(
        id2label,
        fields.get("problem_type"),
        fields.get("max_position_embeddings"),
        fields.get("pad_token_id"),
        fields.get("model_type"),
    )


def is_multi_label(config: Any) -> bool:
    return getattr(config, "problem_type", None) == MULTI_LABEL_PROBLEM_TYPE


def class_names(config: Any) -> list[str]:
    return [str(config.id2label[index]) for index in range(config.num_labels)]


def config_max_positions(config: Any) -> int | None:
    """How many tokens the position table takes, by the config alone (None when it does not say). RoBERTa-style
    models number real tokens from padding_idx + 1 (514 rows hold 512 tokens): known by their model_type."""
    table_size = getattr(config, "max_position_embeddings", None)
    if table_size is None:
        return None
    pad_token_id = getattr(config, "pad_token_id", None)
    if getattr(config, "model_type", None) in PADDING_OFFSET_MODEL_TYPES and isinstance(pad_token_id, int):
        return table_size - pad_token_id - 1
    return table_size


def to_probabilities(logits: np.ndarray, multi_label: bool) -> np.ndarray:
    """(N, K) logits -> (N, K) float32 probabilities: a softmax, or a sigmoid per class for a multi-label model."""
    logits = np.asarray(logits, dtype=np.float32)
    if multi_label:
        return (0.5 * (1.0 + np.tanh(0.5 * logits))).astype(np.float32)  # the sigmoid, with no overflow in exp
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True, initial=-np.inf))
    return (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)
