"""The `tune` section of the config: the hyperparameter search of `python -m pipeline.tune` (pipeline/tune/)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.config.values import setting

# One key's search range: a list of choices, or a mapping {low, high[, log][, step]}.
SpaceEntry = list[int | float | bool | str] | dict[str, int | float | bool]


@dataclass
class TuneConfig:
    space: dict[str, SpaceEntry] = setting(
        dict,
        "config keys to search, each a list of choices or `{low, high, log, step}`; see [Hyperparameter search](tune.md)",
        shown="empty",
    )
    metric: Literal["auto", "accuracy", "macro_f1", "micro_f1"] = setting(
        "auto", "the validation metric the search maximises; `auto`: the run's `train.selection_metric`"
    )
    pruner: Literal["median", "halving", "none"] = setting(
        "median", "stops poor trials from their validation scores: `median`, `halving` (successive halving) or `none`"
    )
    startup_trials: int = setting(4, "trials sampled at random, and never pruned, before TPE and pruning start")
    warmup_steps: int = setting(0, "optimizer steps of each trial that are never pruned")
    output_dir: str = setting("studies", "the folder of studies: a study's is `<output_dir>/<study name>`")
