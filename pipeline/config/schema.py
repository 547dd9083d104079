"""Typed configuration: one dataclass per section, each setting with its default and its documentation (the field's
metadata "help" and "more", which render docs/config-reference.md). Every default lives here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pipeline.common.extras import extra_install, installed
from pipeline.config.data_config import DataConfig
from pipeline.config.train_config import LEARNING_RATES, DistillConfig, TrainConfig, run_length_setting
from pipeline.config.tune_config import TuneConfig
from pipeline.config.values import ConfigError, check_types, setting

# Tokens per evaluation or prediction batch, at most, on a CPU (eval.max_batch_tokens and pipeline.predict's
# --max-batch-tokens at "auto"; batch_token_budget).
MAX_BATCH_TOKENS = 4096


def batch_token_budget(setting: int | str | None, device_type: str) -> int | None:
    """Tokens per evaluation or prediction batch, at most (None: no cap). "auto": MAX_BATCH_TOKENS on a CPU, where
    small batches keep activations in cache, and no cap on a GPU, where large batches keep it busy."""
    if setting == "auto":
        return MAX_BATCH_TOKENS if device_type == "cpu" else None
    return setting or None


# Names other modules import from here: the sections kept in their own modules, the batch cap, the error every
# check raises.
__all__ = [
    "MAX_BATCH_TOKENS",
    "ConfigError",
    "DataConfig",
    "DistillConfig",
    "TrainConfig",
    "TuneConfig",
    "run_length_setting",
]

# Keys that name local files: a run's config.yaml holds them absolute, so that it re-creates the run's data and model
# from any working directory (pipeline.export re-creates the validation split from it; "rerun with --config").
LOCAL_PATH_KEYS = ("data.train_file", "data.validation_file", "data.test_file", "data.unlabeled_file")
# Keys that name a local folder or a Hub id: made absolute only where that local path exists (as the loaders decide).
LOCAL_OR_HUB_KEYS = ("data.hub_name", "model.name_or_path", "tokenizer.name_or_path", "train.distill.teacher")


@dataclass
class RunConfig:
    name: str = setting(
        "ag_news_bert", "the run's folder in `run.output_dir`: one plain folder name, not `.`, `..` or a path"
    )
    output_dir: str = setting("runs", "the folder of run directories: a run's is `<output_dir>/<name>`")
    seed: int = setting(42, "seeds data splits, sampling, initialisation and dropout")
    overwrite: bool = setting(
        False, "replace an earlier run of the same name; see [Running](running.md#running-again-under-the-same-name)"
    )
    license: str | None = setting(
        None, "the model's licence as a Hub licence id (`apache-2.0`, `mit`, ...), for the model card"
    )


@dataclass
class TokenizerConfig:
    name_or_path: str = setting(
        "bert-base-uncased",
        "a Hub name or a local folder holding a (fast) tokenizer; a tokenizer that reads much of train as `[UNK]` gets a warning",
    )
    max_length: int | Literal["auto"] = setting(
        "auto",
        "an integer, or the shortest multiple of 8 that truncates at most `max_truncated_fraction` of "
        "train (with `long_text: chunk`, the cheapest of 64-512 whose `max_chunks` windows cut at most "
        "that share: [Long texts](long-texts.md))",
    )
    max_truncated_fraction: float = setting(
        0.01, "the truncation budget of `auto` (with chunking: of documents cut by `max_chunks`)"
    )
    truncation: Literal["head", "tail", "head_tail"] = setting(
        "head", "what a longer text keeps: its first tokens, its last (`tail`), or both (`head_tail`)"
    )
    head_fraction: float = setting(0.25, "with `truncation: head_tail`, the head's share of the tokens kept")
    long_text: Literal["truncate", "chunk"] = setting(
        "truncate", "`chunk`: a longer text becomes overlapping windows; see [Long texts](long-texts.md)"
    )
    chunk_stride: int = setting(32, "tokens shared by consecutive windows")
    max_chunks: int = setting(16, "windows per document at most: the first max_chunks - 1 and the last")
    cache: bool = setting(True, "cache tokenized splits (keyed by the texts, the tokenizer and every length setting)")


@dataclass
class EncoderSettings:
    """Architecture of the from-scratch encoder. This is the one place the pipeline's defaults live.

    The pipeline's YAML config nests it as `model.encoder`, so every field is a plain int/float/str. The model's
    config (pipeline/models/modeling_encoder.py, self-contained so that it can travel with the weights) has the same
    fields; `EncoderClassifierConfig.from_settings` passes every one of them from here.
    """

    hidden_size: int = setting(
        128, "the width of the token vectors (the defaults measured best on AG News on a 2-core CPU)"
    )
    num_layers: int = setting(1, "transformer blocks")
    num_heads: int = setting(4, "attention heads per block (`hidden_size` must be divisible by it)")
    intermediate_size: int = setting(512, "the width of each block's feed-forward layer")
    dropout: float = setting(0.1, "on the embeddings and on both residual branches")
    attention_dropout: float = setting(0.1, "on the attention probabilities")
    max_position_embeddings: int = setting(512, "the positions the model can read: `tokenizer.max_length` at most")
    position_embedding: Literal["learned", "sinusoidal"] = setting(
        "learned", "`learned` position embeddings, or fixed `sinusoidal` ones"
    )
    norm: Literal["pre", "post"] = setting(
        "pre", '"pre": x + f(ln(x)) | "post": ln(x + f(x)) (original Transformer / BERT)'
    )
    pooling: Literal["cls", "mean"] = setting(
        "mean",
        '"mean": mean over the real tokens (a bag of contextual words, no [CLS] to train) | "cls": the first token',
    )
    attention_backend: Literal["sdpa", "math"] = setting(
        "sdpa", '"sdpa": torch\'s fused kernel | "math": the explicit softmax(QK^T/sqrt(d))V'
    )
    layer_norm_eps: float = setting(1e-12, "the epsilon of every LayerNorm")
    initializer_range: float = setting(0.02, "the standard deviation of the normal distribution the weights start from")

    def __post_init__(self):
        # Also built from a saved model's config (pipeline.models.encoder.settings_of): checked as YAML values are.
        check_types(self, "model.encoder")
        for name in ("hidden_size", "num_layers", "num_heads", "intermediate_size", "max_position_embeddings"):
            if getattr(self, name) < 1:
                raise ConfigError(f"model.encoder.{name}: must be a positive integer, got {getattr(self, name)!r}")
        for name in ("dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"model.encoder.{name}: must be in [0, 1), got {getattr(self, name)!r}")
        for name in ("layer_norm_eps", "initializer_range"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"model.encoder.{name}: must be > 0, got {getattr(self, name)!r}")
        if self.hidden_size % self.num_heads != 0:
            raise ConfigError(
                f"model.encoder.hidden_size ({self.hidden_size}) must be divisible by model.encoder.num_heads ({self.num_heads})"
            )


@dataclass
class ModelConfig:
    kind: Literal["pretrained", "bert", "encoder"] = setting(
        "pretrained",
        "`pretrained` (any sequence-classification checkpoint; `bert`: its older name) or `encoder` (from scratch)",
    )
    name_or_path: str = setting("bert-base-uncased", "the pretrained checkpoint for `pretrained`")
    last_layer_cls_only: bool = setting(
        True,
        "the last encoder layer computes only the [CLS] token the head reads: the same logits, fewer FLOPs; checkpoints whose logits change keep the full layer; see [Performance](performance.md)",
    )
    encoder: EncoderSettings = setting(
        EncoderSettings,
        "the architecture of the encoder trained from scratch (`model.kind: encoder`); a checkpoint reads its own from `name_or_path`",
    )


@dataclass
class EvalConfig:
    batch_size: int = setting(128, "rows per evaluation batch, at most")
    max_batch_tokens: int | Literal["auto"] | None = setting(
        "auto",
        f"tokens per evaluation batch, at most: `auto`, {MAX_BATCH_TOKENS:,} on a CPU and no cap on a GPU; null: no cap; see [Performance](performance.md#evaluation-batches-under-a-token-budget)",
    )
    save_predictions: bool = setting(
        True, "Write the per-row test predictions (text, gold, predicted, probabilities) for reports."
    )
    chunk_pooling: Literal["mean", "max"] = setting(
        "mean", "with `long_text: chunk`: a document's probabilities, the mean or per-class `max` of its windows'"
    )
    threshold: float | Literal["best_f1"] | dict[str, float | Literal["best_f1"] | dict[str, float]] | None = setting(
        None,
        "decision thresholds chosen on validation: a probability, `best_f1`, `{precision: p}`, `{recall: r}`, or per class; none: argmax; see [Decision thresholds](scores-and-thresholds.md#decision-thresholds)",
    )
    export: Literal["none", "onnx", "int8"] = setting(
        "none",
        "`onnx` or `int8`: once the model is calibrated, export it to ONNX (and int8) and verify it; the test pass then runs on the export `--backend auto` chooses; needs the `onnx` extra; see [Fast CPU inference](fast-inference.md)",
    )
    baseline: Literal["tfidf", "none"] = setting(
        "tfidf",
        "`tfidf`: fit TF-IDF + logistic regression on the same train split and score it on test, recorded in `metrics.json` `baseline` and shown in reports; `none`: skip it",
    )
    ensemble: Literal["auto", "none", "baseline"] = setting(
        "auto",
        "`auto`: average the model's calibrated probabilities with the baseline's, by a weight fitted on validation, and keep the ensemble only where it beats the model alone on validation (log loss lower, selection metric not lower); `baseline`: keep it always; `none`: the model alone. See [Ensemble with the baseline](ensemble.md)",
    )
    predict_speed_rows: int = setting(
        0,
        "0: the run's prediction speed is the test pass's rate (on the export `--backend auto` chooses, with `eval.export`), at no cost; N: a pass of its own through the prediction path on N test texts, tokenization included",
    )
    label_audit: Literal["auto", "on", "off"] = setting(
        "auto",
        "the label audit: rows whose given label the evidence contradicts, in `label_issues.csv`; `auto` leaves out the baseline's cross-validation where it costs over 5% of the run, `on` keeps it; see [Label audit](audit.md)",
    )
    validation_sample_rows: int | None = setting(
        2000,
        "validation passes during training score a fixed, stratified sample of this many rows (documents) of a larger validation split; the whole split is scored at the end; none: always the whole",
    )

    def __post_init__(self):
        # Checked before training, not after it: a missing optional dependency must not cost a whole run.
        missing = [name for name in ("onnx", "onnxruntime") if self.export != "none" and not installed(name)]
        if missing:
            raise ConfigError(
                f"eval.export: {self.export!r} needs {' and '.join(missing)}, not installed: {extra_install('onnx')}"
            )


@dataclass
class PipelineConfig:
    run: RunConfig = field(default_factory=RunConfig)
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    tune: TuneConfig = field(default_factory=TuneConfig)

    def __post_init__(self):
        if self.train.learning_rate is None:
            self.train.learning_rate = LEARNING_RATES[self.model.kind]

    @property
    def run_dir(self) -> Path:
        return Path(self.run.output_dir) / self.run.name
