"""A BERT-shaped Transformer encoder for sequence classification, written from scratch in PyTorch, wrapped in the
Hugging Face `PreTrainedModel` API.

Self-contained on purpose (torch and transformers only): `save_pretrained` copies this very file next to the
weights, so the folder loads anywhere with `AutoModelForSequenceClassification.from_pretrained(path,
trust_remote_code=True)`. The pipeline imports this same file through `pipeline.models.encoder`.

Shape legend used in the comments:
    B = batch size, T = sequence length, C = hidden size,
    H = number of heads, d_head = C // H, I = intermediate (FFN) size, K = number of labels.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, is_dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModelForSequenceClassification, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

try:
    # transformers >= 5: these wrappers skip tensors that `from_pretrained` has already loaded.
    from transformers import initialization as init
except ImportError:  # transformers 4.x has no such module; plain torch init behaves the same there
    init = nn.init

MODEL_TYPE = "pipeline_encoder"

# The architecture fields, in order (defaults: EncoderClassifierConfig's keywords; the pipeline passes them all).
ARCHITECTURE_FIELDS = (
    "hidden_size",
    "num_layers",
    "num_heads",
    "intermediate_size",
    "dropout",  # on the embeddings and on both residual branches
    "attention_dropout",  # on the attention probabilities
    "max_position_embeddings",
    "position_embedding",  # "learned" | "sinusoidal"
    "norm",  # "pre": x + f(ln(x)) | "post": ln(x + f(x)) (original Transformer / BERT)
    "pooling",  # "cls": first token | "mean": mean over non-pad tokens
    "attention_backend",  # "sdpa": torch's fused kernel | "math": the explicit softmax(QK^T/sqrt(d))V
    "layer_norm_eps",
    "initializer_range",
)
_CHOICES = {
    "position_embedding": ("learned", "sinusoidal"),
    "norm": ("pre", "post"),
    "pooling": ("cls", "mean"),
    "attention_backend": ("sdpa", "math"),
}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_architecture(values: Mapping[str, Any]) -> dict[str, Any]:
    """The architecture fields checked (ValueError naming the field) and normalised (an int dropout -> float)."""
    checked = {}
    for name in ARCHITECTURE_FIELDS:
        value = values[name]
        if name in _CHOICES:
            if value not in _CHOICES[name]:
                options = " or ".join(repr(option) for option in _CHOICES[name])
                raise ValueError(f"{name}: expected {options}, got {value!r}")
        elif name in ("dropout", "attention_dropout"):
            if not _is_number(value) or not 0.0 <= value < 1.0:
                raise ValueError(f"{name}: must be a number in [0, 1), got {value!r}")
            value = float(value)
        elif name in ("layer_norm_eps", "initializer_range"):
            if not _is_number(value) or value <= 0:
                raise ValueError(f"{name}: must be a number > 0, got {value!r}")
            value = float(value)
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: must be a positive integer, got {value!r}")
        checked[name] = value
    if checked["hidden_size"] % checked["num_heads"] != 0:
        raise ValueError(
            f"hidden_size ({checked['hidden_size']}) must be divisible by num_heads ({checked['num_heads']})"
        )
    return checked


class EncoderClassifierConfig(PretrainedConfig):
    """Hugging Face config for `EncoderForSequenceClassification`: the ARCHITECTURE_FIELDS, plus the usual
    `PretrainedConfig` keywords (num_labels, id2label, ...)."""

    model_type = MODEL_TYPE

    def __init__(
        self,
        vocab_size: int = 30522,
        hidden_size: int = 256,
        num_layers: int = 4,
        num_heads: int = 4,
        intermediate_size: int = 1024,
        dropout: float = 0.1,
        attention_dropout: float = 0.1,
        max_position_embeddings: int = 512,
        position_embedding: str = "learned",
        norm: str = "pre",
        pooling: str = "cls",
        attention_backend: str = "sdpa",
        layer_norm_eps: float = 1e-12,
        initializer_range: float = 0.02,
        pad_token_id: int | None = 0,
        # Segment embeddings for sentence pairs (2, as BERT's token_type_ids); 0: single texts only (and older models).
        type_vocab_size: int = 0,
        **kwargs,
    ):
        given = locals()
        architecture = check_architecture({name: given[name] for name in ARCHITECTURE_FIELDS})
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
        if isinstance(type_vocab_size, bool) or not isinstance(type_vocab_size, int) or type_vocab_size < 0:
            raise ValueError(f"type_vocab_size must be an integer >= 0, got {type_vocab_size!r}")
        self.vocab_size = vocab_size
        self.pad_token_id = pad_token_id
        self.type_vocab_size = type_vocab_size
        for name, value in architecture.items():
            setattr(self, name, value)
        super().__init__(**kwargs)

    def __eq__(self, other) -> bool:
        # transformers 5's generated dataclass __eq__ compares only PretrainedConfig's fields, so two different
        # architectures would compare equal: compare all attributes, as PretrainedConfig itself does.
        return isinstance(other, PretrainedConfig) and self.__dict__ == other.__dict__

    __hash__ = None  # mutable, compared by value

    @property
    def architecture(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in ARCHITECTURE_FIELDS}

    @classmethod
    def from_settings(
        cls,
        settings: Any,
        vocab_size: int,
        pad_token_id: int | None,
        id2label: Mapping[int, str] | Sequence[str],
        problem_type: str | None = None,
        type_vocab_size: int = 0,
    ) -> "EncoderClassifierConfig":
        """A config from architecture settings (a dataclass or mapping of exactly ARCHITECTURE_FIELDS), the vocabulary
        size and the label names."""
        values = asdict(settings) if is_dataclass(settings) else dict(settings)
        unknown = sorted(set(values) - set(ARCHITECTURE_FIELDS))
        missing = [name for name in ARCHITECTURE_FIELDS if name not in values]
        if unknown or missing:
            # A field dropped here would be a setting silently ignored.
            raise ValueError(f"settings do not match the encoder's fields: unknown {unknown}, missing {missing}")
        if not isinstance(id2label, Mapping):
            id2label = dict(enumerate(id2label))  # a list of names, index = class id
        id2label = {int(i): str(name) for i, name in id2label.items()}
        label2id = {name: i for i, name in id2label.items()}
        return cls(
            vocab_size=vocab_size,
            pad_token_id=pad_token_id,
            id2label=id2label,
            label2id=label2id,
            problem_type=problem_type,
            type_vocab_size=type_vocab_size,
            **values,
        )


def sinusoidal_table(num_positions: int, dim: int) -> torch.Tensor:
    """The fixed position encodings of "Attention Is All You Need": sin on even, cos on odd channels."""
    position = torch.arange(num_positions, dtype=torch.float32).unsqueeze(1)  # (P, 1)
    # One frequency per (sin, cos) pair, geometrically spaced from 1 to 1/10000.
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))  # (ceil(C/2),)
    angles = position * inv_freq  # (P, ceil(C/2))
    table = torch.zeros(num_positions, dim)  # (P, C)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : dim // 2])  # an odd C has one fewer cos channel than sin channels
    return table


class SinusoidalPositionEmbedding(nn.Module):
    """A fixed (non-trainable) position table with the same call signature as nn.Embedding."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.num_embeddings = num_embeddings  # same attribute names as nn.Embedding
        self.embedding_dim = embedding_dim
        # Non-persistent: a pure function of the config, so it stays out of the checkpoint (_init_weights rebuilds it).
        self.register_buffer("table", sinusoidal_table(num_embeddings, embedding_dim), persistent=False)

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        return self.table[position_ids]  # (T,) -> (T, C)


class Embeddings(nn.Module):
    """token + position (+ segment for pairs) embeddings, then (post-LN only) LayerNorm, then dropout."""

    def __init__(self, config):
        super().__init__()
        self.token = nn.Embedding(config.vocab_size, config.hidden_size)
        if config.position_embedding == "learned":
            self.position = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        else:
            self.position = SinusoidalPositionEmbedding(config.max_position_embeddings, config.hidden_size)
        type_vocab_size = getattr(config, "type_vocab_size", 0)
        self.segment = nn.Embedding(type_vocab_size, config.hidden_size) if type_vocab_size else None
        # Post-LN blocks normalise only after each residual add, so (as BERT) the embeddings' sum is normalised here.
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if config.norm == "post" else None
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        T = input_ids.size(1)
        if self.position.num_embeddings < T:
            raise ValueError(f"sequence length {T} exceeds max_position_embeddings ({self.position.num_embeddings})")
        position_ids = torch.arange(T, device=input_ids.device)  # (T,)
        x = self.token(input_ids) + self.position(position_ids)  # (B, T, C) + (T, C) -> (B, T, C)
        if self.segment is not None and token_type_ids is not None:
            x = x + self.segment(token_type_ids)  # (B, T, C)
        if self.norm is not None:
            x = self.norm(x)  # (B, T, C)
        return self.dropout(x)  # (B, T, C)


def scaled_dot_product_attention_math(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d_head)) V, spelled out. q, k, v: (B, H, T, d_head). key_padding_mask: (B, T), True
    where the key is a real token (HF `attention_mask` convention, NOT nn.MultiheadAttention's inverted one).
    Returns (output (B, H, T, d_head), weights (B, H, T, T) before attention dropout)."""
    d_head = q.size(-1)
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(d_head)  # (B, H, T, d_head) @ (B, H, d_head, T) -> (B, H, T, T)
    if key_padding_mask is not None:
        keep = key_padding_mask.to(torch.bool)[:, None, None, :]  # (B, T) -> (B, 1, 1, T), broadcast over H and queries
        # finfo.min rather than -inf: a padded key still gets exactly 0, and an all-padding row is uniform, not NaN.
        scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)  # (B, H, T, T)
    weights = scores.softmax(dim=-1)  # (B, H, T, T), each query's row sums to 1 over the keys
    dropped = F.dropout(weights, p=dropout_p, training=training)  # (B, H, T, T)
    return dropped @ v, weights  # (B, H, T, T) @ (B, H, T, d_head) -> (B, H, T, d_head)


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention with one fused Q/K/V projection (same layout as nn.MultiheadAttention.in_proj)."""

    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_heads
        self.hidden_size = config.hidden_size
        self.attention_dropout = config.attention_dropout
        self.backend = config.attention_backend
        # One matmul for Q, K and V: rows [0:C) are Q, [C:2C) K, [2C:3C) V.
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.out_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(
        self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None, output_attentions: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        B, T, C = x.shape
        H = self.num_heads
        q, k, v = self.qkv(x).split(C, dim=2)  # (B, T, 3C) -> 3 x (B, T, C)
        # Split the channels into heads and move heads next to batch so each head attends independently.
        q = q.view(B, T, H, C // H).transpose(1, 2)  # (B, H, T, d_head)
        k = k.view(B, T, H, C // H).transpose(1, 2)  # (B, H, T, d_head)
        v = v.view(B, T, H, C // H).transpose(1, 2)  # (B, H, T, d_head)
        dropout_p = self.attention_dropout if self.training else 0.0

        weights = None
        if self.backend == "math" or output_attentions:
            # The fused kernel never materialises the weights, so asking for them forces the explicit path.
            y, weights = scaled_dot_product_attention_math(q, k, v, key_padding_mask, dropout_p, self.training)
        else:
            attn_mask = None
            if key_padding_mask is not None:
                attn_mask = key_padding_mask.to(torch.bool)[:, None, None, :]  # (B, 1, 1, T), True = attend
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)  # (B, H, T, d_head)

        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, H, T, d_head) -> (B, T, H, d_head) -> (B, T, C)
        return self.out_proj(y), weights  # (B, T, C), (B, H, T, T) or None


class FeedForward(nn.Module):
    """Position-wise MLP: Linear -> GELU -> Linear -> dropout."""

    def __init__(self, config):
        super().__init__()
        self.fc_in = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = nn.GELU()  # exact (erf) GELU, as in BERT
        self.fc_out = nn.Linear(config.intermediate_size, config.hidden_size)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.fc_in(x))  # (B, T, C) -> (B, T, I)
        return self.dropout(self.fc_out(x))  # (B, T, I) -> (B, T, C)


class EncoderBlock(nn.Module):
    """Attention and feed-forward sub-layers, each with a residual connection and a LayerNorm: pre-LN (default)
    x = x + f(ln(x)), well-scaled gradients in deep stacks without warm-up; post-LN (BERT) x = ln(x + f(x))."""

    def __init__(self, config):
        super().__init__()
        self.pre_norm = config.norm == "pre"
        self.ln_attn = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attn = MultiHeadSelfAttention(config)
        self.attn_dropout = nn.Dropout(config.dropout)  # residual dropout on the attention branch
        self.ln_ffn = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.ffn = FeedForward(config)  # carries its own residual dropout

    def forward(
        self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None, output_attentions: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.pre_norm:
            a, weights = self.attn(self.ln_attn(x), key_padding_mask, output_attentions)  # (B, T, C)
            x = x + self.attn_dropout(a)  # (B, T, C)
            x = x + self.ffn(self.ln_ffn(x))  # (B, T, C)
        else:
            a, weights = self.attn(x, key_padding_mask, output_attentions)  # (B, T, C)
            x = self.ln_attn(x + self.attn_dropout(a))  # (B, T, C)
            x = self.ln_ffn(x + self.ffn(x))  # (B, T, C)
        return x, weights


class Encoder(nn.Module):
    """Embeddings -> N encoder blocks -> (pre-LN only) final LayerNorm."""

    def __init__(self, config):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList([EncoderBlock(config) for _ in range(config.num_layers)])
        # Pre-LN leaves the residual stream un-normalised after the last block; normalise it once for the head.
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if config.norm == "pre" else None

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        output_attentions: bool = False,
        token_type_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        x = self.embeddings(input_ids, token_type_ids)  # (B, T) -> (B, T, C)
        attentions = []
        for layer in self.layers:
            x, weights = layer(x, attention_mask, output_attentions)  # (B, T, C), (B, H, T, T) or None
            attentions.append(weights)
        if self.final_norm is not None:
            x = self.final_norm(x)  # (B, T, C)
        return x, (tuple(attentions) if output_attentions else None)


class EncoderForSequenceClassification(PreTrainedModel):
    """The from-scratch encoder with a pooled linear classification head, as a Hugging Face model."""

    config_class = EncoderClassifierConfig
    base_model_prefix = "encoder"
    main_input_name = "input_ids"

    def __init__(self, config: EncoderClassifierConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.encoder = Encoder(config)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()  # runs `_init_weights` on every sub-module (transformers' initialisation machinery)

    # The token table under the names transformers knows (distillation's student init, resizing).
    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embeddings.token

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder.embeddings.token = value

    @torch.no_grad()
    def _init_weights(self, module: nn.Module):
        # transformers.initialization skips tensors `from_pretrained` already loaded: only new weights are drawn.
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, SinusoidalPositionEmbedding):
            # Non-persistent buffer: `from_pretrained` builds on the meta device and fills only the checkpoint's tensors.
            init.copy_(module.table, sinusoidal_table(module.num_embeddings, module.embedding_dim))

    def pool(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """(B, T, C) -> (B, C): the first ([CLS]) token, or the mean over non-pad tokens."""
        if self.config.pooling == "cls":
            return hidden[:, 0]  # (B, C)
        mask = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
        summed = (hidden * mask).sum(dim=1)  # (B, C); pad positions contribute 0
        count = mask.sum(dim=1).clamp(min=1.0)  # (B, 1); clamp keeps an all-pad row finite
        return summed / count  # (B, C)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,  # (B, T) segment ids of pairs; ignored without type_vocab_size
        labels: torch.Tensor | None = None,
        output_attentions: bool = False,
        return_dict: bool | None = True,
        **kwargs,  # e.g. Trainer's num_items_in_batch; nothing here needs them
    ) -> SequenceClassifierOutput | tuple:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)  # (B, T): every token is real
        hidden, attentions = self.encoder(input_ids, attention_mask, bool(output_attentions), token_type_ids)
        pooled = self.pool(hidden, attention_mask)  # (B, C)
        logits = self.classifier(self.dropout(pooled))  # (B, K)

        loss = None
        if labels is not None and self.config.problem_type == "multi_label_classification":
            # One sigmoid per class: labels are (B, K) multi-hot floats; the mean BCE as transformers' models have.
            loss = F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))  # scalar
        elif labels is not None:
            loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))  # scalar

        if return_dict is False:
            return tuple(t for t in (loss, logits, attentions) if t is not None)
        return SequenceClassifierOutput(loss=loss, logits=logits, attentions=attentions)


# `save_pretrained` then copies this file next to the weights and writes config.json's `auto_map`, which
# `trust_remote_code=True` reads to load the folder without the package that trained it.
EncoderClassifierConfig.register_for_auto_class("AutoConfig")
EncoderForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")


def register_auto_classes() -> None:
    """Make "pipeline_encoder" checkpoints loadable through the Auto classes in this process without
    trust_remote_code (idempotent; the pipeline calls this on import)."""
    AutoConfig.register(EncoderClassifierConfig.model_type, EncoderClassifierConfig, exist_ok=True)
    AutoModelForSequenceClassification.register(
        EncoderClassifierConfig, EncoderForSequenceClassification, exist_ok=True
    )
