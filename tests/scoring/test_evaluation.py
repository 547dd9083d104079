"""Stage 4 (pipeline/scoring/evaluation.py): metrics against hand-computed values, predictions in row order."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from datasets import Dataset
from transformers import BertForSequenceClassification

from pipeline.scoring.evaluation import EvalResult, compute_metrics, evaluate_split, predict_logits, row_losses
from pipeline.text.batching import TokenizedRows
from tests.helpers import tiny_bert_config

NAMES = ["World", "Sports", "Business", "Sci/Tech"]

# Worked by hand below: class 3 (Sci/Tech) has one row and is never predicted; class 1 is over-predicted.
LABELS = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])
PREDICTIONS = np.array([0, 0, 1, 1, 1, 2, 2, 0, 1, 1])
# [true][predicted]
CONFUSION = [
    [2, 1, 0, 0],
    [0, 2, 0, 0],
    [1, 1, 2, 0],
    [0, 1, 0, 0],
]
# class: (precision, recall, f1, support)
#   World:    TP 2 of 3 predicted, 2 of 3 true       -> 2/3, 2/3, 2/3
#   Sports:   TP 2 of 5 predicted, 2 of 2 true       -> 2/5, 1,   2*(2/5)/(7/5) = 4/7
#   Business: TP 2 of 2 predicted, 2 of 4 true       -> 1,   1/2, 2*(1/2)/(3/2) = 2/3
#   Sci/Tech: never predicted, 0 of 1 true           -> 0,   0,   0
PER_CLASS = {
    "World": (2 / 3, 2 / 3, 2 / 3, 3),
    "Sports": (2 / 5, 1.0, 4 / 7, 2),
    "Business": (1.0, 1 / 2, 2 / 3, 4),
    "Sci/Tech": (0.0, 0.0, 0.0, 1),
}


def test_metrics_match_hand_computed_values():
    metrics = compute_metrics(LABELS, PREDICTIONS, NAMES)
    assert metrics["accuracy"] == pytest.approx(6 / 10)
    assert metrics["num_samples"] == 10
    # The never-predicted class counts as F1 0 in the macro average: (2/3 + 4/7 + 2/3 + 0) / 4 = 10/21.
    assert metrics["macro_f1"] == pytest.approx(10 / 21)
    assert list(metrics["per_class"]) == NAMES
    for name, (precision, recall, f1, support) in PER_CLASS.items():
        values = metrics["per_class"][name]
        assert values["precision"] == pytest.approx(precision), name
        assert values["recall"] == pytest.approx(recall), name
        assert values["f1"] == pytest.approx(f1), name
        assert values["support"] == support, name
    assert metrics["confusion_matrix"] == CONFUSION


def test_confusion_matrix_rows_are_true_classes_and_columns_predicted():
    metrics = compute_metrics(np.array([3, 3, 3, 0]), np.array([1, 1, 2, 0]), NAMES)
    matrix = np.array(metrics["confusion_matrix"])
    assert matrix[3].tolist() == [0, 2, 1, 0]  # the three Sci/Tech rows, by what they were called
    assert matrix[:, 3].tolist() == [0, 0, 0, 0]  # nothing was called Sci/Tech
    assert matrix.sum(axis=1).tolist() == [metrics["per_class"][name]["support"] for name in NAMES]


def test_metrics_are_plain_json_types_and_cover_every_named_class():
    # Classes 1 and 2 never occur at all: they still get a row, a column and a per-class entry.
    metrics = compute_metrics(np.array([0, 3, 3]), np.array([0, 3, 0]), NAMES)
    assert np.array(metrics["confusion_matrix"]).shape == (4, 4)
    assert metrics["per_class"]["Sports"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert type(metrics["accuracy"]) is float and type(metrics["macro_f1"]) is float
    assert type(metrics["num_samples"]) is int
    assert all(type(value) is int for row in metrics["confusion_matrix"] for value in row)
    assert all(type(entry["support"]) is int for entry in metrics["per_class"].values())


def test_perfect_predictions():
    labels = np.array([0, 1, 2, 3, 2, 1])
    metrics = compute_metrics(labels, labels.copy(), NAMES)
    assert metrics["accuracy"] == 1.0 and metrics["macro_f1"] == 1.0
    assert np.array_equal(np.diag(metrics["confusion_matrix"]), [1, 2, 2, 1])


def test_eval_result_predictions_are_the_argmax():
    probabilities = np.array([[0.1, 0.7, 0.1, 0.1], [0.4, 0.3, 0.2, 0.1], [0.0, 0.1, 0.2, 0.7]], dtype=np.float32)
    result = EvalResult(probabilities=probabilities, labels=np.array([1, 1, 3]), loss=0.5, metrics={})
    assert result.predictions.tolist() == [1, 0, 3]


# ---------------------------------------------------------------------------------------------------------------
# Predictions over a split: rows come back in split order whatever order the batches ran in


def tiny_rows(lengths: list[int], fixed_length: int = 48) -> TokenizedRows:
    generator = np.random.default_rng(0)
    input_ids, attention_mask = [], []
    for length in lengths:
        input_ids.append(generator.integers(1, 100, length).tolist() + [0] * (fixed_length - length))
        attention_mask.append([1] * length + [0] * (fixed_length - length))
    split = Dataset.from_dict(
        {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "label": [i % 4 for i in range(len(lengths))],
            "length": lengths,
        }
    )
    return TokenizedRows(split)


def tiny_model() -> BertForSequenceClassification:
    torch.manual_seed(0)
    config = tiny_bert_config(100, max_position_embeddings=64, num_labels=4)
    model = BertForSequenceClassification(config)
    with torch.no_grad():  # a random BERT pools nearly one vector for all rows; a wide head tells them apart
        model.classifier.weight.mul_(50)
    return model


def test_bf16_evaluation_on_a_cpu_scores_a_bf16_copy_and_leaves_the_model_alone(fresh_accelerate_state):
    from accelerate import Accelerator

    from pipeline.scoring.evaluation import inference_model
    from tests.helpers import reset_accelerate

    rows = tiny_rows([3, 40, 7, 22, 1, 48, 15, 9])
    model = tiny_model()
    exact = predict_logits(model, rows, Accelerator(cpu=True, mixed_precision="no"), batch_size=4).softmax(-1)
    reset_accelerate()  # accelerate keeps one precision per process
    accelerator = Accelerator(cpu=True, mixed_precision="bf16")
    scorer, _ = inference_model(model, accelerator)
    assert scorer is not model and {p.dtype for p in scorer.parameters()} == {torch.bfloat16}
    reduced = predict_logits(model, rows, accelerator, batch_size=4).softmax(-1)
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # training goes on in fp32
    assert 0 < (reduced - exact).abs().max() < 0.05  # bf16 rounding of the same computation


def test_predict_logits_returns_each_row_once_in_row_order(fresh_accelerate_state):
    from accelerate import Accelerator

    lengths = [3, 40, 7, 22, 1, 48, 15, 9, 30, 2, 11]  # the loader runs them longest first
    rows = tiny_rows(lengths)
    model = tiny_model()
    model.train()
    accelerator = Accelerator(cpu=True, mixed_precision="no")
    predicted = predict_logits(model, rows, accelerator, batch_size=4)
    assert model.training  # the mode is restored

    model.eval()
    with torch.no_grad():
        logits = model(input_ids=rows.input_ids.long(), attention_mask=rows.attention_mask.long()).logits
    torch.testing.assert_close(predicted, logits, atol=1e-5, rtol=1e-5)
    expected_losses = F.cross_entropy(logits, rows.labels, reduction="none")
    torch.testing.assert_close(row_losses(predicted, rows.labels), expected_losses, atol=1e-4, rtol=1e-4)
    assert len(set(predicted.argmax(dim=1).tolist())) > 1  # the rows really are told apart

    result = evaluate_split(model, rows, accelerator, 4, NAMES)
    assert result.metrics["num_samples"] == len(lengths)
    assert result.loss == pytest.approx(float(expected_losses.mean()), abs=1e-6) == result.metrics["loss"]
    assert result.labels.tolist() == rows.labels.tolist()
    assert result.metrics == {
        **compute_metrics(rows.labels.numpy(), result.predictions, NAMES),
        "loss": result.metrics["loss"],
    }


def test_a_token_budget_changes_the_batches_not_the_logits(fresh_accelerate_state):
    from accelerate import Accelerator

    from pipeline.scoring.evaluation import predict_logits

    rows = tiny_rows([3, 40, 7, 22, 1, 48, 15, 9, 30, 2, 11])
    model = tiny_model().eval()
    accelerator = Accelerator(cpu=True, mixed_precision="no")
    by_rows = predict_logits(model, rows, accelerator, batch_size=4)
    by_tokens = predict_logits(model, rows, accelerator, batch_size=4, max_tokens=48)  # 1 row of 48, 2 of 24, ...
    assert by_tokens.shape == (11, 4)
    torch.testing.assert_close(by_tokens, by_rows, rtol=1e-5, atol=1e-5)


def test_selection_metric_turns_to_macro_f1_on_imbalanced_classes_and_micro_f1_for_multi_label():
    from pipeline.data.labels import IMBALANCE_RATIO, ClassCounts
    from pipeline.scoring.evaluation import selection_metric

    skewed = ClassCounts(["a", "b"], [int(IMBALANCE_RATIO * 10) + 1, 10], int(IMBALANCE_RATIO * 10) + 11)
    even = ClassCounts(["a", "b"], [int(IMBALANCE_RATIO * 10), 10], int(IMBALANCE_RATIO * 10) + 10)  # at the ratio
    assert selection_metric("auto", multi_label=False, train_counts=skewed) == "macro_f1"
    assert selection_metric("auto", multi_label=False, train_counts=even) == "accuracy"
    assert selection_metric("auto", multi_label=False) == "accuracy"
    assert selection_metric("auto", multi_label=True, train_counts=skewed) == "micro_f1"
    assert selection_metric("accuracy", multi_label=False, train_counts=skewed) == "accuracy"  # asked for: kept
