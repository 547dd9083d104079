"""What a run says about its model, read defensively for the model card (pipeline/card/write.py): the run's
config.yaml and metrics.json behind one getter each (keys that older runs, or newer stages, may lack read as None),
the dataset as the Hub's model-index names it, the rows per split, the distillation record, and the phrases that name
the model, its task, its data and its text rule. A card is published: it names local files and folders by their own
names, never by their paths on this machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pipeline.config.schema import DataConfig
from pipeline.data.tables import format_read
from pipeline.data.text import TextSpec
from pipeline.run.directory import MODEL_DIR, RunDir, is_number, nested_get, ranking_metric
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


class CardFacts:
    """The facts of one finished run that the card's metadata and body are written from."""

    def __init__(self, run: RunDir, config: dict[str, Any], metrics: dict[str, Any]):
        self.run = run
        self.config = config
        self.metrics = metrics
        self.labels = [str(label) for label in metrics["labels"]]
        self.name = str(nested_get(metrics, "run", "name") or nested_get(config, "run", "name") or run.path.name)
        kind = nested_get(metrics, "run", "model_kind") or nested_get(config, "model", "kind") or "pretrained"
        self.is_encoder = kind == "encoder"
        self.base = None if self.is_encoder else nested_get(config, "model", "name_or_path")
        self.data = config.get("data") if isinstance(config.get("data"), dict) else {}
        self.from_hub = self.data.get("source", DATA_DEFAULTS.source) == "hub"
        # Multi-label runs (data.task: multi_label): any number of labels per text; `accuracy` is subset accuracy.
        self.multi_label = "multi_label" in (self.get("data", "task"), self.data.get("task"))
        self.accuracy_name = "subset accuracy" if self.multi_label else "accuracy"
        # What picked the model, and leads its comparisons: accuracy, macro-F1 (imbalanced classes) or micro-F1.
        self.ranking_metric = ranking_metric(metrics)
        # How texts longer than the fixed length were read: cut (head, tail, head_tail) or in windows.
        self.long_text_rule = LongTextRule.from_settings(config.get("tokenizer") or {})
        # metrics.json's record of how a distilled model was made (pipeline.distill.teacher.student_rows): the one source of
        # the card's teacher, its accuracy and the distillation settings.
        distill = self.get("distill")
        self.distill: dict[str, Any] | None = distill if isinstance(distill, dict) else None

    def get(self, *keys: str) -> Any:
        return nested_get(self.metrics, *keys)

    def setting(self, *keys: str) -> Any:
        return nested_get(self.config, *keys)

    def dataset_reference(self) -> tuple[str, str, str | None, str]:
        """(model-index dataset type, dataset name, dataset config, the split scored as test: a Hub dataset's own
        name for it where data.hub_splits maps one, as GLUE MNLI's validation_mismatched)."""
        if self.from_hub:
            name = published_name(self.data.get("hub_name")) or "unknown"
            test_split = str((self.data.get("hub_splits") or {}).get("test", "test"))
            return name, name, self.data.get("hub_config"), test_split
        builder, name = self._local_data()
        return builder, name, None, "test"

    def _local_data(self) -> tuple[str, str]:
        """Local data as (the `datasets` builder that reads it, its name: its files' names, or a folder of class
        folders' own, with what it is: "a_train.csv (local file)", "train.csv, test.csv (local files)")."""
        split = "test" if self.data.get("test_file") else "train"
        path = str(self.data.get(f"{split}_file") or "")
        if split in self.read_from_folders():
            return _FOLDER_BUILDER, f"{self._class_folders_name(Path(path))} (local files)"
        builder = _FORMAT_BUILDERS.get(format_read(path, self.data.get("file_format")), "csv")
        names = list(dict.fromkeys(self.data_file_names().values()))
        kind = "local file" if len(names) == 1 else "local files"
        return builder, f"{', '.join(names) or 'local data'} ({kind})"

    def read_from_folders(self) -> set[str]:
        """The splits read from a folder of class folders or of class files (data.class_folders, data.class_files)."""
        splits = set()
        for key in ("class_folders", "class_files"):
            record = self.get("data", key)
            splits |= set(record) if isinstance(record, dict) else set()
        return splits

    def data_file_names(self) -> dict[str, str]:
        """The data's file (or folder) per split, by its own name: split -> name."""
        return {
            split: published_name(str(self.data[f"{split}_file"])) or ""
            for split in FILE_SPLITS
            if self.data.get(f"{split}_file")
        }

    def _class_folders_name(self, folder: Path) -> str:
        """A folder of class folders is its data set (bbc/), unless train's and test's lie side by side: then the
        folder holding both is (aclImdb/ of aclImdb/train and aclImdb/test)."""
        train, test = (self.data.get(f"{split}_file") for split in ("train", "test"))
        side_by_side = train and test and train != test and Path(str(train)).parent == Path(str(test)).parent
        return (folder.parent.name if side_by_side else folder.name) or "local data"

    def split_sizes(self) -> dict[str, Any]:
        """Rows per split: metrics.json's data.sizes; older runs recorded only validation and test."""
        recorded = self.get("data", "sizes")
        sizes = {}
        if isinstance(recorded, dict):
            sizes = {split: size for split, size in recorded.items() if is_number(size)}
        for split in ("validation", "test"):
            if split not in sizes and is_number(self.get(split, "num_samples")):
                sizes[split] = self.get(split, "num_samples")
        return sizes

    @property
    def text_spec(self) -> TextSpec:
        """How the run built its texts from its data's columns."""
        return TextSpec.from_settings(self.data, DATA_DEFAULTS)

    def text_rule(self) -> str:
        spec = self.text_spec

        def built(columns: tuple[str, ...]) -> str:
            if len(columns) == 1:
                return f"the `{columns[0]}` column"
            return f"the columns {', '.join(f'`{c}`' for c in columns)} joined by {json.dumps(spec.separator)}"

        if spec.pair_columns:
            return f"a sentence pair: its first text {built(spec.columns)}, its second {built(spec.pair_columns)}"
        return built(spec.columns)

    def model_phrase(self) -> str:
        """What the model is and how it was made, as the intro's clause."""
        if self.is_encoder:
            layers = self.setting("model", "encoder", "num_layers")
            width = self.setting("model", "encoder", "hidden_size")
            shape = f"{layers}-layer, {width}-wide " if layers and width else ""
            if self.distill is None:
                return f"a {shape}Transformer encoder trained from scratch, without pretraining"
            start = (
                ", whose token embeddings it started from"
                if isinstance(self.distill.get("init_embeddings"), dict)
                else ""
            )
            return f"a {shape}Transformer encoder without pretraining, distilled from {self.teacher_phrase()}{start}"
        base = hub_id(self.base)
        made = "fine-tuned" if self.distill is None else f"fine-tuned by distillation from {self.teacher_phrase()}"
        if base:
            return f"[{base}](https://huggingface.co/{base}), {made}"
        return f"the pretrained checkpoint `{published_name(self.base)}` (a local folder), {made}"

    def teacher_name(self) -> str | None:
        """The teacher of a distilled model by its own name: its run's folder (also when train.distill.teacher named
        the run's model/ folder)."""
        teacher = (self.distill or {}).get("teacher")
        if not isinstance(teacher, str) or not teacher:
            return None
        path = Path(teacher)
        return published_name(str(path.parent) if path.name == MODEL_DIR and path.parent.name else teacher)

    def teacher_phrase(self) -> str:
        return f"the teacher `{self.teacher_name()}`" if self.teacher_name() else "a teacher"

    def published_id(self) -> str:
        """What usage examples load the model by: a placeholder for its Hub id (HUB_ID_PLACEHOLDER)."""
        return HUB_ID_PLACEHOLDER.format(name=self.run.path.name)

    def run_reference(self) -> str:
        """The run directory as a command names it, relative (runs/<name>): not this machine's absolute path."""
        return f"{self.run.path.parent.name or 'runs'}/{self.run.path.name}"

    def tokenizer_class(self) -> str | None:
        """The tokenizer class model/tokenizer_config.json names (transformers' own: BertTokenizer, ...), or None."""
        try:
            saved = json.loads((self.run.model_dir / TOKENIZER_CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        name = saved.get("tokenizer_class") if isinstance(saved, dict) else None
        return name if isinstance(name, str) and name else None

    def task_phrase(self) -> str:
        labels = f"{len(self.labels)} labels ({', '.join(self.labels)})"
        if self.multi_label:
            return f"says which of its {labels} apply, any number of them, each with its probability"
        return f"returns one of {labels} and its probability"

    def dataset_phrase(self) -> str:
        if self.from_hub:
            name = self.data.get("hub_name")
            config = self.data.get("hub_config")
            # data.hub_name may be a local folder that `datasets` reads (save_to_disk's, the Hub's data/ layout of
            # Parquet shards): named by its own name, as a local file is, not by a path on this machine.
            if hub_id(name):
                dataset = f"the Hub dataset [{name}](https://huggingface.co/datasets/{name})"
            else:
                dataset = f"the local dataset folder `{published_name(name) or 'unknown'}`"
            return dataset + (f" (config `{config}`)" if config else "")
        return self._local_data()[1]
