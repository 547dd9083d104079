"""data.split_column: one file's rows divided into the splits a column names; and the checks that each split
kept enough rows once splits are carved, deduplicated or divided.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from typing import Any

import datasets

from pipeline.common.errors import DataError
from pipeline.data.rows import SPLITS, SplitRows
from pipeline.data.splits import DuplicateReport
from pipeline.data.text import is_blank

logger = logging.getLogger("pipeline.data.load")
# What a value of data.split_column says, read stripped and in any case: the split its row belongs to.
SPLIT_VALUES = {
    "train": "train",
    "validation": "validation",
    "valid": "validation",
    "val": "validation",
    "dev": "validation",
    "test": "test",
}


def split_by_column(
    tables: dict[str, SplitRows], column: str | None
) -> tuple[dict[str, SplitRows], dict[str, Any] | None]:
    """With data.split_column, the one train table divided into the splits its column names (SPLIT_VALUES), each
    row keeping its line or record number in the file; a split no row names is left out, to be carved from train
    as when a file is missing. Also what was read, for metrics.json `data.split_column` (None when unset). Done
    first, so that every later step (indicator columns, incomplete rows, the classes: from train's rows only) runs
    as it does on separate files."""
    if column is None:
        return tables, None
    _refuse_given_splits(tables, column)
    table = tables["train"]
    require_rows(table, "train")
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


def _split_names(table: SplitRows, column: str) -> list[str]:
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


def _refuse_given_splits(tables: dict[str, SplitRows], column: str) -> None:
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


def carved_share(rows: int, whole: int, fraction: float, split: str, key: str, give: Callable[[str], str]) -> float:
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


def require_evaluation_rows(
    splits: dict[str, datasets.Dataset],
    tables: dict[str, SplitRows],
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


def require_rows(table: SplitRows, split: str) -> None:
    """A file of no rows is an error; what else it may hold (a workbook's other sheets: the data on the second)
    is said as for a column it lacks."""
    if len(table.frame) == 0:
        raise DataError(
            f"The {split} split is empty: {table.source} ({table.origin}) has no data rows{table.missing_column_hint}"
        )
