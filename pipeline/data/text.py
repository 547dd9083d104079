"""The text rule: which columns make a row's text and how they join (TextSpec); resolve_columns finds a column."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.common.errors import DataError
from pipeline.config.reading import PAIR_MARK, normalise_name

_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def is_number_text(text: object) -> bool:
    return _NUMBER_TEXT.fullmatch(str(text).strip()) is not None


def is_missing(value: Any) -> bool:
    """None, NaN and pandas' NA: an absent value, read as an empty text part."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ == "NAType"


INCOMPLETE_ROWS_HINT = "or set data.incomplete_rows=drop to leave such rows out (listed in removed_rows.csv)"


def is_blank(value: Any) -> bool:
    """Absent, or only whitespace: a cell that gives no label."""
    return is_missing(value) or not str(value).strip()


# A line break as Yelp's and Amazon's review CSV files write one inside a text (data.unescape_newlines).
ESCAPED_NEWLINE = "\\n"


def join_text(parts: Sequence[str], separator: str, unescape_newlines: bool) -> str:
    """Parts unescaped (if asked) and stripped, empty ones skipped (no dangling separator), joined."""
    cleaned = (part.replace(ESCAPED_NEWLINE, "\n") if unescape_newlines else part for part in parts)
    return separator.join(part for part in (part.strip() for part in cleaned) if part)


def segments_of(text: str) -> list[str]:
    """[text], or [first, second] for a pair."""
    return text.split(PAIR_MARK, 1)


@dataclass(frozen=True)
class TextSpec:
    """Which columns make a row's text and how they are joined; with pair_columns, a pair joined by PAIR_MARK."""

    columns: tuple[str, ...]
    separator: str
    unescape_newlines: bool
    pair_columns: tuple[str, ...] = ()

    @classmethod
    def from_data_config(cls, data: Any) -> TextSpec:
        pair_columns = tuple(getattr(data, "text_pair_columns", None) or ())
        return cls(tuple(data.text_columns), data.text_separator, data.unescape_newlines, pair_columns)

    @classmethod
    def from_settings(cls, data: dict[str, Any], defaults: Any) -> TextSpec:
        """From config.yaml's data mapping as recorded (missing keys from `defaults`), or decision.json's."""

        def names(columns: Any) -> tuple[str, ...]:  # one name, or a list
            return tuple(str(column) for column in ([columns] if isinstance(columns, str) else columns or ()))

        return cls(
            names(data.get("text_columns", defaults.text_columns)),
            str(data.get("text_separator", defaults.text_separator)),
            bool(data.get("unescape_newlines", defaults.unescape_newlines)),
            names(data.get("text_pair_columns")),
        )

    def side_columns(self) -> list[tuple[tuple[str, ...], str]]:
        """(columns, the setting naming them) for each side."""
        sides = [(self.columns, "data.text_columns")]
        return [*sides, (self.pair_columns, "data.text_pair_columns")] if self.pair_columns else sides

    def named_columns(self) -> list[tuple[str, str]]:
        """(column, the setting naming it) for each of input_columns."""
        return [(column, key) for columns, key in self.side_columns() for column in columns]

    def keys(self) -> list[str]:
        return list(dict.fromkeys(key for _, key in self.named_columns()))

    @property
    def input_columns(self) -> tuple[str, ...]:
        """Every column a row's text reads, in text_of's order."""
        return self.columns + self.pair_columns

    def with_columns(self, columns: Sequence[str] | None) -> TextSpec:
        return self if not columns else dataclasses.replace(self, columns=tuple(columns))

    def with_pair_columns(self, columns: Sequence[str] | None) -> TextSpec:
        return self if not columns else dataclasses.replace(self, pair_columns=tuple(columns))

    def positions(self, header: Sequence[str], where: str, options: tuple[str, str]) -> list[int]:
        """Where input_columns are in a header; `options`: the text and pair columns' option names for errors."""
        return resolve_columns(header, self.columns, where, options[0]) + resolve_columns(
            header, self.pair_columns, where, options[1]
        )

    def with_separator(self, separator: str | None) -> TextSpec:
        return self if separator is None else dataclasses.replace(self, separator=separator)

    def to_settings(self) -> dict[str, Any]:
        """The rule as config.yaml's data settings, as model/decision.json records it."""
        return {
            "text_columns": list(self.columns),
            "text_separator": self.separator,
            "unescape_newlines": self.unescape_newlines,
            "text_pair_columns": list(self.pair_columns) or None,
        }

    def text_of(self, values: Sequence[Any]) -> str:
        """One row's text from its input_columns' values; "" when it has none (a pair: when either side has none)."""
        return self.join_pair(*self.sides(values)) if self.pair_columns else self.segment_of(values)

    def sides(self, values: Sequence[Any]) -> tuple[str, str]:
        return self.segment_of(values[: len(self.columns)]), self.segment_of(values[len(self.columns) :])

    def what_is_empty(self, values: Sequence[Any]) -> str | None:
        """What a row without a text lacks, as removed_rows.csv says it; None when it has a text."""
        if not self.pair_columns:
            return None if self.segment_of(values) else "text"
        empty = [columns for columns, side in zip((self.columns, self.pair_columns), self.sides(values)) if not side]
        return " and no ".join(f"text in {', '.join(columns)}" for columns in empty) or None

    def partial_text(self, values: Sequence[Any]) -> str:
        """The row's text as far as it has one (a pair's present side shown), for removed_rows.csv."""
        return PAIR_MARK.join(self.sides(values)) if self.pair_columns else self.segment_of(values)

    @staticmethod
    def join_pair(first: str, second: str) -> str:
        return f"{first}{PAIR_MARK}{second}" if first and second else ""

    def segment_of(self, values: Sequence[Any]) -> str:
        """One segment's text from its columns' values (a list value's items joined as parts are)."""
        return join_text([self.cell_text(value) for value in values], self.separator, self.unescape_newlines)

    def cell_text(self, value: Any) -> str:
        """One cell as text: "" when missing, a list's items joined, a dict as JSON, else str()."""
        if is_missing(value):
            return ""
        if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
            return self.segment_of(list(value))
        text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)
        return text.replace(PAIR_MARK, " ")

    def describe_empty(self, what: str = "empty text") -> str:
        if self.pair_columns:
            return f"{what} in {', '.join(self.columns)} or in {', '.join(self.pair_columns)} (a pair needs both)"
        return f"{what} in {', '.join(self.columns)}"


def fewer_columns_warning(trained: Sequence[str], given: Sequence[str] | None, option: str) -> str | None:
    """One line when `option` names fewer text columns than the model was trained on, else None."""
    if not given or len(given) >= len(trained):
        return None
    return f"the model was trained on {len(trained)} columns joined ({', '.join(trained)}); {option} reads {len(given)} now ({', '.join(given)}): where that is only part of what the model learnt from, its labels may be worse than its test scores say"


def resolve_columns(header: Sequence[str], wanted: Sequence[str], where: str, option: str) -> list[int]:
    """Positions of the wanted columns in the header (exact, else ignoring case and spaces), else an error."""
    positions, missing = [], []
    normalised = [normalise_name(name) for name in header]
    for column in wanted:
        if column in header:
            positions.append(list(header).index(column))
        elif normalised.count(normalise_name(column)) == 1:
            positions.append(normalised.index(normalise_name(column)))
        else:
            missing.append(column)
    if missing:
        tabbed = " (tab-separated? read it as TSV)" if any("\t" in str(name) for name in header) else ""
        raise DataError(
            f"{where} has no column {', '.join(repr(c) for c in missing)} ({option}); its columns: {', '.join(repr(str(c)) for c in header)}{tabbed}"
        )
    return positions
