"""Class labels: which classes there are (in id order) and which class each row's label names.

    scheme = label_scheme(config.data, train_table, hub_names)
    ids = label_ids(test_table, config.data.label_column, scheme)

A column's labels are all names or all ids (from `data.label_index_base`), in every split alike. Inferred names are
never indexed by ids, nor are names that are values (value_names): "4" is the class "4.0", never the fifth.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.common.errors import DataError
from pipeline.config.schema import DataConfig
from pipeline.data.decoding import decode_whole
from pipeline.data.label_forms import (
    BOOLEANS,
    as_int,
    examples_of,
    joined_by,
    raw_sets,
    set_hint,
    set_joining,
    set_parts,
    set_settings,
    single_labels,
    value_names,
    warn_case_variants,
)
from pipeline.data.label_scheme import (
    MISSING_LOOKING_LABELS,
    NEARLY_ALL_ROWS,
    LabelScheme,
    UnknownLabels,
    allowed_labels,
    joined_hint,
    missing_hint,
    read_label,
    written_otherwise_hint,
)
from pipeline.data.rows import SplitRows
from pipeline.data.text import INCOMPLETE_ROWS_HINT, is_blank, is_number_text

# Above this many classes a label column is more likely a text or id column; also bounds per-class tables and plots.
MAX_INFERRED_CLASSES = 1000
# Fractional labels (a regression target) with more values than this, most on few rows (the median), are refused.
MAX_FRACTIONAL_CLASSES = 20
MIN_ROWS_PER_FRACTIONAL_CLASS = 5
# A text or id column as label: refused when more than half the rows, and at least this many, have a unique label.
MIN_ONE_OFF_ROWS = 20
logger = logging.getLogger("pipeline.data.labels")


def label_scheme(config: DataConfig, train: SplitRows, hub_names: list[str] | None) -> LabelScheme:
    """Class names in id order: `data.label_names`, else a Hub ClassLabel (ids from 0), else train's labels."""
    given = given_scheme(config, hub_names)
    return given if given is not None else _inferred_scheme(train, config.label_column, config.label_index_base)


def with_listed_names(config: DataConfig) -> DataConfig:
    """The data config with `data.label_names_file` read into `data.label_names`."""
    if config.label_names_file is None:
        return config
    names = read_names_file(config.label_names_file, config.encoding, config.label_index_base)
    return dataclasses.replace(config, label_names=names)


# A line of an id -> name mapping file (tweet_eval's mapping.txt: "0\tanger").
_ID_AND_NAME = re.compile(r"([+-]?[0-9]+)\t[ \t]*(\S.*)")


def read_names_file(path: str, encoding: str, index_base: int | None = None) -> list[str]:
    """Class names in id order: one per line (classes.txt), or an id -> name mapping (`mapping_names`)."""
    where = f"data.label_names_file: {path}"
    try:
        text = decode_whole(Path(path).expanduser().read_bytes(), encoding).removeprefix("\ufeff")
    except FileNotFoundError:
        raise DataError(f"{where}: no such file") from None
    except UnicodeDecodeError as error:
        raise DataError(f"{where}: not {encoding} text (byte {error.start}); convert it to UTF-8") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    mapped = mapping_names(lines, index_base, where)
    numbered = list(enumerate(lines, start=1)) if mapped is None else mapped
    names: dict[str, int] = {}
    for number, line in numbered:
        name = line.strip()
        if not name:
            raise DataError(f"{where}, line {number}: empty; one class name per line")
        if name in names:
            raise DataError(f"{where}, line {number}: {name!r} repeats line {names[name]}; each class once")
        names[name] = number
    if len(names) < 2:
        raise DataError(f"{where}: {len(names)} class name(s); one per line, two or more")
    return list(names)


def mapping_names(lines: list[str], index_base: int | None, where: str) -> list[tuple[int, str]] | None:
    """(line, name) per class when every line is "id<tab>name", ids from the base without gaps; else None."""
    numbered = [(number, _ID_AND_NAME.fullmatch(line.strip())) for number, line in enumerate(lines, 1) if line.strip()]
    if not numbered or any(match is None for _, match in numbered):
        return None
    by_id: dict[int, tuple[int, str]] = {}
    for number, match in numbered:
        key = int(match.group(1))
        if key in by_id:
            raise DataError(f"{where}, line {number}: id {key} repeats line {by_id[key][0]}; each id once")
        by_id[key] = (number, match.group(2))
    base, first = index_base or 0, min(by_id)
    if first != base:
        said = "data.label_index_base" if index_base is not None else "data.label_index_base, unset: 0"
        raise DataError(
            f"{where}, line {by_id[first][0]}: the ids (id, tab, name) start at {first}, but labels count from {base} ({said}): number the classes from {base}, or set data.label_index_base to {first}"
        )
    gap = next((key for key in range(first, first + len(by_id)) if key not in by_id), None)
    if gap is not None:
        after = min(key for key in by_id if key > gap)
        raise DataError(
            f"{where}, line {by_id[after][0]}: id {after} follows a gap (no line for id {gap}); the ids (id, tab, name) run without gaps, one line per class"
        )
    return [by_id[key] for key in sorted(by_id)]


def given_scheme(config: DataConfig, hub_names: list[str] | None) -> LabelScheme | None:
    """The classes named before any row is read: `data.label_names`, else a Hub ClassLabel's (ids from 0); or None."""
    names = list(config.label_names) if config.label_names else None
    if names is not None and (len(set(names)) < len(names) or "" in names):
        raise DataError(f"data.label_names: names must be distinct and non-empty, got {names}")
    if hub_names is not None:
        if names is not None and len(names) != len(hub_names):
            raise DataError(
                f"data.label_names has {len(names)} names but the Hub dataset's '{config.label_column}' column has {len(hub_names)} classes ({', '.join(hub_names)})"
            )
        return LabelScheme(names or hub_names, 0)  # a ClassLabel's column holds ids, whatever its names
    if names is None:
        return None
    values = value_names(names)
    origin = _by_value("data.label_names", values)
    return LabelScheme(names, config.label_index_base or 0, accepts_ids=values is None, origin=origin)


def _by_value(origin: str, values: str | None) -> str:
    """Origin of classes named by values (value_names), for the error that lists them."""
    if values is None:
        return origin
    if values == BOOLEANS:
        return f"{origin}; 1/0, true/false and yes/no name the classes by meaning, never as ids"
    return f"{origin}; a number names the class of equal value, never an id"


def refuse_unsaid_id_base(config: DataConfig, train: SplitRows, scheme: LabelScheme) -> None:
    """Refuse ids 1..K read from the unset base 0: every label would silently be the next class."""
    if config.label_index_base is not None or not config.label_names or config.label_columns or not scheme.accepts_ids:
        return
    named, column = set(scheme.names), config.label_column
    if config.task == "multi_label":
        labels = [item for row in raw_sets(train, column, config.label_separator) for item in row]
    else:
        labels = [value for value in single_labels(train, column) if not is_blank(value)]
    ids = [as_int(value) for value in labels if str(value).strip() not in named]
    if not ids or len(ids) < len(labels) or any(number is None for number in ids) or min(ids) < 1:
        return  # names, a mixed column (an error of its own), or an id 0 that shows the base
    count, where = len(scheme.names), f"{train.source}, column '{column}'"
    if max(ids) == count:  # only 1..K fits
        raise DataError(
            f"{where}: the labels are ids 1 to {count}, as many as data.label_names, so they count from 1: set data.label_index_base to 1"
        )
    if max(ids) < count:
        raise DataError(
            f"{where}: the labels are ids {min(ids)} to {max(ids)} and none is 0; counted from 0 (data.label_index_base "
            f"unset) {scheme.names[0]!r} has no rows, and if the file counts from 1 every label names the class after "
            f"its own: set data.label_index_base to 1 (ids 1..{count}) or 0"
        )


def trained_scheme(names: list[str], reading: dict[str, Any] | None, config: DataConfig) -> LabelScheme:
    """How a scored file's labels are read: as training read its own (`reading`; older runs: names)."""
    if reading is None:
        reading = {"names": True, "ids": bool(config.label_names), "index_base": config.label_index_base or 0}
    origin, values = "the model's classes, read as in training", value_names(list(names))
    return LabelScheme(
        list(names),
        int(reading["index_base"]),
        accepts_names=bool(reading["names"]),
        accepts_ids=bool(reading["ids"]),
        origin=origin if reading["ids"] else _by_value(origin, values),
    )


def _inferred_scheme(train: SplitRows, column: str, base: int | None) -> LabelScheme:
    values = [value for value in single_labels(train, column) if not is_blank(value)]
    _refuse_unlike_classes(values, train, column)
    ids = [as_int(value) for value in values]
    if values and all(value is not None for value in ids):
        base_said = base is not None
        if base is None:  # labels written 1..K are common (ag_news_csv): no phantom class 0 for them
            base = 0 if min(ids) <= 0 else 1
            logger.info("Integer labels counted from %d (data.label_index_base unset; set it to change)", base)
        distinct, count = len(set(ids)), max(ids) - base + 1
        if min(ids) < base:  # polarity -1/0/1 (the base unset: 0), or -1 marking a missing label
            said = f"data.label_index_base {base}" if base_said else f"{base}, data.label_index_base being unset"
            raise DataError(
                f"{train.source}, column '{column}': integer label {min(ids)} is below {said}, where ids count "
                f"from; if the labels are classes from {min(ids)} up (polarity -1, 0, 1), set data.label_index_base "
                f"to {min(ids)} or list the classes in data.label_names; if {min(ids)} marks a row without a label "
                "(as -1 does in GLUE's test files), remove those rows"
            )
        if count > max(2 * distinct, distinct + 10) or count > MAX_INFERRED_CLASSES:
            raise DataError(
                f"{train.source}, column '{column}': integer labels run from {min(ids)} to {max(ids)} but only {distinct} distinct values appear; list the classes in data.label_names (or fix the stray value, or set data.label_index_base)"
            )
        _refuse_id_gaps(sorted(set(ids)), base, count, base_said, train, column)
        return LabelScheme([str(base + index) for index in range(count)], base, accepts_names=False)
    names = sorted({str(value).strip() for value in values} - {""})
    if len(names) > MAX_INFERRED_CLASSES:
        raise DataError(
            f"{train.source}, column '{column}': {len(names)} distinct labels in {len(values)} rows, more than {MAX_INFERRED_CLASSES}: is data.label_column a text or id column? If not, list the classes in data.label_names{set_hint(names, None)}"
        )
    warn_case_variants(names, train, column)
    warn_unlike_names(Counter(str(value).strip() for value in values), train, column, None)
    found = "the classes found in train"
    values = value_names(names)
    origin = _by_value(found, values) if values is not None else f"{found}; set data.label_names to use ids"
    return LabelScheme(names, base or 0, accepts_ids=False, origin=origin)


def warn_unlike_names(rows: Counter[str], train: SplitRows, column: str, separator: str | None) -> None:
    """WARN about train classes that look like a missing-label mark or like joined sets."""
    for name, count in rows.items():
        if name.casefold() in MISSING_LOOKING_LABELS:
            logger.warning(
                f"{train.source}, column '{column}': the class {name!r} ({count} rows) looks like a mark of a missing label (SNLI's '-': no gold label); if it is one, add it to data.missing_label_values"
            )
    joining = set_joining(list(rows), separator)
    if joining is None:
        return
    joined = [name for name in rows if len(set_parts(name, joining)) > 1]
    logger.warning(
        f"{train.source}, column '{column}': {len(joined)} classes look like several classes {joined_by(joining)} ({examples_of(joined)}): a set of labels per row? Set {' '.join(set_settings(joining, separator))}"
    )


def _refuse_id_gaps(present: list[int], base: int, count: int, base_said: bool, train: SplitRows, column: str) -> None:
    """Refuse inferred ids that skip numbers: each gap would be a class no row teaches (sentiment140's 0, 4)."""
    missing = sorted(set(range(present[0] if base_said else base, base + count)) - set(present))
    if missing:
        raise DataError(
            f"{train.source}, column '{column}': integer labels {_numbers(present)} read as class ids {base} to "
            f"{base + count - 1} leave {_numbers(missing)} without a row, classes the model could never learn; list "
            f"the classes in data.label_names: {[str(number) for number in present]} for only the labels written "
            f"(codes, as sentiment140's 0 and 4), or all {count} ids' names if the others merely lack rows here"
        )


def _numbers(numbers: list[int], limit: int = 8) -> str:
    shown = ", ".join(str(number) for number in numbers[:limit])
    return shown if len(numbers) <= limit else f"{shown}, ... ({len(numbers)} in all)"


def _refuse_unlike_classes(values: list[Any], train: SplitRows, column: str) -> None:
    """Refuse inferred labels that cannot be classes: a regression target or a text or id column."""
    counts = Counter(str(value).strip() for value in values)
    insist = "if these are classes, list them all in data.label_names"
    numbers = all(is_number_text(name) for name in counts)
    continuous = np.median(list(counts.values())) < MIN_ROWS_PER_FRACTIONAL_CLASS if counts else False
    fractional = any(as_int(name) is None for name in counts)
    if numbers and fractional and continuous and len(counts) > MAX_FRACTIONAL_CLASSES:
        raise DataError(
            f"{train.source}, column '{column}' (data.label_column): the labels are numbers with fractions "
            f"({examples_of(counts)}, ...: {len(counts):,} distinct values in {len(values):,} rows), a regression target? The "
            f"pipeline trains classifiers: bucket the values into classes (e.g. low, medium, high), or, {insist}"
        )
    one_offs = [name for name, count in counts.items() if count == 1]
    if len(one_offs) >= MIN_ONE_OFF_ROWS and len(one_offs) > len(values) / 2:
        raise DataError(
            f"{train.source}, column '{column}' (data.label_column): {len(one_offs):,} of {len(values):,} rows have a "
            f"label no other row has ({examples_of(one_offs)}, ...): is it a text or id column? A class needs rows to learn "
            f"from; {insist}{set_hint(list(counts), None)}"
        )


def label_ids(table: SplitRows, column: str, scheme: LabelScheme) -> list[int]:
    """Class ids of one column, each label a name or an id (read one way only); anything else is an error."""
    values = single_labels(table, column)
    blank = [row for row, value in enumerate(values) if is_blank(value)]
    if blank:
        raise DataError(
            f"{table.where(blank[0])}, column '{column}': the label is empty{table.and_more(blank)}; fill or remove these rows, {INCOMPLETE_ROWS_HINT}"
        )
    return [index for (index,) in class_indices(table, column, [[value] for value in values], scheme)]


def class_indices(
    table: SplitRows, column: str, label_lists: list[list[Any]], scheme: LabelScheme, separator: str | None = None
) -> list[list[int]]:
    """Each row's labels as class indices; unknown labels, or names mixed with ids, are one error."""
    spellings = scheme.spellings()
    read = [[read_label(label, spellings, scheme) for label in labels] for labels in label_lists]
    classes = len(scheme.names)
    unknown = {
        row: [label for label, (index, _) in zip(labels, results) if index is None or not 0 <= index < classes]
        for row, (labels, results) in enumerate(zip(label_lists, read))
    }
    unknown = {row: labels for row, labels in unknown.items() if labels}
    if unknown:
        rows = list(unknown)
        distinct = list(dict.fromkeys(str(label).strip() for labels in unknown.values() for label in labels))
        others = f"; unknown labels: {', '.join(repr(name) for name in distinct[:10])}" if len(distinct) > 1 else ""
        hints = (
            written_otherwise_hint(distinct, scheme)
            + joined_hint(distinct, spellings, scheme, separator)
            + missing_hint(distinct)
        )
        if not hints and len(rows) >= NEARLY_ALL_ROWS * len(label_lists):
            hints = (
                f"; {len(rows):,} of {len(label_lists):,} rows, too many to leave out: is '{column}' the label column?"
            )
        raise UnknownLabels(
            f"{table.where(rows[0])}, column '{column}': label {unknown[rows[0]][0]!r} is not a known class{table.and_more(rows)}{others}; {allowed_labels(scheme)}{hints}",
            [] if hints or len(distinct) > 10 else distinct,
        )
    kind = None
    for row, (labels, results) in enumerate(zip(label_lists, read)):
        for label, (_, this_kind) in zip(labels, results):
            if kind is not None and this_kind != kind:
                raise DataError(
                    f"{table.where(row)}, column '{column}': label {label!r} is a class {this_kind} but earlier labels of this column are class {kind}s; write every label the same way"
                )
            kind = this_kind
    return [[index for index, _ in results] for results in read]


# Train classes whose largest / smallest count is above this are imbalanced: selection turns to macro-F1.
IMBALANCE_RATIO = 3.0


def is_imbalanced(ratio: float | None) -> bool:
    return ratio is not None and ratio > IMBALANCE_RATIO


@dataclass(frozen=True)
class ClassCounts:
    """Rows of each class in a split (multi-label: rows where the class is present), in class order."""

    names: list[str]
    counts: list[int]
    rows: int
    multi_label: bool = False
    rows_without_labels: int = 0

    @property
    def imbalance_ratio(self) -> float | None:
        """Largest class count over the smallest non-empty one; None without two non-empty classes."""
        present = [count for count in self.counts if count > 0]
        return max(present) / min(present) if len(present) >= 2 else None

    @property
    def imbalanced(self) -> bool:
        return is_imbalanced(self.imbalance_ratio)

    def to_dict(self) -> dict[str, Any]:
        without = {"rows_without_labels": self.rows_without_labels} if self.multi_label else {}
        return {
            "rows": self.rows,
            "per_class": dict(zip(self.names, self.counts)),
            "imbalance_ratio": self.imbalance_ratio,
            **without,
        }


def class_counts(labels: np.ndarray, names: list[str]) -> ClassCounts:
    """From class ids (N,) or multi-hot rows (N, C)."""
    labels = np.asarray(labels)
    if labels.ndim == 2:
        present = labels > 0.5
        counts = present.sum(axis=0)
        empty = int((~present.any(axis=1)).sum())
        return ClassCounts(list(names), [int(count) for count in counts], len(labels), True, empty)
    counts = np.bincount(labels.astype(np.int64), minlength=len(names))
    return ClassCounts(list(names), [int(count) for count in counts], len(labels))
