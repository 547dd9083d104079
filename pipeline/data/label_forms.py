"""How labels are written: the spellings of one class (Spellings: case, spaces, 1 and 1.0, true and True), and
several classes in one cell (joined by a character, written as tags or as a list), told apart from names of
several words (set_joining).
"""

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
# Names, at most, that the hint about sets (set_hint) looks at: an error about 100,000 distinct labels stays cheap,
# and a few thousand combinations are scale enough to tell sets by.
HINT_SAMPLE = 2000


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
    `values` (value_names) by value: a boolean by its meaning (read_indicator, as data.label_columns reads a cell:
    1, true, yes), a number exactly (Decimal: "4" == "4.0" == "+4"), so that a file's integers match classes a
    spreadsheet wrote as decimals. Spellings matches labels by it and warn_case_variants names the classes found in
    train that share it."""
    text = name.strip()
    meaning = read_indicator(text) if values == BOOLEANS else "?"
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
    if names and all(read_indicator(name) != "?" for name in names):
        return BOOLEANS
    return NUMBERS if any(is_number_text(name) for name in names) else None


def set_joining(names: list[str], separator: str | None) -> str | None:
    """How these class names join several classes each, if they do: TAG_SET, or the character of JOINING_CHARACTERS
    (other than `separator`) that joins them. Several names must be joined, each with a part that is itself a class
    or recurs in another (go_emotions' "0,3" and "3,27" beside "3"; "Arts, Culture" beside "Science, Tech" is two
    names with commas), and joined by a space, they must also look like sets (_spaces_join_classes). None: names."""
    for joining in (TAG_SET, *JOINING_CHARACTERS):
        if joining == separator:
            continue
        rows = [set_parts(name, joining) for name in names]
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


def set_parts(name: str, joining: str) -> list[str]:
    """The classes a name joins by `joining` (TAG_SET, or a character): [name] when it joins none."""
    if joining == TAG_SET:
        return _written_tags(name) or [name]
    return [part for part in _split_joined(name, joining) if part] or [name]


def joined_by(joining: str) -> str:
    return "written as tags" if joining == TAG_SET else f"joined by {joining!r}"


def set_settings(joining: str, separator: str | None) -> list[str]:
    """The settings that read labels joined by `joining` as sets, in a task whose data.label_separator is `separator`
    (None: a single-label task). Tags are read as sets whatever the separator."""
    task = ["data.task=multi_label"] if separator is None else []
    return task if joining == TAG_SET else [*task, f"data.label_separator={joining!r}"]


def set_hint(names: list[str], separator: str | None) -> str:
    """For an error about too many classes: the advice of warn_unlike_names when they look like sets ("" if not):
    arXiv's or StackOverflow's combinations number in the thousands, beyond what is read as classes. Asked of an
    even sample of HINT_SAMPLE names: the error it ends may be about a text column of 100,000 distinct values."""
    names = names[:: -(-len(names) // HINT_SAMPLE)] if names else names
    joining = set_joining(names, separator)
    if joining is None:
        return ""
    joined = [name for name in names if len(set_parts(name, joining)) > 1]
    return (
        f"; or are they sets of labels, several classes {joined_by(joining)} ({examples_of(joined)})? Set "
        f"{' '.join(set_settings(joining, separator))}"
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


def warn_case_variants(names: list[str], train: SplitRows, column: str) -> None:
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


def raw_sets(table: SplitRows, column: str, separator: str) -> list[list[str]]:
    return [
        _read_set(value, separator, table, row, column)
        for row, value in enumerate(table.column(column, "data.label_column"))
    ]


def _read_set(value: Any, separator: str, table: SplitRows, row: int, column: str) -> list[str]:
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


# What an indicator cell may hold, compared case-blind: spreadsheets write TRUE/FALSE, pandas True/False, surveys yes/no.
# Read so too, class names that are booleans (value_names) and the labels that name them.
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


# Spreadsheets export integer labels as "1.0": an integer, as 1.0 from a JSON or Parquet column is.
_INTEGER = re.compile(r"[+-]?[0-9]+(?:\.0*)?")


def examples_of(names: Iterable[str], count: int = 3, width: int = 40) -> str:
    """The first few labels, quoted, each cut to `width` characters: a text column's labels are paragraphs."""
    return ", ".join(repr(shorten(name, width)) for name in list(names)[:count])


def single_labels(table: SplitRows, column: str) -> list[Any]:
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
