"""The `train` section of the config and its `train.distill` part: the training loop's settings, each with its docs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pipeline.config.values import setting


@dataclass
class DistillConfig:
    """Knowledge distillation (pipeline/distill/teacher.py): a trained teacher's logits become soft targets for the
    model."""

    teacher: str | None = setting(
        None, "a run directory or model folder whose logits become soft targets; see [Distillation](distillation.md)"
    )
    alpha: float = setting(
        0.5, "the weight of the teacher's soft targets; 1 - alpha weighs the gold label's cross-entropy"
    )
    temperature: float = setting(2.0, "the temperature T that softens both models' logits in the soft loss")
    augment: Literal["none", "mask", "ngram", "dropout", "mask_ngram"] = setting(
        "none", "copies of the train texts the teacher labels: `mask`, `ngram`, `dropout` or `mask_ngram`"
    )
    augment_copies: int = setting(1, "copies of each train text (see `train.distill.augment`)")
    augment_word_probability: float = setting(0.1, "per word, the chance to be masked (`mask`) or deleted (`dropout`)")
    augment_ngram_probability: float = setting(
        0.25, "per copy, the chance to keep only an n-gram (`ngram`, `mask_ngram`)"
    )
    augment_ngram_max: int = setting(5, "the longest n-gram kept, in words (`ngram`, `mask_ngram`)")
    teacher_batch_size: int = setting(128, "rows per forward pass when the teacher labels the transfer set")
    init_embeddings: bool = setting(
        False, "start the student's token embeddings from the teacher's, PCA-projected to its width"
    )


@dataclass
class TrainConfig:
    epochs: float = setting(3.0, "passes over train (a fraction allowed); `train.max_steps` wins when set")
    max_steps: int | None = setting(
        None, "when set, training stops after this many optimizer steps whatever `epochs` says"
    )
    per_device_batch_size: int = setting(
        32, "rows per batch on each process (x accumulation steps x processes: the effective batch)"
    )
    gradient_accumulation_steps: int = setting(1, "batches whose gradients add up to one optimizer step")
    learning_rate: float | None = setting(
        None,
        "AdamW's peak rate, after linear warmup and before linear decay; unset: 5e-5 for a pretrained checkpoint and 2e-3 for the encoder from scratch",
        shown="by `model.kind`",
    )
    head_learning_rate: float | None = setting(
        1e-2,
        "the rate of the parameters the pretrained checkpoint lacks (its new classification head); none: `learning_rate`; see [Calibrated probabilities](scores-and-thresholds.md#calibrated-probabilities)",
    )
    weight_decay: float = setting(0.01, "AdamW's weight decay (none on biases and LayerNorm)")
    warmup_ratio: float = setting(0.1, "the share of the optimizer steps spent warming the rate up linearly")
    max_grad_norm: float = setting(1.0, "gradients are clipped to this norm")
    mixed_precision: Literal["auto", "no", "fp16", "bf16"] = setting(
        "auto", "`auto`: bf16 where supported, fp16 on older GPUs, else full precision; or `no`, `fp16`, `bf16`"
    )
    eval_every_steps: int | Literal["auto"] | None = setting(
        "auto",
        "validation every N optimizer steps, keeping the best model; none: once per epoch; `auto`: as often as `eval_budget` allows, at least once per epoch; see [Performance](performance.md#validation-that-costs-what-it-is-worth)",
    )
    eval_budget: float = setting(
        0.1, "with `eval_every_steps: auto`, the share of training time validation may cost, measured as it runs"
    )
    time_budget: float | str | None = setting(
        None,
        "seconds, or a duration such as `90s`, `10m` or `1h`: the whole run's time; steps, validation and warm-up are set to fit it, `epochs` (or `max_steps`) the most it trains; see [Performance](performance.md#a-run-that-fits-a-time-budget)",
    )
    selection_metric: Literal["auto", "accuracy", "macro_f1", "micro_f1"] = setting(
        "auto",
        "the validation metric that picks the best model and drives early stopping: `accuracy`, `macro_f1` or `micro_f1` (multi-label); `auto`: micro-F1 for multi-label, macro-F1 for imbalanced classes, else accuracy; see [Scores you can act on](scores-and-thresholds.md)",
    )
    save_every_steps: int | None = setting(None, "a checkpoint every N optimizer steps (the last two kept)")
    early_stopping_patience: int | None = setting(None, "stop after this many evaluations without improvement")
    resume: bool = setting(False, "resume from the latest checkpoint")
    log_every_steps: int = setting(20, "history and progress-bar updates (the only host synchronisations in the loop)")
    cpu_threads: int | None = setting(
        None,
        "CPU threads per process; none: the cores other work leaves free when the run starts (`OMP_NUM_THREADS` wins when set); see [Performance](performance.md#threads-on-a-busy-cpu)",
    )
    group_by_length: bool = setting(True, "batches of rows of similar length")
    trim_padding: bool = setting(True, "trailing all-padding columns dropped per batch")
    fast_dropout: bool = setting(
        True,
        "CPU training: cheaper dropout masks (p rounded to 1/65536); no effect on a GPU; see [Performance](performance.md)",
    )
    keep_freed_memory: bool = setting(
        True, "CPU runs on glibc: freed memory is kept for reuse instead of unmapped; see [Performance](performance.md)"
    )
    warn_if_longer_than_minutes: float = setting(15.0, "when to suggest a quicker config")
    class_weights: Literal["none", "balanced"] | dict[str, float] = setting(
        "none", "`balanced` or `{class: weight}`; see [Imbalanced classes](scores-and-thresholds.md#imbalanced-classes)"
    )
    loss: Literal["cross_entropy", "focal"] = setting(
        "cross_entropy", "`focal`: each row's cross-entropy times (1 - p_true)^gamma"
    )
    focal_gamma: float = setting(2.0, "the gamma of `loss: focal`")
    calibrate: bool = setting(True, "fit a temperature on validation and fold it into the saved model")
    report_to: Literal["auto", "none"] | list[str] = setting(
        "auto",
        "experiment trackers: a list of `tensorboard`, `mlflow`, `wandb`, `trackio`; `none`; `auto`: those installed of tensorboard and mlflow; see [Tracking](tracking.md)",
    )
    distill: DistillConfig = setting(DistillConfig, "knowledge distillation from a trained teacher")


def run_length_setting(epochs: Any, max_steps: Any) -> str:
    """The setting that makes a run longer, with its value, as advice names it: train.max_steps where set, since it
    ends training whatever train.epochs says (optimization.plan_steps), so more epochs would change nothing; else
    train.epochs. Takes config.yaml's values as read (the report's) or TrainConfig's."""
    if isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps > 0:
        return f"train.max_steps (now {max_steps})"
    if isinstance(epochs, (int, float)) and not isinstance(epochs, bool):
        return f"train.epochs (now {epochs:g})"
    return "train.epochs"


LEARNING_RATES = {"pretrained": 5e-5, "bert": 5e-5, "encoder": 2e-3}


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([smh]?)\s*$")


def duration_seconds(value: float | str | None) -> float | None:
    """train.time_budget in seconds: a number of seconds, or "90s", "10m", "1.5h"; None when unset or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = _DURATION.match(value)
    if match is None:
        return None
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
