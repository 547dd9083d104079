"""What a finished run says about its model, as typed facts for the model card (pipeline/card/write.py fills
pipeline/card/template.md from them). `read_facts` is the one place that reads metrics.json's mapping: every figure
and record the card uses is picked out there, defensively (keys that older runs, or newer stages, may lack read as
None). Records whose shape varies by run (distill, baseline, calibration, duplicates, per-class scores) are kept as
recorded, and phrases.py and rows.py read them where they write them out. A card is published: it names local
files and folders by their own names, never by their paths on this machine.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pipeline.config.schema import DataConfig
from pipeline.data.tables import format_read
from pipeline.data.text import TextSpec
from pipeline.run.directory import (
    MODEL_DIR,
    RunDir,
    headline_metrics,
    is_number,
    nested_get,
    ranking_metric,
    untrained_classes,
)
from pipeline.scoring.thresholds import selection_cut_off
from pipeline.text.windows import LongTextRule

# What the Hub accepts as a model or dataset id: "name" or "owner/name".
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
# Local data has no Hub id: the model-index gives as its type the `datasets` builder that reads its format
# (tables.FORMATS), as transformers' Trainer does for local data (TrainingSummary.from_trainer: the dataset's
# builder_name); fastText lines and a folder of class folders' documents are plain text files, which its `text`
# builder reads. Its name is its files' names.
_FORMAT_BUILDERS = {"csv": "csv", "tsv": "csv", "jsonl": "json", "parquet": "parquet", "fasttext": "text"}
_FOLDER_BUILDER = "text"
# What a data setting missing from config.yaml (an older run's) was: its default, the same then as now.
DATA_DEFAULTS = DataConfig()
# The splits a data file may be given for (data.<split>_file): pipeline.data.load.SPLITS, not imported here, as importing
# that module loads `datasets`, which a card does not need.
FILE_SPLITS = ("train", "validation", "test")
# save_pretrained's tokenizer settings file, which names the tokenizer's class.
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
# What usage examples call the model: its Hub id once uploaded (the card cannot know the owner's account).
HUB_ID_PLACEHOLDER = "your-username/{name}"


def published_name(name: Any) -> str | None:
    """How a card names a checkpoint or tokenizer: its Hub id, or a local folder by its own name only (the card is
    published; config.yaml holds local paths absolute, and a path on this machine tells a reader nothing)."""
    if not isinstance(name, str) or not name:
        return None
    return hub_id(name) or Path(name).name


def hub_id(name: Any) -> str | None:
    """`name` when it reads as a Hub id and is not a local folder (a local path names no Hub model)."""
    if not isinstance(name, str) or not _HUB_ID.match(name) or Path(name).expanduser().exists():
        return None
    return name


# Groups of metrics.json figures: each field is read from the key of the same name (read_facts).
@dataclass(frozen=True)
class Scores:
    """One split's figures (metrics.json `test`, `validation`)."""

    accuracy: float | None
    macro_f1: float | None
    micro_f1: float | None
    loss: float | None
    num_samples: int | None
    per_class: dict[str, Any] | None  # label -> {precision, recall, f1, support}
    confusion_matrix: list[list[int]] | None


@dataclass(frozen=True)
class DataRecord:
    """What stage 1 recorded of the data (metrics.json `data`): sizes, seed and how files were read."""

    sizes: dict[str, int] | None
    duplicates: dict[str, Any] | None
    incomplete_rows: dict[str, Any] | None
    quoting: dict[str, Any] | None
    delimiter: dict[str, Any] | None
    class_folders: dict[str, Any] | None
    class_files: dict[str, Any] | None
    carved_from_train: dict[str, float] | None
    split_column: dict[str, Any] | None


@dataclass(frozen=True)
class Training:
    """What stage 3 recorded (metrics.json `training`)."""

    epochs_completed: float | None
    global_steps: int | None
    effective_batch_size: int | None
    mixed_precision: str | None
    head_parameters: list[str] | None
    stopped_early: bool | None


@dataclass(frozen=True)
class Tokenization:
    max_length: int | None
    max_length_setting: Any
    truncated_fraction: dict[str, float] | None


@dataclass(frozen=True)
class Timings:
    train_seconds: float | None
    total_seconds: float | None


@dataclass(frozen=True)
class CardFacts:
    """The facts of one finished run that the card's metadata and text are written from."""

    run: RunDir
    name: str
    labels: list[str]
    is_encoder: bool
    base: str | None  # the checkpoint fine-tuned (model.name_or_path); None for the from-scratch encoder
    encoder: dict[str, Any]  # config.yaml model.encoder: the from-scratch encoder's shape
    tokenizer: str | None
    data: dict[str, Any]  # config.yaml data: where the rows came from and how they were read
    train: dict[str, Any]  # config.yaml train
    license: str | None
    long_text_rule: LongTextRule  # how texts longer than the fixed length were read: cut or in windows
    text_spec: TextSpec  # how the run built its texts from its data's columns
    multi_label: bool  # data.task multi_label: any number of labels per text; `accuracy` is subset accuracy
    ranking_metric: str  # what picked the model, and leads its comparisons (run.directory.ranking_metric)
    headline_metrics: list[str]
    untrained: list[str]  # classes without training rows
    selection_cut_off: str  # how the kept model's validation score decided labels, where thresholds differ
    num_parameters: int | None
    finished_at: str | None
    test: Scores
    validation: Scores
    data_record: DataRecord
    tokenization: Tokenization
    training: Training
    timings: Timings
    seed: int | None
    best_step: int | None
    best_score: float | None
    thresholds: dict[str, float] | None  # the decision thresholds chosen on validation, by class
    threshold_kind: str | None
    baseline: Any  # metrics.json `baseline` as recorded: one model's figures, several by name, or an error
    calibration: Any  # metrics.json `calibration` (older runs: test.calibration) as recorded
    distill: dict[str, Any] | None  # how a distilled model was made (pipeline.distill.teacher.student_rows)
    versions: dict[str, Any] | None
    device: dict[str, Any] | None

    @property
    def from_hub(self) -> bool:
        return self.data.get("source", DATA_DEFAULTS.source) == "hub"

    @property
    def accuracy_name(self) -> str:
        return "subset accuracy" if self.multi_label else "accuracy"


def read_facts(run: RunDir, config: dict[str, Any], metrics: dict[str, Any]) -> CardFacts:
    """The card's facts from config.yaml's and metrics.json's mappings: the one reader of metrics.json here."""

    def get(*keys: str) -> Any:
        return nested_get(metrics, *keys)

    def group(cls: type, key: str) -> Any:
        return cls(**{field.name: get(key, field.name) for field in fields(cls)})

    def mapping(value: Any) -> dict[str, Any]:
        return value if isinstance(value, dict) else {}

    kind = get("run", "model_kind") or nested_get(config, "model", "kind") or "pretrained"
    data = mapping(config.get("data"))
    metric = ranking_metric(metrics)
    best_score, calibration = get("best", f"validation_{metric}"), get("calibration")
    licence, seed = nested_get(config, "run", "license"), get("data", "seed")
    return CardFacts(
        run=run,
        name=str(get("run", "name") or nested_get(config, "run", "name") or run.path.name),
        labels=[str(label) for label in get("labels") or []],
        is_encoder=kind == "encoder",
        base=None if kind == "encoder" else nested_get(config, "model", "name_or_path"),
        encoder=mapping(nested_get(config, "model", "encoder")),
        tokenizer=nested_get(config, "tokenizer", "name_or_path"),
        data=data,
        train=mapping(config.get("train")),
        license=str(licence) if licence else None,
        long_text_rule=LongTextRule.from_settings(config.get("tokenizer") or {}),
        text_spec=TextSpec.from_settings(data, DATA_DEFAULTS),
        multi_label="multi_label" in (get("data", "task"), data.get("task")),
        ranking_metric=metric,
        headline_metrics=headline_metrics(metrics),
        untrained=untrained_classes(metrics),
        selection_cut_off=selection_cut_off(metrics),
        num_parameters=get("run", "num_parameters"),
        finished_at=get("run", "finished_at"),
        test=group(Scores, "test"),
        validation=group(Scores, "validation"),
        data_record=group(DataRecord, "data"),
        tokenization=group(Tokenization, "tokenization"),
        training=group(Training, "training"),
        timings=group(Timings, "timings"),
        seed=seed if seed is not None else nested_get(config, "run", "seed"),
        best_step=get("best", "step"),
        best_score=best_score if is_number(best_score) else get("best", "score"),
        thresholds=get("thresholds", "thresholds"),
        threshold_kind=get("thresholds", "kind"),
        baseline=get("baseline"),
        calibration=calibration if calibration is not None else get("test", "calibration"),
        distill=get("distill") if isinstance(get("distill"), dict) else None,
        versions=get("versions"),
        device=get("device"),
    )


def split_sizes(facts: CardFacts) -> dict[str, Any]:
    """Rows per split: metrics.json's data.sizes; older runs recorded only validation and test."""
    sizes = {split: n for split, n in (facts.data_record.sizes or {}).items() if is_number(n)}
    for split, scores in (("validation", facts.validation), ("test", facts.test)):
        if split not in sizes and is_number(scores.num_samples):
            sizes[split] = scores.num_samples
    return sizes


def read_from_folders(facts: CardFacts) -> set[str]:
    """The splits read from a folder of class folders or of class files (data.class_folders, data.class_files)."""
    record = facts.data_record
    return {split for read in (record.class_folders, record.class_files) if isinstance(read, dict) for split in read}


def data_file_names(facts: CardFacts) -> dict[str, str]:
    """The data's file (or folder) per split, by its own name: split -> name."""
    data = facts.data
    return {
        split: published_name(str(data[f"{split}_file"])) or "" for split in FILE_SPLITS if data.get(f"{split}_file")
    }


def local_data(facts: CardFacts) -> tuple[str, str]:
    """Local data as (the `datasets` builder that reads it, its name: its files' names, or a folder of class
    folders' own, with what it is: "a_train.csv (local file)", "train.csv, test.csv (local files)")."""
    data = facts.data
    split = "test" if data.get("test_file") else "train"
    if split in read_from_folders(facts):
        # A folder of class folders is its data set (bbc/), unless train's and test's lie side by side: then the
        # folder holding both is (aclImdb/ of aclImdb/train and aclImdb/test).
        train, test = (data.get(f"{split}_file") for split in ("train", "test"))
        side_by_side = train and test and train != test and Path(str(train)).parent == Path(str(test)).parent
        folder = Path(str(data.get(f"{split}_file") or ""))
        return _FOLDER_BUILDER, f"{(folder.parent.name if side_by_side else folder.name) or 'local data'} (local files)"
    builder = _FORMAT_BUILDERS.get(format_read(str(data.get(f"{split}_file") or ""), data.get("file_format")), "csv")
    names = list(dict.fromkeys(data_file_names(facts).values()))
    kind = "local file" if len(names) == 1 else "local files"
    return builder, f"{', '.join(names) or 'local data'} ({kind})"


def dataset_reference(facts: CardFacts) -> tuple[str, str, str | None, str]:
    """(model-index dataset type, dataset name, dataset config, the split scored as test: a Hub dataset's own
    name for it where data.hub_splits maps one, as GLUE MNLI's validation_mismatched)."""
    if facts.from_hub:
        name = published_name(facts.data.get("hub_name")) or "unknown"
        test_split = str((facts.data.get("hub_splits") or {}).get("test", "test"))
        return name, name, facts.data.get("hub_config"), test_split
    builder, name = local_data(facts)
    return builder, name, None, "test"


def teacher_name(facts: CardFacts) -> str | None:
    """The teacher of a distilled model by its own name: its run's folder (also when train.distill.teacher named
    the run's model/ folder)."""
    teacher = (facts.distill or {}).get("teacher")
    if not isinstance(teacher, str) or not teacher:
        return None
    path = Path(teacher)
    return published_name(str(path.parent) if path.name == MODEL_DIR and path.parent.name else teacher)


def tokenizer_class(facts: CardFacts) -> str | None:
    """The tokenizer class model/tokenizer_config.json names (transformers' own: BertTokenizer, ...), or None."""
    try:
        saved = json.loads((facts.run.model_dir / TOKENIZER_CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = saved.get("tokenizer_class") if isinstance(saved, dict) else None
    return name if isinstance(name, str) and name else None
