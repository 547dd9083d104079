"""build_model(config, labels, tokenizer) -> a transformers PreTrainedModel: pretrained BERT or the from-scratch encoder.

Importing this package registers the encoder with transformers' Auto classes, so a saved run's `model/`
loads with `AutoModelForSequenceClassification.from_pretrained` or `transformers.pipeline` either way.
"""

from __future__ import annotations

from transformers import AutoModelForSequenceClassification, PreTrainedModel, PreTrainedTokenizerBase

from pipeline.config import ModelConfig
from pipeline.models.encoder import EncoderClassifierConfig, EncoderForSequenceClassification


def build_model(config: ModelConfig, labels: list[str], tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
    id2label = dict(enumerate(labels))
    label2id = {name: index for index, name in id2label.items()}
    if config.kind == "bert":
        # The classification head is new (randomly initialised); transformers says so in a warning.
        return AutoModelForSequenceClassification.from_pretrained(
            config.name_or_path,
            num_labels=len(labels),
            id2label=id2label,
            label2id=label2id,
            # A checkpoint that already has a head for another number of classes gets a new one.
            ignore_mismatched_sizes=True,
        )
    encoder_config = EncoderClassifierConfig.from_settings(
        config.encoder, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, id2label=id2label
    )
    return EncoderForSequenceClassification(encoder_config)


def max_positions(model: PreTrainedModel) -> int | None:
    """How many positions the model's position table holds (None when the model does not say)."""
    return getattr(model.config, "max_position_embeddings", None)
