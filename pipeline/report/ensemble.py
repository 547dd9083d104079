"""The report's ensemble section: model, baseline and their ensemble side by side, on validation and test, with
McNemar's exact test between the ensemble and each (metrics.json `ensemble`, pipeline.scoring.ensemble)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.report.analysis import gap_reading
from pipeline.report.blocks import Block, Cell, Heading, Paragraph, Table
from pipeline.report.runs import Run
from pipeline.run.record import Ensemble, is_number

SECTION_ENSEMBLE = "Ensemble with the baseline"
MEMBERS = {"model": "model alone", "baseline": "TF-IDF baseline", "ensemble": "ensemble"}
FIGURES = {"accuracy": "accuracy", "macro_f1": "macro-F1", "micro_f1": "micro-F1", "loss": "loss"}


def ensemble_blocks(runs: Sequence[Run]) -> list[Block]:
    """One table per run that tried the ensemble; nothing where no run did."""
    tried = [(run, run.metrics.ensemble) for run in runs if run.metrics.ensemble is not None]
    if not tried:
        return []
    blocks: list[Block] = [Heading(SECTION_ENSEMBLE)]
    for run, record in tried:
        if len(runs) > 1:
            blocks.append(Heading(run.name, level=3))
        blocks += _run_blocks(record)
    return blocks


def _run_blocks(record: Ensemble) -> list[Block]:
    verdict = "kept" if record.kept else "not kept"
    weight = f", weight {record.weight:.2f} on the model" if is_number(record.weight) else ""
    blocks: list[Block] = [Paragraph(f"eval.ensemble: {record.setting}: {verdict}{weight}: {record.reason}.")]
    if not record.validation or not record.test:
        return blocks
    names = [name for name in FIGURES if any(name in (record.test.get(m) or {}) for m in MEMBERS)]
    header = [""] + [f"validation {FIGURES[n]}" for n in names] + [f"test {FIGURES[n]}" for n in names]
    rows = [
        [Cell(label)] + _cells(record.validation.get(member), names) + _cells(record.test.get(member), names)
        for member, label in MEMBERS.items()
    ]
    blocks.append(Table(header, rows))
    blocks += [Paragraph(text, style="note") for text in _mcnemar_sentences(record.mcnemar or {})]
    blocks.append(Paragraph(f"The choice is made on validation alone: {record.rule}.", style="note"))
    return blocks


def _cells(figures: dict[str, Any] | None, names: list[str]) -> list[Cell]:
    figures = figures or {}
    return [Cell(f"{figures[name]:.4f}" if is_number(figures.get(name)) else "", "num") for name in names]


def _mcnemar_sentences(tests: dict[str, Any]) -> list[str]:
    sentences = []
    for other, test in tests.items():
        if not isinstance(test, dict):
            continue
        counts = f"only the ensemble right on {test.get('only_ensemble_right')} test texts, only the {MEMBERS.get(other, other)} on {test.get('only_other_right')}"
        p_value = test.get("p_value")
        reading = f"p = {p_value:.2g} ({gap_reading(p_value)})" if is_number(p_value) else "no texts differ"
        sentences.append(f"McNemar's exact test, ensemble vs {MEMBERS.get(other, other)}: {counts}; {reading}.")
    return sentences
