"""Tests for the from-scratch Transformer encoder classifier (pipeline/models/encoder.py).

Every model here is tiny (2 layers, hidden 32, 4 heads) and seeded, so the whole file runs in seconds on CPU.
"""

import dataclasses

import pytest
import torch
import transformers
from torch import nn
from transformers import AutoConfig, AutoModelForSequenceClassification

from pipeline.models.encoder import (
    ARCHITECTURE_FIELDS,
    EncoderClassifierConfig,
    EncoderForSequenceClassification,
    EncoderSettings,
    MultiHeadSelfAttention,
    register_auto_classes,
    scaled_dot_product_attention_math,
    settings_of,
)
from tests.helpers import one_torch_thread

VOCAB = 100
PAD = 0
TINY = dict(hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=64)


@pytest.fixture(autouse=True)
def single_thread():
    with one_torch_thread():
        yield


def count_parameters_by_formula(config: EncoderClassifierConfig) -> int:
    """The exact number of parameters of `EncoderForSequenceClassification(config)`, from the config alone."""
    C, I, L = config.hidden_size, config.intermediate_size, config.num_layers  # noqa: E741 -- the paper's names
    layer_norm = 2 * C  # weight + bias

    embeddings = config.vocab_size * C
    if config.position_embedding == "learned":
        embeddings += config.max_position_embeddings * C  # the sinusoidal table is a buffer, not a parameter
    if config.norm == "post":
        embeddings += layer_norm

    attention = (C * 3 * C + 3 * C) + (C * C + C)  # fused qkv + output projection, with biases
    feed_forward = (C * I + I) + (I * C + C)
    block = attention + feed_forward + 2 * layer_norm

    final_norm = layer_norm if config.norm == "pre" else 0
    head = C * config.num_labels + config.num_labels
    return embeddings + L * block + final_norm + head


def tiny_config(vocab_size=VOCAB, num_labels=4, **overrides) -> EncoderClassifierConfig:
    settings = EncoderSettings(**{**TINY, **overrides})
    id2label = [f"class_{i}" for i in range(num_labels)]
    return EncoderClassifierConfig.from_settings(settings, vocab_size=vocab_size, pad_token_id=PAD, id2label=id2label)


def tiny_model(seed=0, **overrides) -> EncoderForSequenceClassification:
    torch.manual_seed(seed)
    return EncoderForSequenceClassification(tiny_config(**overrides))


def padded_batch(lengths, T, seed=0):
    """Random non-pad token ids with right padding: (B, T) ids and (B, T) 0/1 attention mask."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (len(lengths), T), generator=g)
    mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).long()
    return ids.masked_fill(mask == 0, PAD), mask


# ----------------------------------------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------------------------------------


def test_math_and_sdpa_attention_agree_with_each_other_and_with_torch_mha():
    torch.manual_seed(0)
    settings = EncoderSettings(**TINY, attention_dropout=0.0)
    math_attn = MultiHeadSelfAttention(dataclasses.replace(settings, attention_backend="math")).eval()
    sdpa_attn = MultiHeadSelfAttention(dataclasses.replace(settings, attention_backend="sdpa")).eval()
    sdpa_attn.load_state_dict(math_attn.state_dict())

    x = torch.randn(3, 9, 32)
    _, mask = padded_batch([9, 5, 2], T=9)
    with torch.no_grad():
        y_math, w_math = math_attn(x, mask)
        y_sdpa, w_sdpa = sdpa_attn(x, mask)
    assert w_math is not None and w_sdpa is None  # sdpa path really took the fused kernel
    torch.testing.assert_close(y_sdpa, y_math, atol=1e-5, rtol=1e-5)

    # The reference implementation, given the very same weights: fused in_proj has the same [Q; K; V] row layout.
    mha = nn.MultiheadAttention(32, 4, dropout=0.0, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(math_attn.qkv.weight)
        mha.in_proj_bias.copy_(math_attn.qkv.bias)
        mha.out_proj.weight.copy_(math_attn.out_proj.weight)
        mha.out_proj.bias.copy_(math_attn.out_proj.bias)
        # torch's key_padding_mask is inverted: True means "ignore this key".
        y_ref, w_ref = mha(x, x, x, key_padding_mask=mask == 0, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(y_math, y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(y_sdpa, y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w_math, w_ref, atol=1e-5, rtol=1e-5)


def test_math_attention_function_gives_padded_keys_exactly_zero_weight():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 6, 8) * 5 for _ in range(3))  # large scores: a sloppy mask would leak weight
    _, mask = padded_batch([6, 3], T=6)
    out, weights = scaled_dot_product_attention_math(q, k, v, mask)
    assert out.shape == (2, 4, 6, 8) and weights.shape == (2, 4, 6, 6)
    assert torch.all(weights[1, :, :, 3:] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 6))
    # Changing the values stored at padded keys must not change any output.
    v2 = v.clone()
    v2[1, :, 3:] = 1e4
    torch.testing.assert_close(scaled_dot_product_attention_math(q, k, v2, mask)[0], out, atol=0, rtol=0)


@pytest.mark.parametrize("backend", ["sdpa", "math"])
def test_padded_keys_never_receive_attention_weight(backend):
    model = tiny_model(attention_backend=backend).eval()
    ids, mask = padded_batch([10, 6, 1], T=10)
    with torch.no_grad():
        out = model(ids, attention_mask=mask, output_attentions=True)
    assert len(out.attentions) == 2
    pad_keys = (mask == 0)[:, None, None, :].expand(-1, 4, 10, -1)  # (B, H, T_query, T_key)
    for weights in out.attentions:
        assert weights.shape == (3, 4, 10, 10)
        assert torch.all(weights[pad_keys] == 0), "a padded key received attention weight"
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4, 10))
        assert torch.all(weights[~pad_keys] > 0)


# ----------------------------------------------------------------------------------------------------------------------
# Padding invariance
# ----------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("position_embedding", ["learned", "sinusoidal"])
@pytest.mark.parametrize("pooling", ["cls", "mean"])
@pytest.mark.parametrize("backend", ["sdpa", "math"])
def test_extra_padding_leaves_logits_unchanged(backend, pooling, position_embedding, norm):
    model = tiny_model(attention_backend=backend, pooling=pooling, position_embedding=position_embedding, norm=norm)
    model.eval()
    ids, mask = padded_batch([7, 4, 2], T=7)
    extra = 5
    longer_ids = torch.cat([ids, torch.full((3, extra), PAD)], dim=1)
    longer_mask = torch.cat([mask, torch.zeros(3, extra, dtype=mask.dtype)], dim=1)
    with torch.no_grad():
        logits = model(ids, attention_mask=mask).logits
        longer_logits = model(longer_ids, attention_mask=longer_mask).logits
        unmasked_logits = model(longer_ids).logits  # the same pads treated as real tokens
    torch.testing.assert_close(longer_logits, logits, atol=1e-5, rtol=1e-5)
    # Sanity check that the test can fail: without the mask the pads do change the prediction.
    assert not torch.allclose(unmasked_logits, logits, atol=1e-5, rtol=1e-5)


def test_missing_attention_mask_means_all_tokens_are_real():
    model = tiny_model().eval()
    ids, _ = padded_batch([8, 8], T=8)
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, model(ids, attention_mask=torch.ones_like(ids)).logits)


def test_token_type_ids_are_accepted_and_ignored_and_tuple_output_works():
    model = tiny_model().eval()
    ids, mask = padded_batch([8, 5], T=8)
    labels = torch.tensor([1, 3])
    with torch.no_grad():
        out = model(ids, attention_mask=mask, labels=labels)
        with_types = model(ids, attention_mask=mask, token_type_ids=torch.ones_like(ids), labels=labels)
        as_tuple = model(ids, attention_mask=mask, labels=labels, return_dict=False)
    torch.testing.assert_close(with_types.logits, out.logits, atol=0, rtol=0)
    torch.testing.assert_close(out.loss, nn.functional.cross_entropy(out.logits, labels))
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 2
    torch.testing.assert_close(as_tuple[0], out.loss)


def test_sequence_longer_than_max_positions_is_a_clear_error():
    model = tiny_model(max_position_embeddings=8).eval()
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(torch.ones(1, 9, dtype=torch.long))


# ----------------------------------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------------------------------


def _fixed_batch(n=16, T=12, num_labels=4, seed=1):
    ids, mask = padded_batch([T - (i % 5) for i in range(n)], T=T, seed=seed)
    labels = torch.arange(n) % num_labels
    return ids, mask, labels


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_pre_and_post_ln_both_train(norm):
    model = tiny_model(seed=0, norm=norm)
    ids, mask, labels = _fixed_batch()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def eval_loss():
        model.eval()
        with torch.no_grad():
            return model(ids, attention_mask=mask, labels=labels).loss.item()

    initial = eval_loss()
    for _ in range(30):
        model.train()
        loss = model(ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    final = eval_loss()
    assert final < 0.5 * initial, f"{norm}-LN did not train: loss {initial:.3f} -> {final:.3f}"


def test_tiny_model_fits_a_small_batch_perfectly():
    model = tiny_model(seed=0, dropout=0.0, attention_dropout=0.0, pooling="mean")
    ids, mask, labels = _fixed_batch(seed=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    accuracy = 0.0
    for step in range(100):
        model.train()
        loss = model(ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 9:  # stop as soon as the batch is memorised; a broken model runs all 100 steps and fails
            model.eval()
            with torch.no_grad():
                predictions = model(ids, attention_mask=mask).logits.argmax(-1)
            accuracy = (predictions == labels).float().mean().item()
            if accuracy == 1.0:
                break
    assert accuracy == 1.0, f"training accuracy {accuracy:.2f} after {step + 1} steps"


# ----------------------------------------------------------------------------------------------------------------------
# Save / load / pipeline
# ----------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # defaults: learned positions, pre-LN, cls pooling, sdpa
        {"position_embedding": "sinusoidal", "norm": "post", "pooling": "mean", "attention_backend": "math"},
    ],
    ids=["defaults", "sinusoidal-post-mean-math"],
)
def test_save_and_reload_through_auto_class_predicts_identically(tmp_path, overrides):
    model = tiny_model(seed=3, num_labels=3, **overrides).eval()
    model.config.id2label = {0: "World", 1: "Sports", 2: "Business"}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    model.save_pretrained(tmp_path)

    assert AutoConfig.from_pretrained(tmp_path).model_type == "pipeline_encoder"
    reloaded, info = AutoModelForSequenceClassification.from_pretrained(tmp_path, output_loading_info=True)
    reloaded.eval()
    assert isinstance(reloaded, EncoderForSequenceClassification)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert reloaded.config.id2label == {0: "World", 1: "Sports", 2: "Business"}
    for name, value in overrides.items():
        assert getattr(reloaded.config, name) == value

    ids, mask = padded_batch([9, 4, 6], T=9)
    with torch.no_grad():
        # A non-persistent buffer (the sinusoidal table) that was not rebuilt on load would break this equality.
        assert torch.equal(reloaded(ids, attention_mask=mask).logits, model(ids, attention_mask=mask).logits)


def test_transformers_pipeline_returns_class_names(tmp_path, bert_tokenizer):
    config = tiny_config(vocab_size=bert_tokenizer.vocab_size, num_labels=3)
    config.id2label = {0: "World", 1: "Sports", 2: "Business"}
    config.label2id = {v: k for k, v in config.id2label.items()}
    config.pad_token_id = bert_tokenizer.pad_token_id
    torch.manual_seed(0)
    model = EncoderForSequenceClassification(config).eval()
    model.save_pretrained(tmp_path)
    bert_tokenizer.save_pretrained(tmp_path)

    classifier = transformers.pipeline("text-classification", model=str(tmp_path), device="cpu")
    texts = ["Stocks rallied after the central bank held rates.", "The home side won the cup final in extra time."]
    results = classifier(texts)

    encoded = bert_tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = model(**encoded).logits.argmax(-1).tolist()
    assert [r["label"] for r in results] == [config.id2label[i] for i in expected]
    assert all(0.0 < r["score"] <= 1.0 for r in results)


def test_registration_is_idempotent():
    register_auto_classes()  # a second registration (e.g. a re-import) must not raise
    config = AutoConfig.for_model("pipeline_encoder", **TINY, vocab_size=VOCAB)
    assert isinstance(config, EncoderClassifierConfig)
    assert isinstance(AutoModelForSequenceClassification.from_config(config), EncoderForSequenceClassification)


# ----------------------------------------------------------------------------------------------------------------------
# Config, parameter count, validation
# ----------------------------------------------------------------------------------------------------------------------


def test_config_fields_are_the_pipeline_settings_and_from_settings_maps_them():
    # The modelling file carries its own fields (it may not import the pipeline); they must be exactly
    # EncoderSettings' fields, or a setting would be silently dropped on the way to the model.
    assert tuple(f.name for f in dataclasses.fields(EncoderSettings)) == ARCHITECTURE_FIELDS
    config = EncoderClassifierConfig.from_settings(EncoderSettings(), 50, 0, ["neg", "pos"])
    assert settings_of(config) == EncoderSettings()
    settings = EncoderSettings(**TINY, pooling="mean")
    from_settings = EncoderClassifierConfig.from_settings(settings, 50, 0, {0: "neg", 1: "pos"})
    assert settings_of(from_settings) == settings
    assert from_settings.architecture == dataclasses.asdict(settings)
    assert from_settings.num_labels == 2 and from_settings.label2id == {"neg": 0, "pos": 1}
    with pytest.raises(ValueError, match="unknown \\['depth'\\]"):
        EncoderClassifierConfig.from_settings({**dataclasses.asdict(settings), "depth": 3}, 50, 0, ["a", "b"])
    # Equality must see the architecture (transformers 5's generated __eq__ would only compare its own fields).
    assert EncoderClassifierConfig(hidden_size=32, num_heads=4) != EncoderClassifierConfig()
    assert EncoderClassifierConfig(norm="post") == EncoderClassifierConfig(norm="post")
    # YAML gives `dropout: 0` as an int; it is accepted as the float it means, by the settings and by the config.
    assert EncoderSettings(dropout=0).dropout == 0.0 and isinstance(EncoderSettings(dropout=0).dropout, float)
    assert isinstance(EncoderClassifierConfig(dropout=0).dropout, float)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"norm": "post"},
        {"position_embedding": "sinusoidal", "num_labels": 7},
        {"hidden_size": 48, "num_heads": 6, "num_layers": 3, "intermediate_size": 80, "vocab_size": 37},
        {"hidden_size": 33, "num_heads": 3, "position_embedding": "sinusoidal", "norm": "post", "num_layers": 1},
    ],
)
def test_parameter_count_matches_formula(overrides):
    overrides = dict(overrides)
    vocab_size, num_labels = overrides.pop("vocab_size", VOCAB), overrides.pop("num_labels", 4)
    config = tiny_config(vocab_size=vocab_size, num_labels=num_labels, **overrides)
    model = EncoderForSequenceClassification(config)
    counted = sum(p.numel() for p in model.parameters())
    assert counted == count_parameters_by_formula(config)
    assert model.num_parameters() == counted


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"norm": "middle"}, "norm"),
        ({"pooling": "max"}, "pooling"),
        ({"position_embedding": "rotary"}, "position_embedding"),
        ({"attention_backend": "flash"}, "attention_backend"),
        ({"hidden_size": 30, "num_heads": 4}, "hidden_size"),
        ({"dropout": 1.5}, "dropout"),
        ({"num_layers": "4"}, "num_layers"),
    ],
)
def test_invalid_settings_raise_value_error_naming_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        EncoderSettings(**overrides)
    with pytest.raises(ValueError, match=field):
        EncoderClassifierConfig(**overrides)
