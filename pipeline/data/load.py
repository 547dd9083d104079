"""Stage 1: load a labelled text-classification dataset -> DatasetDict(train, validation, test).

    splits = load_splits(config.data, seed=config.run.seed)

Every split has `text`, `label` (ClassLabel; multi-label: `labels`, multi-hot) and `row_id`. Sources: the Hub or
local files. Bad input fails here with a `DataError` naming the file, the row ("line N", "record N", "row N", "file
pos/0_9.txt") and the column.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import datasets

from pipeline.common.errors import DataError
from pipeline.config.schema import DataConfig
from pipeline.data.build import drop_incomplete, read_indicator_columns, to_dataset
from pipeline.data.decoding import decoding
from pipeline.data.folders import is_folder
from pipeline.data.hub import read_hub_tables
from pipeline.data.label_scheme import LabelScheme, MissingLabel
from pipeline.data.label_sets import label_set_scheme
from pipeline.data.labels import (
    ClassCounts,
    class_counts,
    given_scheme,
    label_scheme,
    refuse_unsaid_id_base,
    trained_scheme,
    with_listed_names,
)
from pipeline.data.local import (
    file_class_names,
    read_file_tables,
    read_folder,
    read_table,
    repeated_header_rows,
    warn_other_class_names,
)
from pipeline.data.rows import SPLITS, SplitRows
from pipeline.data.split_column import (
    CARVED_KEYS,
    carved_share,
    give_split,
    require_evaluation_rows,
    require_rows,
    split_by_column,
)
from pipeline.data.splits import (
    RemovedRow,
    cap_rows,
    carve,
    column_values,
    deduplicate,
    labels_of,
    require_rows_per_class,
)

logger = logging.getLogger("pipeline.data.load")


@dataclass
class LoadedData:
    """The three splits and what stage 1 did to get them (recorded in metrics.json and the run directory)."""

    splits: datasets.DatasetDict
    removed: list[RemovedRow]
    summary: dict[str, Any]
    labels: list[str]  # class names in id order
    multi_label: bool = False

    @property
    def class_counts(self) -> ClassCounts:
        return class_counts(labels_of(self.splits["train"]), self.labels)

    def row_ids(self) -> dict[str, list[str]]:
        return {name: column_values(split, "row_id") for name, split in self.splits.items()}


def load_splits(config: DataConfig, seed: int) -> datasets.DatasetDict:
    """Train, validation and test datasets; see `load_data`."""
    return load_data(config, seed).splits


def load_data(config: DataConfig, seed: int) -> LoadedData:
    """Load the splits, carve missing ones from train (before caps), handle duplicates, apply caps."""
    config = with_listed_names(config)
    decoded = None
    if config.source == "hub":
        tables, hub_names = read_hub_tables(config)
    else:
        with decoding(config.decode_errors) as decoded:
            tables = read_file_tables(config)
        hub_names = file_class_names(tables, config)
    as_read = dict(tables)  # repeated header rows belong to the files, not the column's splits
    tables, split_record = split_by_column(tables, config.split_column)
    tables, config = read_indicator_columns(tables, config)
    missing = MissingLabel.of(config, given_scheme(config, hub_names))
    incomplete = []
    for split, table in tables.items():
        require_rows(table, split)
        tables[split], dropped = drop_incomplete(table, split, config, missing)
        incomplete.extend(dropped)
    scheme = _scheme_of(config, tables["train"], hub_names)
    splits = {split: to_dataset(table, config, scheme) for split, table in tables.items()}
    headers = [row for split, table in as_read.items() for row in repeated_header_rows(table, split, config)]
    if config.id_column:
        _warn_shared_ids(splits, config.id_column)
    give = functools.partial(give_split, split_column=config.split_column)
    carved = _carve_missing(splits, config, seed, give)
    splits, removed, duplicates = deduplicate(splits, config.deduplicate, scheme.names)
    require_evaluation_rows(splits, tables, duplicates, give)
    splits["train"] = cap_rows(splits["train"], config.max_train_samples, seed)
    for split in ("validation", "test"):
        splits[split] = cap_rows(splits[split], config.max_eval_samples, seed)
    result = datasets.DatasetDict({split: splits[split] for split in SPLITS})
    _log_summary(result, scheme.names)
    summary = {
        "task": config.task,
        "label_reading": scheme.reading(),  # how pipeline.evaluate reads a later file's labels
        "class_counts": {"train": class_counts(labels_of(result["train"]), scheme.names).to_dict()},
        "sizes": {split: len(result[split]) for split in SPLITS},
        "seed": seed,
        "carved_from_train": carved,
        "split_column": split_record,
        "id_column": config.id_column,
        "duplicates": duplicates.to_dict(),
        "incomplete_rows": {"setting": config.incomplete_rows, **removed_record(incomplete, tables)},
        "repeated_headers": removed_record(headers, tables),
        **source_records(tables, config),
        "decoding": decoded.record(config.encoding) if decoded else None,
    }
    return LoadedData(result, headers + incomplete + removed, summary, scheme.names, config.task == "multi_label")


def _scheme_of(config: DataConfig, train: SplitRows, hub_names: list[str] | None) -> LabelScheme:
    """The run's classes and how its labels are read, from train's rows; at least two classes."""
    scheme = (label_set_scheme if config.task == "multi_label" else label_scheme)(config, train, hub_names)
    if hub_names is None:  # a ClassLabel's ids count from 0
        refuse_unsaid_id_base(config, train, scheme)
    if len(scheme.names) < 2:
        raise DataError(
            f"{train.source}, column '{config.label_column}': only one class ({', '.join(scheme.names) or 'none'}); a classifier needs at least two"
        )
    return scheme


def _carve_missing(
    splits: dict[str, datasets.Dataset], config: DataConfig, seed: int, give: Callable[[str], str]
) -> dict[str, float]:
    """Carve validation and test out of train where missing; each one's share of the whole train file."""
    to_carve = [(split, key) for split, key in CARVED_KEYS.items() if split not in splits]
    require_rows_per_class(splits["train"], to_carve, give)
    carved, whole = {}, len(splits["train"])
    for split, key in to_carve:
        fraction = getattr(config, key.removeprefix("data."))
        share = min(fraction * whole / len(splits["train"]), 1.0)
        splits["train"], splits[split] = carve(splits["train"], share, seed, split, key, give)
        carved[split] = carved_share(len(splits[split]), whole, fraction, split, key, give)
    return carved


def removed_record(rows: list[RemovedRow], splits: Iterable[str]) -> dict[str, Any]:
    """For metrics.json: each split file's rows left out as `rows` (repeated headers, incomplete rows)."""
    return {"removed": {split: sum(row.split == split for row in rows) for split in splits}}


def source_records(tables: dict[str, SplitRows], config: DataConfig) -> dict[str, Any]:
    """How the sources were read, for metrics.json `data`: quoting, delimiter, sheet, class folders, class files."""
    folders = {split: table.files_per_class for split, table in tables.items() if table.files_per_class is not None}
    files = {split: table.class_files for split, table in tables.items() if table.class_files is not None}
    read = {key: reading_record(tables, key, getattr(config, key)) for key in ("quoting", "delimiter", "sheet")}
    return {**read, "class_folders": folders or None, "class_files": files or None}


def reading_record(tables: dict[str, SplitRows], attribute: str, setting: Any) -> dict[str, Any] | None:
    """How each file was read by a setting that `auto` resolves per file; None when no file has it."""
    read = {
        split: getattr(table, attribute) for split, table in tables.items() if getattr(table, attribute) is not None
    }
    return {"setting": setting, "read": read} if read else None


def read_labelled_file(
    config: DataConfig, path: str, origin: str, names: list[str], reading: dict[str, Any] | None
) -> tuple[datasets.Dataset, list[RemovedRow], dict[str, Any]]:
    """One file scored by pipeline.evaluate, read as training read its data; nothing carved or capped."""
    with decoding(config.decode_errors) as decoded:
        if is_folder(path):
            table = read_folder(path, origin, config, names, "the model's classes", every_class=False)
        else:
            table = read_table(path, origin, config, config.column_names)
    require_rows(table, "input")
    if config.label_columns and set(config.label_columns) != set(names):
        raise DataError(
            f"data.label_columns: {', '.join(config.label_columns)} are not the model's classes ({', '.join(names)}); each class's column must carry the class's name (rename the file's columns to match)"
        )
    tables, config = read_indicator_columns({"test": table}, config)
    scheme = trained_scheme(names, reading, config)
    if not config.label_columns:
        warn_other_class_names(table, config.label_column, names, "the model's classes")
    table, removed = drop_incomplete(tables["test"], "test", config, MissingLabel.of(config, scheme))
    dataset = to_dataset(table, config, scheme)
    headers = repeated_header_rows(tables["test"], "test", config)
    read = {**source_records(tables, config), "repeated_headers": removed_record(headers, ["test"])}
    read["decoding"] = decoded.record(config.encoding)
    return dataset, headers + removed, read


def _warn_shared_ids(splits: dict[str, datasets.Dataset], id_column: str) -> None:
    """WARN when one id appears in two split files: splits.csv and the reports would name two rows by one id."""
    first_split: dict[str, str] = {}
    shared = []
    for split, dataset in splits.items():
        for row_id in column_values(dataset, "row_id"):
            if first_split.setdefault(row_id, split) != split:
                shared.append((row_id, first_split[row_id], split))
    if shared:
        row_id, one, other = shared[0]
        logger.warning(
            f"data.id_column '{id_column}': {len(shared)} id{'s' if len(shared) > 1 else ''} appear in more than one split file (first: {row_id!r} in {one} and {other}); splits.csv and the reports then name two rows by one id: give every row its own"
        )


# Classes named in each split's log line (metrics.json and the report hold every class).
LOGGED_CLASSES = 30


def _log_summary(splits: datasets.DatasetDict, names: list[str]) -> None:
    counts = {split: class_counts(labels_of(dataset), names) for split, dataset in splits.items()}
    for split, dataset in splits.items():
        per_class = ", ".join(f"{name} {count}" for name, count in zip(names[:LOGGED_CLASSES], counts[split].counts))
        if len(names) > LOGGED_CLASSES:
            per_class += f", and {len(names) - LOGGED_CLASSES:,} more classes"
        logger.info(f"{split}: {len(dataset)} rows ({per_class})")
        without = counts[split].rows_without_labels
        if without:  # multi-label: negatives of every class
            logger.info(f"{without} of {len(dataset)} {split} rows have no label: negative for every class")
    untrained = [name for name, count in zip(names, counts["train"].counts) if not count]
    if untrained:
        logger.warning(f"No training rows for the classes {', '.join(untrained)}: the model cannot learn them")
