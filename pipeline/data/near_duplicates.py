"""Near duplicates: texts that differ only in case, punctuation, whitespace or a URL (`near_key`), and the groups
of them whose rows carry different labels (`conflicting_groups`). Exact copies are stage 1's (data/splits.py); a
group listed here holds at least two texts that are not exact copies."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
# Every character that is not a letter, a digit or whitespace: punctuation, symbols, quotes of any script.
NOT_WORD = re.compile(r"[^\w\s]|_")


def near_key(text: str) -> str:
    """The text as a near duplicate is compared: URLs dropped, case folded, punctuation removed, spaces collapsed."""
    text = unicodedata.normalize("NFKC", URL.sub(" ", text)).casefold()
    return " ".join(NOT_WORD.sub(" ", text).split())


@dataclass(frozen=True)
class NearRow:
    """One labelled row, where it is (split, position in it) and its label (a class id, or a tuple of them)."""

    split: str
    index: int
    row_id: str
    text: str
    label: Hashable


def conflicting_groups(rows: Iterable[NearRow]) -> list[list[NearRow]]:
    """Groups of rows with one near key, more than one label and more than one exact text, in first-seen order."""
    groups: dict[str, list[NearRow]] = {}
    for row in rows:
        key = near_key(row.text)
        if key:  # a text of punctuation or a URL alone matches every other such text: no evidence
            groups.setdefault(key, []).append(row)
    return [
        group
        for group in groups.values()
        if len({row.label for row in group}) > 1 and len({" ".join(row.text.split()) for row in group}) > 1
    ]
