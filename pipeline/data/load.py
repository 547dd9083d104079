"""Stage 1: load a labelled text-classification dataset -> DatasetDict(train, validation, test).

    splits = load_splits(config.data, seed=config.run.seed)

Every split has `text` (str), `label` (a `datasets.ClassLabel` carrying the class names) and `row_id`; a multi-label
task (`data.task: multi_label`) has `labels` instead of `label`: a multi-hot float32 list, one entry per class, with
the class names beside it (`LoadedData.labels`).
Sources are the Hugging Face Hub (`data.source: hub`) or local files (`data.source: files`: CSV, TSV, JSON Lines,
Parquet, fastText, optionally gzip-compressed, an Excel workbook's sheet: pipeline/data/workbooks.py, or a folder of class
folders: pipeline/data/folders.py). Bad input fails here, before any tokenizing or training, with a `DataError` whose
message names the file (or Hub split), the row and the column, so a user can fix the file and rerun.

Rows are named as people look for them: "line N" is the 1-based physical line in a CSV/TSV/JSON Lines/fastText
file, counting the header line; "record N" is the 1-based position in a Parquet file, a JSON array or a Hub split;
"row N" is the row of an Excel sheet as Excel numbers it; "file pos/0_9.txt" is a file of a folder of class folders,
by its path in the folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets
import pandas as pd

from pipeline.common.errors import DataError
from pipeline.config.reading import LABEL_COLUMN, STANDARD_INPUT, TEXT_COLUMN, normalise_name
from pipeline.data.folders import ID_COLUMN, is_folder, is_saved_dataset, read_class_folders
from pipeline.data.formats import unnamed_column
from pipeline.data.labels import (
    INDICATOR_SETS_COLUMN,
    ClassCounts,
    LabelScheme,
    MissingLabel,
    class_counts,
    describe_missing,
    given_scheme,
    indicator_sets,
    label_ids,
    label_scheme,
    label_set_scheme,
    label_sets,
    missing_label_rows,
    refuse_unsaid_id_base,
    trained_scheme,
    with_listed_names,
)
from pipeline.data.splits import (
    MULTI_LABEL_COLUMN,
    DuplicateReport,
    RemovedRow,
    cap_rows,
    carve,
    column_values,
    deduplicate,
    labels_of,
    require_rows_per_class,
)
from pipeline.data.tables import (
    ESCAPED_NEWLINE,
    INCOMPLETE_ROWS_HINT,
    LAYOUT_SETTINGS,
    REPEATED_HEADER,
    TextSpec,
    UnknownFormatError,
    and_more,
    in_sheet,
    is_blank,
    is_missing,
    looks_like_data,
    open_table,
    repeated_header_warning,
    resolve_columns,
    segments_of,
    settings_not_read,
)

if TYPE_CHECKING:  # only for annotations: keeps stage 1 importable on its own
    from pipeline.config.schema import DataConfig

logger = logging.getLogger("pipeline.data.load")

SPLITS = ("train", "validation", "test")
FILE_KEYS = {"train": "data.train_file", "validation": "data.validation_file", "test": "data.test_file"}
OFFLINE_HINT = (
    "To run without the Hub, set data.source=files and data.train_file=... / data.test_file=... "
    "(optionally data.validation_file=...), see docs/offline.md"
)
_TRUE_VALUES = {"1", "ON", "YES", "TRUE"}


@dataclass(frozen=True)
class Table:
    """The raw rows of one split, with what is needed to point a user at one of them."""

    frame: pd.DataFrame
    source: str  # the file path as configured, or "Hub dataset 'name' split 'train'"
    origin: str  # the config key the rows came from, e.g. "data.train_file" or "data.hub_name"
    # "line": rows are numbered by their 1-based line in the file; "row": by their row in a sheet; "file": named by
    # their file
    unit: str = "record"
    # Each row's line or record number, or (a folder of class folders) its file's path in the folder; None: records
    # 1, 2, ...
    numbers: list[int | str] | None = None
    quoting: str | None = None  # a CSV/TSV file's double quotes as read: "csv" or "none" (data.quoting resolved)
    # Added to the error about a configured column the rows lack (or about no rows): how else the file could be read.
    missing_column_hint: str = ""
    files_per_class: dict[str, int] | None = None  # a folder of class folders: the files read from each class folder
    class_files: dict[str, str] | None = None  # a folder of class files: each class's file (folders.ClassFolders)
    delimiter: str | None = None  # a CSV/TSV file's field delimiter as read (tables.Table.delimiter)
    sheet: str | None = None  # an Excel workbook's sheet read (tables.Table.sheet)
    class_names: dict[str, list[str]] | None = None  # a Parquet file's ClassLabel columns (tables.Table.class_names)
    # The file's rows that repeated its header row (tables.Table.repeats_header), left out of `frame` as read: a Table
    # of their own, for removed_rows.csv (repeated_header_rows); None when there were none.
    repeated_headers: Table | None = None

    def number(self, row: int) -> int | str:
        """The row's 1-based line in its file, its record number, or its file's path in a folder."""
        return self.numbers[row] if self.numbers is not None else row + 1

    def and_more(self, rows: list[int]) -> str:
        """ " (and 3 more: lines 7, 9, 12)" after the first of `rows` is named; "" for one row."""
        return and_more(self.unit, [self.number(row) for row in rows])

    def subset(self, rows: list[int]) -> Table:
        """These rows only, each keeping the line or record number it has in the file."""
        frame = self.frame.iloc[rows].reset_index(drop=True)
        numbers = [self.number(row) for row in rows]
        return dataclasses.replace(self, frame=frame, numbers=numbers)

    def where(self, row: int) -> str:
        return f"{in_sheet(self.source, self.sheet)}, {self.unit} {self.number(row)}"

    def column(self, name: str, key: str) -> list[Any]:
        """The values of a configured column (found as tables.resolve_columns finds it), naming `key` if absent."""
        try:
            (position,) = resolve_columns([str(c) for c in self.frame.columns], [name], self.source, key)
        except DataError as error:
            raise DataError(f"{error}{self.missing_column_hint}") from None
        return self.frame.iloc[:, position].tolist()


# ---------------------------------------------------------------------------------------------------------------
# The stage


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
        """Train rows per class: what class weights and the reports' imbalance rule read."""
        return class_counts(labels_of(self.splits["train"]), self.labels)

    def row_ids(self) -> dict[str, list[str]]:
        return {name: column_values(split, "row_id") for name, split in self.splits.items()}


def load_splits(config: DataConfig, seed: int) -> datasets.DatasetDict:
    """Train, validation and test as `text` + `label` (ClassLabel) + `row_id` datasets; see `load_data`."""
    return load_data(config, seed).splits


def load_data(config: DataConfig, seed: int) -> LoadedData:
    """Load train, validation and test, carve the missing ones out of train, handle duplicates, apply caps.

    Test (`data.test_fraction`) and validation (`data.validation_fraction`) are carved from train, stratified by
    label and seeded, when the source has none; before `max_train_samples` applies, so runs with different caps
    are scored on the same rows. Duplicates are then counted and removed as `data.deduplicate` says. Caps draw
    a seeded sample stratified by label and keep the rows in file order; `max_train_samples` touches train only,
    `max_eval_samples` validation and test.
    """
    config = with_listed_names(config)
    if config.source == "hub":
        tables, hub_names = read_hub_tables(config)
    else:
        tables = read_file_tables(config)
        hub_names = file_class_names(tables, config)
    as_read = dict(tables)  # the files' repeated header rows are theirs, not those of the splits a column divides
    tables, split_record = split_by_column(tables, config.split_column)
    tables, config = read_indicator_columns(tables, config)
    missing = MissingLabel.of(config, given_scheme(config, hub_names))
    incomplete = []
    for split, table in tables.items():
        _require_rows(table, split)
        tables[split], dropped = drop_incomplete(table, split, config, missing)
        incomplete.extend(dropped)
    multi_label = config.task == "multi_label"
    scheme = (
        label_set_scheme(config, tables["train"], hub_names)
        if multi_label
        else label_scheme(config, tables["train"], hub_names)
    )
    if hub_names is None:  # a ClassLabel's ids count from 0
        refuse_unsaid_id_base(config, tables["train"], scheme)
    if len(scheme.names) < 2:
        raise DataError(
            f"{tables['train'].source}, column '{config.label_column}': only one class "
            f"({', '.join(scheme.names) or 'none'}); a classifier needs at least two"
        )
    splits = {split: to_dataset(table, config, scheme) for split, table in tables.items()}
    # After to_dataset: the columns they are read by (text, id) are known to be there.
    headers = [row for split, table in as_read.items() for row in repeated_header_rows(table, split, config)]
    if config.id_column:
        _warn_shared_ids(splits, config.id_column)
    to_carve = [(split, key) for split, key in CARVED_KEYS.items() if split not in splits]
    give = functools.partial(give_split, split_column=config.split_column)
    require_rows_per_class(splits["train"], to_carve, give)
    carved, whole = {}, len(splits["train"])
    for split, key in to_carve:  # both fractions are shares of the whole train file
        fraction = getattr(config, key.removeprefix("data."))
        share = min(fraction * whole / len(splits["train"]), 1.0)
        splits["train"], splits[split] = carve(splits["train"], share, seed, split, key, give)
        carved[split] = _carved_share(len(splits[split]), whole, fraction, split, key, give)
    splits, removed, duplicates = deduplicate(splits, config.deduplicate, SPLITS, scheme.names)
    _require_evaluation_rows(splits, tables, duplicates, give)
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
        "incomplete_rows": {
            "setting": config.incomplete_rows,
            "removed": {split: sum(row.split == split for row in incomplete) for split in tables},
        },
        "repeated_headers": repeated_header_record(headers, tables),
        **source_records(tables, config),
    }
    return LoadedData(result, headers + incomplete + removed, summary, scheme.names, multi_label)


def repeated_header_record(headers: list[RemovedRow], splits: Iterable[str]) -> dict[str, Any]:
    """metrics.json `data.repeated_headers`: the rows of each split's file left out as its header row again."""
    return {"removed": {split: sum(row.split == split for row in headers) for split in splits}}


def source_records(tables: dict[str, Table], config: DataConfig) -> dict[str, Any]:
    """How the sources were read, for metrics.json `data`: the CSV/TSV files' quotes (`quoting`) and field delimiter
    (`delimiter`), the sheet read of each Excel workbook (`sheet`), the files read per class folder from each split
    read from a folder of class folders (`class_folders`) and each class's file of a split read from a folder of
    class files (`class_files`; each None when no split was)."""
    folders = {split: table.files_per_class for split, table in tables.items() if table.files_per_class is not None}
    files = {split: table.class_files for split, table in tables.items() if table.class_files is not None}
    return {
        "quoting": reading_record(tables, "quoting", config.quoting),
        "delimiter": reading_record(tables, "delimiter", config.delimiter),
        "sheet": reading_record(tables, "sheet", config.sheet),
        "class_folders": folders or None,
        "class_files": files or None,
    }


def reading_record(tables: dict[str, Table], attribute: str, setting: Any) -> dict[str, Any] | None:
    """How each file was read by a setting that `auto` (or unset) resolves per file: a CSV/TSV file's double quotes
    ("csv" or "none") or delimiter by its start, a workbook's sheet (its first), by split, beside the setting; None
    when no file has it (JSON Lines, Parquet, fastText, a folder, the Hub; no CSV/TSV file, no workbook)."""
    read = {
        split: getattr(table, attribute) for split, table in tables.items() if getattr(table, attribute) is not None
    }
    return {"setting": setting, "read": read} if read else None


def file_class_names(tables: dict[str, Table], config: DataConfig) -> list[str] | None:
    """The class names a Parquet train file records for the label column (a ClassLabel, or a list of them: written by
    `datasets`), read as a Hub dataset's are (ids from 0, -1 no label) where neither data.label_names nor
    data.label_names_file names the classes; None otherwise. Another file recording other names is warned about."""
    if config.label_columns:
        return None
    names = _recorded_names(tables["train"], config.label_column)
    if names is None:
        return None
    if config.label_names is not None:  # the user's names win; a file whose ids mean others is said to
        for table in tables.values():
            warn_other_class_names(table, config.label_column, config.label_names, "data.label_names")
        return None
    logger.info("Classes from %s's ClassLabel column '%s': %s", tables["train"].source, config.label_column, names)
    for table in tables.values():
        warn_other_class_names(table, config.label_column, names, f"those of {tables['train'].source}")
    return names


def _recorded_names(table: Table, column: str) -> list[str] | None:
    """The class names a file records for `column` (Table.class_names), found as the column is."""
    recorded = table.class_names or {}
    try:
        (position,) = resolve_columns(list(recorded), [column], table.source, "data.label_column")
    except DataError:
        return None
    return recorded[list(recorded)[position]]


def warn_other_class_names(table: Table, column: str, names: list[str], whose: str) -> None:
    """A file whose ClassLabel column names other classes than the run's: its ids may mean other classes."""
    recorded = _recorded_names(table, column)
    if recorded is not None and recorded != list(names):
        logger.warning(
            "%s, column '%s': the file's ClassLabel names (%s) are not %s (%s); its ids are read as the latter's",
            table.source,
            column,
            ", ".join(recorded),
            whose,
            ", ".join(names),
        )


def read_indicator_columns(tables: dict[str, Table], config: DataConfig) -> tuple[dict[str, Table], DataConfig]:
    """With `data.label_columns` (one 0/1 column per class), each row's classes gathered into one list column, and
    the data config the rest of stage 1 then reads: that column as the label column, the indicator columns' names
    as the classes, in their order. So this layout and the list/delimited one share every later step."""
    if not config.label_columns:
        return tables, config
    missing = MissingLabel.of(config, None)
    with_sets = {}
    for split, table in tables.items():
        frame = table.frame.copy()
        frame[INDICATOR_SETS_COLUMN] = indicator_sets(table, config.label_columns, missing)
        with_sets[split] = dataclasses.replace(table, frame=frame)
    return with_sets, dataclasses.replace(
        config, label_column=INDICATOR_SETS_COLUMN, label_names=list(config.label_columns)
    )


def read_labelled_file(
    config: DataConfig, path: str, origin: str, names: list[str], reading: dict[str, Any] | None
) -> tuple[datasets.Dataset, list[RemovedRow], dict[str, Any]]:
    """One labelled file, read as training read its files (text columns, label layout, encoding, incomplete rows),
    its labels against a trained model's classes `names`, as training read labels (`reading`: the run's
    data.label_reading; labels.trained_scheme): what pipeline.evaluate scores, the rows left out (repeated header
    rows, incomplete rows), and how it was read (source_records, and its repeated header rows: as `test`). A folder
    of class folders is read for the model's classes, and need not hold all of them. Nothing is carved, deduplicated
    or capped: every usable row of the file is scored."""
    if is_folder(path):
        table = read_folder(path, origin, config, names, "the model's classes", every_class=False)
    else:
        table = read_table(path, origin, config, config.column_names)
    _require_rows(table, "input")
    if config.label_columns and set(config.label_columns) != set(names):
        raise DataError(
            f"data.label_columns: {', '.join(config.label_columns)} are not the model's classes ({', '.join(names)}); "
            "each class's column must carry the class's name (rename the file's columns to match)"
        )
    tables, config = read_indicator_columns({"test": table}, config)
    scheme = trained_scheme(names, reading, config)
    if not config.label_columns:
        warn_other_class_names(table, config.label_column, names, "the model's classes")
    table, removed = drop_incomplete(tables["test"], "test", config, MissingLabel.of(config, scheme))
    dataset = to_dataset(table, config, scheme)
    headers = repeated_header_rows(tables["test"], "test", config)
    read = {**source_records(tables, config), "repeated_headers": repeated_header_record(headers, ["test"])}
    return dataset, headers + removed, read


def _warn_shared_ids(splits: dict[str, datasets.Dataset], id_column: str) -> None:
    """Ids are unique within a file (an error otherwise); the same id in two split files is most often two
    numberings that start alike, but then splits.csv and every report name two rows by one id: say so."""
    first_split: dict[str, str] = {}
    shared = []
    for split, dataset in splits.items():
        for row_id in column_values(dataset, "row_id"):
            if first_split.setdefault(row_id, split) != split:
                shared.append((row_id, first_split[row_id], split))
    if shared:
        row_id, one, other = shared[0]
        logger.warning(
            "data.id_column '%s': %d id%s appear in more than one split file (first: %r in %s and %s); splits.csv "
            "and the reports then name two rows by one id: give every row its own",
            id_column,
            len(shared),
            "s" if len(shared) > 1 else "",
            row_id,
            one,
            other,
        )


# What a value of data.split_column says, read stripped and in any case: the split its row belongs to.
SPLIT_VALUES = {
    "train": "train",
    "validation": "validation",
    "valid": "validation",
    "val": "validation",
    "dev": "validation",
    "test": "test",
}


def split_by_column(tables: dict[str, Table], column: str | None) -> tuple[dict[str, Table], dict[str, Any] | None]:
    """With data.split_column, the one train table divided into the splits its column names (SPLIT_VALUES), each
    row keeping its line or record number in the file; a split no row names is left out, to be carved from train
    as when a file is missing. Also what was read, for metrics.json `data.split_column` (None when unset). Done
    first, so that every later step (indicator columns, incomplete rows, the classes: from train's rows only) runs
    as it does on separate files."""
    if column is None:
        return tables, None
    _refuse_given_splits(tables, column)
    table = tables["train"]
    _require_rows(table, "train")
    names = _split_names(table, column)
    rows: dict[str, list[int]] = {split: [] for split in SPLITS}
    for row, name in enumerate(names):
        rows[SPLIT_VALUES[name.casefold()]].append(row)
    if not rows["train"]:
        given = ", ".join(f"{split} {len(rows[split]):,}" for split in SPLITS if rows[split])
        raise DataError(
            f"{table.source}, column '{column}' (data.split_column): no row is in train (rows per split: {given}); "
            f"the model learns from the train rows, so mark some as {', '.join(values_naming('train'))}"
        )
    divided = {
        split: dataclasses.replace(
            table.subset(chosen), origin=f"{table.origin}, its {split} rows by data.split_column"
        )
        for split, chosen in rows.items()
        if chosen
    }
    record = {
        "column": column,
        "rows": {split: len(chosen) for split, chosen in rows.items()},
        "values": {name: SPLIT_VALUES[name.casefold()] for name in dict.fromkeys(names)},
    }
    return divided, record


def _split_names(table: Table, column: str) -> list[str]:
    """Each row's value of the split column, stripped; an empty one, or one that names no split (MASSIVE's `unsup`,
    a typo), is an error naming the first row and how many more there are, so that one pass fixes them all."""
    values = table.column(column, "data.split_column")
    where = f"column '{column}' (data.split_column)"
    empty = [row for row, value in enumerate(values) if is_blank(value)]
    if empty:
        raise DataError(
            f"{table.where(empty[0])}, {where}: no split given{table.and_more(empty)}; give each row "
            f"one of {_accepted_values()}, or remove the row"
        )
    names = [str(value).strip() for value in values]
    unknown = [row for row, name in enumerate(names) if name.casefold() not in SPLIT_VALUES]
    if unknown:
        others = sorted({names[row] for row in unknown} - {names[unknown[0]]})
        also = f"; other values naming no split: {', '.join(map(repr, others[:5]))}" if others else ""
        raise DataError(
            f"{table.where(unknown[0])}, {where}: {names[unknown[0]]!r} names no split{table.and_more(unknown)}{also}; "
            f"the accepted values (in any case): {_accepted_values()}; relabel or remove these rows"
        )
    return names


def values_naming(split: str) -> list[str]:
    """The values of data.split_column that name `split`."""
    return [value for value, named in SPLIT_VALUES.items() if named == split]


def _accepted_values() -> str:
    """The values of data.split_column by the split they name: "train; validation, valid, val, dev; test"."""
    return "; ".join(", ".join(values_naming(split)) for split in SPLITS)


def _refuse_given_splits(tables: dict[str, Table], column: str) -> None:
    """The column divides a source with a train split only; a Hub dataset that has validation or test rows already
    says the split twice (files: config_checks refuses data.split_column beside a validation or test file)."""
    given = [split for split in tables if split != "train"]
    if given:
        raise DataError(
            f"data.split_column '{column}': {tables[given[0]].source} ({tables[given[0]].origin}) already holds the "
            f"{' and '.join(given)} rows; the column divides a source that has only a train split: unset it"
        )


# The splits carved out of train when the data has none, in carving order, and the share each setting asks for.
CARVED_KEYS = {"test": "data.test_fraction", "validation": "data.validation_fraction"}


def give_split(split: str, split_column: str | None, which: str = "") -> str:
    """The advice that ends every message about a split carved from train (or emptied): how the user gives `split`
    instead. Its own file; or, when one file is divided by data.split_column (which refuses split files beside it),
    rows marked in that column by a value naming the split. `which` narrows the rows (" whose texts are ...")."""
    if split_column is None:
        return f"give a {split} file{which}"
    first, *others = values_naming(split)
    also = f" (or {', '.join(others)})" if others else ""
    return f"mark rows{which} as {first}{also} in the column '{split_column}' (data.split_column)"


def _carved_share(rows: int, whole: int, fraction: float, split: str, key: str, give: Callable[[str], str]) -> float:
    """The share of the train file that became `split`. Stratified carving gives every class at least one row, so
    with many small classes the share grows past the one asked for: say so, since the rows go to evaluation."""
    asked = math.ceil(fraction * whole)
    if rows > asked * 1.1 and rows - asked >= 2:
        logger.warning(
            "%s %g asks for %d of the %d train rows; to keep a row of every class in %s it holds %d (%.0f%%), "
            "which leaves train that much smaller: add rows to the small classes, or %s",
            key,
            fraction,
            asked,
            whole,
            split,
            rows,
            100 * rows / whole,
            give(split),
        )
    return round(rows / whole, 4)


def _require_evaluation_rows(
    splits: dict[str, datasets.Dataset],
    tables: dict[str, Table],
    duplicates: DuplicateReport,
    give: Callable[..., str],
) -> None:
    """A validation or test split whose every row repeats a text of an earlier split is left empty by
    `data.deduplicate: across` (the one step after reading that removes rows without checking what remains): an
    error naming the split, where its rows came from and why they went. Past here an empty split failed in batching
    (it has no token columns: datasets maps no rows), and its tokenized cache entry, saved without a data file,
    failed the next run in load_from_disk."""
    for split in ("validation", "test"):
        if len(splits[split]):
            continue
        earlier = " or ".join(SPLITS[: SPLITS.index(split)])
        rows = (
            f"rows of {tables[split].source} ({tables[split].origin})"
            if split in tables
            else f"{split} rows carved from {tables['train'].source} ({CARVED_KEYS[split]})"
        )
        within = duplicates.within.get(split, 0)
        repeats = f" (including {within:,} repeated within {split})" if within else ""
        raise DataError(
            f"The {split} split is empty: data.deduplicate: {duplicates.mode} removed all {duplicates.removed[split]:,} "
            f"{rows}, as each repeats a text of {earlier}{repeats}; set data.deduplicate=within or none to "
            f"keep them (their scores then count texts seen before), or "
            f"{give(split, which=f' whose texts are not in {earlier}')}"
        )


def _require_rows(table: Table, split: str) -> None:
    """A file of no rows is an error; what else it may hold (a workbook's other sheets: the data on the second)
    is said as for a column it lacks."""
    if len(table.frame) == 0:
        raise DataError(
            f"The {split} split is empty: {table.source} ({table.origin}) has no data rows{table.missing_column_hint}"
        )


# ---------------------------------------------------------------------------------------------------------------
# Local files


def read_file_tables(config: DataConfig) -> dict[str, Table]:
    """Read the configured train/validation/test files; a missing test or validation file is carved from train."""
    if not config.train_file:
        raise DataError("data.train_file is required when data.source is 'files'")
    paths = {"train": config.train_file, "validation": config.validation_file, "test": config.test_file}
    tables = {
        split: read_table(path, FILE_KEYS[split], config, config.column_names) for split, path in paths.items() if path
    }
    _warn_class_folders_only_in_train(tables, config)
    for table in tables.values():
        _warn_values_in_unnamed_columns(table, config)
    return tables


def _warn_values_in_unnamed_columns(table: Table, config: DataConfig) -> None:
    """Columns whose header cell is empty ("Unnamed: 2": table_formats.unnamed_column) are read by no setting that
    does not name them. Kaggle's SMS spam.csv (v1, v2 and three unnamed columns) holds there the end of some of its
    texts, cut at a comma the file left unquoted: one WARNING names the rows holding values in them, so that texts cut
    short are not trained on unknowingly."""
    read = [*TextSpec.from_data_config(config).input_columns, *label_columns_of(config)]
    read = {normalise_name(name) for name in (*read, config.id_column, config.split_column) if name}
    unnamed = [
        name
        for index, name in enumerate(table.frame.columns)
        if name == unnamed_column(index) and normalise_name(name) not in read
    ]
    if not unnamed:
        return
    filled = {name: [not is_blank(value) for value in table.frame[name]] for name in unnamed}
    # Stray ends of texts fill some rows; a column that fills every row is a column left without a name (pandas'
    # index, which to_csv writes unless index=False), no text's end, and adding it to the texts would be wrong.
    filled = {name: cells for name, cells in filled.items() if any(cells) and not all(cells)}
    rows = [row for row, cells in enumerate(zip(*filled.values())) if any(cells)]
    unnamed = list(filled)
    if rows:
        logger.warning(
            "%s: %s, %s of %s, hold%s values in the column%s without a name in the header (%s), which no setting "
            "reads; if they continue the text (a comma left unquoted), add %s to data.text_columns",
            table.source,
            f"{table.unit} {table.number(rows[0])}{table.and_more(rows)}",
            f"{len(rows):,}",
            f"{len(table.frame):,}",
            "s" if len(rows) == 1 else "",
            "s" if len(unnamed) > 1 else "",
            ", ".join(unnamed),
            "it" if len(unnamed) == 1 else "them",
        )


def _warn_class_folders_only_in_train(tables: dict[str, Table], config: DataConfig) -> None:
    """Unlisted, the classes are train's class folders, all of them but those named as unlabelled (aclImdb's unsup/:
    folders.UNLABELLED_FOLDERS); a folder of unlabelled texts under another name becomes a class that the model
    learns and no test row has. A validation or test folder without some of train's class folders is most often
    that: say so, pointing to data.label_names."""
    trained = tables["train"].files_per_class
    if config.label_names is not None or trained is None:
        return
    for split in ("validation", "test"):
        held_out = tables[split].files_per_class if split in tables else None
        missing = [name for name in trained if held_out is not None and name not in held_out]
        if missing:
            logger.warning(
                "%s (%s) lacks the class folder%s %s of %s (data.train_file): with data.label_names unset each of its "
                "class folders is a class, and the model learns %s that no %s row has; if that is not meant "
                "(a folder of unlabelled texts), list the classes in data.label_names",
                tables[split].source,
                FILE_KEYS[split],
                "s" if len(missing) > 1 else "",
                ", ".join(missing),
                tables["train"].source,
                "classes" if len(missing) > 1 else "a class",
                split,
            )


# Many corpora come without a header row (ag_news_csv, DBpedia, Yelp, the SMS Spam Collection, go_emotions' TSV):
# read by its first row, such a file lacks every configured column, and its "columns" are that row's cells.
HEADERLESS_HINT = "; the file has no header row? Name its columns in data.column_names"
# How labels that are not in the file of texts are brought into it: a text file of one text per line with its labels
# in another file (tweet_eval's train_text.txt and train_labels.txt), or a label leading each line (TREC's
# train_5500.label): neither is a layout of its own, and both are one command away from a TSV file.
SEPARATE_LABELS_HINT = (
    "labels in a separate file (tweet_eval's train_text.txt and train_labels.txt) are not read: join them line by "
    "line (paste train_labels.txt train_text.txt > train.tsv) and read that with data.column_names=[label, text]; a "
    "label leading each line before a space (TREC's 'DESC:manner How did ...') becomes a column once a tab replaces "
    "that space (sed 's/ /\\t/' train.txt > train.tsv)"
)
# Added to the error about a label column that a file to evaluate on (not train: its labels are more likely in a column
# named otherwise) lacks beside the text columns: GLUE's test.tsv (index, sentence), whose labels are held back.
UNLABELLED_HINT = (
    "; if the file has no labels (a test set's held back, as GLUE's test.tsv): it is not scored but labelled by a "
    "trained model, with python -m pipeline.predict --model <run> --input <file>"
)


def read_table(path: str, origin: str, config: DataConfig, column_names: list[str] | None) -> Table:
    """Read one whole file as the data settings read every file (format, encoding, quoting, delimiter, label prefix),
    its columns named by `column_names` when it has no header, into a Table of raw values (strings for CSV/TSV;
    nothing is parsed as NA or numbers). A folder is read as a folder of class folders, for the classes
    data.label_names lists."""
    if is_folder(path):
        listed_in = "data.label_names_file" if config.label_names_file else "data.label_names"
        return read_folder(path, origin, config, config.label_names, listed_in, every_class=True)
    if not Path(path).expanduser().is_file() and path != STANDARD_INPUT:
        raise DataError(f"{origin}: file not found: {path} (looked for {Path(path).expanduser().resolve()})")
    try:
        with open_table(
            path,
            config.file_format,
            column_names,
            config.encoding,
            quoting=config.quoting,
            delimiter=config.delimiter,
            label_prefix=config.label_prefix,
            sheet=config.sheet,
            json_field=config.json_field,
        ) as table:
            chunks = list(table.chunks)
    except UnknownFormatError as error:  # most often a text file of one text per line, whose labels are elsewhere
        raise UnknownFormatError(f"{error}; if it holds one text per line: {SEPARATE_LABELS_HINT}") from None
    _warn_settings_not_read(path, origin, config, *settings_not_read(table.format))
    records, numbers, repeats = [], [], []
    for chunk in chunks:
        for number, record in zip(chunk.numbers, chunk.records):
            if table.repeats_header(record):
                repeats.append((number, record))
            else:
                records.append(record)
                numbers.append(number)
    frame = pd.DataFrame(records, columns=table.header, dtype=object)
    repeated = None
    if repeats:  # numbered by their own lines, as the data rows are
        repeated_frame = pd.DataFrame([record for _, record in repeats], columns=table.header, dtype=object)
        repeated = Table(repeated_frame, path, origin, table.unit, [number for number, _ in repeats], sheet=table.sheet)
    if table.format == "fasttext" and config.task == "multi_label":
        # A fastText line's labels are words, already apart: one is a set of one, as a JSON list holds it, never a
        # string to split at data.label_separator (__label__c|sharp is one class, or an error naming the line).
        frame[LABEL_COLUMN] = [[value] if isinstance(value, str) else value for value in frame[LABEL_COLUMN]]
    # What the reader saw of the file (a title above its header, a workbook's other sheets, a JSON object's list of
    # records) says more than a guess from its header: a one-column or headerless file's advice would mislead.
    hint = table.missing_column_hint
    if not hint:
        hint = HEADERLESS_HINT if column_names is None and looks_like_data(table.header, table.format) else ""
        hint += _missing_labels_hint(table.header, config, origin)
    return Table(
        frame,
        path,
        origin,
        table.unit,
        numbers,
        table.quoting,
        hint,
        delimiter=table.delimiter,
        sheet=table.sheet,
        class_names=table.class_names,
        repeated_headers=repeated,
    )


def warn_repeated_headers(table: Table, outcome: str) -> None:
    """One warning for the rows of a file that repeated its header row, if any: where, and `outcome`."""
    headers = table.repeated_headers
    if headers is not None:
        rows = list(range(len(headers.frame)))
        where, header_row = headers.where(0), headers.frame.iloc[0].tolist()
        logger.warning("%s", repeated_header_warning(where, header_row, headers.and_more(rows), outcome))


def repeated_header_rows(table: Table, split: str, config: DataConfig) -> list[RemovedRow]:
    """The rows of `split`'s file that repeated its header row, left out as it was read (read_table): one warning
    naming the file and where they are, and each as removed_rows.csv lists it, its line in the reason (with
    data.id_column its id is that column's name, which says nothing of where it is)."""
    headers = table.repeated_headers
    if headers is None:
        return []
    warn_repeated_headers(table, "left out of the data, listed in removed_rows.csv")
    rows = list(range(len(headers.frame)))
    spec = TextSpec.from_data_config(config)
    ids = headers.column(config.id_column, "data.id_column") if config.id_column else list(map(headers.number, rows))
    values = input_values(headers, spec)
    return [
        RemovedRow(
            split,
            str(ids[row]),
            f"{REPEATED_HEADER}, {headers.unit} {headers.number(row)}",
            spec.partial_text(values[row]),
        )
        for row in rows
    ]


def _missing_labels_hint(header: list[str], config: DataConfig, origin: str) -> str:
    """What a file without the label column(s) most likely is, added to the error about them: a file of one column
    (texts whose labels are elsewhere: SEPARATE_LABELS_HINT), or a file to evaluate on with the text columns (a test
    set whose labels are held back, which prediction labels); "" for a file that has its labels."""
    if _finds(header, label_columns_of(config)):
        return ""
    if len(header) == 1:
        return f"; the file has one column: {SEPARATE_LABELS_HINT}"
    if origin != FILE_KEYS["train"] and _finds(header, TextSpec.from_data_config(config).input_columns):
        return UNLABELLED_HINT
    return ""


def _finds(header: list[str], columns: Sequence[str]) -> bool:
    """Whether every one of `columns` is in the header (as resolve_columns finds them)."""
    try:
        resolve_columns(header, columns, "", "")
    except DataError:
        return False
    return True


def _warn_settings_not_read(path: str, origin: str, config: DataConfig, keys: Sequence[str], what: str) -> None:
    """Settings given (other than their defaults) that do not describe the source read, `what` it is (a folder of
    class folders, a workbook): said in a warning, rather than silently ignored."""
    defaults = {setting.name: setting.default for setting in dataclasses.fields(config)}
    given = [f"data.{key}" for key in keys if getattr(config, key) != defaults[key]]
    if given:
        logger.warning(
            "%s (%s) is %s, which these file settings do not describe: %s", path, origin, what, ", ".join(given)
        )


# Data settings that describe a file's layout, which a folder of class folders does not have.
FILE_LAYOUT_KEYS = ("file_format", *LAYOUT_SETTINGS)
# Added to the error about a configured column that a folder's rows lack.
FOLDER_COLUMNS_HINT = (
    f"; a folder of class folders or class files gives the columns {TEXT_COLUMN} (a file's whole text, or a line of "
    f"a class file), {LABEL_COLUMN} (its class folder or class file) and {ID_COLUMN} (its path in the folder, and "
    f"line): set data.text_columns=[{TEXT_COLUMN}] and data.label_column={LABEL_COLUMN} (rows are named by that path "
    f"with data.id_column unset, or {ID_COLUMN})"
)


def read_folder(
    path: str, origin: str, config: DataConfig, classes: list[str] | None, classes_from: str, every_class: bool
) -> Table:
    """A folder of class folders (pipeline/data/folders.py) as the Table of its files, each named by its path in the
    folder; `classes` (from `classes_from`) are the class folders read."""
    _warn_settings_not_read(path, origin, config, FILE_LAYOUT_KEYS, "a folder of class folders")
    folder = read_class_folders(path, config.encoding, classes, classes_from, every_class, origin)
    return Table(
        folder.frame,
        path,
        origin,
        "file",
        list(folder.paths),
        None,
        FOLDER_COLUMNS_HINT,
        folder.files_per_class,
        class_files=folder.class_files,
    )


# ---------------------------------------------------------------------------------------------------------------
# The Hugging Face Hub


def read_hub_tables(config: DataConfig) -> tuple[dict[str, Table], list[str] | None]:
    """The Hub dataset's train/test (and validation, if it has one) as Tables, and its ClassLabel names if any."""
    loaded = load_hub_dataset(config)
    if not isinstance(loaded, datasets.DatasetDict):
        raise DataError(
            f"Hub dataset '{config.hub_name}' has a single unnamed split; the pipeline needs a 'train' split"
        )
    chosen = hub_split_names(config, list(loaded))
    feature = None if config.label_columns else loaded[chosen["train"]].features.get(config.label_column)
    feature = getattr(feature, "feature", feature)  # a multi-label column is a list (Sequence) of ClassLabel
    hub_names = list(feature.names) if isinstance(feature, datasets.ClassLabel) else None
    needed = list(dict.fromkeys([*TextSpec.from_data_config(config).input_columns, *label_columns_of(config)]))
    tables = {}
    for split, name in chosen.items():
        source = f"Hub dataset '{config.hub_name}' split '{name}'"
        # The split column is read from train only: divided by it, train is the one split (split_by_column).
        columns = [*needed, config.split_column] if config.split_column and split == "train" else needed
        _require_columns(loaded[name].column_names, columns, source, config)
        frame = loaded[name].select_columns(list(dict.fromkeys(columns))).to_pandas()
        if hub_names is not None and config.task == "single_label":
            frame[config.label_column] = _hidden_labels_missing(frame[config.label_column])
            if split != "train" and frame[config.label_column].isna().all():
                logger.warning(
                    "%s has no labels (every one is -1, the Hub's mark of a hidden label, as GLUE's test splits "
                    "have): left out, and %s is carved from train instead",
                    source,
                    split,
                )
                continue
        tables[split] = Table(frame, source, "data.hub_name")
    return tables, hub_names


def hub_split_names(config: DataConfig, available: list[str]) -> dict[str, str]:
    """Which of the Hub dataset's splits is train, validation and test (those it has): data.hub_splits where it
    names one, else the split of that name, else one that data.SPLIT_VALUES reads as it (a `dev` or `valid` split is
    validation, as in a split column). Splits left unused are logged, and warned about when validation or test is
    carved from train instead: a split of the data's own (MNLI's validation_matched) may be the one meant."""
    given = config.hub_splits or {}
    unknown = [key for key in given if key not in SPLITS]
    if unknown:
        raise DataError(
            f"data.hub_splits: {unknown[0]!r} is not a split of the pipeline; map train, validation or test"
        )
    chosen: dict[str, str] = {}
    for split in SPLITS:
        if split in given:
            if given[split] not in available:
                raise DataError(
                    f"data.hub_splits: Hub dataset '{config.hub_name}' has no split '{given[split]}' for {split} (its "
                    f"splits: {', '.join(available)})"
                )
            chosen[split] = given[split]
            continue
        candidates = [name for name in available if SPLIT_VALUES.get(name.casefold()) == split]
        exact = [name for name in candidates if name == split]
        if exact or candidates:
            chosen[split] = (exact or candidates)[0]
    if "train" not in chosen:
        raise DataError(
            f"Hub dataset '{config.hub_name}' has the splits {', '.join(available)} and none is train: name it in "
            "data.hub_splits (e.g. {train: <split>}); validation and test are carved from train where it has none"
        )
    unused = [name for name in available if name not in chosen.values()]
    carved = [split for split in SPLITS if split not in chosen]
    if unused:
        (logger.warning if carved else logger.info)(
            "Hub dataset '%s': split%s %s not used%s; data.hub_splits maps a split to train, validation or test",
            config.hub_name,
            "s" if len(unused) > 1 else "",
            ", ".join(unused),
            f", and {' and '.join(carved)} carved from train" if carved else "",
        )
    return chosen


def _hidden_labels_missing(labels: pd.Series) -> pd.Series:
    """A ClassLabel column with -1, the datasets library's mark of a row without a label, as absent labels: such a
    row is then incomplete (data.incomplete_rows), not of a class -1."""
    return labels.astype(object).where(labels >= 0, None)


def load_hub_dataset(config: DataConfig) -> Any:
    """`datasets.load_dataset`, but an unreachable Hub fails within `hub_timeout_seconds` instead of minutes.

    In offline mode (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE) only the cache is read. Otherwise a cheap probe with a
    hard deadline asks the Hub first: when it answers, `load_dataset` runs as usual (downloading, or revalidating
    a cached copy); when it does not, the cache is read as in offline mode, and without a cached copy the error
    names the local-files option.
    """
    saved = _load_saved(config.hub_name)
    if saved is not None:
        return saved
    endpoint = datasets.config.HF_ENDPOINT
    if offline_mode():
        reason = "offline mode is on (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)"
    else:
        problem = probe_hub(endpoint, config.hub_name, config.hub_timeout_seconds)
        if problem is None:
            return _load_online(config, endpoint)
        reason = f"the Hugging Face Hub could not be reached at {endpoint} ({problem})"
        logger.warning("%s; looking for a cached copy of %s", reason, config.hub_name)
    detail = ""
    with forced_offline():
        try:
            return datasets.load_dataset(config.hub_name, config.hub_config, cache_dir=hub_cache_dir(config))
        except OSError as error:  # ConnectionError or FileNotFoundError: nothing cached
            logger.debug("Loading %s from the cache failed: %r", config.hub_name, error)
        except ValueError as error:  # cached, but not this data.hub_config
            detail = f" ({str(error).splitlines()[0]})"
    cache = hub_cache_dir(config)
    raise DataError(
        f"Cannot load Hub dataset '{config.hub_name}': {reason}, and no usable cached copy was found in "
        f"{cache}{detail}. {OFFLINE_HINT}."
    )


def _load_saved(name: str) -> datasets.DatasetDict | None:
    """data.hub_name naming a folder that `save_to_disk` wrote: its splits (a single saved Dataset is the train
    split). None for a Hub id, or a folder of data files, which `load_dataset` reads; a path to no folder is an
    error here, rather than a Hub lookup of a name that cannot be one."""
    path = Path(name).expanduser()
    if not path.is_dir():
        if name.startswith((".", "/", "~")):
            raise DataError(f"data.hub_name: {name} is neither a folder nor a Hub dataset id ('owner/name')")
        return None
    if not is_saved_dataset(path):
        return None
    _refuse_empty_saved_splits(path)
    saved = datasets.load_from_disk(str(path))
    return saved if isinstance(saved, datasets.DatasetDict) else datasets.DatasetDict({"train": saved})


def _refuse_empty_saved_splits(path: Path) -> None:
    """A split saved with no rows has no data file, and `load_from_disk` fails on it with a bare IndexError: name
    it instead (an empty split is an error wherever it comes from)."""
    folders = [path] if (path / datasets.config.DATASET_STATE_JSON_FILENAME).is_file() else sorted(path.iterdir())
    for folder in folders:
        state = folder / datasets.config.DATASET_STATE_JSON_FILENAME
        if state.is_file() and not json.loads(state.read_text(encoding="utf-8")).get("_data_files"):
            split = "train" if folder == path else folder.name
            raise DataError(
                f"The {split} split is empty: {folder} (data.hub_name) was saved with no rows; save the dataset "
                "without it (a missing validation or test split is carved from train)"
            )


def hub_cache_dir(config: DataConfig) -> str:
    return str(Path(config.cache_dir).expanduser())


def _load_online(config: DataConfig, endpoint: str) -> Any:
    """`load_dataset` once the Hub has answered; its errors become DataErrors that say which setting to check."""
    try:
        return datasets.load_dataset(config.hub_name, config.hub_config, cache_dir=hub_cache_dir(config))
    except FileNotFoundError as error:  # includes datasets' DatasetNotFoundError
        raise DataError(
            f"data.hub_name: Hub dataset '{config.hub_name}' was not found at {endpoint} ({error}); check the name, "
            f"or log in (HF_TOKEN) for a private or gated dataset. {OFFLINE_HINT}."
        ) from None
    except OSError as error:  # the connection dropped, or an HTTP error, after the probe
        raise DataError(
            f"Hub dataset '{config.hub_name}': loading from {endpoint} failed ({type(error).__name__}: {error}). "
            f"{OFFLINE_HINT}."
        ) from None
    except ValueError as error:  # e.g. an unknown data.hub_config
        raise DataError(f"Hub dataset '{config.hub_name}' (data.hub_config={config.hub_config!r}): {error}") from None


def offline_mode() -> bool:
    """The libraries read these variables once, at import; the environment is checked too in case it changed since."""
    import huggingface_hub.constants as hub_constants

    from_env = any(
        os.environ.get(name, "").upper() in _TRUE_VALUES for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )
    return from_env or bool(hub_constants.HF_HUB_OFFLINE) or bool(datasets.config.HF_HUB_OFFLINE)


def probe_hub(endpoint: str, name: str, timeout_seconds: float) -> str | None:
    """None if the Hub answers within the timeout, else what went wrong.

    The request runs in a daemon thread joined with a deadline: the HTTP timeout bounds connecting and reading,
    but not a hanging DNS lookup. Any HTTP answer below 500 counts as reachable (a missing or gated dataset is
    then reported by `load_dataset` itself); a 5xx does not, because `load_dataset` would retry it for minutes.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    outcome: list[str | None] = []

    def ask() -> None:
        try:
            HfApi(endpoint=endpoint).dataset_info(name, timeout=timeout_seconds)
            outcome.append(None)
        except HfHubHTTPError as error:
            status = error.response.status_code if error.response is not None else None
            outcome.append(None if status is not None and status < 500 else f"HTTP {status or 'error'}: {error}")
        except Exception as error:  # connection refused, DNS failure, timeout, proxy errors: all mean unreachable
            outcome.append(f"{type(error).__name__}: {error}")

    thread = threading.Thread(target=ask, name="pipeline-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout_seconds)
    if not outcome:
        return f"no answer within {timeout_seconds:g} s"
    return outcome[0]


@contextlib.contextmanager
def forced_offline() -> Iterator[None]:
    """Make `datasets` and `huggingface_hub` behave as under HF_HUB_OFFLINE=1 for the duration (cache only, no
    retries). They read the environment variable once at import, so the module flags they consult are set."""
    import huggingface_hub.constants as hub_constants

    saved = (hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE)
    hub_constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = True
    try:
        yield
    finally:
        hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE = saved


# ---------------------------------------------------------------------------------------------------------------
# Text and labels


def label_columns_of(config: DataConfig) -> list[str]:
    """The columns that hold the labels: data.label_columns (one per class), else data.label_column."""
    return list(config.label_columns) if config.label_columns else [config.label_column]


def _require_columns(available: list[str], needed: list[str], source: str, config: DataConfig) -> None:
    text_keys = dict(TextSpec.from_data_config(config).named_columns())  # a text column and the setting naming it
    for column in needed:
        key = text_keys.get(column, "data.text_columns")
        if column in label_columns_of(config):
            key = "data.label_columns" if config.label_columns else "data.label_column"
        elif column == config.split_column:
            key = "data.split_column"
        resolve_columns(available, [column], source, key)


def to_dataset(table: Table, config: DataConfig, scheme: LabelScheme) -> datasets.Dataset:
    """The `text` + `label` + `row_id` dataset of one Table."""
    texts = build_texts(table, TextSpec.from_data_config(config))
    if config.task == "multi_label":
        multi_hot = label_sets(table, config.label_column, scheme, config.label_separator)
        features = datasets.Features(
            {
                "text": datasets.Value("string"),
                MULTI_LABEL_COLUMN: datasets.List(datasets.Value("float32"), length=len(scheme.names)),
                "row_id": datasets.Value("string"),
            }
        )
        columns = {"text": texts, MULTI_LABEL_COLUMN: multi_hot.tolist(), "row_id": row_ids(table, config.id_column)}
        return datasets.Dataset.from_dict(columns, features=features)
    labels = label_ids(table, config.label_column, scheme)
    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=scheme.names),
            "row_id": datasets.Value("string"),
        }
    )
    return datasets.Dataset.from_dict(
        {"text": texts, "label": labels, "row_id": row_ids(table, config.id_column)}, features=features
    )


def row_ids(table: Table, id_column: str | None) -> list[str]:
    """The data's own ids (non-empty, and unique in the file but for rows that repeat whole), else the row's line or
    record number."""
    if id_column is None:
        return [str(table.number(row)) for row in range(len(table.frame))]
    ids, first_row = [], {}
    for row, value in enumerate(table.column(id_column, "data.id_column")):
        text = "" if is_missing(value) else str(value).strip()
        if not text:
            raise DataError(f"{table.where(row)}, column '{id_column}' (data.id_column): the id is empty")
        if text in first_row and not _repeats_whole(table, row, first_row[text]):
            raise DataError(
                f"{table.where(row)}, column '{id_column}' (data.id_column): id {text!r} repeats "
                f"{table.where(first_row[text])} with other values; ids must be unique (rows that repeat whole are "
                "duplicates, which data.deduplicate removes; with no column of unique ids, leave data.id_column unset)"
            )
        first_row.setdefault(text, row)
        ids.append(text)
    return ids


def _repeats_whole(table: Table, row: int, earlier: int) -> bool:
    """Whether a row's every cell is the earlier row's: an export appended twice, or a record written again, is a
    duplicate row (data.deduplicate removes its text's copy and lists it by its id), not two rows one id names."""
    return [str(value) for value in table.frame.iloc[row]] == [str(value) for value in table.frame.iloc[earlier]]


def build_texts(table: Table, spec: TextSpec) -> list[str]:
    """Each row's text by the one rule of tables.TextSpec; empty texts are an error naming the first row and how
    many more there are, so that one pass over the file fixes them all."""
    texts = texts_of(table, spec)
    empty = [row for row, text in enumerate(texts) if not text]
    if empty:
        raise DataError(
            f"{table.where(empty[0])}: {spec.describe_empty()}{table.and_more(empty)}; fill or remove these rows, "
            f"{INCOMPLETE_ROWS_HINT}"
        )
    _warn_if_numbers_only(texts, table, spec)
    _suggest_unescaping(texts, table, spec)
    return texts


# A line break written as backslash-n (tables.ESCAPED_NEWLINE) and read as it is reaches the model as two stray
# characters. A few texts may hold one for other reasons (a Windows path, code), so the suggestion comes only when many
# do.
ESCAPED_NEWLINE_SHARE = 0.05
MIN_ESCAPED_NEWLINE_ROWS = 3


def _suggest_unescaping(texts: list[str], table: Table, spec: TextSpec) -> None:
    """One line per file when data.unescape_newlines is off and many of its texts hold a literal backslash-n."""
    if spec.unescape_newlines:
        return
    escaped = sum(1 for text in texts if ESCAPED_NEWLINE in text)
    if escaped >= MIN_ESCAPED_NEWLINE_ROWS and escaped >= ESCAPED_NEWLINE_SHARE * len(texts):
        logger.warning(
            "%s: %d of %d texts hold a literal backslash-n (\\n), the line break of the Yelp and Amazon review CSV "
            "files; set data.unescape_newlines=true to read it as one",
            table.source,
            escaped,
            len(texts),
        )


# Texts made of digits and number punctuation only: an id, a price or a date chosen as data.text_columns, most
# often by mistake. Warned about (not refused) when nearly every text of a file is one.
_NUMBER_ONLY = re.compile(r"[\d\s.,:/+\-]+")
NUMBER_ONLY_SHARE = 0.9
MIN_ROWS_FOR_NUMBER_WARNING = 10


def _warn_if_numbers_only(texts: list[str], table: Table, spec: TextSpec) -> None:
    """Judged per side of a pair (segments_of), since one side of numbers beside a side of words is as suspect."""
    for side, (columns, key) in enumerate(spec.side_columns()):
        numeric = sum(1 for text in texts if _NUMBER_ONLY.fullmatch(segments_of(text)[side]))
        if len(texts) >= MIN_ROWS_FOR_NUMBER_WARNING and numeric >= NUMBER_ONLY_SHARE * len(texts):
            logger.warning(
                "%s: %d of %d texts are numbers only (%s: %s): an id or a numeric column? The model learns from words",
                table.source,
                numeric,
                len(texts),
                key,
                ", ".join(columns),
            )


def texts_of(table: Table, spec: TextSpec) -> list[str]:
    """Each row's text by the one rule of tables.TextSpec ("" where every text column is empty)."""
    return [spec.text_of(parts) for parts in input_values(table, spec)]


def input_values(table: Table, spec: TextSpec) -> list[tuple[Any, ...]]:
    """Each row's values of the text's columns (TextSpec.input_columns), in that order."""
    return list(zip(*(table.column(column, key) for column, key in spec.named_columns())))


def drop_incomplete(
    table: Table, split: str, config: DataConfig, missing: MissingLabel
) -> tuple[Table, list[RemovedRow]]:
    """The rows that cannot be used (`incomplete_rows`): with `data.incomplete_rows: drop` left out, each returned
    with why, for removed_rows.csv; with "error" one message names them all, every kind at once (labels.MissingLabel
    says which labels are none), so that one pass over the file fixes them."""
    spec = TextSpec.from_data_config(config)
    no_label = missing_label_rows(table, config, missing)  # first: a file lacking its columns is told its label's
    values = input_values(table, spec)
    no_text = {row: what for row, parts in enumerate(values) if (what := spec.what_is_empty(parts))}
    if config.incomplete_rows != "drop":
        _refuse_incomplete(table, config, spec, no_text, no_label)
        return table, []
    ids = row_ids(table, config.id_column)
    kept, dropped, removed = [], [], []
    for row, parts in enumerate(values):
        label = no_label.get(row)
        missing_parts = [no_text.get(row), None if label is None else _lacking_label(label[1])]
        missing_parts = [what for what in missing_parts if what]
        if missing_parts:
            dropped.append(row)
            reason = f"incomplete: no {' and no '.join(missing_parts)} (data.incomplete_rows: drop)"
            removed.append(RemovedRow(split, ids[row], reason, spec.partial_text(parts)))
        else:
            kept.append(row)
    if dropped:
        logger.warning(
            "%s: %d of %d rows left out, without a text or a label (data.incomplete_rows: drop): %s %s%s; listed "
            "in removed_rows.csv",
            table.source,
            len(removed),
            len(values),
            table.unit,
            table.number(dropped[0]),
            table.and_more(dropped),
        )
    if not kept:
        raise DataError(
            f"The {split} split is empty: every one of the {len(values)} rows of {table.source} ({table.origin}) "
            f"lacks a text or a label; check {' and '.join(spec.keys())}, and data.label_column"
        )
    return table.subset(kept), removed


def _lacking_label(written: str) -> str:
    """A row's missing label as removed_rows.csv says it: "label", and what marked it as none when not empty."""
    return f"label ({written!r} marks none)" if written else "label"


def _refuse_incomplete(
    table: Table, config: DataConfig, spec: TextSpec, no_text: dict[int, str], no_label: dict[int, tuple[str, str]]
) -> None:
    """One error naming the rows without a text and those without a label: the first of each and how many more."""
    problems = []
    if no_text:
        rows = list(no_text)
        problems.append(f"{table.where(rows[0])}: {spec.describe_empty()}{table.and_more(rows)}")
    if no_label:
        rows = list(no_label)
        column = no_label[rows[0]][0]
        written = [text for _, text in no_label.values()]
        if config.label_columns:
            what = f"column '{column}' (data.label_columns): {describe_missing(written, indicator=True)}"
        else:
            what = f"column '{column}': {describe_missing(written)}"
        problems.append(f"{table.where(rows[0])}, {what}{table.and_more(rows)}")
    if problems:
        raise DataError(f"{'; '.join(problems)}; fill or remove these rows, {INCOMPLETE_ROWS_HINT}")


# Classes named in each split's log line; more would make one line of thousands of characters (metrics.json and
# the report's per-class table hold every class).
LOGGED_CLASSES = 30


def _log_summary(splits: datasets.DatasetDict, names: list[str]) -> None:
    counts = {split: class_counts(labels_of(dataset), names) for split, dataset in splits.items()}
    for split, dataset in splits.items():
        per_class = ", ".join(f"{name} {count}" for name, count in zip(names[:LOGGED_CLASSES], counts[split].counts))
        if len(names) > LOGGED_CLASSES:
            per_class += f", and {len(names) - LOGGED_CLASSES:,} more classes"
        logger.info("%s: %d rows (%s)", split, len(dataset), per_class)
        without = counts[split].rows_without_labels
        if without:  # multi-label: learnt from, as a negative of every class; none of the counts above shows them
            logger.info("%d of %d %s rows have no label: negative for every class", without, len(dataset), split)
    untrained = [name for name, count in zip(names, counts["train"].counts) if not count]
    if untrained:
        logger.warning("No training rows for the classes %s: the model cannot learn them", ", ".join(untrained))
