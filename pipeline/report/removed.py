"""The report's account of the rows stage 1 left out of each split, and why (pointing to each run's
removed_rows.csv), and of a multi-label run's training rows without any class: `removed_blocks(runs)`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.data.formats.table import REPEATED_HEADER
from pipeline.report.blocks import Block, Cell, Heading, Paragraph, Table, num_cells
from pipeline.report.formatting import format_count, format_percent, truncate
from pipeline.report.runs import Run, repeats_its_run
from pipeline.run.directory import REMOVED_ROWS_FILE
from pipeline.run.record import is_number

SECTION_REMOVED = "Rows left out of the data"
INCOMPLETE = "no text or no label (data.incomplete_rows: drop)"
# The reasons that leave rows out of a file as it is read, before validation or test is carved from train.
AS_READ = (REPEATED_HEADER, INCOMPLETE)
CARVED = " Header rows repeated and rows without a text or a label are left out of the files as read: those of a split carved from train count under train."


def removed_counts(run: Run) -> list[tuple[str, dict[str, int]]]:
    """[(reason, {split: rows})] for each reason that left out rows, from metrics.json's `data` record."""
    data = run.metrics.data
    duplicates = data.duplicates or {}
    mode = duplicates.get("mode") if isinstance(duplicates, dict) else None
    within = _counts(duplicates.get("within")) if mode in ("within", "across") else {}
    across = {
        split.removesuffix("_in_earlier_splits"): count
        for split, count in _counts(duplicates.get("across") if mode == "across" else None).items()
    }
    reasons = [
        (REPEATED_HEADER, _counts((data.repeated_headers or {}).get("removed"))),
        (INCOMPLETE, _counts((data.incomplete_rows or {}).get("removed"))),
        (f"repeats a text of its own split (data.deduplicate: {mode})", within),
        ("its text is in an earlier split, train then validation (data.deduplicate: across)", across),
    ]
    return [(reason, counts) for reason, counts in reasons if any(counts.values())]


def _counts(record: Any) -> dict[str, int]:
    """{split: rows} from a metrics.json mapping, its non-numbers left out."""
    if not isinstance(record, dict):
        return {}
    return {str(split): int(count) for split, count in record.items() if is_number(count)}


def removed_blocks(runs: Sequence[Run]) -> list[Block]:
    removing = [(run, reasons) for run in runs if (reasons := removed_counts(run))]
    notes = [note for run in runs for note in [_conflict_note(run), _no_class_note(run, runs)] if note]
    if not removing and not notes:
        return []
    blocks: list[Block] = [Heading(SECTION_REMOVED)]
    if removing:
        files = "; ".join(f"{run.name}: {run.path / REMOVED_ROWS_FILE}" for run, _ in removing)
        carved = any(run.metrics.data.carved_from_train and reasons[0][0] in AS_READ for run, reasons in removing)
        listed = (
            "Rows left out of each split before training and scoring, by reason; each is listed, with its id, its reason and its "
            f"text, in {REMOVED_ROWS_FILE} ({files})."
        )
        listed += CARVED if carved else ""
        blocks += [Paragraph(listed, style="meta"), _removed_table(removing, several=len(runs) > 1)]
    blocks += [Paragraph(note, style="note") for note in notes]
    return blocks


def _removed_table(removing: list[tuple[Run, list[tuple[str, dict[str, int]]]]], several: bool) -> Table:
    """Reasons as rows, splits as columns; a split the run does not have (an evaluated file) is blank, not 0."""
    orders = {run.name: _split_order(run, reasons) for run, reasons in removing}
    splits = list(dict.fromkeys(split for order in orders.values() for split in order))
    rows = []
    for run, reasons in removing:
        for reason, counts in reasons:
            counted = [format_count(counts.get(split, 0)) if split in orders[run.name] else "" for split in splits]
            rows.append([*([Cell(run.name)] if several else []), Cell(reason), *num_cells(*counted)])
    header = [*(["Run"] if several else []), "Why left out", *(split.capitalize() for split in splits)]
    return Table(header, rows)


def _split_order(run: Run, reasons: list[tuple[str, dict[str, int]]]) -> list[str]:
    sizes = run.metrics.data.sizes
    known = list(sizes) if isinstance(sizes, dict) else []
    return list(dict.fromkeys([*known, *(split for _, counts in reasons for split in counts)]))


def _conflict_note(run: Run) -> str | None:
    duplicates = run.metrics.data.duplicates
    if not isinstance(duplicates, dict) or duplicates.get("mode") not in ("within", "across"):
        return None
    conflicts = duplicates.get("conflicts")
    if not is_number(conflicts) or conflicts <= 0:
        return None
    examples = duplicates.get("conflict_examples") or []
    example = ""
    if examples and isinstance(examples[0], dict):
        labels = " vs ".join(str(label) for label in examples[0].get("labels") or [])
        example = f" (e.g. “{truncate(str(examples[0].get('text', '')), limit=60)}”: {labels})"
    texts = "text carries" if conflicts == 1 else "texts carry"
    return (
        f"{run.name}: {format_count(conflicts)} {texts} more than one label{example}; where copies were removed, the first copy's label "
        f"stayed, and {REMOVED_ROWS_FILE} names the labels of each removed copy."
    )


def _no_class_note(run: Run, runs: Sequence[Run]) -> str | None:
    """A multi-label run's training rows with no class: kept, but enough of them teach the model to predict nothing."""
    if not run.multi_label or repeats_its_run(run, runs):
        return None
    without = run.metrics.data.train_counts.get("rows_without_labels")
    rows = run.metrics.data.train_counts.get("rows")
    if not is_number(without) or without <= 0:
        return None
    share = f" ({format_percent(without / rows, 1)})" if is_number(rows) and rows else ""
    return f"{run.name}: {format_count(without)} training rows{share} have no class at all: kept, as rows negative for every class."
