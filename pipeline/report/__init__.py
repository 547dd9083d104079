"""Evaluation reports for one or more run directories: a Markdown report and a self-contained HTML one.

    python -m pipeline.report runs/ag_news_bert runs/ag_news_encoder --output reports/bert_vs_encoder

    from pipeline.report import write_report
    markdown_path, html_path = write_report(["runs/ag_news_bert", "runs/ag_news_encoder"], "reports/bert_vs_encoder")

Reports read only what a run directory holds (through `pipeline.run.directory`), so runs trained on another machine
can be compared anywhere. `runs` loads them, `sections` builds the blocks (with `verdict`, `summary`, `removed`,
`scores`, `caveats`, `analysis`), `render` turns them into Markdown and HTML, `write` writes the files.
"""

from __future__ import annotations

from pipeline.report.analysis import (
    MAX_MISTAKE_ROWS,
    Comparison,
    Comparisons,
    compare_predictions,
    compare_where_possible,
    mcnemar_exact_p,
    most_confident_mistakes,
    threshold_mistakes,
)
from pipeline.report.blocks import Block, Cell, Chart, Heading, Images, Paragraph, Table
from pipeline.report.formatting import (
    MAX_TEXT_CHARS,
    MISSING,
    format_count,
    format_duration,
    format_percent,
    format_rate,
    format_score,
)
from pipeline.report.render import render_html, render_markdown
from pipeline.report.runs import Run, load_run, load_runs
from pipeline.report.sections import (
    MAX_DISAGREEMENT_ROWS,
    SECTION_CONFUSION,
    SECTION_CURVES,
    SECTION_DISAGREEMENTS,
    SECTION_MISTAKES,
    SECTION_PER_CLASS,
    build_report,
    eval_curve,
)
from pipeline.report.summary import SECTION_SUMMARY
from pipeline.report.write import default_output_dir, plot_confusion_matrix, write_report
from pipeline.run.directory import RunDirError as ReportError
from pipeline.run.directory import RunDirWarning as ReportWarning

__all__ = [
    "MAX_DISAGREEMENT_ROWS",
    "MAX_MISTAKE_ROWS",
    "MAX_TEXT_CHARS",
    "MISSING",
    "SECTION_CONFUSION",
    "SECTION_CURVES",
    "SECTION_DISAGREEMENTS",
    "SECTION_MISTAKES",
    "SECTION_PER_CLASS",
    "SECTION_SUMMARY",
    "Block",
    "Cell",
    "Chart",
    "Comparison",
    "Comparisons",
    "Heading",
    "Images",
    "Paragraph",
    "ReportError",
    "ReportWarning",
    "Run",
    "Table",
    "build_report",
    "compare_predictions",
    "compare_where_possible",
    "default_output_dir",
    "eval_curve",
    "format_count",
    "format_duration",
    "format_percent",
    "format_rate",
    "format_score",
    "load_run",
    "load_runs",
    "mcnemar_exact_p",
    "most_confident_mistakes",
    "plot_confusion_matrix",
    "render_html",
    "render_markdown",
    "threshold_mistakes",
    "write_report",
]
