"""Multi-label tasks: each row's set of classes (a list, a joined cell, tags, or one 0/1 column per class)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from pipeline.common.errors import DataError, shorten
from pipeline.config.schema import DataConfig
from pipeline.data.label_forms import as_int, raw_sets, read_indicator, set_hint, warn_case_variants
from pipeline.data.label_scheme import LabelScheme, MissingLabel
from pipeline.data.labels import MAX_INFERRED_CLASSES, class_indices, given_scheme, warn_unlike_names
from pipeline.data.rows import SplitRows

_FOUND = "the classes found in train; list them all in data.label_names"


def label_set_scheme(config: DataConfig, train: SplitRows, hub_names: list[str] | None = None) -> LabelScheme:
    """Multi-label classes: data.label_names, a Hub ClassLabel list's, else train's sets' sorted union."""
    separator = config.label_separator
    given = given_scheme(config, hub_names)
    if given is not None:
        joined = [name for name in given.names if separator in name]
        if joined:
            raise DataError(
                f"data.label_names: class {joined[0]!r} contains data.label_separator {separator!r}; choose another separator"
            )
        return given
    rows = Counter(name for row in raw_sets(train, config.label_column, separator) for name in set(row))
    found = set(rows)
    if len(found) > MAX_INFERRED_CLASSES:
        raise DataError(
            f"{train.source}, column '{config.label_column}': {len(found)} distinct labels, more than {MAX_INFERRED_CLASSES}: list the classes in data.label_names{set_hint(sorted(found), separator)}"
        )
    if found and all(as_int(name) is not None for name in found):
        return LabelScheme(sorted(found, key=as_int), 0, accepts_ids=False, origin=_FOUND)
    warn_case_variants(sorted(found), train, config.label_column)
    warn_unlike_names(rows, train, config.label_column, separator)
    return LabelScheme(sorted(found), 0, accepts_ids=False, origin=_FOUND)


def label_sets(table: SplitRows, column: str, scheme: LabelScheme, separator: str) -> np.ndarray:
    """(N, C) float32 multi-hot rows; a class outside the scheme is an error naming the row and the classes."""
    multi_hot = np.zeros((len(table.frame), len(scheme.names)), dtype=np.float32)
    sets = raw_sets(table, column, separator)
    for row, indices in enumerate(class_indices(table, column, sets, scheme, separator)):
        multi_hot[row, indices] = 1.0
    return multi_hot


# The column stage 1 writes each row's set of classes into: a name no file has.
INDICATOR_SETS_COLUMN = "<classes of data.label_columns>"


def indicator_sets(table: SplitRows, columns: list[str], missing: MissingLabel) -> list[list[str] | None]:
    """Each row's classes from its 0/1 cells; a missing cell makes the set None (an incomplete row)."""
    cells = [table.column(column, "data.label_columns") for column in columns]
    sets: list[list[str] | None] = [[] for _ in range(len(table.frame))]
    for column, values in zip(columns, cells):
        read = [None if missing.written(value) is not None else read_indicator(value) for value in values]
        unread = [row for row, present in enumerate(read) if present == "?"]
        if unread:
            raise DataError(
                f"{table.where(unread[0])}, column '{column}' (data.label_columns): {shorten(values[unread[0]], 40)!r} is not 0 or 1 (nor true/false, "
                f"yes/no){table.and_more(unread)}; each class column says whether the row has that class (-1 or an empty "
                "cell: not scored, an incomplete row)"
            )
        for row, present in enumerate(read):
            if present is None:
                sets[row] = None
            elif present and sets[row] is not None:
                sets[row].append(column)
    return sets
