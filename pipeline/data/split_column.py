"""data.split_column: one file's rows divided into the splits a column names; checks that each split kept rows."""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pipeline.common.errors import DataError
from pipeline.data.rows import SPLITS, SplitRows
from pipeline.data.splits import DuplicateReport
from pipeline.data.text import is_blank

if TYPE_CHECKING:  # a type only: `pipeline.predict` reads files without loading datasets
    import datasets

logger = logging.getLogger("pipeline.data.load")
# What a value of data.split_column says (stripped, any case): its row's split.
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
    """Train divided by data.split_column (first, as if separate files), and the record for metrics.json."""
    if column is None:
        return tables, None
    held = [split for split in tables if split != "train"]  # a Hub dataset's validation or test: said twice
    if held:
        raise DataError(
            f"data.split_column '{column}': {tables[held[0]].source} ({tables[held[0]].origin}) already holds the {' and '.join(held)} rows; the column divides a source that has only a train split: unset it"
        )
    table = tables["train"]
    require_rows(table, "train")
    names = _split_names(table, column)
    rows: dict[str, list[int]] = {split: [] for split in SPLITS}
    for row, name in enumerate(names):
        rows[SPLIT_VALUES[name.casefold()]].append(row)
    if not rows["train"]:
        given = ", ".join(f"{split} {len(rows[split]):,}" for split in SPLITS if rows[split])
        raise DataError(
            f"{table.source}, column '{column}' (data.split_column): no row is in train (rows per split: {given}); the model learns from the train rows, so mark some as {', '.join(values_naming('train'))}"
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
    """Each row's value of the split column, stripped; an empty one or one naming no split is an error."""
    values = table.column(column, "data.split_column")
    where = f"column '{column}' (data.split_column)"
    empty = [row for row, value in enumerate(values) if is_blank(value)]
    if empty:
        raise DataError(
            f"{table.where(empty[0])}, {where}: no split given{table.and_more(empty)}; give each row one of {_accepted_values()}, or remove the row"
        )
    names = [str(value).strip() for value in values]
    unknown = [row for row, name in enumerate(names) if name.casefold() not in SPLIT_VALUES]
    if unknown:
        others = sorted({names[row] for row in unknown} - {names[unknown[0]]})
        also = f"; other values naming no split: {', '.join(map(repr, others[:5]))}" if others else ""
        raise DataError(
            f"{table.where(unknown[0])}, {where}: {names[unknown[0]]!r} names no split{table.and_more(unknown)}{also}; the accepted values (in any case): {_accepted_values()}; relabel or remove these rows"
        )
    return names


def values_naming(split: str) -> list[str]:
    return [value for value, named in SPLIT_VALUES.items() if named == split]


def _accepted_values() -> str:
    """The values by the split they name: "train; validation, valid, val, dev; test"."""
    return "; ".join(", ".join(values_naming(split)) for split in SPLITS)


# The splits carved out of train when missing, in carving order, and their fraction settings.
CARVED_KEYS = {"test": "data.test_fraction", "validation": "data.validation_fraction"}


def give_split(split: str, split_column: str | None, which: str = "") -> str:
    """How to give `split` instead of carving it: a file, or rows marked in data.split_column."""
    if split_column is None:
        return f"give a {split} file{which}"
    first, *others = values_naming(split)
    also = f" (or {', '.join(others)})" if others else ""
    return f"mark rows{which} as {first}{also} in the column '{split_column}' (data.split_column)"


def carved_share(rows: int, whole: int, fraction: float, split: str, key: str, give: Callable[[str], str]) -> float:
    """The share of the train file that became `split`; WARN where stratified carving grew it past the ask."""
    asked = math.ceil(fraction * whole)
    if rows > asked * 1.1 and rows - asked >= 2:
        logger.warning(
            f"{key} {fraction:g} asks for {asked} of the {whole} train rows; to keep a row of every class in {split} it holds {rows} ({100 * rows / whole:.0f}%), which leaves train that much smaller: add rows to the small classes, or {give(split)}"
        )
    return round(rows / whole, 4)


def require_evaluation_rows(
    splits: dict[str, datasets.Dataset],
    tables: dict[str, SplitRows],
    duplicates: DuplicateReport,
    give: Callable[..., str],
) -> None:
    """Refuse a validation or test split that `data.deduplicate: across` emptied."""
    for split in ("validation", "test"):
        if len(splits[split]):
            continue
        earlier = " or ".join(SPLITS[: SPLITS.index(split)])
        rows = f"{split} rows carved from {tables['train'].source} ({CARVED_KEYS[split]})"
        if split in tables:
            rows = f"rows of {tables[split].source} ({tables[split].origin})"
        within = duplicates.within.get(split, 0)
        repeats = f" (including {within:,} repeated within {split})" if within else ""
        raise DataError(
            f"The {split} split is empty: data.deduplicate: {duplicates.mode} removed all {duplicates.removed[split]:,} "
            f"{rows}, as each repeats a text of {earlier}{repeats}; set data.deduplicate=within or none to "
            f"keep them (their scores then count texts seen before), or "
            f"{give(split, which=f' whose texts are not in {earlier}')}"
        )


def require_rows(table: SplitRows, split: str) -> None:
    """A file of no rows is an error (with what else it may hold, as for a missing column)."""
    if len(table.frame) == 0:
        raise DataError(
            f"The {split} split is empty: {table.source} ({table.origin}) has no data rows{table.missing_column_hint}"
        )
