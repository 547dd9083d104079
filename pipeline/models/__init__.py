"""build_model(config, labels, tokenizer) -> a transformers PreTrainedModel (a pretrained checkpoint or the encoder)
and the names of its new parameters.

`model.kind: pretrained` (alias `bert`) loads any sequence-classification checkpoint (BERT first of all, also
RoBERTa, DistilBERT, DeBERTa, ...) with a new classification head; `model.kind: encoder` builds the from-scratch
encoder (modeling_encoder.py). Importing this package registers the encoder with transformers' Auto classes, so a
saved run's `model/` loads with `AutoModelForSequenceClassification.from_pretrained` or `transformers.pipeline`
here; elsewhere it loads with `trust_remote_code=True` (the modelling file is saved next to the weights).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import AutoModelForSequenceClassification, PreTrainedModel, PreTrainedTokenizerBase

from pipeline.config.schema import ConfigError, ModelConfig
from pipeline.models.encoder import EncoderClassifierConfig, EncoderForSequenceClassification

# transformers' name for a sigmoid per class (config.json "problem_type").
MULTI_LABEL_PROBLEM_TYPE = "multi_label_classification"


def is_multi_label(config: Any) -> bool:
    """Whether a model config (config.json) scores each class with its own sigmoid."""
    return getattr(config, "problem_type", None) == MULTI_LABEL_PROBLEM_TYPE


def class_names(config: Any) -> list[str]:
    """A model config's class names in id order (config.json id2label)."""
    return [str(config.id2label[index]) for index in range(config.num_labels)]


def to_probabilities(logits: torch.Tensor, multi_label: bool) -> torch.Tensor:
    """(N, K) logits -> fp32 probabilities: a softmax over classes, or a sigmoid per class for a multi-label model
    (config.json problem_type), as transformers' text-classification pipeline reads them."""
    logits = logits.float()
    return torch.sigmoid(logits) if multi_label else logits.softmax(dim=-1)


# Weights are held in fp32: training keeps fp32 master weights under mixed precision, and prediction makes its own
# reduced-precision copy. transformers 5 loads a checkpoint in the dtype its config.json names, so a checkpoint
# saved in fp16 or bf16 (common on the Hub) would otherwise train, and predict on a CPU, in that dtype.
WEIGHTS_DTYPE = torch.float32


def load_classifier(name_or_path: str | Path, **options) -> PreTrainedModel:
    """AutoModelForSequenceClassification.from_pretrained with fp32 weights; `options` pass through."""
    return AutoModelForSequenceClassification.from_pretrained(str(name_or_path), dtype=WEIGHTS_DTYPE, **options)


def build_model(
    config: ModelConfig,
    labels: list[str],
    tokenizer: PreTrainedTokenizerBase,
    multi_label: bool = False,
    pairs: bool = False,
) -> tuple[PreTrainedModel, frozenset[str]]:
    """The model, and the names of the parameters a pretrained checkpoint did not have (its new classification head;
    none for the from-scratch encoder, which is new throughout). `multi_label`: config.json says problem_type
    "multi_label_classification", so that transformers (pipeline, the models' own loss) uses a sigmoid per class.
    `pairs`: the texts are sentence pairs; the encoder gets segment embeddings (a pretrained model has its own)."""
    id2label = dict(enumerate(labels))
    label2id = {name: index for index, name in id2label.items()}
    problem_type = MULTI_LABEL_PROBLEM_TYPE if multi_label else None  # None: transformers' default, a softmax
    if config.kind != "encoder":  # "pretrained", or its older name "bert"
        # The classification head is new (randomly initialised); transformers says so in a warning.
        model, loading = load_classifier(
            config.name_or_path,
            num_labels=len(labels),
            id2label=id2label,
            label2id=label2id,
            **({"problem_type": problem_type} if problem_type else {}),
            # A checkpoint that already has a head for another number of classes gets a new one.
            ignore_mismatched_sizes=True,
            output_loading_info=True,
        )
        return model, _new_parameter_names(loading)
    encoder_config = EncoderClassifierConfig.from_settings(
        config.encoder,
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        id2label=id2label,
        problem_type=problem_type,
        type_vocab_size=SEGMENTS if pairs else 0,
    )
    return EncoderForSequenceClassification(encoder_config), frozenset()


# The segments of a sentence pair: its first and its second text (BERT's token type ids 0 and 1).
SEGMENTS = 2


def require_segments(model: PreTrainedModel, key: str) -> None:
    """A model fed sentence pairs with segment ids must have an embedding for each segment: one with a single row
    (type_vocab_size 1, a checkpoint pretrained on single texts) would fail on the second text's first batch with
    an index error. Raises ConfigError naming `key` and what to do instead. A model with none (type_vocab_size 0:
    DeBERTa-v2/v3, whose tokenizer still gives segment ids) ignores them, and reads pairs by its separator tokens."""
    segments = getattr(model.config, "type_vocab_size", SEGMENTS)
    if 0 < segments < SEGMENTS:
        raise ConfigError(
            f"{key}: '{model.config.name_or_path}' has type_vocab_size {segments}, so it cannot tell a pair's second "
            "text from its first (data.text_pair_columns); join the two texts instead (list both sides' columns in "
            "data.text_columns) or choose a checkpoint pretrained on pairs"
        )


def _new_parameter_names(loading: dict) -> frozenset[str]:
    """Missing keys, and mismatched ones (transformers lists those as (name, checkpoint shape, model shape))."""
    mismatched = {key[0] if isinstance(key, tuple) else key for key in loading.get("mismatched_keys", ())}
    return frozenset(loading.get("missing_keys", ())) | mismatched


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


def max_positions(model: PreTrainedModel) -> int | None:
    """How many tokens the model's position table can take (None when the model does not say).

    RoBERTa-style models (RoBERTa, XLM-R, CamemBERT, Longformer, ...) number real tokens from padding_idx + 1 and
    give padding the position padding_idx, so their table of max_position_embeddings rows (514) holds
    max_position_embeddings - padding_idx - 1 tokens (512). With a model, they are recognised by a position
    embedding that has a padding index (BERT's has none); with only a config (`SimpleNamespace(config=...)`), by
    their model_type.
    """
    config = model.config
    table_size = getattr(config, "max_position_embeddings", None)
    if table_size is None:
        return None
    if hasattr(model, "named_modules"):
        for name, module in model.named_modules():
            if name.endswith("position_embeddings") and isinstance(module, nn.Embedding):
                if module.padding_idx is not None:
                    return int(module.num_embeddings) - int(module.padding_idx) - 1
                return table_size
    pad_token_id = getattr(config, "pad_token_id", None)
    if getattr(config, "model_type", None) in PADDING_OFFSET_MODEL_TYPES and isinstance(pad_token_id, int):
        return table_size - pad_token_id - 1
    return table_size
