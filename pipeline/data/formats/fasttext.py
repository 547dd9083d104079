"""fastText files as a Table: `__label__<name>` words and the text of each line."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from pipeline.common.errors import DataError
from pipeline.config.reading import LABEL_COLUMN, TEXT_COLUMN
from pipeline.data.formats.table import ReadOptions, Table, batched
from pipeline.data.lines import LineSource

FASTTEXT_DETECTION_LINES = 20


def starts_like_fasttext(lines: LineSource, label_prefix: str) -> bool:
    """Whether the first non-blank lines all start with the label prefix (a cut-off last line aside)."""
    head = lines.head_text()
    starts = head.split("\n")
    if len(starts) > 1 and not head.endswith("\n"):
        starts.pop()
    first = [line.lstrip() for line in starts if line.strip()][:FASTTEXT_DETECTION_LINES]
    return bool(first) and all(line.startswith(label_prefix) for line in first)


def fasttext_table(lines: LineSource, options: ReadOptions) -> Table:
    """One row per non-blank line: its `__label__` words as the label (None, a name or a list), the rest as text."""
    records = _fasttext_records(lines, options.label_prefix)
    first = next(records, None)
    if first is None:
        raise DataError(f"{lines.name} is empty")
    header = [LABEL_COLUMN, TEXT_COLUMN]  # data.label_column's and data.text_columns' defaults
    return Table(
        lines.name, "fasttext", header, "line", batched(itertools.chain([first], records), options.chunk_size), lines
    )


def _fasttext_records(lines: LineSource, prefix: str) -> Iterator[tuple[int, list]]:
    """(line, [labels, text]) per non-blank line; labels are prefixed words, apart by whitespace or a comma."""
    leading = re.compile(rf"\s*{re.escape(prefix)}([^\s,]*)(?:\s*,\s*|\s+|$)")  # `__label__1,Some text`
    for line in lines:
        if not line.strip():
            continue
        labels, position = [], 0
        while match := leading.match(line, position):
            labels.append(match.group(1))
            position = match.end()
        text, ending = line[position:], []
        # Its end is read word by word from the right: a regex searched from the left took seconds on long space runs.
        while prefix in text:
            body = _without_separator(text)
            start = _last_word_start(body)
            if not body.startswith(prefix, start):
                break
            ending.insert(0, body[start + len(prefix) :])
            text = _without_separator(body[:start])
        if "" in labels + ending:
            raise DataError(
                f"{lines.name}, line {lines.line_number}: {prefix} with no label name after it; write {prefix}<name>"
            )
        names = list(dict.fromkeys(labels + ending))  # each once; leading, trailing or both
        yield lines.line_number, [None if not names else names[0] if len(names) == 1 else names, text.strip()]


def _without_separator(text: str) -> str:
    """`text` without what separates its last word from a label after it: whitespace, at most one comma."""
    text = text.rstrip()
    return text[:-1].rstrip() if text.endswith(",") else text


def _last_word_start(text: str) -> int:
    """Where the last word of `text` starts: after its last whitespace or comma, as a label name ends at one."""
    start = len(text)
    while start and not (text[start - 1].isspace() or text[start - 1] == ","):
        start -= 1
    return start
