"""How labels are written: one class's spellings (case, spaces, 1 and 1.0) and several classes in one cell."""

from __future__ import annotations

import ast
import logging
import numbers
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from pipeline.common.errors import DataError, shorten
from pipeline.data.rows import SplitRows
from pipeline.data.text import is_blank, is_number_text

logger = logging.getLogger("pipeline.data.labels")
# Characters that join several classes in one cell (go_emotions' "2,27").
SET_SEPARATORS = (",", ";", "|")
# A space also joins the words of one name ("very negative"): _spaces_join_classes tells the two apart.
JOINING_CHARACTERS = (*SET_SEPARATORS, " ")
# Tags ("<python><pandas>") are a set in a multi-label task whatever data.label_separator.
TAG_SET = "<a><b>"
_TAGS = re.compile(r"(?:<[^<>]+>)+")
_TAG = re.compile(r"<([^<>]+)>")
# A part that looks like a code rather than a word: cs.LG, q-bio.NC, 401.9, c++, c#, python-3.x.
_CODE = re.compile(r"[0-9._+#]|\w-\w")
# Share of space-joined parts that must recur for sets: tags reuse 0.96+, words of names ~0.4.
MIN_REUSED_PART_SHARE = 0.75
# Names longer than this read as texts, not sets of labels (StackOverflow writes at most 5 tags).
MAX_SET_PARTS = 8
MAX_SET_LENGTH = 160
HINT_SAMPLE = 2000


@dataclass(frozen=True)
class Spellings:
    """How labels name the classes: exactly, or by a `written_form` no other class shares."""

    exact: dict[str, int]
    forms: dict[str, int]  # written_form -> class index, for the names no other class shares it
    values: str | None = None

    @classmethod
    def of(cls, names: list[str], by_value: bool = False) -> Spellings:
        """`by_value` only where labels are never ids: a number is then a value, not a position."""
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


BOOLEANS = "booleans"
NUMBERS = "numbers"
# "Toys > Games" and "Toys>Games" are one name to a reader.
_SPACED_PUNCTUATION = re.compile(r" ?([^\w\s]) ?")


def written_form(name: str, values: str | None) -> str:
    """A name case-folded and spaces normalised; where names are `values`, by meaning or exact number."""
    text = name.strip()
    meaning = read_indicator(text) if values == BOOLEANS else "?"
    if meaning != "?":
        return str(meaning).casefold()
    if values is not None and is_number_text(text):
        value = Decimal(text)
        return "0" if value == 0 else str(value.normalize())  # "-0" is 0; the exponent form keeps 1e999 short
    return _SPACED_PUNCTUATION.sub(r"\1", " ".join(text.split())).casefold()


def value_names(names: list[str]) -> str | None:
    """BOOLEANS or NUMBERS where labels match these names by value (never as ids), else None."""
    if names and all(read_indicator(name) != "?" for name in names):
        return BOOLEANS
    return NUMBERS if any(is_number_text(name) for name in names) else None


def set_joining(names: list[str], separator: str | None) -> str | None:
    """How these names join several classes each (TAG_SET or a character other than `separator`), or None."""
    for joining in (TAG_SET, *JOINING_CHARACTERS):
        if joining == separator:
            continue
        rows = [set_parts(name, joining) for name in names]
        known = {row[0] for row in rows if len(row) == 1}
        joined = [row for row in rows if len(row) > 1]
        recurring = Counter(part for row in joined for part in set(row))
        reused = all(any(part in known or recurring[part] > 1 for part in row) for row in joined)
        if len(joined) >= 2 and reused and (joining != " " or _spaces_join_classes(joined, known)):
            return joining
    return None


def _spaces_join_classes(joined: list[list[str]], known: set[str]) -> bool:
    """Whether space-joined names are sets (codes, or parts combining as set members), not wordy names or texts."""
    long = sum(len(row) > MAX_SET_PARTS or sum(map(len, row)) + len(row) > MAX_SET_LENGTH for row in joined)
    if long > len(joined) / 2:  # most have too many words or characters to be sets of labels
        return False
    parts = Counter(part for row in joined for part in set(row))
    leading = {row[0] for row in joined}
    following = {part for row in joined for part in row[1:]}
    if parts and all(_CODE.search(part) for part in parts):
        # Coded names may be one code in two places (CPC's "A61K 31/00") rather than codes combined.
        two_places = all(len(row) == 2 for row in joined) and not (leading & following)
        return not (two_places and not (leading | following) & known)
    # Set members: sizes vary, no fixed order, most parts reused.
    reused = sum(count > 1 or part in known for part, count in parts.items())
    return (
        len(joined) > len(parts)
        and any(len(row) > 2 for row in joined)
        and bool(leading & following)
        and reused >= MIN_REUSED_PART_SHARE * len(parts)
    )


def set_parts(name: str, joining: str) -> list[str]:
    """The classes a name joins by `joining`: [name] when it joins none."""
    if joining == TAG_SET:
        return _written_tags(name) or [name]
    return [part for part in _split_joined(name, joining) if part] or [name]


def joined_by(joining: str) -> str:
    return "written as tags" if joining == TAG_SET else f"joined by {joining!r}"


def set_settings(joining: str, separator: str | None) -> list[str]:
    """The settings that read labels joined by `joining` as sets (`separator` None: single-label task)."""
    task = ["data.task=multi_label"] if separator is None else []
    return task if joining == TAG_SET else [*task, f"data.label_separator={joining!r}"]


def set_hint(names: list[str], separator: str | None) -> str:
    """The advice of warn_unlike_names for an error about too many classes, or "" (asked of a sample of names)."""
    names = names[:: -(-len(names) // HINT_SAMPLE)] if names else names
    joining = set_joining(names, separator)
    if joining is None:
        return ""
    joined = [name for name in names if len(set_parts(name, joining)) > 1]
    return f"; or are they sets of labels, several classes {joined_by(joining)} ({examples_of(joined)})? Set {' '.join(set_settings(joining, separator))}"


def _split_joined(text: str, separator: str) -> list[str]:
    """The labels a string joins by `separator`, stripped; one at either end ("|a|b|") joins nothing."""
    text = text.strip()
    if text != separator:
        text = text.removeprefix(separator).removesuffix(separator)
    return [item.strip() for item in text.split(separator)]


def _written_tags(value: Any) -> list[str] | None:
    """The classes a string writes as tags ("<python><pandas>"), or None."""
    if not isinstance(value, str) or not _TAGS.fullmatch(value.strip()):
        return None
    return [tag.strip() for tag in _TAG.findall(value)]


# A CSV cell holding a list as pandas' to_csv ("['a', 'b']") or JSON ('["a", "b"]') writes it.
_LIST_CELL = re.compile(r"\s*\[.*\]\s*", re.DOTALL)


def _written_list(value: Any) -> list[str | int] | None:
    """The list of names or ids a string writes as a Python or JSON literal, or None."""
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


def warn_case_variants(names: list[str], train: SplitRows, column: str) -> None:
    """WARN about train labels that differ only in written_form ("World", "world"): kept apart, but mostly one."""
    values = value_names(names)
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(written_form(name, values), []).append(name)
    variants = [group for group in groups.values() if len(group) > 1]
    if variants:
        said = "; ".join(", ".join(repr(name) for name in group) for group in variants)
        logger.warning(
            f"{train.source}, column '{column}': labels that differ only in case, spacing, number or boolean format "
            f"are separate classes: {said}; write each class one way (or list the classes in data.label_names: a "
            "label then reads as the class it names, written any of these ways)"
        )


def raw_sets(table: SplitRows, column: str, separator: str) -> list[list[str]]:
    return [
        _read_set(value, separator, table, row, column)
        for row, value in enumerate(table.column(column, "data.label_column"))
    ]


def _read_set(value: Any, separator: str, table: SplitRows, row: int, column: str) -> list[str]:
    """A row's label set: a list value, a cell writing a list or tags, or a string split at the separator."""
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
                f"{table.where(row)}, column '{column}': label {joined[0]!r} contains data.label_separator {separator!r}, which joins labels in predictions; rename the class or choose another separator"
            )
    elif is_blank(value):
        return []
    else:
        items = _split_joined(str(value), separator)
    if "" in items:
        fix = "remove the empty name from the list"
        if not listed:
            fix = f"two data.label_separator {separator!r} with nothing between: remove one (a separator at either end of a cell is read as none)"
        raise DataError(f"{table.where(row)}, column '{column}': an empty label in {value!r}; {fix}")
    return items


# Indicator cells and boolean class names, case-blind: TRUE/FALSE, True/False, yes/no.
_PRESENT_WORDS = {"true", "yes"}
_ABSENT_WORDS = {"false", "no"}


def read_indicator(value: Any) -> bool | str:
    """True (present), False (absent), or "?" (anything else)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    number = as_int(value)
    if number in (0, 1):
        return number == 1
    word = str(value).strip().casefold()
    return True if word in _PRESENT_WORDS else False if word in _ABSENT_WORDS else "?"


# Spreadsheets export integer labels as "1.0".
_INTEGER = re.compile(r"[+-]?[0-9]+(?:\.0*)?")


def examples_of(names: Iterable[str], count: int = 3, width: int = 40) -> str:
    """The first few labels, quoted and cut to `width` (a text column's labels are paragraphs)."""
    return ", ".join(repr(shorten(name, width)) for name in list(names)[:count])


def single_labels(table: SplitRows, column: str) -> list[Any]:
    """A single-label column's values; an object or list there is an error naming the row."""
    values = table.column(column, "data.label_column")
    for row, value in enumerate(values):
        if isinstance(value, dict):
            raise DataError(
                f"{table.where(row)}, column '{column}' (data.label_column): the label is an object ({shorten(value, 60)}), not a class; nested fields are not read: give each record its label as a top-level key"
            )
        written = _written_list(value)  # a CSV cell writing a list
        if isinstance(value, (list, tuple, np.ndarray)) or written is not None:
            raise DataError(
                f"{table.where(row)}, column '{column}' (data.label_column): the label is a list ({shorten(list(value) if written is None else written, 60)}), not a class; for several classes per row set data.task=multi_label"
            )
    return values


def as_int(value: Any) -> int | None:
    """An integer label (int, integral float, or a string of digits), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    text = str(value).strip()
    return int(text.split(".")[0]) if _INTEGER.fullmatch(text) else None
