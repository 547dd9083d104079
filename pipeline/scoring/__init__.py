"""Stage 4: evaluation, calibration, decision thresholds, the lexical baseline and the metrics."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "evaluation": "EvalResult evaluate_split predict_logits",
        "decide": "calibrate_and_decide",
        "baseline": "run_baseline",
        "thresholds": "Decision choose_decision",
        "label_audit": "audit audit_training_run",
    },
)
