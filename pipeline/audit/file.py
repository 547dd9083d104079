"""A labelled file audited against a trained run: read as the run read its data, scored by its model."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.common.errors import DataError
from pipeline.config.load import load_config
from pipeline.config.options import check_reading_overrides
from pipeline.data.label_scheme import UnknownLabels, leave_out_hint
from pipeline.data.load import read_labelled_file
from pipeline.predict import Predictor, resolve_model_source
from pipeline.run.directory import RunDir
from pipeline.scoring.label_audit import Audit, Evidence, audit, write_label_issues
from pipeline.scoring.label_signals import BASELINE_CV, MODEL, baseline_cv_probabilities

logger = logging.getLogger(__name__)

SPLIT = "input"  # the split column's value for the file's rows


@dataclass
class AuditedFile:
    rows: int
    removed_rows: int
    audit: Audit


def audit_file(model: Path, input_path: str, output: Path, overrides: Sequence[str] = (), seed: int = 0) -> AuditedFile:
    """Audit `input_path` against the run at `model` into `output` (label_issues.csv's columns). DataError when
    the file cannot be read as the run's data, or carries a class the model does not know."""
    run = RunDir(model)
    run.check_finished()
    check_reading_overrides(overrides)
    config = load_config(run.config_path, list(overrides))
    config.data.split_column = None  # the run's split column divided its training file, not this one
    record = run.read_record()
    if record.multi_label:
        raise DataError(f"--model {model}: a multi-label run; the label audit covers single-label runs only")
    try:
        dataset, removed, _ = read_labelled_file(
            config.data, input_path, "--input", record.labels, record.data.label_reading
        )
    except UnknownLabels as error:
        raise DataError(f"{error}{leave_out_hint(config.data, error.labels)}") from None
    evidence = Evidence.of(SPLIT, dataset)
    predictor = Predictor.from_source(resolve_model_source(run.path), backend="torch")
    encoded = predictor.encode(evidence.texts)
    evidence.signals[MODEL] = predictor.document_probabilities(predictor.row_logits(encoded), encoded)
    try:  # the file's own lexical evidence: the baseline fitted on the other folds of the file
        evidence.signals[BASELINE_CV] = baseline_cv_probabilities(evidence.texts, evidence.labels, seed)
    except ValueError as error:
        logger.warning(f"{BASELINE_CV} left out: {error}")
    found = audit([evidence], record.labels)
    write_label_issues(output, found.issues)
    return AuditedFile(len(dataset), len(removed), found)
