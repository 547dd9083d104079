"""The last encoder layer restricted to the [CLS] token (pipeline/models/cls_only.py): same logits, same gradients,
refused where the head reads more, invisible to what is saved; applied by training, stage 4 and prediction."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from transformers import (
    AutoModelForSequenceClassification,
    BertConfig,
    BertForSequenceClassification,
    DistilBertConfig,
    DistilBertForSequenceClassification,
    ElectraConfig,
    ElectraForSequenceClassification,
    LayoutLMConfig,
    LayoutLMForSequenceClassification,
    RobertaConfig,
    RobertaForSequenceClassification,
    RobertaPreLayerNormConfig,
    RobertaPreLayerNormForSequenceClassification,
    XmodConfig,
    XmodForSequenceClassification,
)

from pipeline.models.cls_only import ClsOnlyLayer, last_layer, restore_last_layer, restrict_last_layer_to_cls

SIZES = {"vocab_size": 120, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 48}


def bert(attention: str = "sdpa") -> BertForSequenceClassification:
    config = BertConfig(hidden_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **SIZES)
    model = BertForSequenceClassification(config)
    model.set_attn_implementation(attention)
    return model


def roberta() -> RobertaForSequenceClassification:
    config = RobertaConfig(hidden_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **SIZES)
    return RobertaForSequenceClassification(config)


def layoutlm() -> LayoutLMForSequenceClassification:
    """BERT's layer copied into an encoder-only model whose layers take no encoder_hidden_states."""
    config = LayoutLMConfig(hidden_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **SIZES)
    return LayoutLMForSequenceClassification(config)


def electra() -> ElectraForSequenceClassification:
    config = ElectraConfig(
        hidden_size=32, embedding_size=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **SIZES
    )
    return ElectraForSequenceClassification(config)


def padded_batch(rows: int = 5, length: int = 19) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, SIZES["vocab_size"], (rows, length), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    for row, kept in enumerate([length, 11, 4, 16, 2][:rows]):
        attention_mask[row, kept:] = 0
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def logits_and_gradients(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict]:
    model.train()  # dropout is 0: training mode with deterministic maths
    model.zero_grad()
    logits = model(**batch).logits
    F.cross_entropy(logits, torch.arange(len(logits)) % logits.shape[1]).backward()
    return logits.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(
    "build",
    [bert, lambda: bert("eager"), roberta, electra, layoutlm],
    ids=["bert-sdpa", "bert-eager", "roberta", "electra", "layoutlm"],
)
@pytest.mark.parametrize("padding", [True, False], ids=["padded", "unpadded"])
def test_the_restricted_model_computes_the_same_logits_and_gradients(build, padding):
    torch.manual_seed(0)
    full = build()
    restricted = copy.deepcopy(full)
    assert restrict_last_layer_to_cls(restricted)
    assert isinstance(last_layer(restricted), ClsOnlyLayer) and not isinstance(last_layer(full), ClsOnlyLayer)
    batch = padded_batch()
    if not padding:  # no padding at all: transformers passes no mask to the layers
        batch["attention_mask"] = torch.ones_like(batch["attention_mask"])
    full_logits, full_gradients = logits_and_gradients(full, batch)
    logits, gradients = logits_and_gradients(restricted, batch)
    assert torch.allclose(logits, full_logits, atol=1e-6)
    assert gradients.keys() == full_gradients.keys()
    for name, gradient in gradients.items():
        assert torch.allclose(gradient, full_gradients[name], rtol=1e-4, atol=1e-7), name
    # What the last layer computes now: the first position only.
    hidden = restricted.base_model(**batch).last_hidden_state
    assert hidden.shape == (5, 1, 32)


def test_a_head_that_reads_other_tokens_keeps_the_full_layer():
    class MeanPooled(BertForSequenceClassification):
        def forward(self, input_ids, attention_mask, **kwargs):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
            mask = attention_mask[..., None].float()
            output = copy.copy(super().forward(input_ids=input_ids, attention_mask=attention_mask))
            output.logits = self.classifier((hidden * mask).sum(1) / mask.sum(1))  # (B, C)
            return output

    torch.manual_seed(0)
    model = MeanPooled(bert().config)
    before = model.eval()(**padded_batch()).logits
    assert not restrict_last_layer_to_cls(model)
    assert type(last_layer(model)).__name__ == "BertLayer"
    assert torch.equal(model(**padded_batch()).logits, before)


def test_a_call_that_wants_every_position_runs_the_full_layer():
    torch.manual_seed(0)
    full = bert("eager").eval()
    restricted = copy.deepcopy(full)
    assert restrict_last_layer_to_cls(restricted)
    batch = padded_batch()
    wanted = {"output_hidden_states": True, "output_attentions": True}
    expected, got = full(**batch, **wanted), restricted(**batch, **wanted)
    assert got.hidden_states[-1].shape == (5, 19, 32) and len(got.attentions) == len(expected.attentions) == 2
    assert torch.allclose(got.hidden_states[-1], expected.hidden_states[-1], atol=1e-6)
    assert torch.allclose(got.attentions[-1], expected.attentions[-1], atol=1e-6)


@pytest.mark.parametrize(
    ("build", "why"),
    [
        (
            lambda: RobertaPreLayerNormForSequenceClassification(RobertaPreLayerNormConfig(hidden_size=32, **SIZES)),
            "a LayerNorm before attention",
        ),
        (
            lambda: XmodForSequenceClassification(
                XmodConfig(hidden_size=32, default_language="en_XX", languages=["en_XX"], **SIZES)
            ),
            "a layer called with language ids before the mask",
        ),
        (lambda: BertForSequenceClassification(BertConfig(hidden_size=32, is_decoder=True, **SIZES)), "causal"),
        (
            lambda: RobertaForSequenceClassification(
                RobertaConfig(hidden_size=32, max_position_embeddings=12, **SIZES)
            ),
            "too few positions for the probe batch",
        ),
    ],
    ids=["pre-layernorm", "xmod", "decoder", "short-positions"],
)
def test_layers_that_are_not_berts_post_layernorm_encoder_layer_are_left_alone(build, why):
    torch.manual_seed(0)
    model = build().eval()
    assert not restrict_last_layer_to_cls(model), why
    assert not isinstance(model.base_model.encoder.layer[-1], ClsOnlyLayer)
    single = {"input_ids": torch.randint(5, SIZES["vocab_size"], (1, 7))}
    single["attention_mask"] = torch.ones_like(single["input_ids"])
    assert model(**single).logits.shape == (1, 2)  # one unpadded text still runs


def test_a_pickled_model_loads_with_the_full_layer_and_a_deep_copy_stays_restricted(tmp_path):
    torch.manual_seed(0)
    model = bert().eval()
    reference = model(**padded_batch()).logits
    assert restrict_last_layer_to_cls(model)
    torch.save(model, tmp_path / "model.pt")  # a whole-object pickle, as some users save models
    loaded = torch.load(tmp_path / "model.pt", weights_only=False)
    assert type(last_layer(loaded)).__name__ == "BertLayer"
    assert torch.allclose(loaded(**padded_batch()).logits, reference, atol=1e-6)
    assert isinstance(last_layer(model), ClsOnlyLayer)  # pickling left the model in hand restricted
    copied = copy.deepcopy(model)
    assert isinstance(last_layer(copied), ClsOnlyLayer)
    assert last_layer(copied).attention.self.query.weight is not last_layer(model).attention.self.query.weight
    assert torch.allclose(copied(**padded_batch()).logits, reference, atol=1e-6)


def test_other_layouts_are_left_alone():
    config = DistilBertConfig(vocab_size=120, dim=32, n_layers=2, n_heads=4, hidden_dim=48)
    model = DistilBertForSequenceClassification(config)
    state = copy.deepcopy(model.state_dict())
    assert not restrict_last_layer_to_cls(model)
    assert all(torch.equal(value, state[name]) for name, value in model.state_dict().items())


def test_saving_is_untouched_and_the_full_layer_comes_back(tmp_path):
    torch.manual_seed(0)
    model = bert()
    reference = copy.deepcopy(model).eval()
    assert restrict_last_layer_to_cls(model) and restrict_last_layer_to_cls(model)  # twice: still one swap
    assert type(last_layer(model)).__mro__[2] is type(last_layer(reference))
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert type(last_layer(loaded)).__name__ == "BertLayer"
    batch = padded_batch()
    assert torch.allclose(loaded(**batch).logits, reference(**batch).logits, atol=1e-6)
    restore_last_layer(model)
    assert type(last_layer(model)).__name__ == "BertLayer"
    assert model.eval().base_model(**batch).last_hidden_state.shape == (5, 19, 32)


@pytest.mark.slow  # a whole tiny run (about 10 s): the default tier stays under 5 minutes
def test_training_stage_4_and_prediction_apply_it(tiny_run_config, fresh_accelerate_state):
    from pipeline import finetune
    from pipeline.predict import Predictor

    common = ["train.max_steps=2", "eval.baseline=none", "eval.predict_speed_rows=0"]
    config = tiny_run_config("run.name=cls_only", *common)
    metrics = finetune.run(config)
    assert metrics["training"]["last_layer_cls_only"] is True
    # The prediction path restricts the saved model too, and gives the labels stage 4 gave.
    predictor = Predictor.from_path(config.run_dir, device="cpu")
    assert isinstance(last_layer(predictor.model), ClsOnlyLayer)
    full = finetune.run(tiny_run_config("run.name=full_layer", "model.last_layer_cls_only=false", *common))
    assert full["training"]["last_layer_cls_only"] is False
    assert full["test"]["accuracy"] == pytest.approx(metrics["test"]["accuracy"])
