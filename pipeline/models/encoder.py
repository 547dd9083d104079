"""The from-scratch encoder as the pipeline uses it: re-exports the self-contained modeling_encoder.py, adds
`settings_of`, and registers the architecture with transformers' Auto classes on import (no trust_remote_code here).
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
