"""Stage 4's calibration as scored (pipeline.scoring.decide): the temperature is fitted on what is scored (documents
pooled from their windows under `long_text: chunk`), and kept only where it lowers the validation NLL."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from datasets import Dataset
from transformers import BertForSequenceClassification

from pipeline.config.load import load_config
from pipeline.scoring import decide
from pipeline.scoring.calibration import fit_temperature
from pipeline.scoring.decide import calibrate_and_decide, fit_scored_temperature
from pipeline.scoring.evaluation import scored_loss
from pipeline.text.batching import TokenizedRows
from tests.helpers import tiny_bert_config

NAMES = ["World", "Sports", "Business", "Sci/Tech"]
WINDOWS = 4  # windows per document


def chunked(documents: int, seed: int) -> tuple[torch.Tensor, TokenizedRows]:
    """Windows whose logits are loud noise plus a modest push to their document's class: each window alone is
    overconfident (the window-level fit wants T ~ 3.6), but the mean of four windows' probabilities is about right
    (the document-level fit wants T ~ 1.1), so a window-level T raises the documents' NLL, as in issue 40."""
    generator = torch.Generator().manual_seed(seed)
    labels = np.repeat(np.arange(documents) % len(NAMES), WINDOWS)
    logits = torch.randn(len(labels), len(NAMES), generator=generator) * 3.0
    logits[torch.arange(len(labels)), torch.as_tensor(labels)] += 2.5
    split = Dataset.from_dict(
        {
            "input_ids": [[101, 7 + i % 50, 102, 0] for i in range(len(labels))],
            "attention_mask": [[1, 1, 1, 0]] * len(labels),
            "label": labels.tolist(),
            "length": [3] * len(labels),
            "document": np.repeat(np.arange(documents), WINDOWS).tolist(),
        }
    )
    return logits, TokenizedRows(split)


def test_a_chunked_fit_minimises_the_documents_nll_not_the_windows():
    logits, rows = chunked(300, seed=0)
    window_fit = fit_temperature(logits, rows.labels)
    fit = fit_scored_temperature(logits, rows, "mean")
    assert window_fit > 3.0 and fit.temperature == pytest.approx(1.08, abs=0.05)
    assert fit.applied and fit.fitted_on.startswith("documents (the mean") and fit.warning is None
    before = scored_loss(logits, rows)
    assert scored_loss(logits / fit.temperature, rows) <= before
    # The window-level temperature, scored on documents, is worse than none: what issue 40's run folded in.
    assert scored_loss(logits / window_fit, rows) > before + 0.1


def test_a_temperature_that_does_not_lower_the_validation_nll_is_not_applied(monkeypatch, caplog):
    """Whatever the search returns, a T that raises the scored NLL is refused: T stays 1, the reason is kept."""
    logits, rows = chunked(120, seed=1)
    monkeypatch.setattr(decide, "minimise_over_temperature", lambda loss: 1.375)
    fit = fit_scored_temperature(logits, rows, "mean")
    assert fit.temperature == 1.0 and fit.fitted == 1.375 and not fit.applied
    assert "does not lower the validation NLL" in fit.warning and "not applied (temperature 1)" in fit.warning
    assert "Calibration: the fitted temperature 1.375" in caplog.text


def test_calibrating_a_chunked_run_never_raises_its_validation_nll(tmp_path):
    """calibrate_and_decide on windows' logits: the record's validation NLL after is at most before, the temperature
    folded into the saved model is the documents' one, and metrics.json says what it was fitted on."""
    config = load_config(
        None,
        [
            f"run.output_dir={tmp_path}",
            "run.name=chunked",
            "tokenizer.long_text=chunk",
            "tokenizer.max_length=8",
            "tokenizer.chunk_stride=2",
        ],
    )
    rows = {"validation": chunked(200, seed=2)[1], "test": chunked(80, seed=3)[1]}
    validation_logits, test_logits = chunked(200, seed=2)[0], chunked(80, seed=3)[0]
    model = BertForSequenceClassification(tiny_bert_config(200, num_labels=len(NAMES))).eval()
    weight = model.classifier.weight.detach().clone()
    saved = []
    scoring = calibrate_and_decide(
        config,
        validation_logits,
        lambda: test_logits / scoring_temperature(model, weight),
        rows,
        NAMES,
        model,
        lambda model, record: saved.append(record),
        is_main_process=True,
        max_length=8,
    )
    loss = scoring.calibration["loss"]["validation"]
    assert loss["after"] <= loss["before"]
    assert scoring.temperature == pytest.approx(1.1, abs=0.1) == saved[0]["temperature"]
    assert scoring.calibration["applied"] and scoring.calibration["fitted_on"].startswith("documents")
    assert scoring.results["validation"].probabilities.shape == (200, len(NAMES))  # documents, not windows


def scoring_temperature(model: BertForSequenceClassification, weight: torch.Tensor) -> float:
    """The temperature folded into the model's output layer: its weight as trained over its weight now."""
    return float((weight / model.classifier.weight.detach()).mean())
