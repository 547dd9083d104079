"""`tune.space` as typed parameters: each key a config key, each range or choice checked as an override is.

train.learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}     # a float range, log-uniform
train.epochs: {low: 1, high: 3}                                  # integers: both ends integers
train.per_device_batch_size: [16, 32]                            # a choice
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.config.load import load_config
from pipeline.config.schema import ConfigError, PipelineConfig

# Keys no trial may change: where the run is written, and the search itself.
FIXED_SECTIONS = ("run.", "tune.")
RANGE_KEYS = {"low", "high", "log", "step"}


@dataclass(frozen=True)
class Choice:
    key: str
    options: tuple[Any, ...]

    def suggest(self, trial: Any) -> Any:
        return trial.suggest_categorical(self.key, list(self.options))

    def extremes(self) -> tuple[Any, ...]:
        return self.options


@dataclass(frozen=True)
class Range:
    key: str
    low: float
    high: float
    log: bool = False
    step: float | None = None
    integer: bool = False

    def suggest(self, trial: Any) -> Any:
        if self.integer:
            return trial.suggest_int(self.key, int(self.low), int(self.high), step=int(self.step or 1), log=self.log)
        return trial.suggest_float(self.key, self.low, self.high, step=self.step, log=self.log)

    def extremes(self) -> tuple[Any, ...]:
        return (self.low, self.high)


Parameter = Choice | Range


def parse_space(space: dict[str, Any]) -> list[Parameter]:
    """tune.space as parameters; a ConfigError naming the key for an empty space or an impossible entry."""
    if not space:
        raise ConfigError("tune.space: empty; name at least one config key to search, see docs/tune.md")
    return [_parameter(key, entry) for key, entry in space.items()]


def _parameter(key: str, entry: Any) -> Parameter:
    name = f"tune.space.{key}"
    if key.startswith(FIXED_SECTIONS):
        raise ConfigError(f"{name}: run.* and tune.* keys are set by the search, not searched")
    if isinstance(entry, list):
        if not entry:
            raise ConfigError(f"{name}: an empty list of choices")
        return Choice(key, tuple(entry))
    unknown = set(entry) - RANGE_KEYS
    if unknown or not {"low", "high"} <= set(entry):
        raise ConfigError(f"{name}: a range is {{low, high[, log][, step]}}, got keys {sorted(entry)}")
    low, high, log, step = entry["low"], entry["high"], entry.get("log", False), entry.get("step")
    if any(isinstance(value, bool) for value in (low, high)) or not isinstance(log, bool):
        raise ConfigError(f"{name}: low and high are numbers and log is true or false")
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ConfigError(f"{name}: low ({low}) must not be above high ({high})")
    if log and low <= 0:
        raise ConfigError(f"{name}: a log range needs low > 0, got {low}")
    if step is not None and (step <= 0 or log):
        raise ConfigError(f"{name}: step must be positive, and cannot go with log")
    integer = isinstance(low, int) and isinstance(high, int) and (step is None or isinstance(step, int))
    return Range(key, float(low), float(high), log, step, integer)


def overrides_for(params: dict[str, Any]) -> list[str]:
    """A trial's parameters as command-line overrides (key=value, read back as YAML)."""
    return [f"{key}={_yaml_value(value)}" for key, value in params.items()]


def _yaml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value) if any(c in value for c in ":#[]{},'\"") else value
    return repr(value)


def check_space(config_path: Path | None, overrides: list[str], params: list[Parameter]) -> None:
    """Load the config with each parameter at each end (each choice): an unknown key or a value the config refuses
    is a ConfigError naming the tune.space key."""
    for parameter in params:
        for value in parameter.extremes():
            value = int(value) if isinstance(parameter, Range) and parameter.integer else value
            try:
                load_config(config_path, overrides + overrides_for({parameter.key: value}))
            except ConfigError as error:
                raise ConfigError(f"tune.space.{parameter.key}: the value {value!r} is refused: {error}") from None


def trial_config(config_path: Path | None, overrides: list[str], params: dict[str, Any]) -> PipelineConfig:
    return load_config(config_path, overrides + overrides_for(params))
