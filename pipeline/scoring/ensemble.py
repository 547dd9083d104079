"""The model averaged with the lexical baseline, kept only where validation says it helps (`eval.ensemble`).

p = w * p_model + (1 - w) * p_baseline, with w in [0, 1] chosen on validation by log loss. The model's probabilities
are its calibrated ones, per document (a chunked text's windows are pooled first), one sigmoid per class for
multi-label. Under `auto` the ensemble is kept only where, on validation, it has a lower log loss than the model
alone and a selection metric at least as high: test is never looked at for the choice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.common.stats import mcnemar_exact_p
from pipeline.config.schema import PipelineConfig
from pipeline.data.splits import column_values
from pipeline.run.directory import read_decision, write_decision
from pipeline.run.record import Ensemble, RunRecord, Scores, Thresholds
from pipeline.scoring.baseline_model import BaselineModel, SavedEnsemble, mix
from pipeline.scoring.evaluation import EvalResult, result_from_probabilities
from pipeline.scoring.thresholds import Decision, choose_decision

logger = logging.getLogger(__name__)

AUTO, NONE, BASELINE = "auto", "none", "baseline"
# The model's weights tried: steps of 0.01 are finer than validation can tell apart.
WEIGHT_GRID = np.round(np.linspace(0.0, 1.0, 101), 2)
SPLITS = ("validation", "test")
RULE = "kept where, on validation, its log loss is below the model's and its selection metric is at least the model's"


@dataclass
class Outcome:
    """The choice, and what it changes: the ensemble's results and decision where it was kept."""

    record: dict[str, Any]  # metrics.json "ensemble"
    saved: SavedEnsemble | None  # None: the model alone
    results: dict[str, EvalResult] | None = None
    decision: Decision | None = None


def log_loss(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """Mean negative log-likelihood per row (multi-label: binary cross-entropy summed over classes)."""
    clipped = np.clip(np.asarray(probabilities, dtype=np.float64), 1e-12, 1 - 1e-12)
    if labels.ndim == 2:
        return float(-(labels * np.log(clipped) + (1 - labels) * np.log(1 - clipped)).sum(axis=1).mean())
    return float(-np.log(clipped[np.arange(len(labels)), labels]).mean())


def fit_weight(model: np.ndarray, baseline: np.ndarray, labels: np.ndarray) -> float:
    """The model's weight of least validation log loss; of equal losses, the largest (the model alone is simplest)."""
    losses = [log_loss(mix(model, baseline, weight), labels) for weight in WEIGHT_GRID]
    best = min(losses)
    return float(max(w for w, loss in zip(WEIGHT_GRID, losses) if loss <= best + 1e-12))


def right_rows(result: EvalResult) -> np.ndarray:
    """(N,) whether each row's label (multi-label: its whole set) is the gold one."""
    if result.labels.ndim == 2:
        return (np.asarray(result.predictions, dtype=bool) == (result.labels > 0.5)).all(axis=1)
    return np.asarray(result.predictions) == result.labels


def mcnemar(ensemble: EvalResult, other: EvalResult) -> dict[str, Any]:
    first, second = right_rows(ensemble), right_rows(other)
    only_ensemble, only_other = int((first & ~second).sum()), int((second & ~first).sum())
    return {
        "only_ensemble_right": only_ensemble,
        "only_other_right": only_other,
        "p_value": mcnemar_exact_p(only_ensemble, only_other),
    }


def figures(result: EvalResult) -> dict[str, float]:
    """The figures the report sets side by side."""
    names = ("accuracy", "macro_f1", "micro_f1")
    return {**{name: result.metrics[name] for name in names if name in result.metrics}, "loss": result.loss}


def choose(setting: str, metric: str, model: EvalResult, ensemble: EvalResult, weight: float) -> tuple[bool, str]:
    """(kept, why): `baseline` keeps it; `auto` by RULE on validation."""
    loss, ensemble_loss = model.loss, ensemble.loss
    score, ensemble_score = model.metrics.get(metric, 0.0), ensemble.metrics.get(metric, 0.0)
    compared = (
        f"validation loss {ensemble_loss:.4f} against the model's {loss:.4f}, "
        f"{metric} {ensemble_score:.4f} against {score:.4f}"
    )
    if setting == BASELINE:
        return True, f"eval.ensemble: baseline keeps it whatever validation says ({compared})"
    if weight >= 1.0:
        return False, "the best weight on validation is 1.0: the baseline adds nothing to the model"
    if ensemble_loss < loss and ensemble_score >= score:
        return True, f"it beats the model alone on validation: {compared}"
    return False, f"it does not beat the model alone on validation: {compared}"


def combine_with_baseline(
    setting: str,
    metric: str,
    model: dict[str, EvalResult],
    baseline: BaselineModel,
    texts: dict[str, Sequence[str]],
    labels: list[str],
    threshold_setting: Any = None,
) -> Outcome:
    """Fit the weight on validation, score model, baseline and ensemble on both splits, and choose (see RULE)."""
    base = {name: baseline.probabilities(texts[name]) for name in SPLITS}
    base_results = {name: result_from_probabilities(base[name], model[name].labels, labels) for name in SPLITS}
    validation = model["validation"]
    weight = fit_weight(validation.probabilities, base["validation"], validation.labels)
    mixed = {name: mix(model[name].probabilities, base[name], weight) for name in SPLITS}
    decision = choose_decision(
        threshold_setting, mixed["validation"], validation.labels, labels, validation.labels.ndim == 2
    )
    results = {name: result_from_probabilities(mixed[name], model[name].labels, labels, decision) for name in SPLITS}
    kept, reason = choose(setting, metric, validation, results["validation"], weight)
    record = {
        "setting": setting,
        "kept": kept,
        "weight": weight,
        "reason": reason,
        "rule": RULE,
        **{
            name: {
                "model": figures(model[name]),
                "baseline": figures(base_results[name]),
                "ensemble": figures(results[name]),
            }
            for name in SPLITS
        },
        "mcnemar": {
            other: mcnemar(results["test"], result[("test")])
            for other, result in (("model", model), ("baseline", base_results))
        },
    }
    logger.info(
        f"Ensemble with the baseline (eval.ensemble: {setting}): {'kept' if kept else 'not kept'}, weight {weight:.2f} on the model; {reason}"
    )
    if not kept:
        return Outcome(record, None)
    validation_figures = {name: record["validation"][name] for name in ("model", "ensemble")}
    saved = SavedEnsemble(baseline, weight, list(labels), "TF-IDF + logistic regression", validation_figures)
    return Outcome(record, saved, results, decision)


def add_ensemble(
    config: PipelineConfig,
    splits: Any,
    model: dict[str, EvalResult],
    baseline: BaselineModel | None,
    record: RunRecord,
    model_dir: Path,
) -> EvalResult:
    """After the baseline: the ensemble chosen, recorded, and saved into `model_dir` where kept (its validation and
    test scores then stand as the run's). Returns the test result that the run's predictions are written from."""
    setting = config.eval.ensemble
    why_not = _why_no_ensemble(config, baseline)
    if why_not is not None:
        if setting != NONE:
            record.ensemble = Ensemble(setting=setting, kept=False, reason=why_not)
        return model["test"]
    texts = {name: column_values(splits[name], "text") for name in SPLITS}
    if any(len(texts[name]) != len(model[name].labels) for name in SPLITS):  # never guess which text is which
        record.ensemble = Ensemble(setting=setting, kept=False, reason="the split's texts and scored rows differ")
        return model["test"]
    outcome = combine_with_baseline(
        setting, record.ranking_metric, model, baseline, texts, record.labels, config.eval.threshold
    )
    record.ensemble = Ensemble.from_dict(outcome.record)
    if outcome.saved is None:
        return model["test"]
    outcome.saved.save(model_dir)
    if config.eval.threshold is not None:  # thresholds chosen again, on what prediction now scores
        write_decision(model_dir, {**(read_decision(model_dir) or {}), **outcome.decision.to_dict()})
        record.thresholds = Thresholds.from_dict(outcome.decision.to_dict())
    record.validation = Scores.from_dict(outcome.results["validation"].metrics)
    record.test = Scores.from_dict(outcome.results["test"].metrics)
    return outcome.results["test"]


def _why_no_ensemble(config: PipelineConfig, baseline: BaselineModel | None) -> str | None:
    if config.eval.ensemble == NONE:
        return "eval.ensemble: none"
    if config.data.text_pair_columns:
        return "sentence pairs: the baseline reads one text"
    if baseline is None:
        return "no baseline was fitted (eval.baseline)"
    return None
