"""Stage 4's scores you can act on: calibrate the best model, choose its decision thresholds, store both with it
(`calibrate_and_decide`).

The order matters: the temperature is fitted on validation, on what is scored (documents pooled from their windows
under `long_text: chunk`, label sets under multi-label), kept only where it lowers that validation NLL, and folded
into the model (so model/ *is* the calibrated
model), then thresholds are chosen on the calibrated validation probabilities and written to model/decision.json with
how texts were built and read, so that the folder predicts as the run does. Test is never looked at for either, and is
scored only after the fold: on the weights users load, as `pipeline.evaluate` scores them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pipeline.config.schema import PipelineConfig
from pipeline.data.text import TextSpec
from pipeline.run.directory import DECISION_INPUT_KEY, RunDir, folded_temperature, write_decision
from pipeline.scoring.calibration import (
    ECE_BINS,
    at_search_bound,
    expected_calibration_error,
    fit_temperature,
    fold_temperature,
    minimise_over_temperature,
    pooled_negative_log_likelihood,
    reliability_bins,
)
from pipeline.scoring.evaluation import EvalResult, result_from_logits, scored_loss
from pipeline.scoring.thresholds import Decision, choose_decision
from pipeline.text.batching import TokenizedRows, model_inputs
from pipeline.text.windows import LongTextRule

logger = logging.getLogger(__name__)

SPLITS = ("validation", "test")
# Rows run through the model before and after folding, to check that the folded model computes logits / T.
FOLD_CHECK_ROWS = 8


@dataclass
class Scoring:
    temperature: float
    decision: Decision
    results: dict[str, EvalResult]  # calibrated, labelled by the decision
    calibration: dict[str, Any]  # metrics.json "calibration"

    @property
    def thresholds(self) -> dict[str, Any]:
        """metrics.json "thresholds": the decision and how each threshold was chosen."""
        return self.decision.to_dict()


@dataclass
class TemperatureFit:
    """The temperature applied, and the one the fit found (they differ where the fit would not lower the NLL)."""

    temperature: float
    fitted: float | None  # None where the search ran to its bound: no temperature fits
    fitted_on: str
    warning: str | None = None

    @property
    def applied(self) -> bool:
        return self.fitted is not None and self.temperature == self.fitted

    def to_dict(self) -> dict[str, Any]:
        return {"fitted_temperature": self.fitted, "applied": self.applied, "fitted_on": self.fitted_on}


def calibrate_and_decide(
    config: PipelineConfig,
    validation_logits: torch.Tensor,
    score_test: Callable[[], torch.Tensor],
    rows: dict[str, TokenizedRows],
    labels: list[str],
    model: torch.nn.Module,
    save_model: Callable[[torch.nn.Module, dict[str, Any]], None],
    is_main_process: bool,
    max_length: int,
) -> Scoring:
    """`validation_logits`: the best (uncalibrated) model's; `model`, changed in place when calibrated; `score_test()`:
    the test logits of `model` once calibrated and saved, so that test is scored on the weights users load, as
    `pipeline.evaluate` scores them (before calibration is those logits times T). `save_model(model, decision)` replaces
    model/ with it and its decision.json in one rename, so that a folded temperature is never on disk without its
    record; the decision is chosen on validation alone, before the test pass. `max_length`: the resolved fixed
    length."""
    pooling, multi_label = config.eval.chunk_pooling, rows["validation"].multi_label
    temperature, fit = 1.0, None
    if config.train.calibrate:
        fit = fit_scored_temperature(validation_logits, rows["validation"], pooling)
        temperature = fit.temperature
        fold_temperature(model, temperature, _check_inputs(rows["validation"], model))
    validation = result_from_logits(validation_logits / temperature, rows["validation"], labels, pooling)
    decision = choose_decision(config.eval.threshold, validation.probabilities, validation.labels, labels, multi_label)
    if is_main_process:  # before the test pass: what it scores is on disk, as users will load it (and export it)
        record = decision_record(config, temperature, decision, max_length)
        if config.train.calibrate:
            save_model(model, record)  # replaces model/ whole, decision.json inside
        else:
            write_decision(RunDir(config.run_dir).model_dir, record)
    test_logits = score_test()
    uncalibrated = {"validation": validation_logits, "test": test_logits * temperature}
    calibrated = {"validation": validation_logits / temperature, "test": test_logits}
    before = {name: result_from_logits(uncalibrated[name], rows[name], labels, pooling) for name in SPLITS}
    results = {name: result_from_logits(calibrated[name], rows[name], labels, pooling, decision) for name in SPLITS}
    # The decision changes labels, not probabilities or losses: the results are what calibration is measured after.
    calibration = calibration_record(config.train.calibrate, temperature, before, results)
    if fit is not None:
        calibration.update(fit.to_dict())
        if fit.warning is not None:
            calibration["warning"] = fit.warning
    ece = calibration["ece"]["validation"]
    logger.info(f"Calibration: temperature {temperature:.3f}; validation ECE {ece['before']:.4f} -> {ece['after']:.4f}")
    return Scoring(temperature, decision, results, calibration)


def unfold_earlier_calibration(model: torch.nn.Module, model_dir: Path) -> float:
    """Undo a temperature stage 4 folded into model/ before (a run resumed mid-stage-4 finds calibrated weights, which
    calibrated again would fit T ~ 1). Returns the temperature undone, 1.0 when none was folded."""
    temperature = folded_temperature(model_dir)
    if temperature != 1.0:
        fold_temperature(model, 1.0 / temperature)  # logits * T: the trained model's again
    return temperature


def fit_scored_temperature(logits: torch.Tensor, rows: TokenizedRows, pooling: str) -> TemperatureFit:
    """The temperature that minimises the validation NLL as it is scored: of rows, of label sets (multi-label), or of
    documents pooled from their windows (chunked). Applied only where it lowers that NLL: a pooled fit may find no
    better T than 1, and a T fitted on one quantity and scored on another can raise it (issue 40)."""
    if rows.documents is None:
        what = "label sets (binary cross-entropy summed over classes)" if rows.multi_label else "rows"
        loss = None
    else:
        what = f"documents (the {pooling} of their windows' probabilities)"
        document_labels = rows.document_labels()

        def loss(temperature: float) -> float:
            return pooled_negative_log_likelihood(logits, document_labels, rows.documents, pooling, temperature)

    fitted, warning = trusted_temperature(logits, rows.labels, rows.documents, loss=loss)
    if warning is not None or fitted == 1.0:
        return TemperatureFit(1.0, None if warning else 1.0, what, warning)
    before, after = scored_loss(logits, rows, pooling), scored_loss(logits / fitted, rows, pooling)
    if after < before:
        return TemperatureFit(fitted, fitted, what, None)
    warning = f"the fitted temperature {fitted:.3f} does not lower the validation NLL of the {what} ({before:.4f} -> {after:.4f}), so it is not applied (temperature 1)"
    logger.warning(f"Calibration: {warning}")
    return TemperatureFit(1.0, fitted, what, warning)


def trusted_temperature(
    logits: torch.Tensor,
    labels: torch.Tensor | np.ndarray,
    documents: np.ndarray | None = None,
    loss: Callable[[float], float] | None = None,
) -> tuple[float, str | None]:
    """(temperature, None) fitted on validation; or (1.0, why) when the fit ran to its search bound, where no
    temperature is supported. `documents`: each window's document, so that the reason counts texts. `loss(T)`: the
    NLL to minimise (default: that of the rows' logits / T)."""
    if loss is None:
        temperature = fit_temperature(logits, labels)
    else:
        temperature = minimise_over_temperature(loss) if len(logits) else 1.0
    if not at_search_bound(temperature):
        return temperature, None
    rows = f"{len(labels)} validation rows"
    if documents is not None:
        rows = f"{len(np.unique(documents))} validation texts ({len(labels)} windows)"
    right = f"{_rows_right(logits, labels)} of {len(labels)}{' windows' if documents is not None else ''} right"
    if temperature < 1.0:
        why = f"the model separates the {rows} ({right}) with margins that only grow as T -> 0"
    else:
        why = f"the model's scores on the {rows} ({right}) carry no sign of the labels, so equal probabilities fit best"
    warning = f"the validation NLL kept falling to the temperature search's bound ({temperature:.3g}): {why}; no temperature fits, and the probabilities are left as trained (temperature 1)"
    logger.warning(f"Calibration: {warning}")
    return 1.0, warning


def _rows_right(logits: torch.Tensor, labels: torch.Tensor | np.ndarray) -> int:
    """Rows whose decision at the default rule (argmax; every sigmoid at 0.5 for multi-label) is right."""
    logits, labels = torch.as_tensor(logits), torch.as_tensor(labels)
    if labels.ndim == 2:
        return int(((logits > 0) == labels.bool()).all(dim=1).sum())
    return int((logits.argmax(dim=-1) == labels).sum())


def decision_record(config: PipelineConfig, temperature: float, decision: Decision, max_length: int) -> dict[str, Any]:
    """model/decision.json: what prediction needs to label the saved model's probabilities and read texts alike."""
    return {
        "task": config.data.task,
        "label_separator": config.data.label_separator,
        # Already folded into the output layer's weights when temperature_folded: a record, not to apply again.
        "temperature": temperature,
        "temperature_folded": bool(config.train.calibrate),
        **decision.to_dict(),
        DECISION_INPUT_KEY: input_settings(config, max_length),
    }


def input_settings(config: PipelineConfig, max_length: int) -> dict[str, Any]:
    """How the run built and read its texts, as config.yaml's sections and keys, so that prediction reads a model
    folder's record and a run's config.yaml alike. The length is the resolved one, never "auto"."""
    return {
        # The names of header-less files too, which prediction names for (or reads) an input laid out as they were.
        "data": {**TextSpec.from_data_config(config.data).to_settings(), "column_names": config.data.column_names},
        "tokenizer": {"max_length": max_length, **LongTextRule.from_settings(config.tokenizer).to_settings()},
        "eval": {"chunk_pooling": config.eval.chunk_pooling},
    }


def calibration_record(
    enabled: bool, temperature: float, before: dict[str, EvalResult], after: dict[str, EvalResult]
) -> dict[str, Any]:
    """ECE, loss and reliability bins before and after calibration, on each split given."""

    def both(measure: Callable[[EvalResult], Any]) -> dict[str, dict[str, Any]]:
        return {name: {"before": measure(before[name]), "after": measure(after[name])} for name in after}

    return {
        "enabled": enabled,
        "method": "temperature scaling (minimum validation NLL), folded into the output layer" if enabled else None,
        "temperature": temperature,
        "bins": ECE_BINS,
        "ece": both(lambda result: expected_calibration_error(result.probabilities, result.labels)),
        "loss": both(lambda result: result.loss),
        "reliability": both(lambda result: reliability_bins(result.probabilities, result.labels)),
    }


def _check_inputs(rows: TokenizedRows, model: torch.nn.Module) -> dict[str, torch.Tensor] | None:
    count = min(FOLD_CHECK_ROWS, len(rows))
    if count == 0:
        return None
    device = next(model.parameters()).device
    return {
        name: tensor.long().to(device) for name, tensor in model_inputs(rows.__getitems__(list(range(count)))).items()
    }
