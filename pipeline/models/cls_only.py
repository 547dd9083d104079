"""The last encoder layer computes only the token the classification head reads: `restrict_last_layer_to_cls(model)`.

A BERT-style classifier reads only the first token of its last layer. Restricted, that layer still takes keys and
values from every position, but the query, attention output and feed-forward block run on the first token alone:
the same logits and gradients for most of that layer's compute saved.

The swap changes the last layer's class only (parameters and state dict are untouched), applies to exactly BERT's
post-LayerNorm layout (BERT, RoBERTa, XLM-R, ELECTRA, ...; not decoders), and is kept only if the logits on two
probe batches stay the same with the restricted path seen running. A call that asks for every position
(`output_hidden_states`, `output_attentions`) or carries a cache runs the full layer.
"""

from __future__ import annotations

import copy
import copyreg
import inspect
import sys

import torch
from torch import nn

from pipeline.models.classifier import eval_logits

# Logits may differ by float rounding only (the matrix products run on fewer rows).
CHECK_RTOL, CHECK_ATOL = 1e-4, 1e-5
# BERT's post-LayerNorm layer, module by module: any other child computes something the restricted forward would skip.
LAYER_CHILDREN = {"attention", "intermediate", "output"}
ATTENTION_CHILDREN = {"self", "output"}
OUTPUT_CHILDREN = {"dense", "LayerNorm", "dropout"}
INTERMEDIATE_CHILDREN = {"dense", "intermediate_act_fn"}
# The leading positional parameters of BertLayer.forward (encoder-only copies such as LayoutLM's stop after the mask).
LAYER_PARAMETERS = ("hidden_states", "attention_mask", "encoder_hidden_states")
# Keyword arguments under which the full layer runs: they want every position, or a cache of every position.
FULL_LAYER_KWARGS = ("output_attentions", "output_hidden_states", "past_key_values", "past_key_value")


class ClsOnlyLayer(nn.Module):
    """Mixed into the last layer's own class: its forward for the first position only. (B, T, H) -> (B, 1, H)."""

    full_layer_class: type[nn.Module]  # the layer's own class, set on each subclass made by the swap

    def forward(  # the signature of BertLayer.forward, as BertEncoder calls it
        self,
        hidden_states: torch.Tensor,  # (B, T, H)
        attention_mask: torch.Tensor | None = None,  # (B, 1, T, T) bool or additive, or None (no padding)
        encoder_hidden_states: torch.Tensor | None = None,
        *args,
        **kwargs,
    ) -> torch.Tensor:
        if encoder_hidden_states is not None or any(kwargs.get(name) for name in FULL_LAYER_KWARGS):
            # passed on as it came: encoder-only layers (LayoutLM's) take no encoder_hidden_states
            given = (encoder_hidden_states, *args) if encoder_hidden_states is not None or args else ()
            return super().forward(hidden_states, attention_mask, *given, **kwargs)
        attention = self.attention.self
        batch, length, _ = hidden_states.shape
        head_size = attention.attention_head_size
        first = hidden_states[:, :1]  # (B, 1, H)
        query = attention.query(first).view(batch, 1, -1, head_size).transpose(1, 2)  # (B, h, 1, d)
        key = attention.key(hidden_states).view(batch, length, -1, head_size).transpose(1, 2)  # (B, h, T, d)
        value = attention.value(hidden_states).view(batch, length, -1, head_size).transpose(1, 2)  # (B, h, T, d)
        if attention_mask is not None and attention_mask.dim() == 4:
            attention_mask = attention_mask[:, :, :1, :]  # (B, 1, 1, T): the first query's row
        context, _ = self._attention_function()(
            attention,
            query,
            key,
            value,
            attention_mask,
            dropout=attention.dropout.p if self.training else 0.0,
            scaling=attention.scaling,
        )  # (B, 1, h, d)
        attended = self.attention.output(context.reshape(batch, 1, -1), first)  # (B, 1, H)
        return self.output(self.intermediate(attended), attended)  # (B, 1, H)

    def __reduce_ex__(self, protocol):
        """Pickled as the full layer: the swapped class is made at run time, so a pickle cannot name it."""
        # What pickle's protocols 0 and 1 write for any object: rebuilt by the standard library alone.
        return copyreg._reconstructor, (self.full_layer_class, object, None), self.__dict__

    def __deepcopy__(self, memo: dict) -> ClsOnlyLayer:
        """A deep copy keeps the restriction (without this, deepcopy would go through `__reduce_ex__` above)."""
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        copied.__setstate__(copy.deepcopy(self.__dict__, memo))
        return copied

    def _attention_function(self):
        """The attention the model is configured with (transformers' registry), as its self-attention calls it."""
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

        eager = sys.modules[self.full_layer_class.__module__].eager_attention_forward
        return ALL_ATTENTION_FUNCTIONS.get_interface(self.attention.self.config._attn_implementation, eager)


def last_layer(model: nn.Module) -> nn.Module | None:
    """The last encoder layer of a BERT-layout model (base_model.encoder.layer[-1]), or None for other layouts."""
    layers = getattr(getattr(getattr(model, "base_model", None), "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
        return None
    layer = layers[-1]
    own_class = getattr(layer, "full_layer_class", type(layer))  # its class before any swap
    return layer if _has_bert_layout(layer, own_class) else None


def _has_bert_layout(layer: nn.Module, own_class: type[nn.Module]) -> bool:
    """Whether `layer` is BERT's post-LayerNorm encoder layer, module by module and in its call signature."""

    def children(module: nn.Module | None) -> set[str]:
        return {name for name, _ in module.named_children()} if isinstance(module, nn.Module) else set()

    attention = getattr(getattr(layer, "attention", None), "self", None)
    needed = ("query", "key", "value", "attention_head_size", "scaling", "dropout", "config")
    if attention is None or not all(hasattr(attention, name) for name in needed):
        return False
    if getattr(attention.config, "is_decoder", False) or getattr(attention.config, "add_cross_attention", False):
        return False  # causal masking, which a single query would not get from sdpa's is_causal
    if children(layer) != LAYER_CHILDREN or children(layer.attention) != ATTENTION_CHILDREN:
        return False
    if not children(layer.attention.output) <= OUTPUT_CHILDREN or not children(layer.output) <= OUTPUT_CHILDREN:
        return False
    if not children(layer.intermediate) <= INTERMEDIATE_CHILDREN:
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in inspect.signature(own_class.forward).parameters.values() if p.kind in positional][1:]
    leading = tuple(names[: len(LAYER_PARAMETERS)])
    if len(leading) < 2 or leading != LAYER_PARAMETERS[: len(leading)]:
        return False
    return hasattr(sys.modules[own_class.__module__], "eager_attention_forward")


def restrict_last_layer_to_cls(model: nn.Module) -> bool:
    """Make the last layer compute the first token only, when the model's layout allows it and its logits on a probe
    batch stay the same; True when done (or already done)."""
    layer = last_layer(model)
    if layer is None:
        return False
    if isinstance(layer, ClsOnlyLayer):
        return True
    original = type(layer)
    restricted = type(f"ClsOnly{original.__name__}", (ClsOnlyLayer, original), {"full_layer_class": original})
    try:
        probes = _probe_batches(model)
        before = [eval_logits(model, probe) for probe in probes]
        layer.__class__ = restricted
        widths = []  # the positions the last layer put out, per probe: 1 when the restricted path ran
        hook = layer.register_forward_hook(lambda module, args, output: widths.append(_width(output)))
        try:
            after = [eval_logits(model, probe) for probe in probes]
        finally:
            hook.remove()
        unchanged = all(torch.allclose(a, b, rtol=CHECK_RTOL, atol=CHECK_ATOL) for a, b in zip(after, before))
    except Exception:  # an architecture whose layer takes other arguments, a probe its positions cannot hold
        layer.__class__ = original
        return False
    if not unchanged or widths != [1] * len(probes):
        layer.__class__ = original  # the head reads more than the first token, or the restricted path did not run
        return False
    return True


def restore_last_layer(model: nn.Module) -> None:
    """Undo `restrict_last_layer_to_cls` (the full last layer again), e.g. before the hidden states are wanted."""
    layer = last_layer(model)
    if isinstance(layer, ClsOnlyLayer):
        layer.__class__ = layer.full_layer_class


def _probe_batches(model: nn.Module) -> list[dict[str, torch.Tensor]]:
    """Two rows of 12 random token ids, the second padded after 7 (a head that pools over positions then gives other
    logits); and one row of 9 without padding."""
    parameter = next(model.parameters())
    vocab = int(getattr(model.config, "vocab_size", 100) or 100)
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(min(5, vocab - 1), vocab, (2, 12), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 7:] = 0
    padded = {"input_ids": input_ids, "attention_mask": attention_mask}
    unpadded = {"input_ids": input_ids[:1, :9], "attention_mask": attention_mask[:1, :9]}
    return [{name: tensor.to(parameter.device) for name, tensor in probe.items()} for probe in (padded, unpadded)]


def _width(output: torch.Tensor | tuple) -> int:
    """Positions in a layer's output (B, T, H) (or the first element of a tuple output)."""
    hidden = output[0] if isinstance(output, tuple) else output
    return hidden.shape[1]
