"""Class labels: which classes there are (in id order) and which class each row's label names.

    scheme = label_scheme(config.data, train_table, hub_names)
    ids = label_ids(test_table, config.data.label_column, scheme)

A label is read one way only, and the same way in every split: as a class *name* or as an integer *id* counting
from `data.label_index_base`. When `data.label_names` is unset the train split decides which: all-integer labels
are ids (their names are the numbers as written; counted from 1 when train has no 0 and no base is set), anything
else is names (sorted). Inferred names are never
indexed by ids, so a test file with ids against a train file with names is an error, not a silent permutation; nor
are names that are values, listed or inferred (value_names): a label "4" is the class "4.0", never the fifth, and
1 is the class True, never the second.

A row may have no label (`MissingLabel`): an empty cell, a mark of `data.missing_label_values` (NaN, N/A, ...), or
-1 where labels are ids of named classes (the datasets library's mark of a hidden label). Such a row is incomplete
(`data.incomplete_rows`), found by `missing_label_rows` before any label is read as a class.

Multi-label (`data.task: multi_label`): a row's label is a *set* of classes, a list (JSON Lines, Parquet) or a
string joined by `data.label_separator` (CSV/TSV) or written as tags ("<python><pandas>"); the classes are
`data.label_names` (or a Hub list-of-ClassLabel's names), whose sets may hold names or ids as single labels may,
else the sorted union of train's sets. An empty set
(empty cell, empty list, missing value) is allowed: the row is negative for every class. Files with one 0/1
column per class (`data.label_columns`) are first read into such sets (`indicator_sets`), so both layouts share the rest.

    scheme = label_set_scheme(config.data, train_table, hub_names)
    multi_hot = label_sets(test_table, config.data.label_column, scheme, config.data.label_separator)  # (N, C)
    counts = class_counts(labels_of(train_split), scheme.names)   # what class weights and reports need
"""

from __future__ import annotations

import ast
import dataclasses
import logging
import numbers
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.common.errors import DataError, shorten
from pipeline.config.load import override_text
from pipeline.data.tables import INCOMPLETE_ROWS_HINT, is_blank, is_number_text

if TYPE_CHECKING:
    from pipeline.config.schema import DataConfig
    from pipeline.data.load import Table

# Spreadsheets export integer labels as "1.0": an integer, as 1.0 from a JSON or Parquet column is.
_INTEGER = re.compile(r"[+-]?[0-9]+(?:\.0*)?")
# Above this many classes a label column is more likely a text or id column than labels: data.label_names must
# then list the classes. Also bounds every per-class table and plot.
MAX_INFERRED_CLASSES = 1000
# A label column whose labels are mostly one-offs, or fractional numbers, is almost never a set of classes: a text or
# id column chosen as label_column, or a regression target (a score of 0.13, 0.57, ...). Refused when inferred (the
# run would learn hundreds of classes of a row or two each, or fail carving with a list of every one of them), with
# data.label_names as the way to insist. A rating in half-stars (0.5 .. 5.0: ten values) stays a set of classes.
MAX_FRACTIONAL_CLASSES = 20
# ... and only when the values look continuous: most of them on fewer than this many rows each (the median). Decimal
# codes (ICD-9's 401.9, Dewey's 510.2) with enough rows per code stay classes.
MIN_ROWS_PER_FRACTIONAL_CLASS = 5
# Refused when more than half the labelled rows, and at least this many, carry a label that no other row has.
MIN_ONE_OFF_ROWS = 20
# Where inferred multi-label classes come from, for the error that lists them.
_FOUND = "the classes found in train; list them all in data.label_names"
# The datasets library's mark of a row without a label in a ClassLabel column (GLUE's test splits, SNLI's pairs
# without a gold label), which Jigsaw's test labels use too: no label wherever labels are ids of named classes.
HIDDEN_LABEL = -1
# Labels that more often mark a missing label than name a class (SNLI's and MNLI's "-": no gold label). Not read as
# missing by default (a "+"/"-" labelling has a class "-"), but named in a warning when they become a class, and in
# the error about an unknown label, pointing to data.missing_label_values. Compared case-folded.
MISSING_LOOKING_LABELS = frozenset({"-", "--", "?", "na", "none", "unknown", "missing"})
# Characters that join several classes in one cell (go_emotions' "2,27"), looked for in class names and unknown labels.
SET_SEPARATORS = (",", ";", "|")
# ... and a space (arXiv's "cs.LG stat.ML", Kaggle's space-joined tags), which also joins the words of one name
# ("very negative", "Science and Technology"): class names joined by it are told apart by _spaces_join_classes.
JOINING_CHARACTERS = (*SET_SEPARATORS, " ")
# Several classes written as tags, a StackExchange data dump's Tags ("<python><pandas>"): in a multi-label task read
# as the set {python, pandas} whatever data.label_separator, as a written list is; single-label, class names so
# written are warned about. Named thus beside JOINING_CHARACTERS in what set_joining returns.
TAG_SET = "<a><b>"
_TAGS = re.compile(r"(?:<[^<>]+>)+")
_TAG = re.compile(r"<([^<>]+)>")
# A part of a space-joined name that looks like a code rather than a word: a digit, ".", "_", "+" or "#" in it, or
# a hyphen inside it (arXiv's cs.LG and q-bio.NC, ICD-9's 401.9, tags c++, c#, python-3.x, ruby-on-rails).
_CODE = re.compile(r"[0-9._+#]|\w-\w")
# Of the parts of space-joined names, at least this share must recur (in two names, or alone as a class) for them to
# be sets: tag sets reuse nearly every tag (0.96 and more for Zipf-drawn tags), while the words of names (banking77's
# intents: 0.39, HuffPost's categories: 0.38) and of texts (AG News titles: 0.43) are mostly one-offs.
MIN_REUSED_PART_SHARE = 0.75
# A name of more words or characters than this reads as a text, not a set of labels (StackOverflow writes at most 5
# tags, arXiv rarely more than 6 categories): where most space-joined names do, the label column holds texts (a text
# column given as data.label_column), whose words recur at scale like tags, and the space rule is not asked.
MAX_SET_PARTS = 8
MAX_SET_LENGTH = 160
# Names, at most, that the hint about sets (_set_hint) looks at: an error about 100,000 distinct labels stays cheap,
# and a few thousand combinations are scale enough to tell sets by.
HINT_SAMPLE = 2000

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LabelScheme:
    """Class names in id order; the number an integer label of the first class has; how labels may be written."""

    names: list[str]
    index_base: int
    accepts_names: bool = True
    accepts_ids: bool = True
    # Where names-only classes come from, for the error that lists them (what to change to accept other labels).
    origin: str = ""

    def spellings(self) -> Spellings:
        """How labels name the classes; by value where ids are not read (value_names, inferred names)."""
        return Spellings.of(self.names, by_value=not self.accepts_ids)

    def reading(self) -> dict[str, Any]:
        """How labels were read, as metrics.json records it (data.label_reading), for a file scored later."""
        return {"names": self.accepts_names, "ids": self.accepts_ids, "index_base": self.index_base}

    @property
    def hides_labels(self) -> bool:
        """Whether -1 (HIDDEN_LABEL) is no label: the labels are ids of named classes (data.label_names, a
        ClassLabel's names) that count from 0 or more, and no class is named -1. Where the classes are the values
        found, -1 is a class as any other (sentiment -1/0/1), or an error naming the base."""
        return (
            self.accepts_names
            and self.accepts_ids
            and self.index_base > HIDDEN_LABEL
            and str(HIDDEN_LABEL) not in self.names
        )


@dataclass(frozen=True)
class MissingLabel:
    """Which label cells give no label: an empty one, one of data.missing_label_values (compared stripped and
    case-folded), and -1 where `hidden_id` (LabelScheme.hides_labels; every indicator cell). A row with such a label
    is incomplete (data.incomplete_rows), exactly as one with an empty cell: one rule for training and evaluation."""

    marks: frozenset[str]
    hidden_id: bool = False

    @classmethod
    def of(cls, config: DataConfig, scheme: LabelScheme | None) -> MissingLabel:
        """For labels read by `scheme` (None: classes not named before reading train, so never mapped); a mark that
        is one of its classes names that class. An indicator cell (data.label_columns) says 0 or 1, so -1 there is
        never a class, whatever data.label_index_base says."""
        names = {name.strip().casefold() for name in scheme.names} if scheme is not None else set()
        marks = frozenset(mark.strip().casefold() for mark in config.missing_label_values) - names
        return cls(marks, bool(config.label_columns) or (scheme is not None and scheme.hides_labels))

    def written(self, value: Any) -> str | None:
        """What a label that gives none holds ("" for an empty cell, else the mark as written); None for a label."""
        if is_blank(value):
            return ""
        if isinstance(value, (bool, np.bool_)):
            return None
        text = str(value).strip()
        if text.casefold() in self.marks or (self.hidden_id and as_int(value) == HIDDEN_LABEL):
            return text
        return None


def missing_label_rows(table: Table, config: DataConfig, missing: MissingLabel) -> dict[int, tuple[str, str]]:
    """The rows without a label, in order, each with the column that lacks it and what that holds ("" empty, else
    the mark): single-label a missing label; multi-label a set holding a mark (an empty set is a row negative for
    every class, not one without a label); indicator columns (data.label_columns) the row's first cell that is
    missing (empty, a mark, -1: Jigsaw's test rows left out of scoring)."""
    if config.label_columns:
        found: dict[int, tuple[str, str]] = {}
        for column in config.label_columns:
            for row, value in enumerate(table.column(column, "data.label_columns")):
                written = missing.written(value)
                if written is not None:
                    found.setdefault(row, (column, written))
        return dict(sorted(found.items()))
    column = config.label_column
    if config.task == "multi_label":
        sets = _raw_sets(table, column, config.label_separator)
        marked = [next((item for item in items if missing.written(item) is not None), None) for items in sets]
        return {row: (column, mark) for row, mark in enumerate(marked) if mark is not None}
    written = [missing.written(value) for value in single_labels(table, column)]
    return {row: (column, text) for row, text in enumerate(written) if text is not None}


def describe_missing(written: list[str], indicator: bool = False) -> str:
    """What rows without a label hold (missing_label_rows), for an error: "the label is empty" ("the cell is empty" of
    an indicator column), or the marks read as no label and why."""
    marks = list(dict.fromkeys(text for text in written if text))
    if not marks:
        return f"the {'cell' if indicator else 'label'} is empty"
    hidden = [mark for mark in marks if as_int(mark) == HIDDEN_LABEL]
    listed = [mark for mark in marks if mark not in hidden]
    notes = ["empty cells"] if "" in written else []
    if listed:
        notes.append(f"{', '.join(repr(mark) for mark in listed[:5])}: data.missing_label_values")
    if hidden and indicator:
        notes.append(f"{hidden[0]!r}: not scored (Jigsaw's test labels)")
    elif hidden:
        notes.append(
            f"{hidden[0]!r}: none where labels are ids of named classes (for a class -1 set data.label_index_base=-1)"
        )
    return f"no label ({'; '.join(notes)})"


def as_int(value: Any) -> int | None:
    """An integer label (int, integral float from a Parquet/JSON column, or a string of digits), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    text = str(value).strip()
    return int(text.split(".")[0]) if _INTEGER.fullmatch(text) else None


def label_scheme(config: DataConfig, train: Table, hub_names: list[str] | None) -> LabelScheme:
    """Class names in id order: `data.label_names`, else a Hub ClassLabel (ids from 0), else train's labels."""
    given = given_scheme(config, hub_names)
    return given if given is not None else _inferred_scheme(train, config.label_column, config.label_index_base)


def with_listed_names(config: DataConfig) -> DataConfig:
    """The data config with `data.label_names_file` read into `data.label_names`, so that every later step finds
    the classes under one key."""
    if config.label_names_file is None:
        return config
    names = read_names_file(config.label_names_file, config.encoding, config.label_index_base)
    return dataclasses.replace(config, label_names=names)


# A line of an id -> name mapping file (tweet_eval's mapping.txt: "0\tanger"): an integer id, a tab, a name.
_ID_AND_NAME = re.compile(r"([+-]?[0-9]+)\t[ \t]*(\S.*)")


def read_names_file(path: str, encoding: str, index_base: int | None = None) -> list[str]:
    """Class names in id order: one per line (classes.txt; surrounding spaces and trailing empty lines ignored), or
    an id -> name mapping (`mapping_names`)."""
    where = f"data.label_names_file: {path}"
    try:
        text = Path(path).expanduser().read_text(encoding=encoding).removeprefix("\ufeff")
    except FileNotFoundError:
        raise DataError(f"{where}: no such file") from None
    except UnicodeDecodeError as error:
        raise DataError(f"{where}: not {encoding} text (byte {error.start}); set data.encoding") from None
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
    """The (line number, name) of each class in id order when every non-blank line maps an id to a name, tab
    separated (tweet_eval's mapping.txt: "0<tab>anger"); None for a file of plain names, whatever their spaces ("1
    star", "2 stars" are names). The ids must run from data.label_index_base (unset: 0), the base the labels' ids
    count from, without a gap or a repeat: an error naming the line otherwise, not classes read one off."""
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
            f"{where}, line {by_id[first][0]}: the ids (id, tab, name) start at {first}, but labels count from {base} "
            f"({said}): number the classes from {base}, or set data.label_index_base to {first}"
        )
    gap = next((key for key in range(first, first + len(by_id)) if key not in by_id), None)
    if gap is not None:
        after = min(key for key in by_id if key > gap)
        raise DataError(
            f"{where}, line {by_id[after][0]}: id {after} follows a gap (no line for id {gap}); the ids (id, tab, "
            "name) run without gaps, one line per class"
        )
    return [by_id[key] for key in sorted(by_id)]


def given_scheme(config: DataConfig, hub_names: list[str] | None) -> LabelScheme | None:
    """The classes named before any row is read: `data.label_names`, else a Hub ClassLabel's names (whose ids count
    from 0); None when neither names them. Labels may then be written as names or as ids."""
    names = list(config.label_names) if config.label_names else None
    if names is not None:
        _check_names(names)
    if hub_names is not None:
        if names is not None and len(names) != len(hub_names):
            raise DataError(
                f"data.label_names has {len(names)} names but the Hub dataset's '{config.label_column}' column has "
                f"{len(hub_names)} classes ({', '.join(hub_names)})"
            )
        return LabelScheme(names or hub_names, 0)  # a ClassLabel's column holds ids, whatever its names
    if names is None:
        return None
    values = value_names(names)
    if values is not None:
        return LabelScheme(
            names, config.label_index_base or 0, accepts_ids=False, origin=_by_value("data.label_names", values)
        )
    return LabelScheme(names, config.label_index_base or 0)


def _by_value(origin: str, values: str) -> str:
    """Where classes named by values come from, and how labels name them (value_names), for the error that lists
    them."""
    if values == BOOLEANS:
        return f"{origin}; 1/0, true/false and yes/no name the classes by meaning, never as ids"
    return f"{origin}; a number names the class of equal value, never an id"


def refuse_unsaid_id_base(config: DataConfig, train: Table, scheme: LabelScheme) -> None:
    """Ids read against data.label_names from the unset base, 0, where no train label is 0: a file that counts from 1
    (DBpedia's and Yelp's CSV files, ag_news_csv's class index) and lacks its last class in train read every label as
    the class after its own, without an error, the first class merely without rows. A file that counts from 0 and
    lacks its first class looks the same, so the base must be said. Multi-label sets of ids ("2,27") are read by the
    same rule, item by item; indicator columns (data.label_columns) hold no ids."""
    if config.label_index_base is not None or not config.label_names or config.label_columns or not scheme.accepts_ids:
        return
    named = set(scheme.names)
    labels = _train_label_items(config, train)
    ids = [as_int(value) for value in labels if str(value).strip() not in named]
    if not ids or len(ids) < len(labels) or any(number is None for number in ids) or min(ids) < 1:
        return  # names, a mixed column (an error of its own), or an id 0 that shows the base
    count, where = len(scheme.names), f"{train.source}, column '{config.label_column}'"
    if max(ids) == count:  # only 1..K fits
        raise DataError(
            f"{where}: the labels are ids 1 to {count}, as many as data.label_names, so they count from 1: set "
            "data.label_index_base to 1"
        )
    if max(ids) < count:
        raise DataError(
            f"{where}: the labels are ids {min(ids)} to {max(ids)} and none is 0; counted from 0 (data.label_index_base "
            f"unset) {scheme.names[0]!r} has no rows, and if the file counts from 1 every label names the class after "
            f"its own: set data.label_index_base to 1 (ids 1..{count}) or 0"
        )


def _train_label_items(config: DataConfig, train: Table) -> list[Any]:
    """Every label written in train's label column: one per row (single-label), each item of each set (multi-label)."""
    if config.task == "multi_label":
        return [item for row in _raw_sets(train, config.label_column, config.label_separator) for item in row]
    return [value for value in single_labels(train, config.label_column) if not is_blank(value)]


def single_labels(table: Table, column: str) -> list[Any]:
    """A single-label column's values. A JSON object or list there (JSON Lines, Parquet) is no class: read as its
    str() it became a class named "{'label': 'World', ...}" without a word, so it is an error naming the row."""
    values = table.column(column, "data.label_column")
    for row, value in enumerate(values):
        if isinstance(value, dict):
            raise DataError(
                f"{table.where(row)}, column '{column}' (data.label_column): the label is an object "
                f"({shorten(value, 60)}), not a class; nested fields are not read: give each record its label as a "
                "top-level key"
            )
        written = _written_list(value)  # a CSV cell that writes one ("['joy', 'love']") made a class of it
        if isinstance(value, (list, tuple, np.ndarray)) or written is not None:
            raise DataError(
                f"{table.where(row)}, column '{column}' (data.label_column): the label is a list "
                f"({shorten(list(value) if written is None else written, 60)}), not a class; for several classes "
                "per row set data.task=multi_label"
            )
    return values


def trained_scheme(names: list[str], reading: dict[str, Any] | None, config: DataConfig) -> LabelScheme:
    """How the labels of a file scored against a trained model are read: as training read its own (`reading`, the
    run's data.label_reading record: names, ids from a base, or both). Runs that predate the record read names, and ids
    only where data.label_names named the classes, as training then did: ids never index inferred names."""
    if reading is None:
        reading = {"names": True, "ids": bool(config.label_names), "index_base": config.label_index_base or 0}
    origin, values = "the model's classes, read as in training", value_names(list(names))
    return LabelScheme(
        list(names),
        int(reading["index_base"]),
        accepts_names=bool(reading["names"]),
        accepts_ids=bool(reading["ids"]),
        origin=origin if reading["ids"] or values is None else _by_value(origin, values),
    )


def _inferred_scheme(train: Table, column: str, base: int | None) -> LabelScheme:
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
                f"{train.source}, column '{column}': integer labels run from {min(ids)} to {max(ids)} but only "
                f"{distinct} distinct values appear; list the classes in data.label_names (or fix the stray value, "
                f"or set data.label_index_base)"
            )
        _refuse_id_gaps(sorted(set(ids)), base, count, base_said, train, column)
        return LabelScheme([str(base + index) for index in range(count)], base, accepts_names=False)
    names = sorted({str(value).strip() for value in values} - {""})
    if len(names) > MAX_INFERRED_CLASSES:
        raise DataError(
            f"{train.source}, column '{column}': {len(names)} distinct labels in {len(values)} rows, more than "
            f"{MAX_INFERRED_CLASSES}: is data.label_column a text or id column? If not, list the classes in "
            f"data.label_names{_set_hint(names, None)}"
        )
    _warn_case_variants(names, train, column)
    _warn_unlike_names(Counter(str(value).strip() for value in values), train, column, None)
    found = "the classes found in train"
    values = value_names(names)
    origin = _by_value(found, values) if values is not None else f"{found}; set data.label_names to use ids"
    return LabelScheme(names, base or 0, accepts_ids=False, origin=origin)


def _warn_unlike_names(rows: Counter[str], train: Table, column: str, separator: str | None) -> None:
    """Classes found in train (and how many rows have each) that look like something else, each named in a WARNING
    before a run learns them: a mark of a missing label (MISSING_LOOKING_LABELS: SNLI's "-"), or label sets joined
    otherwise than by `separator` (None: single-label, whose classes are not sets at all): set_joining."""
    for name, count in rows.items():
        if name.casefold() in MISSING_LOOKING_LABELS:
            logger.warning(
                "%s, column '%s': the class %r (%d rows) looks like a mark of a missing label (SNLI's '-': no gold "
                "label); if it is one, add it to data.missing_label_values",
                train.source,
                column,
                name,
                count,
            )
    joining = set_joining(list(rows), separator)
    if joining is None:
        return
    joined = [name for name in rows if len(_parts(name, joining)) > 1]
    logger.warning(
        "%s, column '%s': %d classes look like several classes %s (%s): a set of labels per row? Set %s",
        train.source,
        column,
        len(joined),
        _joined_by(joining),
        _examples(joined),
        " ".join(_set_settings(joining, separator)),
    )


def set_joining(names: list[str], separator: str | None) -> str | None:
    """How these class names join several classes each, if they do: TAG_SET, or the character of JOINING_CHARACTERS
    (other than `separator`) that joins them. Several names must be joined, each with a part that is itself a class
    or recurs in another (go_emotions' "0,3" and "3,27" beside "3"; "Arts, Culture" beside "Science, Tech" is two
    names with commas), and joined by a space, they must also look like sets (_spaces_join_classes). None: names."""
    for joining in (TAG_SET, *JOINING_CHARACTERS):
        if joining == separator:
            continue
        rows = [_parts(name, joining) for name in names]
        known = {row[0] for row in rows if len(row) == 1}
        joined = [row for row in rows if len(row) > 1]
        if len(joined) < 2:
            continue
        recurring = Counter(part for row in joined for part in set(row))
        if not all(any(part in known or recurring[part] > 1 for part in row) for row in joined):
            continue
        if joining != " " or (not _texts(joined) and _spaces_join_classes(joined, known)):
            return joining
    return None


def _texts(joined: list[list[str]]) -> bool:
    """Whether most space-joined names (each split into its words) are texts rather than sets: too many words or
    characters for labels (MAX_SET_PARTS, MAX_SET_LENGTH)."""
    long = sum(len(row) > MAX_SET_PARTS or sum(map(len, row)) + len(row) > MAX_SET_LENGTH for row in joined)
    return long > len(joined) / 2


def _spaces_join_classes(joined: list[list[str]], known: set[str]) -> bool:
    """Whether names joined by spaces (`joined`, each split into its parts; `known`: the names without a space) are
    sets rather than names of several words ("very negative", "Arts and Culture", banking77's "card arrival"): where
    every part looks like a code (_CODE: arXiv's "cs.LG stat.ML") outside a code's own two-place shape
    (_two_place_codes: CPC's "A61K 31/00"), or where the parts combine as members of sets do (_combine_as_sets)."""
    parts = Counter(part for row in joined for part in set(row))
    if parts and all(_CODE.search(part) for part in parts):
        return not _two_place_codes(joined, known)
    return _combine_as_sets(joined, known, parts)


def _two_place_codes(joined: list[list[str]], known: set[str]) -> bool:
    """Whether coded names are one code written in two places, a class and its subdivision (CPC's "A61K 31/00",
    "A61P 35/00"), rather than codes combined: every name of exactly two parts, none of which leads one name and
    follows in another, nor is a class alone (ICD-9's "250.00 401.9" beside "272.4 401.9" and "401.9" are sets)."""
    leading = {row[0] for row in joined}
    following = {part for row in joined for part in row[1:]}
    return all(len(row) == 2 for row in joined) and not (leading & following) and not (leading | following) & known


def _combine_as_sets(joined: list[list[str]], known: set[str], parts: Counter[str]) -> bool:
    """Whether space-joined words combine as members of sets do: more combinations than parts, some of three or more
    (sets vary in size; names of two words, "bus delay", "ticket refund", are compounds whatever words they share),
    in no fixed order (a part leads one name and follows in another, unlike a grid of two places: "light on", "fan
    off"), and most parts reused (MIN_REUSED_PART_SHARE; the words of names and texts are mostly one-offs)."""
    leading = {row[0] for row in joined}
    following = {part for row in joined for part in row[1:]}
    reused = sum(count > 1 or part in known for part, count in parts.items())
    return (
        len(joined) > len(parts)
        and any(len(row) > 2 for row in joined)
        and bool(leading & following)
        and reused >= MIN_REUSED_PART_SHARE * len(parts)
    )


def _parts(name: str, joining: str) -> list[str]:
    """The classes a name joins by `joining` (TAG_SET, or a character): [name] when it joins none."""
    if joining == TAG_SET:
        return _written_tags(name) or [name]
    return [part for part in _split_joined(name, joining) if part] or [name]


def _joined_by(joining: str) -> str:
    return "written as tags" if joining == TAG_SET else f"joined by {joining!r}"


def _set_settings(joining: str, separator: str | None) -> list[str]:
    """The settings that read labels joined by `joining` as sets, in a task whose data.label_separator is `separator`
    (None: a single-label task). Tags are read as sets whatever the separator."""
    task = ["data.task=multi_label"] if separator is None else []
    return task if joining == TAG_SET else [*task, f"data.label_separator={joining!r}"]


def _set_hint(names: list[str], separator: str | None) -> str:
    """For an error about too many classes: the advice of _warn_unlike_names when they look like sets ("" if not):
    arXiv's or StackOverflow's combinations number in the thousands, beyond what is read as classes. Asked of an
    even sample of HINT_SAMPLE names: the error it ends may be about a text column of 100,000 distinct values."""
    names = names[:: -(-len(names) // HINT_SAMPLE)] if names else names
    joining = set_joining(names, separator)
    if joining is None:
        return ""
    joined = [name for name in names if len(_parts(name, joining)) > 1]
    return (
        f"; or are they sets of labels, several classes {_joined_by(joining)} ({_examples(joined)})? Set "
        f"{' '.join(_set_settings(joining, separator))}"
    )


def _refuse_id_gaps(present: list[int], base: int, count: int, base_said: bool, train: Table, column: str) -> None:
    """Inferred ids that skip numbers made a class of each number skipped, which no row teaches: sentiment140's
    polarity 0 and 4 became five classes, three of them never predicted, and the run lost the binary task's
    thresholds and curves. Whether the numbers are codes of their own (two classes) or ids of classes absent here
    only the user knows: data.label_names says it, either way. A base the user gave rules below the lowest label
    written: those ids are classes this file lacks (a guessed base has none below)."""
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


def _refuse_unlike_classes(values: list[Any], train: Table, column: str) -> None:
    """Inferred labels that cannot be classes are an error before anything is split or trained: a regression target
    (fractional numbers, more than MAX_FRACTIONAL_CLASSES of them, most on few rows) or a text or id column (most
    rows' label is their own)."""
    counts = Counter(str(value).strip() for value in values)
    insist = "if these are classes, list them all in data.label_names"
    numbers = all(is_number_text(name) for name in counts)
    continuous = np.median(list(counts.values())) < MIN_ROWS_PER_FRACTIONAL_CLASS if counts else False
    fractional = any(as_int(name) is None for name in counts)
    if numbers and fractional and continuous and len(counts) > MAX_FRACTIONAL_CLASSES:
        raise DataError(
            f"{train.source}, column '{column}' (data.label_column): the labels are numbers with fractions "
            f"({_examples(counts)}, ...: {len(counts):,} distinct values in {len(values):,} rows), a regression target? The "
            f"pipeline trains classifiers: bucket the values into classes (e.g. low, medium, high), or, {insist}"
        )
    one_offs = [name for name, count in counts.items() if count == 1]
    if len(one_offs) >= MIN_ONE_OFF_ROWS and len(one_offs) > len(values) / 2:
        raise DataError(
            f"{train.source}, column '{column}' (data.label_column): {len(one_offs):,} of {len(values):,} rows have a "
            f"label no other row has ({_examples(one_offs)}, ...): is it a text or id column? A class needs rows to learn "
            f"from; {insist}{_set_hint(list(counts), None)}"
        )


def _examples(names: Iterable[str], count: int = 3, width: int = 40) -> str:
    """The first few labels, quoted, each cut to `width` characters: a text column's labels are paragraphs."""
    return ", ".join(repr(shorten(name, width)) for name in list(names)[:count])


def _check_names(names: list[str]) -> None:
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated or "" in names:
        raise DataError(f"data.label_names: names must be distinct and non-empty, got {names}")


def label_ids(table: Table, column: str, scheme: LabelScheme) -> list[int]:
    """Class ids of one column. Every label of the column is read the same way (the first label decides, when
    the scheme allows both): a name or an id; anything else is an error naming the row and the allowed values."""
    values = single_labels(table, column)
    blank = [row for row, value in enumerate(values) if is_blank(value)]
    if blank:
        raise DataError(
            f"{table.where(blank[0])}, column '{column}': the label is empty{table.and_more(blank)}; "
            f"fill or remove these rows, {INCOMPLETE_ROWS_HINT}"
        )
    return [index for (index,) in _class_indices(table, column, [[value] for value in values], scheme)]


def _class_indices(
    table: Table, column: str, label_lists: list[list[Any]], scheme: LabelScheme, separator: str | None = None
) -> list[list[int]]:
    """Each row's labels as class indices, each label read once. Labels that name no class are one error: the
    first row, how many more, and which labels they are (a test file's classes the train file never had, often).
    Then a column is read one way only: a label written as a name where earlier ones were ids (or the reverse) is
    an error naming its row. `separator`: a multi-label task's data.label_separator (None: single-label)."""
    spellings = scheme.spellings()
    read = [[_read_label(label, spellings, scheme) for label in labels] for labels in label_lists]
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
            _written_otherwise_hint(distinct, scheme)
            + _joined_hint(distinct, spellings, scheme, separator)
            + _missing_hint(distinct)
        )
        most = len(rows) >= NEARLY_ALL_ROWS * len(label_lists)
        if most and not hints:
            hints = (
                f"; {len(rows):,} of {len(label_lists):,} rows, too many to leave out: is '{column}' the label column?"
            )
        raise UnknownLabels(
            f"{table.where(rows[0])}, column '{column}': label {unknown[rows[0]][0]!r} is not a known class"
            f"{table.and_more(rows)}{others}; {_allowed(scheme)}{hints}",
            [] if hints or len(distinct) > 10 else distinct,
        )
    kind = None
    for row, (labels, results) in enumerate(zip(label_lists, read)):
        for label, (_, this_kind) in zip(labels, results):
            if kind is not None and this_kind != kind:
                raise DataError(
                    f"{table.where(row)}, column '{column}': label {label!r} is a class {this_kind} but earlier "
                    f"labels of this column are class {kind}s; write every label the same way"
                )
            kind = this_kind
    return [[index for index, _ in results] for results in read]


@dataclass(frozen=True)
class Spellings:
    """How labels name the classes: a class's name exactly, or written another way (`written_form`) where no other
    class is written so: in any letter case ("POSITIVE", " Positive" for positive; JSON's true for a class True,
    spreadsheets' TRUE) and spacing ("Toys>Games" for Toys > Games), and where the names are values (`values`,
    value_names) by value: a number as any number of equal value ("4", "+4", "4.00" for a class 4.0), a boolean by
    meaning (1, true, yes for a class True), so that listing the classes in data.label_names reads a column's messy
    spellings as one class each."""

    exact: dict[str, int]
    forms: dict[str, int]  # written_form -> class index, for the names no other class shares it
    values: str | None = None

    @classmethod
    def of(cls, names: list[str], by_value: bool = False) -> Spellings:
        """`by_value` only where labels are never ids (LabelScheme.spellings): a number is then a value, not a
        position."""
        values = value_names(names) if by_value else None
        forms = [written_form(name, values) for name in names]
        counts = Counter(forms)
        return cls(
            {name: index for index, name in enumerate(names)},
            {form: index for index, form in enumerate(forms) if counts[form] == 1},
            values,
        )

    def index(self, text: str) -> int | None:
        return self.exact.get(text, self.forms.get(written_form(text, self.values)))


# What value_names calls class names every one of which is a boolean, and those of which one is a number.
BOOLEANS = "booleans"
NUMBERS = "numbers"


# Spaces beside a character that is neither a letter, a digit nor a space: "Toys > Games" and "Toys>Games", "Sci/Tech"
# and "Sci / Tech" are one name to a reader (a hand-typed cell, a join without spaces), never two classes.
_SPACED_PUNCTUATION = re.compile(r" ?([^\w\s]) ?")


def written_form(name: str, values: str | None) -> str:
    """The one form of the ways of writing a name that mean one class: case-folded, its spaces stripped, run
    together (one between words) and dropped beside punctuation (_SPACED_PUNCTUATION), and where the class names are
    `values` (value_names) by value: a boolean by its meaning (_read_indicator, as data.label_columns reads a cell:
    1, true, yes), a number exactly (Decimal: "4" == "4.0" == "+4"), so that a file's integers match classes a
    spreadsheet wrote as decimals. Spellings matches labels by it and _warn_case_variants names the classes found in
    train that share it."""
    text = name.strip()
    meaning = _read_indicator(text) if values == BOOLEANS else "?"
    if meaning != "?":
        return str(meaning).casefold()
    if values is not None and is_number_text(text):
        value = Decimal(text)
        return "0" if value == 0 else str(value.normalize())  # "-0" is 0; the exponent form keeps 1e999 short
    return _SPACED_PUNCTUATION.sub(r"\1", " ".join(text.split())).casefold()


def value_names(names: list[str]) -> str | None:
    """Whether labels match these class names by value and are never read as ids: BOOLEANS where every name is a
    boolean (True/False, yes/no, 1/0: 1 is the class True, never the second class, which for names listed True,
    False read every label inverted), else NUMBERS where a name is a number (a numeric label is the class of equal
    value: "4" is the class 4.0, never a position, which beside a class 4.5 read "4" as 4.5 and "1" as 2.0 without an
    error); None: names matched as written."""
    if names and all(_read_indicator(name) != "?" for name in names):
        return BOOLEANS
    return NUMBERS if any(is_number_text(name) for name in names) else None


class UnknownLabels(DataError):
    """Labels that name no class; the message names their rows. `labels`: those labels where leaving their rows out
    is the way forward (none where the message offers another reading of them), for leave_out_hint."""

    def __init__(self, message: str, labels: list[str]):
        super().__init__(message)
        self.labels = labels


# Unknown labels on at least this share of a file's rows are no stray classes to leave out but the classes written
# otherwise or a column that holds no labels: the settings that leave their rows out would leave (nearly) nothing.
NEARLY_ALL_ROWS = 0.9


def leave_out_hint(config: DataConfig, labels: list[str]) -> str:
    """Added to an UnknownLabels error where the settings are known: the settings that leave its rows out, for the
    command line (the labels added to data.missing_label_values, the marks it holds kept; data.incomplete_rows=drop)."""
    if not labels:
        return ""
    settings = [override_text("data.missing_label_values", [*config.missing_label_values, *labels])]
    if config.incomplete_rows != "drop":
        settings.append("data.incomplete_rows=drop")
    return f"; to leave those rows out (listed in removed_rows.csv), add {' '.join(settings)}"


def _written_otherwise_hint(unknown: list[str], scheme: LabelScheme) -> str:
    """When unknown labels are the classes written another way, read by value (value_names: "true" for a class 1,
    "4" for 4.0), where the scheme reads ids instead (integer labels inferred from train, a ClassLabel's): say so,
    with the listing of the classes that reads labels by value, rather than offer to leave out rows that are the
    classes' own."""
    by_value = Spellings.of(scheme.names, by_value=True)
    if not scheme.accepts_ids or by_value.values is None:
        return ""
    classes = [by_value.index(label) for label in unknown]
    if None in classes:
        return ""
    named = ", ".join(scheme.names[index] for index in dict.fromkeys(classes))
    return (
        f"; the classes {named} written another way? Where data.label_names lists the classes, labels match them by "
        f"value ({unknown[0]} is {scheme.names[classes[0]]}): {override_text('data.label_names', scheme.names)}"
    )


def _missing_hint(unknown: list[str]) -> str:
    """Unknown labels that look like a mark of a missing label (SNLI's "-"): how to read them as one."""
    marks = [label for label in unknown if label.casefold() in MISSING_LOOKING_LABELS]
    if not marks:
        return ""
    return (
        f"; {marks[0]!r} marks a row without a label? Add it to data.missing_label_values (such rows are then "
        "incomplete: data.incomplete_rows=drop leaves them out)"
    )


def _joined_hint(unknown: list[str], spellings: Spellings, scheme: LabelScheme, separator: str | None) -> str:
    """When unknown labels are several classes in one label, how to read them as sets: every unknown label joins known
    classes (go_emotions' "2,27" read with another data.label_separator, or as a single label; tags "<a><b>"), or
    the classes with them look joined (set_joining: train's classes were such combinations, arXiv's "cs.LG stat.ML",
    and the unknown label is a new one). Multi-label, unknown labels holding another of SET_SEPARATORS than
    data.label_separator are enough: the classes may be inferred from sets joined so."""
    if separator is not None:
        held = Counter(c for label in unknown for c in SET_SEPARATORS if c != separator and c in label)
        if held:
            character = held.most_common(1)[0][0]
            return (
                f"; labels joined by {character!r}, not data.label_separator {separator!r}? Set "
                f"data.label_separator={character!r}"
            )
    joining = _joining_classes(unknown, spellings, scheme, separator) or set_joining(
        [*scheme.names, *unknown], separator
    )
    if joining is None:
        return ""
    return (
        f"; several classes {_joined_by(joining)}? A multi-label task reads them with "
        f"{' and '.join(_set_settings(joining, separator))}"
    )


def _joining_classes(
    unknown: list[str], spellings: Spellings, scheme: LabelScheme, separator: str | None
) -> str | None:
    """How every unknown label joins known classes (TAG_SET, or a character of JOINING_CHARACTERS other than
    `separator`); None when none does so."""
    classes = range(len(scheme.names))
    for joining in (TAG_SET, *JOINING_CHARACTERS):
        rows = [_parts(label, joining) for label in unknown]
        if (
            joining != separator
            and all(len(row) > 1 for row in rows)
            and all(_read_label(part, spellings, scheme)[0] in classes for row in rows for part in row)
        ):
            return joining
    return None


def _read_label(value: Any, spellings: Spellings, scheme: LabelScheme) -> tuple[int | None, str]:
    """A label's class index and how it is written ("name" or "id")."""
    text = str(value).strip()
    index = spellings.index(text) if scheme.accepts_names else None
    if index is not None:
        return index, "name"
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
        return f"allowed: the names {shown} ({scheme.origin})"
    return f"allowed: {ids} or the names {shown}"


# ---------------------------------------------------------------------------------------------------------------
# Multi-label: a set of classes per row


def label_set_scheme(config: DataConfig, train: Table, hub_names: list[str] | None = None) -> LabelScheme:
    """Class names of a multi-label task: `data.label_names`, else a Hub list-of-ClassLabel's names (a set may then
    hold names or ids, as single labels may), else the union of train's sets: sorted, numerically when every label
    is an integer (as ids are written), and then only those numbers name the classes."""
    separator = config.label_separator
    given = given_scheme(config, hub_names)
    if given is not None:
        joined = [name for name in given.names if separator in name]
        if joined:
            raise DataError(
                f"data.label_names: class {joined[0]!r} contains data.label_separator {separator!r}; "
                "choose another separator"
            )
        return given
    # Each class found, with the rows that hold it (a label written twice in one set counts once).
    rows = Counter(name for row in _raw_sets(train, config.label_column, separator) for name in set(row))
    found = set(rows)
    if len(found) > MAX_INFERRED_CLASSES:
        raise DataError(
            f"{train.source}, column '{config.label_column}': {len(found)} distinct labels, more than "
            f"{MAX_INFERRED_CLASSES}: list the classes in data.label_names{_set_hint(sorted(found), separator)}"
        )
    if found and all(as_int(name) is not None for name in found):
        return LabelScheme(sorted(found, key=as_int), 0, accepts_ids=False, origin=_FOUND)
    _warn_case_variants(sorted(found), train, config.label_column)
    _warn_unlike_names(rows, train, config.label_column, separator)
    return LabelScheme(sorted(found), 0, accepts_ids=False, origin=_FOUND)


def _warn_case_variants(names: list[str], train: Table, column: str) -> None:
    """Labels found in train that differ only in letter case ("World", "world"), in spacing ("Toys > Games",
    "Toys>Games"), in how a number is written ("1", "+1", "1.0" among names) or a boolean ("1", "true" where every
    name is one): written_form, by value as inferred names are read. Kept as separate classes, as written, but almost
    always meaning one: say so, naming them, before a run learns to tell them apart."""
    values = value_names(names)
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(written_form(name, values), []).append(name)
    variants = [group for group in groups.values() if len(group) > 1]
    if variants:
        logger.warning(
            "%s, column '%s': labels that differ only in case, spacing, number or boolean format are separate "
            "classes: %s; write each class one way (or list the classes in data.label_names: a label then reads as "
            "the class it names, written any of these ways)",
            train.source,
            column,
            "; ".join(", ".join(repr(name) for name in group) for group in variants),
        )


def label_sets(table: Table, column: str, scheme: LabelScheme, separator: str) -> np.ndarray:
    """(N, C) float32 multi-hot rows; a class outside the scheme is an error naming the row and the classes."""
    multi_hot = np.zeros((len(table.frame), len(scheme.names)), dtype=np.float32)
    sets = _raw_sets(table, column, separator)
    for row, indices in enumerate(_class_indices(table, column, sets, scheme, separator)):
        multi_hot[row, indices] = 1.0
    return multi_hot


def _raw_sets(table: Table, column: str, separator: str) -> list[list[str]]:
    return [
        _read_set(value, separator, table, row, column)
        for row, value in enumerate(table.column(column, "data.label_column"))
    ]


def _read_set(value: Any, separator: str, table: Table, row: int, column: str) -> list[str]:
    """A list value (JSON, Parquet) item by item, and so a CSV cell that writes one ("['a', 'b']", '["a"]', "[]") or
    tags ("<a><b>": TAG_SET); a string split at the separator (_split_joined); missing or empty: no class."""
    written = _written_list(value)
    written = _written_tags(value) if written is None else written
    if written is None and isinstance(value, str) and _LIST_CELL.fullmatch(value):
        raise DataError(
            f"{table.where(row)}, column '{column}': label {shorten(value, 60)!r} starts and ends like a list but is "
            "not a list of class names or ids (as \"['a', 'b']\" or '[\"a\", \"b\"]'); write it as one, or as "
            "the names joined by data.label_separator"
        )
    value = value if written is None else written
    listed = isinstance(value, (list, tuple, np.ndarray))
    if listed:
        items = [str(item).strip() for item in value]
        joined = [item for item in items if separator in item]
        if joined:
            raise DataError(
                f"{table.where(row)}, column '{column}': label {joined[0]!r} contains data.label_separator "
                f"{separator!r}, which joins labels in predictions; rename the class or choose another separator"
            )
    elif is_blank(value):
        return []
    else:
        items = _split_joined(str(value), separator)
    if "" in items:
        raise DataError(
            f"{table.where(row)}, column '{column}': an empty label in {value!r}; {_empty_label_fix(listed, separator)}"
        )
    return items


def _empty_label_fix(listed: bool, separator: str) -> str:
    if listed:
        return "remove the empty name from the list"
    return (
        f"two data.label_separator {separator!r} with nothing between: remove one (a separator at either end of a "
        "cell is read as none)"
    )


def _split_joined(text: str, separator: str) -> list[str]:
    """The labels a string joins by `separator`, stripped. A separator at either end, spaces aside, joins nothing
    and makes no empty label: newer StackExchange dumps' "|python|pandas|" encloses the set, a join that writes one
    after each label (a spreadsheet's, "Toys > Games; ") ends with one. Only a separator alone is left to split."""
    text = text.strip()
    if text != separator:
        text = text.removeprefix(separator).removesuffix(separator)
    return [item.strip() for item in text.split(separator)]


def _written_tags(value: Any) -> list[str] | None:
    """The classes a string writes as tags ("<python><pandas>": TAG_SET); None when it writes none."""
    if not isinstance(value, str) or not _TAGS.fullmatch(value.strip()):
        return None
    return [tag.strip() for tag in _TAG.findall(value)]


# A CSV/TSV cell holding a list as pandas' to_csv writes a list column (its str(): "['a', 'b']") or as JSON does
# ('["a", "b"]'). Split at the separator, each such set was one class named by the whole cell, without an error.
_LIST_CELL = re.compile(r"\s*\[.*\]\s*", re.DOTALL)


def _written_list(value: Any) -> list[str | int] | None:
    """The list a string writes, as a Python or JSON literal of names or ids; None when it writes none."""
    if not isinstance(value, str) or not _LIST_CELL.fullmatch(value):
        return None
    try:
        items = ast.literal_eval(value.strip())  # a JSON list of names or ids is a Python literal too
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    names_or_ids = isinstance(items, list) and all(
        isinstance(item, str) or (isinstance(item, int) and not isinstance(item, bool)) for item in items
    )
    return items if names_or_ids else None


# ---------------------------------------------------------------------------------------------------------------
# Multi-label as one indicator column per class (Jigsaw's toxic, obscene, ...; GoEmotions' raw layout)


# What an indicator cell may hold, compared case-blind: spreadsheets write TRUE/FALSE, pandas True/False, surveys yes/no.
# Read so too, class names that are booleans (value_names) and the labels that name them.
_PRESENT_WORDS = {"true", "yes"}
_ABSENT_WORDS = {"false", "no"}
# The column stage 1 writes each row's set of classes into, read as a list column from then on. A name no file has.
INDICATOR_SETS_COLUMN = "<classes of data.label_columns>"


def indicator_sets(table: Table, columns: list[str], missing: MissingLabel) -> list[list[str] | None]:
    """Each row's classes: the columns whose cell says present (1, true, yes), in `columns` order. A cell that says
    neither present nor absent (0, false, no) is an error naming the row and column; a missing one (empty, a mark
    of `missing`, -1: Jigsaw's test rows left out of scoring) makes the row's set None: an incomplete row
    (missing_label_rows names it, data.incomplete_rows says what becomes of it)."""
    cells = [table.column(column, "data.label_columns") for column in columns]
    sets: list[list[str] | None] = [[] for _ in range(len(table.frame))]
    for column, values in zip(columns, cells):
        read = [None if missing.written(value) is not None else _read_indicator(value) for value in values]
        _refuse_unread(table, column, values, read)
        for row, present in enumerate(read):
            if present is None:
                sets[row] = None
            elif present and sets[row] is not None:
                sets[row].append(column)
    return sets


def _read_indicator(value: Any) -> bool | str:
    """True (present), False (absent), or "?" (anything else)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    number = as_int(value)
    if number in (0, 1):
        return number == 1
    word = str(value).strip().casefold()
    return True if word in _PRESENT_WORDS else False if word in _ABSENT_WORDS else "?"


def _refuse_unread(table: Table, column: str, values: list[Any], read: list[Any]) -> None:
    where = f"column '{column}' (data.label_columns)"
    other = [row for row, present in enumerate(read) if present == "?"]
    if other:
        raise DataError(
            f"{table.where(other[0])}, {where}: {shorten(values[other[0]], 40)!r} is not 0 or 1 (nor true/false, "
            f"yes/no){table.and_more(other)}; each class column says whether the row has that class (-1 or an empty "
            "cell: not scored, an incomplete row)"
        )


# ---------------------------------------------------------------------------------------------------------------
# How many rows each class has: class weights, imbalance in reports


# Train classes whose largest / smallest count is above this are imbalanced: accuracy then mostly measures the
# majority classes, so model selection (evaluation.selection_metric) and the reports' headline turn to macro-F1.
IMBALANCE_RATIO = 3.0


def is_imbalanced(ratio: float | None) -> bool:
    """Whether a largest / smallest class ratio (None: fewer than two classes present) counts as imbalanced."""
    return ratio is not None and ratio > IMBALANCE_RATIO


@dataclass(frozen=True)
class ClassCounts:
    """Rows of each class in a split (multi-label: rows where the class is present), in class order."""

    names: list[str]
    counts: list[int]
    rows: int
    multi_label: bool = False
    # Multi-label rows with no class at all (negative for every class): none of the counts shows them.
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
