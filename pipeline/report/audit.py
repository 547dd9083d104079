"""The report's label audit: how many rows each run flagged, by class pair, and the most suspect rows, read from
metrics.json's `label_audit` and the run's label_issues.csv (`audit_blocks(runs)`)."""

from __future__ import annotations

import csv
from collections.abc import Sequence

from pipeline.report.blocks import Block, Cell, Heading, Paragraph, Table, num_cells
from pipeline.report.formatting import format_count, truncate
from pipeline.report.runs import Run
from pipeline.run.directory import LABEL_ISSUES_FILE

SECTION_AUDIT = "Labels to read again"
TOP_PAIRS, TOP_ROWS = 8, 10


def audit_blocks(runs: Sequence[Run]) -> list[Block]:
    audited = [run for run in runs if run.metrics.label_audit is not None and run.metrics.label_audit.splits]
    if not audited:
        return []
    blocks: list[Block] = [Heading(SECTION_AUDIT)]
    for run in audited:
        if len(runs) > 1:
            blocks.append(Heading(run.name, level=3))
        blocks += _run_blocks(run)
    return blocks


def _run_blocks(run: Run) -> list[Block]:
    audit = run.metrics.label_audit
    splits = audit.splits or {}
    flagged = ", ".join(
        f"{split} {format_count(part.get('flagged', 0))} of {format_count(part.get('rows', 0))}"
        for split, part in splits.items()
    )
    near = sum(int(part.get("near_duplicates", 0)) for part in splits.values())
    text = f"Rows whose given label the evidence contradicts ({audit.method}): {flagged}."
    if near:
        text += f" {format_count(near)} rows are near duplicates of a row with another label."
    blocks: list[Block] = [Paragraph(text + f" Every row is in {LABEL_ISSUES_FILE}.")]
    if audit.note:
        blocks.append(Paragraph(f"Note: {audit.note}.", style="note"))
    pairs = list((audit.class_pairs or {}).items())[:TOP_PAIRS]
    if pairs:
        rows = [[Cell(pair), *num_cells(format_count(count))] for pair, count in pairs]
        blocks.append(Table(["Given -> suggested", "Rows"], rows))
    top = _top_rows(run)
    if top:
        rows = [
            [
                Cell(row["split"]),
                Cell(row["id"]),
                Cell(truncate(row["text"]), "text"),
                Cell(row["given_label"]),
                Cell(row["suggested_label"]),
                *num_cells(row["score"]),
                Cell(row["signals"]),
            ]
            for row in top
        ]
        blocks.append(Table(["Split", "Row", "Text", "Given", "Suggested", "Score", "Signals"], rows))
    return blocks


def _top_rows(run: Run) -> list[dict[str, str]]:
    """The most suspect rows of label_issues.csv, highest score first; [] when the file is absent or unreadable."""
    try:
        with open(run.path / LABEL_ISSUES_FILE, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    return sorted(rows, key=lambda row: -_number(row.get("score")))[:TOP_ROWS]


def _number(text: str | None) -> float:
    try:
        return float(text or "nan")
    except ValueError:
        return float("-inf")
