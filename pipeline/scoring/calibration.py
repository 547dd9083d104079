"""Temperature scaling (Guo et al. 2017): one T fitted on validation (`fit_temperature`), folded into the model's
output layer (`fold_temperature`), and how far probabilities are from frequencies (`expected_calibration_error`).

T keeps the argmax and only changes confidence. It is fitted by a grid, then a golden-section search on log T (the
NLL of rows is convex in 1/T; that of documents pooled from windows need not be, hence the grid), and stored *in* the model, so that transformers.pipeline, pipeline.predict
and ONNX exports all give calibrated probabilities with no side file to forget. Multi-label models get the same on
their sigmoid logits, measured over every (row, class) probability.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pipeline.models import eval_logits
from pipeline.text.windows import pool_documents

# Equal-width confidence bins of the expected calibration error and the reliability diagram (Guo et al. use 15).
ECE_BINS = 15
# The temperature is searched in [1/1000, 100]; reaching a bound means no minimum (see at_search_bound). A briefly
# trained model may need T ~ 0.04, an overfit one T ~ 10-30; past 100 the scores say next to nothing.
LOG_TEMPERATURE_RANGE = (-math.log(1000.0), math.log(100.0))
SEARCH_ITERATIONS = 60  # golden-section steps: the bracket shrinks by 0.618 each, far below float precision
# Points of the coarse grid on log T that brackets the minimum first: a pooled NLL may have more than one.
GRID_POINTS = 49


def negative_log_likelihood(logits: torch.Tensor, labels: torch.Tensor, temperature: float) -> float:
    """Mean NLL of logits / T: cross-entropy on class ids (N,), or binary cross-entropy per row on (N, C) labels."""
    scaled = logits.double() / temperature  # float64: the NLL is flat near the bounds, float32 would stop short
    if labels.ndim == 2:
        return float(F.binary_cross_entropy_with_logits(scaled, labels.float(), reduction="sum") / len(labels))
    return float(F.cross_entropy(scaled, labels.long()))


def pooled_negative_log_likelihood(
    logits: torch.Tensor,
    document_labels: torch.Tensor | np.ndarray,
    documents: np.ndarray,
    pooling: str,
    temperature: float,
) -> float:
    """Mean NLL of the documents' probabilities pooled from their windows' logits / T: what a chunked run scores.
    `document_labels`: (D,) class ids, or (D, C) multi-hot; `documents`: (R,) each window's document."""
    labels = np.asarray(document_labels)
    multi_label = labels.ndim == 2
    scaled = torch.as_tensor(logits).double() / temperature  # float64, as negative_log_likelihood
    windows = (torch.sigmoid(scaled) if multi_label else scaled.softmax(dim=-1)).numpy()
    pooled = pool_documents(windows, documents, len(labels), pooling, softmax=not multi_label)
    # The clipping of the scored loss (pipeline.scoring.evaluation), so that the fit minimises what is reported.
    clipped = np.clip(pooled, 1e-12, 1 - 1e-7)
    if multi_label:
        return float(-(labels * np.log(clipped) + (1 - labels) * np.log(1 - clipped)).sum(axis=1).mean())
    return float(-np.log(np.clip(pooled[np.arange(len(labels)), labels], 1e-12, None)).mean())


def fit_temperature(logits: torch.Tensor | np.ndarray, labels: torch.Tensor | np.ndarray) -> float:
    """The T > 0 that minimises the validation NLL of logits / T (golden-section search on log T)."""
    logits, labels = torch.as_tensor(logits).float(), torch.as_tensor(labels)
    if len(logits) == 0:
        return 1.0
    return minimise_over_temperature(lambda temperature: negative_log_likelihood(logits, labels, temperature))


def minimise_over_temperature(loss: Callable[[float], float]) -> float:
    """The T in the search range that minimises `loss(T)`: the best point of a grid on log T, refined by a
    golden-section search between its neighbours (the whole range for a convex loss gives the same minimum)."""
    low, high = LOG_TEMPERATURE_RANGE
    grid = np.linspace(low, high, GRID_POINTS)
    best = int(np.argmin([loss(math.exp(log_t)) for log_t in grid]))
    low, high = float(grid[max(best - 1, 0)]), float(grid[min(best + 1, GRID_POINTS - 1)])
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    loss_a, loss_b = loss(math.exp(a)), loss(math.exp(b))
    for _ in range(SEARCH_ITERATIONS):
        if loss_a <= loss_b:
            high, b, loss_b = b, a, loss_a
            a = high - ratio * (high - low)
            loss_a = loss(math.exp(a))
        else:
            low, a, loss_a = a, b, loss_b
            b = low + ratio * (high - low)
            loss_b = loss(math.exp(b))
    return math.exp((low + high) / 2.0)


def at_search_bound(temperature: float) -> bool:
    """Whether a fitted temperature sits at an end of the search range, where the NLL was still falling (a split the
    model separates perfectly, or scores that say nothing about the labels)."""
    log_t, (low, high) = math.log(temperature), LOG_TEMPERATURE_RANGE
    return min(log_t - low, high - log_t) < 1e-3


def reliability_bins(probabilities: np.ndarray, labels: np.ndarray, bins: int = ECE_BINS) -> list[dict]:
    """Per equal-width confidence bin: rows, mean confidence and accuracy (multi-label: mean probability and the
    share of positives over every (row, class) entry). Empty bins are kept (count 0) so that runs line up."""
    confidence, correct = _confidence_and_outcome(probabilities, labels)
    edges = np.linspace(0.0, 1.0, bins + 1)
    # Bin b holds (edges[b], edges[b+1]]; a confidence of exactly 0 goes into the first bin.
    index = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, bins - 1)
    table = []
    for b in range(bins):
        members = index == b
        count = int(members.sum())
        table.append(
            {
                "low": float(edges[b]),
                "high": float(edges[b + 1]),
                "count": count,
                "confidence": float(confidence[members].mean()) if count else None,
                "accuracy": float(correct[members].mean()) if count else None,
            }
        )
    return table


def expected_calibration_error(probabilities: np.ndarray, labels: np.ndarray, bins: int = ECE_BINS) -> float:
    """Sum over bins of (share of entries in the bin) x |accuracy - mean confidence|; 0 is perfectly calibrated."""
    table = reliability_bins(probabilities, labels, bins)
    total = sum(row["count"] for row in table)
    if total == 0:
        return 0.0
    return float(sum(row["count"] / total * abs(row["accuracy"] - row["confidence"]) for row in table if row["count"]))


def _confidence_and_outcome(probabilities: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    probabilities, labels = np.asarray(probabilities, dtype=np.float64), np.asarray(labels)
    if labels.ndim == 2:  # multi-label: every (row, class) probability against the class's presence
        return probabilities.ravel(), (labels > 0.5).ravel().astype(np.float64)
    predicted = probabilities.argmax(axis=1)
    return probabilities.max(axis=1), (predicted == labels).astype(np.float64)


@torch.no_grad()
def fold_temperature(model: nn.Module, temperature: float, check_inputs: dict[str, torch.Tensor] | None = None) -> None:
    """Divide the output layer's weight and bias by T, so that the model computes logits / T. With `check_inputs`,
    a head whose last linear layer is not the logits is refused rather than silently mis-calibrated."""
    num_labels = model.config.num_labels
    # The classification head's last linear layer: the last nn.Linear whose outputs are the model's logits.
    layers = [
        module for module in model.modules() if isinstance(module, nn.Linear) and module.out_features == num_labels
    ]
    if not layers:
        raise RuntimeError(
            f"{type(model).__name__} has no linear layer with {num_labels} outputs to fold a temperature into"
        )
    layer = layers[-1]
    before = eval_logits(model, check_inputs) if check_inputs is not None else None
    layer.weight.div_(temperature)
    if layer.bias is not None:
        layer.bias.div_(temperature)
    if before is not None:
        after = eval_logits(model, check_inputs)
        if not torch.allclose(after, before / temperature, rtol=1e-3, atol=1e-4):
            layer.weight.mul_(temperature)
            if layer.bias is not None:
                layer.bias.mul_(temperature)
            raise RuntimeError(
                f"{type(model).__name__}: scaling its last linear layer does not scale its logits; the temperature cannot be folded into it (set train.calibrate=false)"
            )
