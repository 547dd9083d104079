"""Stage 4: predictions -> metrics: `evaluate_split(model, rows, accelerator, batch_size, label_names).metrics`.

The metrics come from the project's `evaluate` module (pipeline/scoring/metrics/classification). Under several
processes every row is predicted exactly once: rows carry their index through the batches, so the duplicates that
padding adds to the last batch are dropped after gathering.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.data_loader import prepare_data_loader
from tqdm.auto import tqdm

from pipeline.common.hardware import runs_weight_copy
from pipeline.data.labels import ClassCounts
from pipeline.data.splits import column_values
from pipeline.run.model_config import to_probabilities
from pipeline.run.predictions import write_test_predictions
from pipeline.scoring.thresholds import KIND_BINARY, KIND_FLAG, Decision, default_decision
from pipeline.text.batching import TokenizedRows, evaluation_loader, model_inputs
from pipeline.text.windows import pool_documents


@dataclass
class EvalResult:
    probabilities: np.ndarray  # (N, C) float32, rows in split order (multi-label: one sigmoid per class)
    labels: np.ndarray  # (N,) gold class ids, or (N, C) multi-hot
    loss: float
    metrics: dict
    # The decision's labels: class ids (N,), or (N, C) booleans for multi-label; None: the argmax.
    predicted: np.ndarray | None = None
    # (N,) bool, multi-class thresholds only: rows whose top probability is below its class's threshold.
    low_confidence: np.ndarray | None = None

    @property
    def predictions(self) -> np.ndarray:
        return self.predicted if self.predicted is not None else self.probabilities.argmax(axis=1)


def selection_metric(setting: str, multi_label: bool, train_counts: ClassCounts | None = None) -> str:
    """train.selection_metric -> the validation metric that picks the best model. auto: micro-F1 for multi-label;
    macro-F1 when train's classes are imbalanced (accuracy would reward the majority classes); else accuracy."""
    if setting != "auto":
        return setting
    if multi_label:
        return "micro_f1"
    return "macro_f1" if train_counts is not None and train_counts.imbalanced else "accuracy"


METRIC_DIR = Path(__file__).resolve().parent / "metrics" / "classification"
METRIC_FILE = f"{METRIC_DIR.name}.py"  # what evaluate.load(METRIC_DIR) runs: the folder's name, .py


@functools.cache
def metric_module() -> ModuleType:
    """The project's `evaluate` metric module, imported from its file, not by `evaluate.load(path)`, which copies it
    into the user's home (a run writes nothing outside the paths it is given)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"pipeline_metric_{METRIC_DIR.name}", METRIC_DIR / METRIC_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def classification_metric(config_name: str = "default"):
    """The metric module's EvaluationModule, as `evaluate.load(path, config_name)` builds it, once per process.
    keep_in_memory: no cache files for several processes to contend for."""
    import evaluate

    module = metric_module()
    (metric_class,) = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, evaluate.EvaluationModule)
        and value.__module__ == module.__name__
    ]
    return metric_class(config_name=config_name, keep_in_memory=True)


def compute_metrics(labels: np.ndarray, predictions: np.ndarray, label_names: list[str]) -> dict:
    """Accuracy, macro-F1, per-class precision/recall/F1/support and the confusion matrix [true][predicted]."""
    return classification_metric().compute(predictions=predictions, references=labels, label_names=list(label_names))


def compute_multilabel_metrics(labels: np.ndarray, predicted: np.ndarray, label_names: list[str]) -> dict:
    """Multi-label metrics of (N, C) gold and predicted indicator rows, by the metric module's function directly
    (`compute` would first encode the rows as Arrow lists, which takes twice as long as the metrics)."""
    gold, guess = np.asarray(labels) > 0.5, np.asarray(predicted).astype(bool)
    return metric_module().multilabel_metrics(gold, guess, list(label_names))


def ranking_areas(probabilities: np.ndarray, labels: np.ndarray, label_names: list[str], multi_label: bool) -> dict:
    """Areas under the ROC and precision-recall (average precision) curves per class (binary: the positive, second
    class only) and their macro mean; a class with no positive or no negative row has none (null)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    probabilities, labels = np.asarray(probabilities), np.asarray(labels)
    indices = range(len(label_names)) if multi_label else [1]
    per_class = {}
    for index in indices:
        positive = labels[:, index] > 0.5 if multi_label else labels == index
        both = 0 < positive.sum() < len(positive)
        scores = probabilities[:, index]
        per_class[str(label_names[index])] = {
            "roc_auc": float(roc_auc_score(positive, scores)) if both else None,
            "average_precision": float(average_precision_score(positive, scores)) if both else None,
        }
    keys = ("roc_auc", "average_precision")
    return {
        "per_class": per_class,
        **{f"macro_{key}": _mean_defined(c[key] for c in per_class.values()) for key in keys},
    }


def _mean_defined(values) -> float | None:
    defined = [value for value in values if value is not None]
    return float(np.mean(defined)) if defined else None


def row_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """(N,) cross-entropy per row, or binary cross-entropy summed over classes for (N, C) multi-hot labels."""
    if labels.ndim == 2:
        return F.binary_cross_entropy_with_logits(logits.float(), labels.float(), reduction="none").sum(dim=1)
    return F.cross_entropy(logits.float(), labels, reduction="none")


def inference_model(
    model: torch.nn.Module, accelerator: Accelerator
) -> tuple[torch.nn.Module, Callable[[], contextlib.AbstractContextManager]]:
    """What scores a split, and the context each batch runs in: bf16 on a CPU, a bf16 copy of the weights (as in
    prediction); otherwise the model itself under accelerate's autocast."""
    if accelerator.mixed_precision == "bf16" and runs_weight_copy(torch.bfloat16, accelerator.device):
        return copy.deepcopy(accelerator.unwrap_model(model)).to(torch.bfloat16).eval(), contextlib.nullcontext
    return model, accelerator.autocast


# Rows below which a scoring pass shows no progress bar: a few seconds' work even on a CPU.
SCORING_PROGRESS_ROWS = 1000


@torch.inference_mode()
def predict_logits(
    model: torch.nn.Module,
    rows: TokenizedRows,
    accelerator: Accelerator,
    batch_size: int,
    max_tokens: int | None = None,
) -> torch.Tensor:
    """Logits (N, C) on the CPU, in row order, each row exactly once (every process gets them all)."""
    # Not accelerator.prepare: that would register the loader for checkpointing on every call.
    loader = prepare_data_loader(
        evaluation_loader(rows, batch_size, max_tokens=max_tokens),
        device=accelerator.device,
        num_processes=accelerator.num_processes,
        process_index=accelerator.process_index,
        put_on_device=True,
    )
    was_training = model.training
    model.eval()
    scorer, precision = inference_model(model, accelerator)
    gathered_index, gathered_logits = [], []
    # leave=False: gone when done, so that the training bar it interrupts reads on.
    progress = tqdm(
        total=len(rows),
        desc="Scoring",
        unit="row",
        leave=False,
        disable=not accelerator.is_local_main_process or len(rows) < SCORING_PROGRESS_ROWS,
        dynamic_ncols=True,
    )
    for batch in loader:
        with precision():
            logits = scorer(**model_inputs(batch)).logits  # (B, C)
        # Batches may differ in size between processes: padded to the largest, the padding's row index is -1.
        row_index = accelerator.pad_across_processes(batch["row_index"], pad_index=-1)
        gathered_index.append(accelerator.gather(row_index).cpu())
        gathered_logits.append(accelerator.gather(accelerator.pad_across_processes(logits.float())).cpu())
        progress.update(int((gathered_index[-1] >= 0).sum()))
    progress.close()
    model.train(was_training)
    row_index = torch.cat(gathered_index).numpy()
    logits = torch.cat(gathered_logits)[row_index >= 0]
    row_index = row_index[row_index >= 0]
    # Keep the first occurrence of each row: the padded last batches repeat rows from the start.
    unique_rows, first = np.unique(row_index, return_index=True)
    if len(unique_rows) != len(rows):
        raise RuntimeError(f"evaluation saw {len(unique_rows)} distinct rows out of {len(rows)}")
    return logits[torch.from_numpy(first)]  # (N, C), ordered by row index


def export_logits(
    run_batch: Callable[[dict[str, np.ndarray]], np.ndarray],
    inputs: set[str],
    rows: TokenizedRows,
    batch_size: int,
    max_tokens: int | None = None,
) -> torch.Tensor:
    """Logits (N, C) in row order from an exported model on this process alone: `run_batch` takes (B, T) int64
    arrays by input name (the `inputs` its graph reads) and gives (B, C) logits. The batches are predict_logits'."""
    row_logits: dict[int, np.ndarray] = {}
    for batch in evaluation_loader(rows, batch_size, max_tokens=max_tokens):
        arrays = {name: tensor.numpy().astype(np.int64) for name, tensor in model_inputs(batch).items()}
        logits = run_batch({name: array for name, array in arrays.items() if name in inputs})  # (B, C)
        row_logits.update(zip(batch["row_index"].tolist(), np.asarray(logits, dtype=np.float32)))
    if len(row_logits) != len(rows):
        raise RuntimeError(f"evaluation saw {len(row_logits)} distinct rows out of {len(rows)}")
    return torch.from_numpy(np.stack([row_logits[row] for row in range(len(rows))]))  # (N, C)


def evaluate_split(
    model: torch.nn.Module,
    rows: TokenizedRows,
    accelerator: Accelerator,
    batch_size: int,
    label_names: list[str],
    pooling: str = "mean",
) -> EvalResult:
    """Metrics over documents (chunked windows' probabilities pooled per document after gathering)."""
    logits = predict_logits(model, rows, accelerator, batch_size)
    return result_from_logits(logits, rows, label_names, pooling)


def result_from_logits(
    logits: torch.Tensor,
    rows: TokenizedRows,
    label_names: list[str],
    pooling: str = "mean",
    decision: Decision | None = None,
) -> EvalResult:
    """Probabilities, loss and metrics of a split's logits (N, C), labelled by `decision`."""
    probabilities, labels, losses = _scored(logits, rows, pooling)
    return result_from_probabilities(probabilities, labels, label_names, decision, losses)


def scored_loss(logits: torch.Tensor, rows: TokenizedRows, pooling: str = "mean") -> float:
    """The loss `result_from_logits` reports for these logits: over rows, or over documents pooled from windows."""
    losses = _scored(logits, rows, pooling)[2]
    return float(losses.mean()) if len(losses) else 0.0


def _scored(logits: torch.Tensor, rows: TokenizedRows, pooling: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(probabilities, labels, losses) per row, or per document pooled from its windows."""
    multi_label = rows.multi_label
    probabilities = to_probabilities(logits.numpy(), multi_label)
    if rows.documents is None:
        return probabilities, rows.labels.numpy(), row_losses(logits, rows.labels).numpy()
    probabilities = pool_documents(probabilities, rows.documents, rows.num_documents, pooling, softmax=not multi_label)
    labels = rows.document_labels()
    return probabilities, labels, _pooled_losses(probabilities, labels)


def result_from_probabilities(
    probabilities: np.ndarray,
    labels: np.ndarray,
    label_names: list[str],
    decision: Decision | None = None,
    losses: np.ndarray | None = None,
) -> EvalResult:
    """Metrics of (N, C) probabilities against gold labels, labelled by `decision` (default: argmax, or 0.5 per class
    for multi-label). `losses` (N,): each row's loss; default: from the probabilities, as pooled windows get."""
    multi_label = labels.ndim == 2
    if losses is None:
        losses = _pooled_losses(probabilities, labels)
    decision = decision or default_decision(list(label_names), multi_label)
    predicted = decision.predict(probabilities)
    if multi_label:
        metrics = compute_multilabel_metrics(labels, predicted, label_names)
    else:
        metrics = compute_metrics(labels, predicted, label_names)
    metrics["loss"] = float(losses.mean()) if len(losses) else 0.0
    if multi_label or decision.kind == KIND_BINARY or len(label_names) == 2:
        metrics["areas"] = ranking_areas(probabilities, labels, label_names, multi_label)
    low_confidence = decision.low_confidence(probabilities) if decision.kind == KIND_FLAG else None
    if low_confidence is not None:
        metrics["low_confidence"] = _low_confidence_summary(low_confidence, probabilities, labels)
    return EvalResult(
        probabilities=probabilities,
        labels=labels,
        loss=metrics["loss"],
        metrics=metrics,
        predicted=predicted,
        low_confidence=low_confidence,
    )


def _pooled_losses(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per document: -log p(gold) of the pooled probabilities (multi-label: binary cross-entropy over classes)."""
    clipped = np.clip(probabilities, 1e-12, 1 - 1e-7)
    if labels.ndim == 2:
        return -(labels * np.log(clipped) + (1 - labels) * np.log(1 - clipped)).sum(axis=1)
    return -np.log(np.clip(probabilities[np.arange(len(labels)), labels], 1e-12, None))


def _low_confidence_summary(flagged: np.ndarray, probabilities: np.ndarray, labels: np.ndarray) -> dict:
    kept = ~flagged
    correct = probabilities.argmax(axis=1) == labels
    return {
        "flagged": int(flagged.sum()),
        "share": float(flagged.mean()) if len(flagged) else 0.0,
        "accuracy_of_kept": float(correct[kept].mean()) if kept.any() else None,
        "accuracy_of_flagged": float(correct[flagged].mean()) if flagged.any() else None,
    }


def write_predictions(path: Path, result: EvalResult, split: Any, label_names: list[str], separator: str) -> None:
    """A scored split's rows as test_predictions.csv: gold, the decision's label, probabilities, flags."""
    write_test_predictions(
        path,
        column_values(split, "text"),
        result.labels,
        result.probabilities,
        label_names,
        row_ids=column_values(split, "row_id"),
        predicted=result.predictions,
        separator=separator,
        low_confidence=result.low_confidence,
    )
