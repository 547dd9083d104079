"""Class labels: which classes there are (in id order) and which class each row's label names.

    scheme = label_scheme(config.data, train_table, hub_names)
    ids = label_ids(test_table, config.data.label_column, scheme)

A label is read one way only, and the same way in every split: as a class *name* or as an integer *id* counting
from `data.label_index_base`. When `data.label_names` is unset the train split decides which: all-integer labels
are ids (their names are the numbers as written), anything else is names (sorted). Inferred names are never
indexed by ids, so a test file with ids against a train file with names is an error, not a silent permutation.
"""

from __future__ import annotations

import numbers
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.tables import DataError, is_missing

if TYPE_CHECKING:
    from pipeline.config import DataConfig
    from pipeline.data import Table

_INTEGER = re.compile(r"[+-]?[0-9]+")
# Above this many classes a label column is more likely a text or id column than labels: data.label_names must
# then list the classes. Also bounds every per-class table and plot.
MAX_INFERRED_CLASSES = 1000


@dataclass(frozen=True)
class LabelScheme:
    """Class names in id order; the number an integer label of the first class has; how labels may be written."""

    names: list[str]
    index_base: int
    accepts_names: bool = True
    accepts_ids: bool = True


def as_int(value: Any) -> int | None:
    """An integer label (int, integral float from a Parquet/JSON column, or a string of digits), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    text = str(value).strip()
    return int(text) if _INTEGER.fullmatch(text) else None


def label_scheme(config: DataConfig, train: Table, hub_names: list[str] | None) -> LabelScheme:
    """Class names in id order: `data.label_names`, else a Hub ClassLabel (ids from 0), else train's labels."""
    names = list(config.label_names) if config.label_names else None
    if names is not None:
        _check_names(names)
    if hub_names is not None:
        if names is not None and len(names) != len(hub_names):
            raise DataError(
                f"data.label_names has {len(names)} names but the Hub dataset's '{config.label_column}' column has "
                f"{len(hub_names)} classes ({', '.join(hub_names)})"
            )
        return LabelScheme(names or hub_names, 0)
    if names is not None:
        return LabelScheme(names, config.label_index_base)
    return _inferred_scheme(train, config.label_column, config.label_index_base)


def _inferred_scheme(train: Table, column: str, base: int) -> LabelScheme:
    values = [value for value in train.column(column, "data.label_column") if not is_missing(value)]
    ids = [as_int(value) for value in values]
    if values and all(value is not None for value in ids):
        distinct, count = len(set(ids)), max(ids) - base + 1
        if min(ids) < base or count > max(2 * distinct, distinct + 10) or count > MAX_INFERRED_CLASSES:
            raise DataError(
                f"{train.source}, column '{column}': integer labels run from {min(ids)} to {max(ids)} but only "
                f"{distinct} distinct values appear; list the classes in data.label_names (or fix the stray value, "
                f"or set data.label_index_base)"
            )
        return LabelScheme([str(base + index) for index in range(count)], base, accepts_names=False)
    names = sorted({str(value).strip() for value in values} - {""})
    if len(names) > MAX_INFERRED_CLASSES:
        raise DataError(
            f"{train.source}, column '{column}': {len(names)} distinct labels in {len(values)} rows, more than "
            f"{MAX_INFERRED_CLASSES}: is data.label_column a text or id column? If not, list the classes in "
            "data.label_names"
        )
    return LabelScheme(names, base, accepts_ids=False)


def _check_names(names: list[str]) -> None:
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated or "" in names:
        raise DataError(f"data.label_names: names must be distinct and non-empty, got {names}")


def label_ids(table: Table, column: str, scheme: LabelScheme) -> list[int]:
    """Class ids of one column. Every label of the column is read the same way (the first label decides, when
    the scheme allows both): a name or an id; anything else is an error naming the row and the allowed values."""
    by_name = {name: index for index, name in enumerate(scheme.names)}
    ids, kind = [], None
    for row, value in enumerate(table.column(column, "data.label_column")):
        if is_missing(value) or not str(value).strip():
            raise DataError(f"{table.where(row)}, column '{column}': the label is empty")
        index, this_kind = _read_label(value, by_name, scheme)
        if index is None or not 0 <= index < len(scheme.names):
            raise DataError(
                f"{table.where(row)}, column '{column}': label {value!r} is not a known class; {_allowed(scheme)}"
            )
        if kind is not None and this_kind != kind:
            raise DataError(
                f"{table.where(row)}, column '{column}': label {value!r} is a class {this_kind} but earlier labels "
                f"of this column are class {kind}s; write every label the same way"
            )
        kind = kind or this_kind
        ids.append(index)
    return ids


def _read_label(value: Any, by_name: dict[str, int], scheme: LabelScheme) -> tuple[int | None, str]:
    text = str(value).strip()
    if scheme.accepts_names and text in by_name:
        return by_name[text], "name"
    number = as_int(value) if scheme.accepts_ids else None
    if number is not None:
        return number - scheme.index_base, "id"
    return None, "name"


def _allowed(scheme: LabelScheme) -> str:
    count, base = len(scheme.names), scheme.index_base
    shown = ", ".join(scheme.names[:20]) + (", ..." if count > 20 else "")
    ids = f"ids {base}..{base + count - 1} (data.label_index_base={base})"
    if not scheme.accepts_names:
        return f"allowed: {ids}"
    if not scheme.accepts_ids:
        return f"allowed: the names {shown} (the classes found in train; set data.label_names to use ids)"
    return f"allowed: {ids} or the names {shown}"
