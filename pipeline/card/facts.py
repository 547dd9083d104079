"""What a finished run says about its model, for the model card: `read_facts` takes config.yaml and the RunRecord
(metrics.json) into CardFacts. A card is published: it names local files and folders by their own names, never by
their paths on this machine."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.config.schema import DataConfig
from pipeline.data.tables import format_read
from pipeline.data.text import TextSpec
from pipeline.run.directory import MODEL_DIR, TOKENIZER_CONFIG_FILE, RunDir, config_setting, is_number
from pipeline.run.record import (
    Calibration,
    RunRecord,
    Scores,
)
from pipeline.text.windows import LongTextRule

# What the Hub accepts as a model or dataset id: "name" or "owner/name".
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
# Local data has no Hub id: its model-index type is the `datasets` builder that reads its format, as transformers'
# Trainer gives it (fastText lines and class folders' documents are plain text: `text`); its name, its files' names.
_FORMAT_BUILDERS = {"csv": "csv", "tsv": "csv", "jsonl": "json", "parquet": "parquet", "fasttext": "text"}
_FOLDER_BUILDER = "text"
# What a data setting missing from config.yaml (an older run's) was: its default, the same then as now.
DATA_DEFAULTS = DataConfig()
# The splits a data file may be given for (data.<split>_file): pipeline.data.load.SPLITS, not imported here, as importing
# that module loads `datasets`, which a card does not need.
FILE_SPLITS = ("train", "validation", "test")
# What usage examples call the model: its Hub id once uploaded (the card cannot know the owner's account).
HUB_ID_PLACEHOLDER = "your-username/{name}"


def published_name(name: Any) -> str | None:
    """How a card names a checkpoint or tokenizer: its Hub id, or a local folder by its own name only (the card is
    published; config.yaml holds local paths absolute, and a path on this machine tells a reader nothing)."""
    return (hub_id(name) or Path(name).name) if isinstance(name, str) and name else None


def hub_id(name: Any) -> str | None:
    """`name` when it reads as a Hub id and is not a local folder (a local path names no Hub model)."""
    return name if isinstance(name, str) and _HUB_ID.match(name) and not Path(name).expanduser().exists() else None


@dataclass(frozen=True)
class CardFacts:
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
    record: RunRecord  # metrics.json
    validation: Scores  # empty where the run has none
    seed: int | None

    @property
    def from_hub(self) -> bool:
        return self.data.get("source", DATA_DEFAULTS.source) == "hub"

    @property
    def accuracy_name(self) -> str:
        return "subset accuracy" if self.multi_label else "accuracy"


def read_facts(run: RunDir, config: dict[str, Any], record: RunRecord) -> CardFacts:
    kind = record.run.model_kind or config_setting(config, "model", "kind") or "pretrained"
    data = mapping(config.get("data"))
    licence, seed = config_setting(config, "run", "license"), record.data.seed
    return CardFacts(
        run=run,
        name=str(record.run.name or config_setting(config, "run", "name") or run.path.name),
        labels=record.labels,
        is_encoder=kind == "encoder",
        base=None if kind == "encoder" else config_setting(config, "model", "name_or_path"),
        encoder=mapping(config_setting(config, "model", "encoder")),
        tokenizer=config_setting(config, "tokenizer", "name_or_path"),
        data=data,
        train=mapping(config.get("train")),
        license=str(licence) if licence else None,
        long_text_rule=LongTextRule.from_settings(config.get("tokenizer") or {}),
        text_spec=TextSpec.from_settings(data, DATA_DEFAULTS),
        multi_label=record.multi_label or data.get("task") == "multi_label",
        record=record,
        validation=record.validation or Scores(),
        seed=seed if seed is not None else config_setting(config, "run", "seed"),
    )


def mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def older_calibration(test: Scores) -> Calibration | None:
    """Runs before metrics.json had a `calibration` section recorded it under `test`."""
    recorded = test.extra.get("calibration")
    return Calibration.from_dict(recorded) if isinstance(recorded, dict) else None


def split_sizes(facts: CardFacts) -> dict[str, Any]:
    """Rows per split: metrics.json's data.sizes; older runs recorded only validation and test."""
    sizes = {split: n for split, n in (facts.record.data.sizes or {}).items() if is_number(n)}
    for split, scores in (("validation", facts.validation), ("test", facts.record.test)):
        if split not in sizes and is_number(scores.num_samples):
            sizes[split] = scores.num_samples
    return sizes


def read_from_folders(facts: CardFacts) -> set[str]:
    """The splits read from a folder of class folders or of class files (data.class_folders, data.class_files)."""
    record = facts.record.data
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
    teacher = facts.record.distill.teacher if facts.record.distill else None
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
