"""build_model(config, labels, tokenizer) -> a transformers PreTrainedModel (a pretrained checkpoint with a new
head, or the from-scratch encoder) and the names of its new parameters; load_classifier for a saved one. Importing
this module registers the encoder with transformers' Auto classes (encoder.py).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from transformers import AutoModelForSequenceClassification, PreTrainedModel, PreTrainedTokenizerBase

from pipeline.config.schema import ConfigError, ModelConfig
from pipeline.models.encoder import EncoderClassifierConfig, EncoderForSequenceClassification
from pipeline.run.model_config import MULTI_LABEL_PROBLEM_TYPE, config_max_positions

__all__ = ["SEGMENTS", "WEIGHTS_DTYPE", "build_model", "eval_logits", "load_classifier", "max_positions"]
__all__ += ["require_segments"]


@torch.no_grad()
def eval_logits(model: nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The model's fp32 logits for `inputs` in eval mode (no dropout), its training mode left as it was."""
    was_training = model.training
    model.eval()
    try:
        return model(**inputs).logits.float()
    finally:
        model.train(was_training)


# Weights are held in fp32 (mixed precision keeps fp32 master weights): transformers 5 would otherwise load an fp16
# or bf16 checkpoint in that dtype.
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
    """The model, and the parameters a pretrained checkpoint did not have (its new head; none for the encoder).
    `multi_label`: a sigmoid per class (problem_type). `pairs`: the encoder gets segment embeddings."""
    id2label = dict(enumerate(labels))
    label2id = {name: index for index, name in id2label.items()}
    problem_type = MULTI_LABEL_PROBLEM_TYPE if multi_label else None  # None: transformers' default, a softmax
    if config.kind != "encoder":  # "pretrained", or its older name "bert"
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
        # The new parameters: missing keys, and mismatched ones (listed as (name, checkpoint shape, model shape)).
        mismatched = {key[0] if isinstance(key, tuple) else key for key in loading.get("mismatched_keys", ())}
        return model, frozenset(loading.get("missing_keys", ())) | mismatched
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
    """ConfigError naming `key` when the model has a single segment embedding (type_vocab_size 1): pairs would fail
    with an index error. A model with none (0: DeBERTa-v2/v3) ignores segment ids and reads pairs by separators."""
    segments = getattr(model.config, "type_vocab_size", SEGMENTS)
    if 0 < segments < SEGMENTS:
        raise ConfigError(
            f"{key}: '{model.config.name_or_path}' has type_vocab_size {segments}, so it cannot tell a pair's second text from its first (data.text_pair_columns); join the two texts instead (list both sides' columns in data.text_columns) or choose a checkpoint pretrained on pairs"
        )


def max_positions(model: PreTrainedModel) -> int | None:
    """How many tokens the model's position table can take (None when the model does not say). RoBERTa-style models
    number real tokens from padding_idx + 1 (514 rows hold 512 tokens): recognised by a position embedding with a
    padding index; with only a config, use config_max_positions."""
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
    return config_max_positions(config)
