"""Number and text formatting for reports: one convention for every table and sentence of a report."""

from __future__ import annotations

from functools import partial
from typing import Any

from pipeline.card.phrases import count, metric_value, num, pct
from pipeline.common.errors import shorten
from pipeline.run.record import is_number

MAX_TEXT_CHARS = 140
# Shown wherever a value is absent or not a finite number.
MISSING = "—"
truncate = partial(shorten, limit=MAX_TEXT_CHARS)  # a text for a report table


def number(value: Any) -> Any:
    """`value` where it is a finite number, else None."""
    return value if is_number(value) else None


# The model card's number formats, with the report's mark for a missing value.
format_percent = partial(pct, missing=MISSING)
format_score = partial(num, missing=MISSING)
format_metric = partial(metric_value, missing=MISSING)
format_count = partial(count, missing=MISSING)


def format_rate(value: Any) -> str:
    return f"{value:,.1f}" if is_number(value) else MISSING


def format_duration(seconds: Any) -> str:
    """4.2s, 42s, 1m 23s, 2h 05m 09s."""
    if not is_number(seconds):
        return MISSING
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(round(seconds))
    hours, remainder = divmod(whole, 3600)
    minutes, secs = divmod(remainder, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def join_names(parts: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
