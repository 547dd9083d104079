"""Typed configuration: one dataclass per section, YAML files that say only what differs, dotted overrides.

    config = load_config("configs/ag_news_bert.yaml", ["train.learning_rate=3e-5", "data.max_train_samples=500"])

Every default lives in the dataclasses below and nowhere else. A YAML file (or an override) may only name
keys that exist here; a wrong key or a value of the wrong type raises `ConfigError` naming the dotted key.
A YAML file may start from others with `extends: other.yaml` or `extends: [a.yaml, b.yaml]` (paths relative to
the file; later files win, the file itself wins over all). Range and consistency checks: pipeline/config/checks.py.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shlex
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from pipeline.config.reading import DEFAULT_ENCODING, FASTTEXT_LABEL_PREFIX, LABEL_COLUMN, STANDARD_INPUT, TEXT_COLUMN


class ConfigError(ValueError):
    """A config key is unknown, or its value has the wrong type or is out of range."""


# Tokens per evaluation or prediction batch, at most, on a CPU (eval.max_batch_tokens and pipeline.predict's
# --max-batch-tokens at "auto"; hardware.batch_token_budget).
MAX_BATCH_TOKENS = 4096

# Keys that name local files: a run's config.yaml holds them absolute, so that it re-creates the run's data and model
# from any working directory (pipeline.export re-creates the validation split from it; "rerun with --config").
LOCAL_PATH_KEYS = ("data.train_file", "data.validation_file", "data.test_file", "data.unlabeled_file")
# Keys that name a local folder or a Hub id: made absolute only where that local path exists (as the loaders decide).
LOCAL_OR_HUB_KEYS = ("data.hub_name", "model.name_or_path", "tokenizer.name_or_path", "train.distill.teacher")


@dataclass
class RunConfig:
    name: str = "ag_news_bert"
    output_dir: str = "runs"
    seed: int = 42
    # A run directory that already holds a run is refused unless this is set (then it is emptied first).
    overwrite: bool = False
    # The model's licence as a Hub licence id (e.g. apache-2.0, mit), written into model/README.md's metadata.
    license: str | None = None


@dataclass
class DataConfig:
    source: Literal["hub", "files"] = "hub"
    hub_name: str = "fancyzhx/ag_news"
    hub_config: str | None = None
    # Which split of the Hub dataset is train, validation or test, where it names them otherwise: GLUE MNLI's
    # {validation: validation_matched, test: validation_mismatched} (its test splits hide their labels). Unset, or
    # for a split it leaves out: the split of that name, and for validation one named valid, val or dev.
    hub_splits: dict[str, str] | None = None
    # An unreachable Hub must fail fast: datasets' own retries take minutes.
    hub_timeout_seconds: float = 15.0
    train_file: str | None = None
    validation_file: str | None = None
    test_file: str | None = None
    # csv, tsv, jsonl, parquet, fasttext, xlsx; "auto" reads it off the file name (.csv, .tsv, .jsonl/.json, .parquet,
    # also .gz; .xlsx), an Excel workbook off its content whatever its name, and a file whose name tells none is
    # fastText when its first lines all start with label_prefix.
    file_format: Literal["auto", "csv", "tsv", "jsonl", "parquet", "fasttext", "xlsx"] = "auto"
    # The worksheet of every Excel workbook of the run to read, by its name. Unset: the first. A workbook handed over
    # often holds notes, a pivot table or another period's rows beside its data, in a sheet that need not come last.
    sheet: str | None = None
    # What marks a label in a fastText file (`__label__sports Some text`), as fastText's -label option sets it.
    label_prefix: str = FASTTEXT_LABEL_PREFIX
    # Of CSV/TSV/JSON Lines files (utf-8 also accepts a byte-order mark, and reads a file whose byte-order mark says
    # UTF-16 or UTF-32 as such); e.g. latin-1, cp1252, utf-16.
    encoding: str = DEFAULT_ENCODING
    # Double quotes in CSV/TSV files: "csv" encloses a field in them (which may then hold delimiters, line breaks and
    # doubled quotes); "none" reads them as text, for files that quote nothing (GLUE's train.tsv, the SMS Spam
    # Collection), where a text may start with one; "auto": csv, except for a TSV file whose start shows that it
    # quotes nothing (table_formats.reads_quotes). Every file of the run (train, validation, test, unlabeled).
    quoting: Literal["auto", "csv", "none"] = "auto"
    # The key of a JSON file's one object whose value is the list of records: SQuAD's and many exports'
    # {"version": ..., "data": [{...}, ...]} (HF datasets' load_dataset("json", field=...)). Unset: one record per
    # line, or an array.
    json_field: str | None = None
    # The one character between the fields of a CSV/TSV file. Unset: the format's (a comma, or a semicolon or a tab on
    # a first line that shows it; a tab for TSV). Files separated by another one, as the Financial PhraseBank's
    # "sentence@label" lines.
    delimiter: str | None = None
    # Names for the columns of header-less CSV/TSV files (the original ag_news_csv layout has no header).
    # With column_names set, a file whose first row repeats these names is read as having a header.
    column_names: list[str] | None = None
    text_columns: list[str] = field(default_factory=lambda: [TEXT_COLUMN])
    text_separator: str = " "
    # Sentence-pair tasks (NLI's premise and hypothesis, paraphrase pairs, a question and a passage): the columns of
    # the second text, joined as text_columns are. The model reads [CLS] first [SEP] second [SEP] with segment ids,
    # as BERT was pretrained on pairs; a text longer than max_length loses tokens from the end of the longer side.
    text_pair_columns: list[str] | None = None
    # ag_news_csv writes a newline inside a field as a backslash followed by "n".
    unescape_newlines: bool = False
    label_column: str = LABEL_COLUMN
    # Class names in id order. Unset: taken from the Hub's ClassLabel, or the sorted distinct string labels.
    label_names: list[str] | None = None
    # A text file of the class names, one per line in id order, read as label_names: the classes.txt that comes with
    # ag_news_csv, DBpedia's and Yelp's CSV files (their labels are ids from 1: label_index_base 1).
    label_names_file: str | None = None
    # Integer labels count from this number (ag_news_csv's class index runs 1-4). Unset: 0 with label_names (a train
    # file of ids without a 0 must set it: labels.refuse_unsaid_id_base); integer labels inferred from train count
    # from 0 when train has a 0, else from 1 (labels written 1..K).
    label_index_base: int | None = None
    # "multi_label": a row carries a set of classes (possibly empty: all negative), a list in JSON Lines/Parquet or a
    # string joined by label_separator in CSV/TSV; the model scores each class with its own sigmoid.
    task: Literal["single_label", "multi_label"] = "single_label"
    # Joins a multi-label row's classes in CSV/TSV labels and in predictions, so no class name may contain it.
    label_separator: str = "|"
    # Multi-label as one indicator column per class (Jigsaw's toxic, obscene, ...): a row has the classes whose cell
    # is 1 (or true, yes) and lacks those at 0 (false, no). The classes are these columns, in this order; then
    # label_column and label_names are not used.
    label_columns: list[str] | None = None
    # Label cells that mean "no label" (stripped, any case): what pandas and spreadsheets write for a missing value.
    # Such a row is incomplete (incomplete_rows), as one with an empty label cell. Not "-" (SNLI's "no gold label"),
    # which a "+"/"-" labelling uses as a class: add it where it marks none.
    missing_label_values: list[str] = field(default_factory=lambda: ["NaN", "N/A", "#N/A", "null", "<NA>"])
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    # Shares of train carved out (stratified, seeded) as test / validation when the data has no such split.
    test_fraction: float = 0.1
    validation_fraction: float = 0.1
    # A column of the train file (or of a Hub dataset with only a train split) saying each row's split: train,
    # validation (valid, val, dev) or test, in any case (data.SPLIT_VALUES). A split it never names is carved as above.
    split_column: str | None = None
    # A column of unique row ids, carried into test_predictions.csv and reports; unset: the row's line number.
    id_column: str | None = None
    # Exact duplicate texts (after whitespace normalisation) are always counted. "within": repeats inside a split
    # are dropped; "across" (default): also validation/test texts found in train, which would be leakage.
    deduplicate: Literal["none", "within", "across"] = "across"
    # Rows without a text, or (single-label) without a label: "error" names them all in one message; "drop" leaves
    # them out of their split, lists them in removed_rows.csv and counts them in metrics.json (data.incomplete_rows).
    incomplete_rows: Literal["error", "drop"] = "error"
    # Tokenized splits (keyed by content) live here; Hub downloads stay in the shared Hugging Face datasets cache.
    cache_dir: str = "~/.cache/pipeline"
    # Texts without labels (same text columns as train) for distillation: the teacher labels them
    # (train.distill.teacher) and the student learns them from the soft loss only.
    unlabeled_file: str | None = None


@dataclass
class TokenizerConfig:
    name_or_path: str = "bert-base-uncased"
    # An integer, or "auto": the shortest multiple of 8 leaving at most max_truncated_fraction of train truncated;
    # with long_text chunk, the cheapest length whose max_chunks windows cut at most that share of train's documents.
    max_length: int | Literal["auto"] = "auto"
    max_truncated_fraction: float = 0.01
    # What a text longer than max_length keeps: its first tokens (head), last (tail), or both (head_tail: Sun et
    # al. 2019 found it best on long reviews and news), the head getting head_fraction of them.
    truncation: Literal["head", "tail", "head_tail"] = "head"
    head_fraction: float = 0.25
    # "chunk": a long text becomes overlapping windows of max_length tokens, each a training row carrying the
    # document's label; evaluation and prediction pool the windows' probabilities per document (eval.chunk_pooling).
    long_text: Literal["truncate", "chunk"] = "truncate"
    chunk_stride: int = 32  # tokens shared by consecutive windows
    max_chunks: int = 16  # windows per document at most: the first max_chunks - 1 and the last
    # Tokenized splits are cached on disk (keyed by data, tokenizer and length) so an identical run skips this stage.
    cache: bool = True


@dataclass
class EncoderSettings:
    """Architecture of the from-scratch encoder. This is the one place the pipeline's defaults live.

    The pipeline's YAML config nests it as `model.encoder`, so every field is a plain int/float/str. The model's
    config (pipeline/models/modeling_encoder.py, self-contained so that it can travel with the weights) has the same
    fields; `EncoderClassifierConfig.from_settings` passes every one of them from here.
    """

    # The defaults are the settings that measured best on AG News (18,000 rows, 2-core CPU): one block of width
    # 128 with mean pooling matched two blocks at half the cost; 4.2M parameters, 3.9M of them the token embedding.
    hidden_size: int = 128
    num_layers: int = 1
    num_heads: int = 4
    intermediate_size: int = 512
    dropout: float = 0.1  # on the embeddings and on both residual branches
    attention_dropout: float = 0.1  # on the attention probabilities
    max_position_embeddings: int = 512
    position_embedding: Literal["learned", "sinusoidal"] = "learned"
    # "pre": x + f(ln(x)) | "post": ln(x + f(x)) (original Transformer / BERT)
    norm: Literal["pre", "post"] = "pre"
    # "mean": mean over the real tokens (a bag of contextual words, no [CLS] to train) | "cls": the first token
    pooling: Literal["cls", "mean"] = "mean"
    # "sdpa": torch's fused kernel | "math": the explicit softmax(QK^T/sqrt(d))V
    attention_backend: Literal["sdpa", "math"] = "sdpa"
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02

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
                f"model.encoder.hidden_size ({self.hidden_size}) must be divisible by "
                f"model.encoder.num_heads ({self.num_heads})"
            )


@dataclass
class ModelConfig:
    # "pretrained": any sequence-classification checkpoint (BERT by default; RoBERTa, DistilBERT, ... too), with its
    # own tokenizer loaded by AutoTokenizer; "bert" is its older name, still accepted. "encoder": from scratch.
    kind: Literal["pretrained", "bert", "encoder"] = "pretrained"
    name_or_path: str = "bert-base-uncased"
    # The classification head reads the last layer's first ([CLS]) token only, so that layer computes only it (keys
    # and values still from every token; pipeline/models/cls_only.py): the same logits and gradients, a sixth fewer
    # FLOPs for a 6-layer model, a twelfth for a 12-layer one. Checked on a probe batch; BERT-layout models only
    # (BERT, RoBERTa, ELECTRA, ...), others keep the full layer. Training and stage 4; prediction and export always.
    last_layer_cls_only: bool = True
    # Architecture of the from-scratch encoder (model.kind: encoder); a checkpoint reads its own from name_or_path.
    encoder: EncoderSettings = field(default_factory=EncoderSettings)


@dataclass
class DistillConfig:
    """Knowledge distillation (pipeline/distill/teacher.py): a trained teacher's logits become soft targets for the model."""

    # A run directory (runs/<name>) or saved model folder of this project, BERT or encoder; unset: no distillation.
    teacher: str | None = None
    # Weight of the soft loss KL(teacher_T || student_T) * T^2; 1 - alpha weighs cross-entropy on gold labels.
    # Rows without a gold label (data.unlabeled_file, augmented copies) train on the soft loss alone.
    alpha: float = 0.5
    temperature: float = 2.0
    # Enlarge the transfer set with copies of the train texts (Tang et al. 2019), labelled by the teacher:
    # "mask" replaces words by the mask token, "ngram" keeps a random n-gram of the text, "dropout" deletes words,
    # "mask_ngram" masks words and then takes an n-gram (Tang's combination). Seeded by run.seed; cached.
    augment: Literal["none", "mask", "ngram", "dropout", "mask_ngram"] = "none"
    augment_copies: int = 1
    # Per word: the chance to be masked ("mask") or deleted ("dropout").
    augment_word_probability: float = 0.1
    # Per copy: the chance to keep only an n-gram of 1 to augment_ngram_max words ("ngram", "mask_ngram").
    augment_ngram_probability: float = 0.25
    augment_ngram_max: int = 5
    # Teacher labelling: rows per forward pass of the prediction path (pipeline.predict.Predictor).
    teacher_batch_size: int = 128
    # Start the student's token embeddings (model.kind: encoder) from the teacher's, projected onto the student's
    # width by PCA; needs the same vocabulary. The rest of the student is still initialised at random.
    init_embeddings: bool = False


@dataclass
class TrainConfig:
    epochs: float = 3.0
    # When set, training stops after this many optimizer steps whatever `epochs` says.
    max_steps: int | None = None
    per_device_batch_size: int = 32
    gradient_accumulation_steps: int = 1
    # Unset: by model.kind (LEARNING_RATES): fine-tuning a pretrained model wants a rate ~40x below training the
    # encoder from scratch. The resolved number is what config.yaml records.
    learning_rate: float | None = None
    # Parameters the pretrained checkpoint lacks (the new classification head) learn at this rate; unset: at
    # learning_rate. Adam moves a weight by about the learning rate per step: at 1e-4, under 0.016 in an epoch of 157
    # steps, the size of the head's initial weights (std 0.02). So the new head's logits could not grow, and each
    # class's probability stopped at a ceiling (0.93-0.97 on AG News) whatever the evidence, which no temperature
    # corrects. 1e-2 is SetFit's head rate. The from-scratch encoder is all new and trains at learning_rate.
    head_learning_rate: float | None = 1e-2
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    mixed_precision: Literal["auto", "no", "fp16", "bf16"] = "auto"
    # Unset: evaluate on validation once per epoch.
    eval_every_steps: int | None = None
    # The validation metric that picks the best model (and drives early stopping). auto: micro-F1 for multi-label
    # tasks; macro-F1 when train's classes are imbalanced (labels.IMBALANCE_RATIO), where accuracy mostly rewards the
    # majority classes and picks the checkpoint that undoes class weights; accuracy otherwise.
    selection_metric: Literal["auto", "accuracy", "macro_f1", "micro_f1"] = "auto"
    save_every_steps: int | None = None
    # Evaluations in a row without a better validation score (selection_metric) before training stops; unset: never.
    early_stopping_patience: int | None = None
    resume: bool = False
    log_every_steps: int = 20
    # CPU threads per process; unset: the cores other work leaves free when the run starts, shared among this
    # machine's processes (OMP_NUM_THREADS wins when set). Two threads on two cores, one of them busy elsewhere,
    # wait on each other: that run trains at a sixth of its speed, one thread at 70%.
    cpu_threads: int | None = None
    # Batches drawn from length-sorted pools, then trailing all-padding columns dropped: the same maths, fewer FLOPs.
    group_by_length: bool = True
    trim_padding: bool = True
    # CPU training: dropout masks from four 16-bit integers per random draw instead of one bernoulli_ draw per element
    # (pipeline/train/dropout.py); same expectation, p rounded to 1/65536, 1.3x the samples/s of MiniLM. No effect on a GPU.
    fast_dropout: bool = True
    # CPU runs: glibc keeps the memory PyTorch frees and serves the next big tensors from it, instead of unmapping it
    # and page-faulting fresh pages in for every new tensor (hardware.freed_memory_kept); handed back after the run.
    keep_freed_memory: bool = True
    # Before a run longer than this, print the estimated duration and a quicker config.
    warn_if_longer_than_minutes: float = 15.0
    # Rare classes otherwise count for little in the loss: "balanced" weighs each class by n_rows / (n_classes x its
    # train rows) (multi-label: pos_weight = negatives / positives per class); a mapping {class: weight} sets them
    # (unnamed classes 1). The weights used are recorded in metrics.json under training.class_weights.
    class_weights: Literal["none", "balanced"] | dict[str, float] = "none"
    # "focal" (Lin et al. 2017) scales each row's cross-entropy by (1 - p_true)^focal_gamma: easy rows count less.
    loss: Literal["cross_entropy", "focal"] = "cross_entropy"
    focal_gamma: float = 2.0
    # After training, fit one temperature on validation (minimum NLL) and fold 1/T into the saved classifier layer,
    # so every way of loading model/ gives calibrated probabilities (the argmax is unchanged).
    calibrate: bool = True
    distill: DistillConfig = field(default_factory=DistillConfig)


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


@dataclass
class EvalConfig:
    # Rows per evaluation batch, at most; and tokens (rows x the width a batch is padded to), at most: long rows go
    # in smaller batches, whose activations stay in a CPU's caches (MiniLM on a 2-core AVX2 CPU: 1.03x the rows/s
    # of 128-row batches, benchmarks/README.md). "auto": MAX_BATCH_TOKENS on a CPU, no cap on a GPU (which wants
    # big batches); null: no cap; a number: that cap on any device. Prediction's --max-batch-tokens is the same.
    batch_size: int = 128
    max_batch_tokens: int | Literal["auto"] | None = "auto"
    # Write the per-row test predictions (text, gold, predicted, probabilities) for reports.
    save_predictions: bool = True
    # tokenizer.long_text: chunk: a document's probabilities are the mean, or the per-class max, over its windows.
    chunk_pooling: Literal["mean", "max"] = "mean"
    # Decision thresholds, chosen on validation and stored with the model (model/decision.json): a probability,
    # best_f1, {precision: p} (the lowest threshold reaching p) or {recall: r} (the highest keeping r), for every
    # class, or a mapping class -> one of those. Binary and multi-label tasks act on it; a multi-class task flags
    # rows whose top probability is below it (low_confidence) instead of relabelling them. Unset: 0.5 for
    # multi-label, argmax otherwise.
    threshold: float | Literal["best_f1"] | dict[str, float | Literal["best_f1"] | dict[str, float]] | None = None
    # After the run, export the model to ONNX ("onnx"; "int8" adds the quantized models) into runs/<name>/onnx/ and
    # verify it against PyTorch on validation rows (pipeline.export); needs the optional extra `onnx`, and makes the
    # OpenVINO models too when the extra `openvino` is installed.
    export: Literal["none", "onnx", "int8"] = "none"
    # A TF-IDF + logistic regression baseline fitted on the same train split and scored on the same test split
    # (seconds; recorded in metrics.json under "baseline" and shown in reports); "none" skips it.
    baseline: Literal["tfidf", "none"] = "tfidf"
    # At the end of the run, time the prediction path (pipeline.predict) on at most this many test texts and
    # record rows/s in metrics.json (throughput.predict_rows_per_second); 0 skips it. Four batches of 128 after the
    # warm-up batch: enough for a steady rate, about a second of a run's time rather than four.
    predict_speed_rows: int = 512

    def __post_init__(self):
        # Checked before training, not after it: a missing optional dependency must not cost a whole run.
        from pipeline.common.extras import extra_install, installed

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

    def __post_init__(self):
        if self.train.learning_rate is None:
            self.train.learning_rate = LEARNING_RATES[self.model.kind]

    @property
    def run_dir(self) -> Path:
        return Path(self.run.output_dir) / self.run.name


# ---------------------------------------------------------------------------------------------------------------
# Type checking and coercion

BOOLEAN_WORDS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


class _ConfigLoader(yaml.SafeLoader):
    """YAML with YAML 1.2's booleans: only true and false. YAML 1.1 also reads yes, no, on and off as booleans,
    which turned class names such as yes/no into True/False; a boolean setting still takes those words
    (`_coerce_scalar`)."""


_ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml(text: str) -> Any:
    """A config's YAML text (a file, or an override's value) as Python values."""
    return yaml.load(text, Loader=_ConfigLoader)  # a SafeLoader: no Python objects


_SCALAR_NAMES = {float: "a number", int: "an integer", bool: "true or false", str: "a string"}
_SCALAR_PLURALS = {float: "numbers", int: "integers", bool: "booleans", str: "strings"}


def _describe(tp: Any) -> str:
    """A type as a config reader would say it: "a number, 'best_f1' or null"."""
    return _either(_options(tp))


def _options(tp: Any) -> list[str]:
    """The alternatives a type allows, unions and literals flattened."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return [repr(a) for a in typing.get_args(tp)]
    if origin in (Union, types.UnionType):
        return [option for arg in typing.get_args(tp) for option in _options(arg)]
    if origin is list:
        (item,) = typing.get_args(tp)
        return [f"a list of {_SCALAR_PLURALS.get(item) or _nested(item)}"]
    if origin is dict:
        return [f"a mapping of names to {_nested(typing.get_args(tp)[1])}"]
    if tp is type(None):
        return ["null"]
    return [_SCALAR_NAMES.get(tp, getattr(tp, "__name__", str(tp)))]


def _either(options: list[str]) -> str:
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


def _nested(tp: Any) -> str:
    """A member type inside a list or mapping, bracketed where it is itself a choice."""
    described = _describe(tp)
    return f"({described})" if " or " in described else described


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Return `value` as type `tp`, or raise ConfigError naming `key`."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return _coerce_union(value, tp, key)
    if origin is Literal:
        return _coerce_literal(value, tp, key)
    if origin is dict:
        return _coerce_dict(value, tp, key)
    if origin is list:
        return _coerce_list(value, tp, key)
    if tp in (bool, int, float, str):
        return _coerce_scalar(value, tp, key)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping of {tp.__name__} fields, got {value!r}")
        return _build(tp, value, key)
    raise ConfigError(f"{key}: unsupported type {tp!r}")


def _coerce_union(value: Any, tp: Any, key: str) -> Any:
    """The first member of the union that accepts `value` (None where the union allows it)."""
    args = typing.get_args(tp)
    if value is None and type(None) in args:
        return None
    members = [arg for arg in args if arg is not type(None)]
    # X | None, or a mapping (list) where only one member is one: that member's own error says more (which item,
    # and why) than the whole union's.
    container = dict if isinstance(value, dict) else list if isinstance(value, list) else None
    shaped = [arg for arg in members if container is not None and typing.get_origin(arg) is container]
    if len(members) == 1 or len(shaped) == 1:
        return _coerce(value, shaped[0] if len(shaped) == 1 else members[0], key)
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _coerce(value, arg, key)
        except ConfigError:
            continue
    raise ConfigError(f"{key}: expected {_describe(tp)}, got {value!r}")


def _coerce_literal(value: Any, tp: Any, key: str) -> Any:
    options = typing.get_args(tp)
    if isinstance(value, bool):  # a bare true/false (and, from older YAML readers, yes/no/on/off)
        spellings = {word for word, meaning in BOOLEAN_WORDS.items() if meaning is value}
        value = next((option for option in options if str(option).lower() in spellings), value)
    if value in options and not isinstance(value, bool):
        return value
    raise ConfigError(f"{key}: expected {_describe(tp)}, got {value!r}")


def _coerce_dict(value: Any, tp: Any, key: str) -> dict:
    key_type, value_type = typing.get_args(tp)
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected {_describe(tp)}, got {value!r}")
    return {_coerce(name, key_type, key): _coerce(item, value_type, f"{key}.{name}") for name, item in value.items()}


def _coerce_list(value: Any, tp: Any, key: str) -> list:
    (item_type,) = typing.get_args(tp)
    if isinstance(value, str):  # "title,description" on the command line
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key}: expected {_describe(tp)}, got {value!r}")
    return [_coerce(item, item_type, f"{key}[{i}]") for i, item in enumerate(value)]


def _coerce_scalar(value: Any, tp: type, key: str) -> Any:
    """bool, int, float or str; YAML's own readings of numbers and strings are accepted where unambiguous."""
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in BOOLEAN_WORDS:
            return BOOLEAN_WORDS[value.lower()]
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads "3e-5" (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a string, got {value!r} (YAML reads a bare true or false so: quote it)")
    raise ConfigError(f"{key}: expected a string, got {value!r}")


def check_types(instance: Any, prefix: str) -> None:
    """Coerce every field of a dataclass instance to its annotated type in place (as YAML values are)."""
    hints = typing.get_type_hints(type(instance))
    for item in dataclasses.fields(instance):
        setattr(instance, item.name, _coerce(getattr(instance, item.name), hints[item.name], f"{prefix}.{item.name}"))


def _build(cls: type, values: dict[str, Any], prefix: str = "") -> Any:
    """Instantiate dataclass `cls` from a (possibly partial) nested dict, defaults filling the rest."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in values.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if key not in names:
            known = ", ".join(sorted(names))
            raise ConfigError(f"unknown config key '{dotted}' (known keys here: {known})")
        kwargs[key] = _coerce(value, hints[key], dotted)
    return cls(**kwargs)


# ---------------------------------------------------------------------------------------------------------------
# Loading


def _read_yaml(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path.resolve() in seen:
        raise ConfigError(f"{path}: 'extends' forms a cycle")
    try:
        content = load_yaml(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start}); save the config as UTF-8") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    if not isinstance(content, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    parents = content.pop("extends", None) or []
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(parent, str) for parent in parents):
        raise ConfigError(f"{path}: 'extends' must be a file name or a list of file names, got {parents!r}")
    merged: dict[str, Any] = {}
    for parent in parents:  # later files win, and this file wins over all of them
        merged = _merge(merged, _read_yaml(path.parent / parent, seen + (path.resolve(),)))
    return _merge(merged, content)


def _merge(base: dict[str, Any], update: dict[str, Any], section: type = PipelineConfig) -> dict[str, Any]:
    """`update` over `base`: a section (a dataclass: train, train.distill, ...) merges key by key; any other value,
    a mapping such as eval.threshold or train.class_weights included, is replaced whole."""
    hints = typing.get_type_hints(section)
    merged = dict(base)
    for key, value in update.items():
        child = hints.get(key)
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and dataclasses.is_dataclass(child):
            merged[key] = _merge(merged[key], value, child)
        else:
            merged[key] = value
    return merged


# A bare | or > starts a block of text in YAML, empty when nothing indented follows: `label_separator: |` in a file
# reads as "", so such a value must be quoted there ("|"). As a whole override value it means the character.
YAML_BLOCK_INDICATORS = ("|", ">")


def parse_override(text: str) -> tuple[list[str], Any]:
    """'train.learning_rate=3e-5' -> (['train', 'learning_rate'], 3e-5); the value is read as YAML."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override '{text}' is not of the form section.key=value")
    try:
        value = load_yaml(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    if raw.strip() in YAML_BLOCK_INDICATORS:  # YAML reads them as an empty block of text; here they are the character
        value = raw.strip()
    path = key.strip().split(".")
    return path, _as_written(raw, value, _field_type(path))


def override_text(key: str, values: list[str]) -> str:
    """A list of texts as an override a shell passes and parse_override reads back as that list: each item as it is
    where YAML reads it so (Health, N/A), else quoted ("null", "#N/A", "9")."""
    return shlex.quote(f"{key}=[{', '.join(_flow_item(value) for value in values)}]")


def _flow_item(value: str) -> str:
    try:
        plain = load_yaml(f"[{value}]") == [value]
    except yaml.YAMLError:
        plain = False
    return value if plain else json.dumps(value, ensure_ascii=False)


# The words YAML reads as null; nothing at all after the "=" is null too.
YAML_NULL_WORDS = ("~", "null", "Null", "NULL")
# The types of string settings (str, or str | None), whose overrides keep the text YAML would read as another value.
STRING_TYPES = (str, str | None)


def _as_written(raw: str, value: Any, tp: Any) -> Any:
    """An override's value for a string setting as the text written, where YAML reads it as a mapping
    (`data.label_column=DESC:`, a TREC-style label) or as null from text that says no null (`data.delimiter= `, a
    space, which YAML strips to nothing). Any other value, and any other setting's, is YAML's reading."""
    if tp not in STRING_TYPES:
        return value
    written_null = raw == "" or raw.strip() in YAML_NULL_WORDS
    if isinstance(value, dict):  # the text of a key and a colon, as a label_column=DESC: names a column
        return raw.strip()
    return raw if value is None and not written_null else value


def _field_type(path: list[str]) -> Any:
    """The annotated type of the setting at a dotted path (data.delimiter: str | None); None for no such setting."""
    section: Any = PipelineConfig
    for part in path:
        if not dataclasses.is_dataclass(section):
            return None
        section = typing.get_type_hints(section).get(part)
    return section


def apply_overrides(values: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    values = copy.deepcopy(values)
    for text in overrides:
        path, value = parse_override(text)
        node = values
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override '{text}': '{part}' is a value, not a section")
            node = child
        node[path[-1]] = value
    return values


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PipelineConfig:
    values = _read_yaml(Path(path)) if path is not None else {}
    values = apply_overrides(values, overrides or [])
    config = _build(PipelineConfig, values)
    from pipeline.config.checks import validate  # the checks module imports this one

    validate(config)
    return config


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def with_absolute_paths(values: dict[str, Any], resolve_links: bool = False) -> dict[str, Any]:
    """A copy of a config's values (`to_dict`) whose local paths (LOCAL_PATH_KEYS, LOCAL_OR_HUB_KEYS) are absolute,
    read against the working directory as the run read them. `resolve_links`: with symbolic links resolved too, to
    compare two configs (a path through a linked folder and the same file reached from inside it are one file)."""
    values = copy.deepcopy(values)
    for key in LOCAL_PATH_KEYS + LOCAL_OR_HUB_KEYS:
        *sections, name = key.split(".")
        node = values
        for section in sections:
            node = node.get(section) if isinstance(node, dict) else None
        value = node.get(name) if isinstance(node, dict) else None
        if not isinstance(value, str) or not value or value == STANDARD_INPUT:
            continue
        local = os.path.expanduser(value)
        if key in LOCAL_PATH_KEYS or os.path.exists(local):
            node[name] = os.path.realpath(local) if resolve_links else os.path.abspath(local)
    return values


def save_config(config: PipelineConfig, path: Path) -> None:
    """Write the fully resolved config (every default filled in, local paths absolute) atomically."""
    from pipeline.common.io import atomic_write_text

    header = "# Fully resolved config of this run; rerun with: python -m pipeline.finetune --config <this file>\n"
    atomic_write_text(path, header + yaml.safe_dump(with_absolute_paths(to_dict(config)), sort_keys=False))
