"""The errors a user fixes, and how a message is written: one line, texts quoted short.

raise DataError(f"{path}, line {n}: {one_line(reason)}")
shorten(text, 60)      # a text, a class name or a cell quoted in a message, a table or a plot axis
"""

from __future__ import annotations


class DataError(ValueError):
    """A problem with the data or the data settings that the user must fix; the message says where."""


def one_line(error: BaseException | str) -> str:
    return " ".join(str(error).split())


def shorten(text: object, limit: int) -> str:
    """One line of at most `limit` characters, whitespace collapsed, an ellipsis where text was cut: a text, a class
    name or a cell quoted in a message, a table or on a plot axis."""
    text = one_line(str(text))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
