"""The rows of the model card's tables (template.md lays them out), each a tuple of cells from the run's facts."""

from __future__ import annotations

import json
from typing import Any

from pipeline.card.facts import CardFacts, hub_id, older_calibration, published_name, teacher_name
from pipeline.card.phrases import (
    MAX_CONFUSION_CLASSES,
    baseline_figures,
    baseline_name,
    count,
    duration,
    metric_name,
    metric_value,
    named_baselines,
    num,
    pct,
    test_score,
)
from pipeline.run.directory import RANKING_METRICS, is_number, per_class_score
from pipeline.run.record import Calibration, Distill
from pipeline.scoring.thresholds import selection_cut_off

Rows = list[tuple[Any, ...]]
# The before/after measures of a calibration record (pipeline.scoring.decide.calibration_record), as the card names them.
CALIBRATION_MEASURES = {"ece": "expected calibration error", "loss": "negative log-likelihood"}


def table_values(facts: CardFacts) -> dict[str, Any]:
    return {
        "training_rows": training_rows(facts),
        "distill_rows": distill_rows(facts),
        "score_rows": score_rows(facts),
        "per_class_rows": per_class_rows(facts),
        "confusion_rows": confusion_rows(facts),
        "baseline": baseline_table(facts),
        "calibration_rows": calibration_rows(facts.record.calibration or older_calibration(facts.record.test)),
        "environment_rows": environment_rows(facts),
    }


def training_rows(facts: CardFacts) -> Rows:
    train, training, tokenization = facts.train, facts.record.training, facts.record.tokenization
    if facts.is_encoder:
        shape = ", ".join(f"{key} {value}" for key, value in facts.encoder.items())
        rows: Rows = [("model", f"from-scratch Transformer encoder ({shape})")]
    elif hub_id(facts.base):
        rows = [("base model", f"`{facts.base}`")]
    else:  # a Hub id is the metadata's base_model too; a local folder is named here only
        local = "a local folder: the metadata names no base_model (add its Hub id there if the folder is a copy of a Hub model)"
        rows = [("base model", f"`{published_name(facts.base)}`, {local}")]
    rows.append(("tokenizer", f"`{published_name(facts.tokenizer)}`"))
    automatic = " (chosen automatically)" if tokenization.max_length_setting == "auto" else ""
    rows.append(("fixed length", f"{tokenization.max_length} tokens{automatic}"))
    if train.get("max_steps"):
        rows.append(("optimizer steps", f"{train['max_steps']} (max_steps)"))
    else:
        completed = training.epochs_completed
        done = f" ({completed:g} completed)" if is_number(completed) and completed != train.get("epochs") else ""
        rows.append(("epochs", f"{train.get('epochs', 'n/a')}{done}"))
    rows += [
        ("steps run", count(training.global_steps)),
        ("effective batch", count(training.effective_batch_size)),
        ("learning rate", str(train.get("learning_rate", "n/a")) + " (AdamW, linear warm-up then decay)"),
    ]
    # The new head's own rate, when it had one (runs before head_parameters was recorded show none).
    head_rate = train.get("head_learning_rate")
    if training.head_parameters and head_rate and head_rate != train.get("learning_rate"):
        rows.append(("head learning rate", f"{head_rate} (new parameters: {', '.join(training.head_parameters)})"))
    settings = {"weight decay": "weight_decay", "warm-up ratio": "warmup_ratio", "gradient clipping": "max_grad_norm"}
    rows += [(name, str(train.get(key, "n/a"))) for name, key in settings.items()]
    rows.append(("mixed precision", str(training.mixed_precision or train.get("mixed_precision", "n/a"))))
    best = facts.record.best
    if is_number(best.step):
        # Older runs record best.validation_accuracy (or best.score); runs that select on another metric name it. The
        # validation table applies the thresholds chosen after training; this score did not (selection_cut_off).
        metric, cut_off = best.ranking_metric, selection_cut_off(facts.record)
        value = best.score if is_number(best.score) else best.extra.get("score")
        score = f"{metric_value(metric, value)}{', ' + cut_off if cut_off else ''}"
        rows.append(("model kept", f"step {int(best.step)}, the best validation {RANKING_METRICS[metric]} ({score})"))
    if training.stopped_early:
        patience = train.get("early_stopping_patience")
        rows.append(("early stopping", f"stopped after {patience} evaluations without improvement"))
    rows.append(("training time", duration(facts.record.timings.train_seconds)))
    return rows


def distill_rows(facts: CardFacts) -> Rows:
    """How a distilled model was made, from metrics.json's `distill` record alone; [] for a model not distilled."""
    record = facts.record.distill
    if record is None:
        return []
    alpha, temperature = record.alpha, record.temperature
    rows: Rows = [("teacher", f"`{teacher_name(facts) or 'unrecorded'}`")]
    for value, name in (
        (record.teacher_test_accuracy, "teacher's test accuracy (its own run's test split)"),
        (record.teacher_train_accuracy, "teacher's accuracy on this model's train split"),
    ):
        if is_number(value):
            rows.append((name, pct(value)))
    if is_number(alpha) and is_number(temperature):
        loss = (
            f"{alpha:g} × KL(teacher ‖ student) at temperature {temperature:g} (× T²) + {1 - alpha:g} × "
            "cross-entropy on the gold labels; rows without a gold label: the KL term alone"
        )
        rows.append(("loss", loss))
    rows += transfer_rows(record)
    embeddings = record.init_embeddings
    if isinstance(embeddings, dict):
        variance = embeddings.get("variance_kept")
        kept = f", {pct(variance)} of their variance kept" if is_number(variance) else ""
        initialised = (
            f"initialised from the teacher's, projected onto their first {embeddings.get('dimensions')} "
            f"principal components{kept}; the rest of the model at random"
        )
        rows.append(("token embeddings", initialised))
    return rows


def transfer_rows(record: Distill) -> Rows:
    """The transfer set (the texts the teacher scored) and how it was enlarged."""
    rows: Rows = []
    transfer = record.transfer_set
    if isinstance(transfer, dict) and is_number(transfer.get("total")):
        kinds = {"labelled": "labelled train texts", "unlabeled": "unlabelled texts", "augmented": "augmented copies"}
        parts = [
            f"{count(transfer.get(key))} {name}"
            for key, name in kinds.items()
            if is_number(transfer.get(key)) and (transfer.get(key) or key == "labelled")
        ]
        rows.append(("transfer set", f"{count(transfer.get('total'))} texts: {', '.join(parts)}"))
    if record.unlabeled_file:
        rows.append(("unlabelled texts from", f"`{published_name(str(record.unlabeled_file))}`"))
    if record.augment:
        copies = f"`{record.augment}`, {record.augment_copies} copies per train text"
        rows.append(("augmentation", "none" if record.augment == "none" else copies))
    return rows


def score_rows(facts: CardFacts) -> Rows:
    test, validation = facts.record.test, facts.validation
    rows: Rows = [
        (facts.accuracy_name, pct(test.accuracy), pct(validation.accuracy)),
        ("macro-F1", num(test.macro_f1), num(validation.macro_f1)),
    ]
    if is_number(test.micro_f1):
        rows.append(("micro-F1", num(test.micro_f1), num(validation.micro_f1)))
    return rows + [("loss", num(test.loss), num(validation.loss))]


def per_class_rows(facts: CardFacts) -> Rows:
    """The test split's precision, recall, F1 and support of every class."""
    per_class = facts.record.test.per_class
    if not isinstance(per_class, dict) or not per_class:
        return []
    rows: Rows = []
    for label in facts.labels:
        scores = per_class.get(label) if isinstance(per_class.get(label), dict) else {}
        figures = [num(per_class_score(scores, key), missing="—") for key in ("precision", "recall", "f1")]
        rows.append((label, *figures, count(scores.get("support"))))
    return rows


def confusion_rows(facts: CardFacts) -> Rows:
    """The test split's confusion matrix, up to MAX_CONFUSION_CLASSES classes."""
    matrix = facts.record.test.confusion_matrix
    if not (isinstance(matrix, list) and len(matrix) == len(facts.labels) <= MAX_CONFUSION_CLASSES):
        return []
    return [(facts.labels[i], *[count(v) for v in row]) for i, row in enumerate(matrix)]


def baseline_table(facts: CardFacts) -> dict[str, Any] | None:
    """This model against the classical baseline(s), led by the figure that picked the model (headline_metrics): the
    table's header and rows, or why there is none; None where metrics.json records no baseline."""
    record, keys = facts.record.baseline, facts.record.headline_metrics
    if record is None:
        return None
    if (figures := baseline_figures(record, keys)) is not None:
        entries = [(baseline_name(record), *figures)]
    elif record.error:
        return {"error": record.error, "name": baseline_name(record)}
    else:
        entries = [
            (baseline_name(v, k), *baseline_figures(v, keys))
            for k, v in named_baselines(record).items()
            if baseline_figures(v, keys)
        ]
    if not entries:
        return {"unread": json.dumps(record.to_dict())[:200]}
    ours = test_score(facts, keys[0])
    rows: Rows = [(f"this model ({facts.name})", *[metric_value(key, test_score(facts, key)) for key in keys], "")]
    for label, *base in entries:
        lead = f"{100 * (ours - base[0]):+.2f} points" if is_number(base[0]) and is_number(ours) else "n/a"
        rows.append((label, *[metric_value(key, value) for key, value in zip(keys, base)], lead))
    header = ["model", *[f"test {metric_name(facts, key)}" for key in keys]]
    header.append(f"this model's {RANKING_METRICS[facts.record.ranking_metric]} lead")
    return {"header": header, "rows": rows, "align": "l" + "r" * (len(keys) + 1)}


def calibration_rows(calibration: Calibration | None) -> Rows:
    """(measure, value) rows: method, temperature, then each measure per split before -> after temperature scaling;
    a record of another shape: every number and string it holds, by its key path."""
    if calibration is None:
        return []
    if not isinstance(calibration.ece, dict):
        pairs = [(k, v) for k, v in _flatten(calibration.to_dict()) if is_number(v) or isinstance(v, str)]
        return [(key or "value", num(value) if isinstance(value, float) else str(value)) for key, value in pairs]
    rows: Rows = []
    if calibration.enabled is False:
        rows.append(("method", "none (train.calibrate: false)"))
    elif isinstance(calibration.method, str):
        rows.append(("method", calibration.method))
    if is_number(calibration.temperature):
        rows.append(("temperature", num(calibration.temperature, 3)))
    if calibration.applied is False and is_number(calibration.fitted_temperature):
        rows.append(("fitted temperature, not applied", num(calibration.fitted_temperature, 3)))
    for key, name in CALIBRATION_MEASURES.items():
        splits = getattr(calibration, key) if isinstance(getattr(calibration, key), dict) else {}
        for split in splits:
            measured = [v for v in calibration.before_after(key, split) if is_number(v)]
            if measured:
                label = f"{name}, {split}" + (" (before → after)" if len(measured) == 2 else "")
                rows.append((label, " → ".join(num(value) for value in measured)))
    if is_number(calibration.bins):
        rows.append(("confidence bins (expected calibration error)", str(int(calibration.bins))))
    return rows


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as (dotted key, leaf) pairs, lists kept whole; nothing for None."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [
            pair for key, item in value.items() for pair in _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        ]
    return [(prefix, value)]


def environment_rows(facts: CardFacts) -> Rows:
    rows: Rows = []
    device = facts.record.device
    if device.to_dict():  # recorded
        processes = device.num_processes
        place = f"{'?' if device.type is None else device.type} ({'?' if device.name is None else device.name})"
        rows.append(("device", place + (f", {processes} process(es)" if is_number(processes) else "")))
    rows += [(name, str(version)) for name, version in facts.record.versions.to_dict().items()]
    if facts.record.run.finished_at:
        rows.append(("finished", str(facts.record.run.finished_at)))
    return rows + [("total run time", duration(facts.record.timings.total_seconds))]
