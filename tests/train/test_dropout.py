"""pipeline.train.dropout: masks with the asked drop rate and an unchanged expectation, reproducible from the seed; the
written-out attention equals sdpa's; a model using it evaluates exactly as before and saves a plain config."""

import copy
import json

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from pipeline.train.dropout import ATTENTION, FastDropout, fast_dropout, use_fast_dropout, written_out_attention


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_drop_rate_and_expectation_match_p_and_kept_values_are_scaled(p):
    torch.manual_seed(0)
    x = torch.full((1000, 1000), 2.0)
    dropped = fast_dropout(x, p)
    assert (dropped == 0).float().mean().item() == pytest.approx(p, abs=0.002)  # 1M draws: sd 0.0005
    assert dropped.mean().item() == pytest.approx(2.0, rel=0.005)
    kept = dropped[dropped != 0]
    assert torch.allclose(kept, torch.full_like(kept, 2.0 / (1 - round(p * 65536) / 65536)))
    # Neighbouring elements (the four 16-bit parts of one draw) are not tied together.
    pairs = (dropped.view(-1, 2) == 0).float()
    assert (pairs[:, 0] * pairs[:, 1]).mean().item() == pytest.approx(p * p, abs=0.003)


def test_masks_follow_the_seed_and_evaluation_is_the_identity():
    x = torch.randn(64, 32)
    torch.manual_seed(7)
    first = fast_dropout(x, 0.3)
    torch.manual_seed(7)
    assert torch.equal(fast_dropout(x, 0.3), first)
    assert not torch.equal(fast_dropout(x, 0.3), first)  # the generator moved on
    assert fast_dropout(x, 0.3, training=False) is x and fast_dropout(x, 0.0) is x
    assert torch.equal(fast_dropout(x, 1.0), torch.zeros_like(x))
    assert torch.equal(fast_dropout(x, 1 - 1e-6), torch.zeros_like(x))  # rounds to 1, not to a division by 0
    module = FastDropout(0.3).eval()
    assert module(x) is x


def test_gradient_flows_through_the_kept_elements_only():
    x = torch.randn(200, 50, requires_grad=True)
    torch.manual_seed(1)
    y = fast_dropout(x, 0.2)
    y.sum().backward()
    kept = y.detach() != 0
    assert torch.allclose(x.grad[kept], torch.full_like(x.grad[kept], 65536 / (65536 - 13107)))
    assert torch.all(x.grad[~kept] == 0)


@pytest.mark.parametrize("mask_kind", ["bool", "additive", "none"])
def test_written_out_attention_equals_sdpa_without_dropout(mask_kind):
    torch.manual_seed(0)
    query, key, value = (torch.randn(3, 2, 10, 16) for _ in range(3))  # (B, H, L, d)
    lengths = torch.tensor([10, 6, 3])
    attend = (torch.arange(10)[None, :] < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)
    mask = {"bool": attend, "additive": torch.where(attend, 0.0, -1e9), "none": None}[mask_kind]
    module = torch.nn.Module()
    module.is_causal = False
    expected, _ = sdpa_attention_forward(module, query, key, value, mask, dropout=0.0)
    assert torch.allclose(written_out_attention(query, key, value, mask, 0.0), expected, atol=1e-5)


@pytest.fixture()
def bert_with_dropout():
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    return BertForSequenceClassification(config)


def test_a_model_with_fast_dropout_evaluates_exactly_as_before_and_saves_a_plain_config(bert_with_dropout, tmp_path):
    reference = copy.deepcopy(bert_with_dropout).eval()
    model = bert_with_dropout
    assert use_fast_dropout(model) > 0
    assert not any(type(module) is torch.nn.Dropout for module in model.modules())
    assert model.config._attn_implementation == ATTENTION
    ids = torch.randint(1, 100, (3, 12))
    attention_mask = (torch.arange(12)[None, :] < torch.tensor([12, 7, 4])[:, None]).long()
    model.eval()
    assert torch.equal(
        model(input_ids=ids, attention_mask=attention_mask).logits,
        reference(input_ids=ids, attention_mask=attention_mask).logits,
    )
    # Training draws fresh masks on every call (dropout is on), and padding still cannot leak into real tokens.
    model.train()
    torch.manual_seed(3)
    first = model(input_ids=ids, attention_mask=attention_mask).logits
    assert not torch.equal(first, model(input_ids=ids, attention_mask=attention_mask).logits)
    padded = ids.clone()
    padded[2, 4:] = 5  # other tokens under the padding
    torch.manual_seed(3)
    assert torch.allclose(model(input_ids=padded, attention_mask=attention_mask).logits, first, atol=1e-6)

    model.save_pretrained(tmp_path)
    assert ATTENTION not in json.dumps(json.loads((tmp_path / "config.json").read_text()))


@pytest.mark.slow  # a whole tiny run (about 10 s): the default tier stays under 5 minutes
def test_the_run_records_the_swapped_modules_and_false_keeps_torch_dropout(tiny_run_config, fresh_accelerate_state):
    from pipeline import finetune

    common = ["train.max_steps=2", "eval.baseline=none", "eval.predict_speed_rows=0", "train.calibrate=false"]
    fast = finetune.run(tiny_run_config("run.name=fast_dropout", *common))
    assert fast["training"]["fast_dropout_modules"] > 0
    plain = finetune.run(tiny_run_config("run.name=torch_dropout", "train.fast_dropout=false", *common))
    assert plain["training"]["fast_dropout_modules"] == 0
