"""Writing report files: the Markdown and HTML report for some runs, and a run's confusion-matrix image."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pipeline.common.io import atomic_path, atomic_write_text
from pipeline.report import plots
from pipeline.report.render import render_html, render_markdown
from pipeline.report.runs import directory_name, load_runs, unique_names
from pipeline.report.sections import build_report
from pipeline.run.directory import REPORT_HTML, REPORT_MARKDOWN


def write_report(
    run_dirs: Sequence[str | Path], output_dir: str | Path, final_dirs: Sequence[Path] | None = None
) -> tuple[Path, Path]:
    """Write the Markdown and HTML reports into output_dir; return their paths. `final_dirs`: where each run
    directory will be once in place, for a folder still being written under a staging name."""
    if isinstance(run_dirs, (str, Path)):  # a lone path would otherwise be taken as a sequence of characters
        run_dirs = [run_dirs]
    runs = load_runs(list(run_dirs))
    for run, final in zip(runs, final_dirs or []):
        run.name, run.path = directory_name(Path(final)), Path(final)
    title, blocks = build_report(runs)
    output_dir = Path(output_dir)
    markdown_path, html_path = output_dir / REPORT_MARKDOWN, output_dir / REPORT_HTML
    atomic_write_text(markdown_path, render_markdown(blocks))
    atomic_write_text(html_path, render_html(title, blocks))
    return markdown_path, html_path


def default_output_dir(run_dirs: Sequence[str | Path]) -> Path:
    """reports/<run names joined by _vs_>."""
    names = unique_names([Path(run_dir) for run_dir in run_dirs])
    return Path("reports") / "_vs_".join(name.replace("/", "-") for name in names)


def plot_confusion_matrix(
    matrix: Sequence[Sequence[float]] | np.ndarray, labels: Sequence[str], path: str | Path, title: str | None = None
) -> Path:
    """Write a labelled confusion-matrix PNG (rows: true class, columns: predicted) atomically to `path`: a reader never
    sees a half-written image."""
    with atomic_path(Path(path)) as temp_path:
        plots.confusion_matrix_figure(matrix, labels, title).savefig(temp_path, **plots.SAVE_OPTIONS)
    return Path(path)
