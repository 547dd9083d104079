"""Stage 4: predictions -> metrics -> files a person reads.

    result = evaluate_split(model, rows, accelerator, batch_size, label_names)
    metrics = result.metrics                      # what metrics.json records for the split

The metrics come from the project's `evaluate` module, pipeline/metrics/classification (scikit-learn underneath).
Under several processes every row is predicted exactly once: rows carry their index through the batches, so
duplicates that padding adds to the last batch are dropped after gathering.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.data_loader import prepare_data_loader

from pipeline.batching import TokenizedRows, evaluation_loader
from pipeline.windows import pool_documents


@dataclass
class EvalResult:
    probabilities: np.ndarray  # (N, C) float32, rows in split order
    labels: np.ndarray  # (N,) gold class ids
    loss: float
    metrics: dict

    @property
    def predictions(self) -> np.ndarray:
        return self.probabilities.argmax(axis=1)


METRIC_DIR = Path(__file__).resolve().parent / "metrics" / "classification"


@functools.cache
def classification_metric():
    """The project's `evaluate` metric module (pipeline/metrics/classification), loaded by path once per process.

    Offline: a local path never touches the Hub. keep_in_memory: nothing is written to evaluate's cache folder, so
    several processes (distributed runs) do not contend for its files.
    """
    import evaluate

    return evaluate.load(str(METRIC_DIR), keep_in_memory=True)


def compute_metrics(labels: np.ndarray, predictions: np.ndarray, label_names: list[str]) -> dict:
    """Accuracy, macro-F1, per-class precision/recall/F1/support and the confusion matrix [true][predicted]."""
    return classification_metric().compute(predictions=predictions, references=labels, label_names=list(label_names))


@torch.inference_mode()
def predict_split(
    model: torch.nn.Module, rows: TokenizedRows, accelerator: Accelerator, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities (N, C) and per-row cross-entropy (N,), in row order, each row exactly once."""
    # Not accelerator.prepare: that would register the loader for checkpointing on every call.
    loader = prepare_data_loader(
        evaluation_loader(rows, batch_size),
        device=accelerator.device,
        num_processes=accelerator.num_processes,
        process_index=accelerator.process_index,
        put_on_device=True,
    )
    was_training = model.training
    model.eval()
    gathered_index, gathered_logits = [], []
    for batch in loader:
        with accelerator.autocast():
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits  # (B, C)
        gathered_index.append(accelerator.gather(batch["row_index"]).cpu())
        gathered_logits.append(accelerator.gather(logits.float()).cpu())
    model.train(was_training)
    row_index = torch.cat(gathered_index).numpy()
    logits = torch.cat(gathered_logits)
    # Keep the first occurrence of each row: the padded last batches repeat rows from the start.
    unique_rows, first = np.unique(row_index, return_index=True)
    if len(unique_rows) != len(rows):
        raise RuntimeError(f"evaluation saw {len(unique_rows)} distinct rows out of {len(rows)}")
    logits = logits[torch.from_numpy(first)]  # (N, C), ordered by row index
    losses = F.cross_entropy(logits, rows.labels, reduction="none")
    return torch.softmax(logits, dim=-1).numpy(), losses.numpy()


def evaluate_split(
    model: torch.nn.Module, rows: TokenizedRows, accelerator: Accelerator, batch_size: int, label_names: list[str],
    pooling: str = "mean",
) -> EvalResult:
    """Metrics over documents: when long texts were chunked, the windows' probabilities are pooled per document
    (after gathering every process's rows, so each document counts once)."""
    probabilities, losses = predict_split(model, rows, accelerator, batch_size)
    labels = rows.labels.numpy()
    if rows.documents is not None:
        probabilities = pool_documents(probabilities, rows.documents, rows.num_documents, pooling)
        labels = rows.document_labels()
        losses = -np.log(np.clip(probabilities[np.arange(len(labels)), labels], 1e-12, None))
    metrics = compute_metrics(labels, probabilities.argmax(axis=1), label_names)
    metrics["loss"] = float(losses.mean())
    return EvalResult(probabilities=probabilities, labels=labels, loss=metrics["loss"], metrics=metrics)
