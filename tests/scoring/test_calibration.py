"""Calibration (pipeline.scoring.calibration): the temperature fitted on validation, folded into the saved model so that
every way of loading it gives calibrated probabilities; expected calibration error."""

import numpy as np
import pytest
import torch

from pipeline.scoring.calibration import (
    at_search_bound,
    expected_calibration_error,
    fit_temperature,
    fold_temperature,
    negative_log_likelihood,
    reliability_bins,
)
from pipeline.scoring.decide import trusted_temperature


def overconfident(rows: int = 4000, classes: int = 4, factor: float = 3.0, seed: int = 0):
    """Labels drawn from softmax(z); the 'model' says z * factor: right argmax, probabilities too sharp."""
    generator = torch.Generator().manual_seed(seed)
    true_logits = torch.randn(rows, classes, generator=generator) * 1.5
    labels = torch.multinomial(true_logits.softmax(-1), 1, generator=generator).squeeze(1)
    return true_logits * factor, labels


def test_fitted_temperature_undoes_overconfidence_and_minimises_nll():
    logits, labels = overconfident()
    temperature = fit_temperature(logits, labels)
    assert temperature == pytest.approx(3.0, rel=0.1)
    best = negative_log_likelihood(logits, labels, temperature)
    for other in (temperature * 0.9, temperature * 1.1, 1.0):
        assert best <= negative_log_likelihood(logits, labels, other)


def test_calibration_halves_the_expected_calibration_error_and_keeps_the_argmax():
    logits, labels = overconfident(seed=1)
    temperature = fit_temperature(logits, labels)
    before = logits.softmax(-1).numpy()
    after = (logits / temperature).softmax(-1).numpy()
    assert (before.argmax(1) == after.argmax(1)).all()
    ece_before = expected_calibration_error(before, labels.numpy())
    ece_after = expected_calibration_error(after, labels.numpy())
    assert ece_after <= ece_before / 2
    bins = reliability_bins(after, labels.numpy())
    assert len(bins) == 15 and sum(b["count"] for b in bins) == len(labels)


def test_a_validation_split_separated_perfectly_keeps_temperature_one_and_says_why(caplog):
    """No temperature minimises the NLL there (it falls as T -> 0): the search's bound would make every probability
    0 or 1, so the probabilities stay as trained, with the reason recorded."""
    labels = torch.arange(40) % 4
    logits = torch.nn.functional.one_hot(labels, 4).float() * 2.0  # right, with a margin, on every row
    assert at_search_bound(fit_temperature(logits, labels))
    temperature, warning = trusted_temperature(logits, labels)
    assert temperature == 1.0 and "separates the 40 validation rows (40 of 40 right)" in warning
    assert "bound" in warning and "Calibration:" in caplog.text
    # Chunked long texts: the windows carry their document's label, and the reason counts the texts.
    _, chunked = trusted_temperature(logits, labels, documents=np.arange(40) // 2)
    assert "20 validation texts (40 windows) (40 of 40 windows right)" in chunked
    # Scores that point away from the labels: uniform probabilities fit best, the search runs to its high bound.
    wrong = torch.nn.functional.one_hot((labels + 1) % 4, 4).float() * 2.0
    wrong[:3] = logits[:3]  # three rows right
    _, unrelated = trusted_temperature(wrong, labels)
    assert "carry no sign of the labels" in unrelated and "(3 of 40 right)" in unrelated
    fitted, none = trusted_temperature(*overconfident(seed=2))
    assert none is None and fitted == pytest.approx(3.0, rel=0.1) and not at_search_bound(fitted)


def test_an_under_trained_model_with_logits_near_zero_gets_the_small_temperature_it_needs():
    """A few steps on a small set: right most of the time, but every logit within 0.1 of 0, so probabilities near
    uniform. The NLL's minimum lies near T = 0.04, below 1/20, where the search used to end and give up."""
    logits, labels = overconfident(rows=400, factor=0.04, seed=3)
    temperature, warning = trusted_temperature(logits, labels)
    assert warning is None and temperature == pytest.approx(0.04, rel=0.2)
    assert negative_log_likelihood(logits, labels, temperature) < negative_log_likelihood(logits, labels, 1.0) - 0.3


def test_expected_calibration_error_by_hand():
    probabilities = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.6, 0.4]])
    labels = np.array([0, 1, 0, 0])
    # bin (0.867, 0.933]: confidence 0.9, accuracy 0.5; bin (0.6-): confidence 0.6, accuracy 1.0
    assert expected_calibration_error(probabilities, labels) == pytest.approx(0.5 * 0.4 + 0.5 * 0.4)


def test_multi_label_temperature_uses_binary_cross_entropy():
    generator = torch.Generator().manual_seed(2)
    true_logits = torch.randn(3000, 3, generator=generator)
    labels = (torch.rand(3000, 3, generator=generator) < torch.sigmoid(true_logits)).float()
    assert fit_temperature(true_logits * 0.5, labels) == pytest.approx(0.5, rel=0.15)  # under-confident: T < 1
    ece = expected_calibration_error(torch.sigmoid(true_logits).numpy(), labels.numpy())
    assert ece < 0.05


def test_folded_temperature_reaches_every_loader(tiny_bert_dir, tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    model = AutoModelForSequenceClassification.from_pretrained(tiny_bert_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    with torch.no_grad():
        model.classifier.weight.mul_(40)  # distinct, confident rows
    inputs = tokenizer(["stocks rally on earnings", "a late goal wins the cup"], return_tensors="pt", padding=True)
    inputs = {key: inputs[key] for key in ("input_ids", "attention_mask")}
    with torch.no_grad():
        before = model(**inputs).logits
    fold_temperature(model, 2.5, check_inputs=inputs)
    with torch.no_grad():
        after = model(**inputs).logits
    torch.testing.assert_close(after, before / 2.5, rtol=1e-4, atol=1e-5)
    assert (after.argmax(-1) == before.argmax(-1)).all()

    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    scores = pipeline("text-classification", model=str(tmp_path), top_k=None)(["stocks rally on earnings"])[0]
    by_label = {item["label"]: item["score"] for item in scores}
    expected = (before[0] / 2.5).softmax(-1)
    for index, label in model.config.id2label.items():
        assert by_label[label] == pytest.approx(float(expected[index]), abs=1e-5)


def test_a_head_that_is_not_linear_at_the_end_is_refused():
    class Squashed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.config = type("Config", (), {"num_labels": 2})()
            self.classifier = torch.nn.Linear(4, 2)

        def forward(self, x):
            return type("Output", (), {"logits": torch.tanh(self.classifier(x)) * 5})()

    model = Squashed()
    weight = model.classifier.weight.detach().clone()
    with pytest.raises(RuntimeError, match="cannot be folded"):
        fold_temperature(model, 2.0, check_inputs={"x": torch.randn(3, 4) * 3})
    torch.testing.assert_close(model.classifier.weight.detach(), weight)  # restored
