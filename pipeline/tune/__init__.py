"""Hyperparameter search: `python -m pipeline.tune`, an Optuna study over `tune.space` in a resumable SQLite study.
space: the search space read from the config; study: the study, its storage and folder; objective: one trial as a
normal run; outputs: best.yaml, trials.csv and the report; cli: the command."""

from pipeline.common.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "cli": "main",
        "space": "Choice Range parse_space",
    },
)
