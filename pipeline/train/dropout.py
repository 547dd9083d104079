"""Dropout with a quarter of the random draws, for training on the CPU (`train.fast_dropout`): `use_fast_dropout(model)`.

On the CPU `torch.bernoulli_` draws one random number per element and was a fifth of a training step. Here one
64-bit draw gives four 16-bit integers, and an element is kept when its integer clears a threshold: p is rounded to
a multiple of 1/65536 and the kept elements scaled by the exact 1 / (1 - that), so the expectation is still x. The
draws come from torch's default generator, so a seed and a checkpoint's RNG state reproduce the masks.

sdpa drops attention probabilities inside the fused call, so in training the attention is written out instead
(evaluation still calls sdpa itself).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# The drop probability is a whole number of 1/65536ths: a 16-bit integer per element decides.
LEVELS = 1 << 16
# The attention function's and its mask's name in transformers' registries.
ATTENTION = "sdpa_fast_dropout"


def keep_mask(shape: torch.Size, dropped_levels: int, device: torch.device) -> torch.Tensor:
    """Bool mask of `shape`, True where kept: an element is dropped when its 16-bit integer is among the lowest
    `dropped_levels` of the 65536 values."""
    count = shape.numel()
    words = torch.randint(-(1 << 63), (1 << 63) - 1, ((count + 3) // 4,), dtype=torch.int64, device=device)
    return words.view(torch.int16)[:count].view(shape) >= dropped_levels - LEVELS // 2


def fast_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout of `x` with p rounded to 1/65536; the identity outside training."""
    dropped_levels = round(p * LEVELS) if training else 0
    if dropped_levels == 0:
        return x
    if dropped_levels >= LEVELS:
        return torch.zeros_like(x)
    scale = LEVELS / (LEVELS - dropped_levels)  # 1 / the keep probability: the expectation stays x
    return x * keep_mask(x.shape, dropped_levels, x.device).to(x.dtype).mul_(scale)


class FastDropout(nn.Dropout):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fast_dropout(x, self.p, self.training)


def attention_with_fast_dropout(
    module: nn.Module,
    query: torch.Tensor,  # (B, H, L, d)
    key: torch.Tensor,  # (B, H, S, d)
    value: torch.Tensor,  # (B, H, S, d)
    attention_mask: torch.Tensor | None,  # sdpa's: bool (B or 1, 1, L, S), True = attend; or additive float; or None
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature. Returns ((B, L, H, d), None) as the sdpa function does."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if not module.training or dropout == 0.0 or key.shape[1] != query.shape[1]:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    return written_out_attention(query, key, value, attention_mask, dropout, scaling), None


def written_out_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float,
    scaling: float | None = None,
) -> torch.Tensor:
    """softmax(q k^T * scaling + mask) with fast dropout, times v: (B, H, L, d) inputs -> (B, L, H, d)."""
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling  # (B, H, L, S)
    if attention_mask is not None and attention_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
    elif attention_mask is not None:
        scores = scores + attention_mask
    weights = fast_dropout(F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype), dropout)  # (B, H, L, S)
    return torch.matmul(weights, value).transpose(1, 2).contiguous()  # (B, L, H, d)


def use_fast_dropout(model: nn.Module) -> int:
    """Swap every nn.Dropout of `model` for FastDropout, and a transformers model's sdpa attention for the function
    above. Returns the number of dropout modules swapped."""
    swapped = 0
    for module in model.modules():
        for name, child in module.named_children():
            if type(child) is nn.Dropout:
                setattr(module, name, FastDropout(child.p, child.inplace))
                swapped += 1
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) == "sdpa":
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

        AttentionInterface.register(ATTENTION, attention_with_fast_dropout)
        # Without a mask function of its own name, transformers would build no padding mask at all for it.
        ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, sdpa_mask)
        config._attn_implementation = ATTENTION
    return swapped
