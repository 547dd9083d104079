"""A run's classes and how labels are read (LabelScheme), rows without a label (MissingLabel), UnknownLabels."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.common.errors import DataError
from pipeline.config.load import override_text
from pipeline.config.schema import DataConfig
from pipeline.data.label_forms import (
    JOINING_CHARACTERS,
    SET_SEPARATORS,
    TAG_SET,
    Spellings,
    as_int,
    joined_by,
    raw_sets,
    set_joining,
    set_parts,
    set_settings,
    single_labels,
)
from pipeline.data.rows import SplitRows
from pipeline.data.text import is_blank

# The datasets library's mark of a hidden label in a ClassLabel column (GLUE's test splits; Jigsaw's test labels).
HIDDEN_LABEL = -1
# Labels that more often mark a missing label than name a class (SNLI's "-"): warned about, not read as missing.
MISSING_LOOKING_LABELS = frozenset({"-", "--", "?", "na", "none", "unknown", "missing"})


@dataclass(frozen=True)
class LabelScheme:
    """Class names in id order; the number an integer label of the first class has; how labels may be written."""

    names: list[str]
    index_base: int
    accepts_names: bool = True
    accepts_ids: bool = True
    origin: str = ""

    def spellings(self) -> Spellings:
        return Spellings.of(self.names, by_value=not self.accepts_ids)

    def reading(self) -> dict[str, Any]:
        """As metrics.json records it (data.label_reading), for a file scored later."""
        return {"names": self.accepts_names, "ids": self.accepts_ids, "index_base": self.index_base}

    @property
    def hides_labels(self) -> bool:
        """Whether -1 is no label: ids of named classes from base 0 or more, and no class named -1."""
        return (
            self.accepts_names
            and self.accepts_ids
            and self.index_base > HIDDEN_LABEL
            and str(HIDDEN_LABEL) not in self.names
        )


@dataclass(frozen=True)
class MissingLabel:
    """Which label cells give no label (empty, a missing_label_values mark, -1 where `hidden_id`)."""

    marks: frozenset[str]
    hidden_id: bool = False

    @classmethod
    def of(cls, config: DataConfig, scheme: LabelScheme | None) -> MissingLabel:
        """For labels read by `scheme` (None: classes not named yet); a mark that is a class names that class."""
        names = {name.strip().casefold() for name in scheme.names} if scheme is not None else set()
        marks = frozenset(mark.strip().casefold() for mark in config.missing_label_values) - names
        return cls(marks, bool(config.label_columns) or (scheme is not None and scheme.hides_labels))

    def written(self, value: Any) -> str | None:
        """ "" for an empty cell, the mark as written, or None for a label."""
        if is_blank(value):
            return ""
        if isinstance(value, (bool, np.bool_)):
            return None
        text = str(value).strip()
        return text if text.casefold() in self.marks or (self.hidden_id and as_int(value) == HIDDEN_LABEL) else None


def missing_label_rows(table: SplitRows, config: DataConfig, missing: MissingLabel) -> dict[int, tuple[str, str]]:
    """The rows without a label, each with the column lacking it and what it holds ("" or the mark)."""
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
        sets = raw_sets(table, column, config.label_separator)
        marked = [next((item for item in items if missing.written(item) is not None), None) for items in sets]
        return {row: (column, mark) for row, mark in enumerate(marked) if mark is not None}
    written = [missing.written(value) for value in single_labels(table, column)]
    return {row: (column, text) for row, text in enumerate(written) if text is not None}


def describe_missing(written: list[str], indicator: bool = False) -> str:
    """What rows without a label hold, for an error: "the label is empty", or the marks and why."""
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


class UnknownLabels(DataError):
    """Labels that name no class. `labels`: those whose rows may be left out (for leave_out_hint), else none."""

    def __init__(self, message: str, labels: list[str]):
        super().__init__(message)
        self.labels = labels


# Unknown labels on this share of rows are no stray classes but a misread column: leaving rows out leaves nothing.
NEARLY_ALL_ROWS = 0.9


def leave_out_hint(config: DataConfig, labels: list[str]) -> str:
    """The settings that leave an UnknownLabels error's rows out, for the command line."""
    if not labels:
        return ""
    settings = [override_text("data.missing_label_values", [*config.missing_label_values, *labels])]
    if config.incomplete_rows != "drop":
        settings.append("data.incomplete_rows=drop")
    return f"; to leave those rows out (listed in removed_rows.csv), add {' '.join(settings)}"


def written_otherwise_hint(unknown: list[str], scheme: LabelScheme) -> str:
    """When unknown labels are the classes written by value where ids are read: how to list them."""
    by_value = Spellings.of(scheme.names, by_value=True)
    if not scheme.accepts_ids or by_value.values is None:
        return ""
    classes = [by_value.index(label) for label in unknown]
    if None in classes:
        return ""
    named = ", ".join(scheme.names[index] for index in dict.fromkeys(classes))
    return f"; the classes {named} written another way? Where data.label_names lists the classes, labels match them by value ({unknown[0]} is {scheme.names[classes[0]]}): {override_text('data.label_names', scheme.names)}"


def missing_hint(unknown: list[str]) -> str:
    """How to read unknown labels that look like a missing-label mark as one."""
    marks = [label for label in unknown if label.casefold() in MISSING_LOOKING_LABELS]
    if not marks:
        return ""
    return f"; {marks[0]!r} marks a row without a label? Add it to data.missing_label_values (such rows are then incomplete: data.incomplete_rows=drop leaves them out)"


def joined_hint(unknown: list[str], spellings: Spellings, scheme: LabelScheme, separator: str | None) -> str:
    """How to read unknown labels that join several classes as sets ("2,27", "<a><b>"), or ""."""
    if separator is not None:
        held = Counter(c for label in unknown for c in SET_SEPARATORS if c != separator and c in label)
        if held:
            character = held.most_common(1)[0][0]
            return f"; labels joined by {character!r}, not data.label_separator {separator!r}? Set data.label_separator={character!r}"
    joining = _joining_classes(unknown, spellings, scheme, separator) or set_joining(
        [*scheme.names, *unknown], separator
    )
    if joining is None:
        return ""
    return f"; several classes {joined_by(joining)}? A multi-label task reads them with {' and '.join(set_settings(joining, separator))}"


def _joining_classes(
    unknown: list[str], spellings: Spellings, scheme: LabelScheme, separator: str | None
) -> str | None:
    """How every unknown label joins known classes (TAG_SET or a character other than `separator`), or None."""
    classes = range(len(scheme.names))
    for joining in (TAG_SET, *JOINING_CHARACTERS):
        rows = [set_parts(label, joining) for label in unknown]
        if (
            joining != separator
            and all(len(row) > 1 for row in rows)
            and all(read_label(part, spellings, scheme)[0] in classes for row in rows for part in row)
        ):
            return joining
    return None


def read_label(value: Any, spellings: Spellings, scheme: LabelScheme) -> tuple[int | None, str]:
    """A label's class index and how it is written ("name" or "id")."""
    text = str(value).strip()
    index = spellings.index(text) if scheme.accepts_names else None
    if index is not None:
        return index, "name"
    number = as_int(value) if scheme.accepts_ids else None
    if number is not None:
        return number - scheme.index_base, "id"
    return None, "name"


def allowed_labels(scheme: LabelScheme) -> str:
    count, base = len(scheme.names), scheme.index_base
    shown = ", ".join(scheme.names[:20]) + (", ..." if count > 20 else "")
    ids = f"ids {base}..{base + count - 1} (data.label_index_base={base})"
    if not scheme.accepts_names:
        return f"allowed: {ids}"
    if not scheme.accepts_ids:
        return f"allowed: the names {shown} ({scheme.origin})"
    return f"allowed: {ids} or the names {shown}"
