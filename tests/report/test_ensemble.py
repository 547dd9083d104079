"""The report's ensemble section: model, baseline and ensemble side by side, the choice and McNemar's test."""

from __future__ import annotations

from pipeline.report.blocks import Heading, Paragraph, Table
from pipeline.report.ensemble import SECTION_ENSEMBLE, ensemble_blocks
from pipeline.report.render import render_markdown
from pipeline.report.sections import build_report
from tests.report.test_removed import run_of

ENSEMBLE = {
    "setting": "auto",
    "kept": True,
    "weight": 0.6,
    "reason": "it beats the model alone on validation",
    "rule": "kept where its validation log loss is lower",
    "validation": {
        "model": {"accuracy": 0.9, "macro_f1": 0.89, "loss": 0.3},
        "baseline": {"accuracy": 0.88, "macro_f1": 0.87, "loss": 0.4},
        "ensemble": {"accuracy": 0.92, "macro_f1": 0.91, "loss": 0.25},
    },
    "test": {
        "model": {"accuracy": 0.91, "macro_f1": 0.9, "loss": 0.28},
        "baseline": {"accuracy": 0.87, "macro_f1": 0.86, "loss": 0.41},
        "ensemble": {"accuracy": 0.93, "macro_f1": 0.92, "loss": 0.22},
    },
    "mcnemar": {
        "model": {"only_ensemble_right": 30, "only_other_right": 10, "p_value": 0.002},
        "baseline": {"only_ensemble_right": 5, "only_other_right": 5, "p_value": 1.0},
    },
}


def test_the_section_sets_model_baseline_and_ensemble_side_by_side():
    blocks = ensemble_blocks([run_of("a", ensemble=ENSEMBLE)])
    assert isinstance(blocks[0], Heading) and blocks[0].text == SECTION_ENSEMBLE
    (table,) = [block for block in blocks if isinstance(block, Table)]
    assert [row[0].text for row in table.rows] == ["model alone", "TF-IDF baseline", "ensemble"]
    assert table.header[1] == "validation accuracy" and "test loss" in table.header
    assert table.rows[2][table.header.index("test accuracy")].text == "0.9300"
    prose = "\n".join(block.text for block in blocks if isinstance(block, Paragraph))
    assert "kept, weight 0.60 on the model" in prose
    assert "ensemble vs model alone: only the ensemble right on 30" in prose and "p = 0.002" in prose
    assert "ensemble vs TF-IDF baseline" in prose and "may be chance" in prose


def test_a_run_without_the_ensemble_adds_no_section_and_one_not_kept_says_why():
    assert ensemble_blocks([run_of("a")]) == []
    record = {"setting": "auto", "kept": False, "reason": "no baseline was fitted (eval.baseline)"}
    markdown = render_markdown(build_report([run_of("a", ensemble=record)])[1])
    assert f"## {SECTION_ENSEMBLE}" in markdown and "not kept: no baseline was fitted" in markdown
