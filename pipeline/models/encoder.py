"""The from-scratch Transformer encoder as the pipeline uses it.

The modelling code lives in `pipeline/models/modeling_encoder.py`, a self-contained file (torch and transformers
only) that `save_pretrained` copies next to the weights, so a saved model loads with `trust_remote_code=True`
where this package is not installed. This module re-exports it, adds the pipeline's side: `EncoderSettings` (the
YAML section `model.encoder`, where the pipeline's defaults live) and `settings_of`, and registers the architecture
with transformers' Auto classes on import, so that inside the pipeline a saved `model/` loads without
`trust_remote_code`.
"""

from pipeline.config.schema import EncoderSettings
from pipeline.models.modeling_encoder import (
    ARCHITECTURE_FIELDS,
    EncoderClassifierConfig,
    EncoderForSequenceClassification,
    MultiHeadSelfAttention,
    register_auto_classes,
    scaled_dot_product_attention_math,
)

__all__ = [
    "ARCHITECTURE_FIELDS",
    "EncoderClassifierConfig",
    "EncoderForSequenceClassification",
    "EncoderSettings",
    "MultiHeadSelfAttention",
    "register_auto_classes",
    "scaled_dot_product_attention_math",
    "settings_of",
]


def settings_of(config: EncoderClassifierConfig) -> EncoderSettings:
    """The architecture part of a model config as the pipeline's `EncoderSettings` (validated as YAML is)."""
    return EncoderSettings(**config.architecture)


register_auto_classes()
