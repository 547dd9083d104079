"""What /info says about the model being served: its classes, how it reads texts, the backend that runs it, and
the facts of its run that the model card states."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.card.facts import published_name
from pipeline.predict.output import predictor_columns
from pipeline.predict.predictor import Predictor
from pipeline.predict.source import ModelSource
from pipeline.run.directory import RunDir, RunDirError
from pipeline.serve.settings import ServeSettings

# The settings /info states, beside the rows per forward pass the server chose.
LIMITS = ("batching", "max_wait_ms", "max_batch_rows", "max_texts", "max_request_bytes")


def model_info(predictor: Predictor, source: ModelSource, settings: ServeSettings) -> dict[str, Any]:
    spec, decision = predictor.text_spec, predictor.decision
    return {
        "model": str(source.run_dir or source.model_dir),
        "classes": predictor.labels,
        "multi_label": predictor.multi_label,
        "text_columns": list(spec.columns),
        "text_pair_columns": list(spec.pair_columns),
        "text_separator": spec.separator,
        "max_length": predictor.max_length,
        "long_text": predictor.long_text.to_settings(),
        "pooling": predictor.pooling,
        "decision": {"kind": decision.kind, "thresholds": decision.thresholds},
        "columns": predictor_columns(predictor, probabilities=True),
        "backend": predictor.backend_name,
        "backend_detail": predictor.describe_backend(),
        "card": card_facts(source.run_dir),
        "limits": {name: getattr(settings, name) for name in LIMITS} | {"batch_size": predictor.batch_size},
    }


def card_facts(run_dir: Path | None) -> dict[str, Any] | None:
    """The run's headline facts, as its model card gives them; None for a model folder outside a run."""
    if run_dir is None:
        return None
    try:
        record = RunDir(run_dir).read_record(require_test=False)
    except RunDirError:
        return None
    calibration = record.calibration
    return {
        "name": record.run.name,
        "base_model": published_name(record.run.model_name_or_path),  # as the card names it: no local path
        "parameters": record.run.num_parameters,
        "finished_at": record.run.finished_at,
        "test": {"rows": record.test.num_samples, "accuracy": record.test.accuracy, "macro_f1": record.test.macro_f1},
        "calibration_temperature": calibration.temperature if calibration else None,
        "ranking_metric": record.ranking_metric,
    }
