"""Charts (pipeline/report/plots.py): names from the data are drawn as written, and big label sets stay bounded."""

import time
from pathlib import Path

import numpy as np

from pipeline.report.plots import (
    MAX_PLOTTED_CLASSES,
    MAX_TICK_CHARACTERS,
    confusion_matrix_figure,
    figure_to_png,
    per_class_f1_figure,
)
from pipeline.report.render import _md_escape


def test_dollar_signs_in_names_are_not_mathtext():
    labels = ["$5 deals", "costs $$", "plain"]
    figure = confusion_matrix_figure(np.eye(3) * 4, labels, title="run $x$")
    assert figure_to_png(figure)[:4] == b"\x89PNG"  # an unmatched "$" would raise a mathtext ParseException
    assert [tick.get_text() for tick in figure.axes[0].get_xticklabels()] == [r"\$5 deals", r"costs \$\$", "plain"]
    assert figure_to_png(per_class_f1_figure(labels, {"run $1": [0.5, 0.6, None]}))[:4] == b"\x89PNG"


def test_thousands_of_classes_draw_the_most_frequent_only():
    rng = np.random.default_rng(0)
    matrix = rng.integers(0, 3, size=(2000, 2000))
    matrix[np.arange(2000), np.arange(2000)] += np.arange(2000)  # the last classes are the most frequent
    started = time.perf_counter()
    figure = confusion_matrix_figure(matrix, [f"class {i}" for i in range(2000)], title="many")
    png = figure_to_png(figure)
    assert time.perf_counter() - started < 30 and len(png) < 2_000_000
    shown = [tick.get_text() for tick in figure.axes[0].get_yticklabels()]
    assert len(shown) == MAX_PLOTTED_CLASSES and shown[-1] == "class 1999"
    assert "most frequent" in figure.axes[0].get_title()


def test_a_many_class_report_shows_in_markdown_and_bars_the_classes_the_image_shows():
    """200 classes made a 200 x 200 Markdown table (466 KB for 213 test rows) and 200 unreadable bars."""
    from pipeline.report.blocks import Paragraph, Table
    from pipeline.report.sections import _confusion_table

    size = MAX_PLOTTED_CLASSES + 10
    matrix = np.diag(np.arange(1, size + 1)).tolist()  # class i has i + 1 rows: the last ones are the most frequent
    labels = [f"c{i}" for i in range(size)]
    note, table = _confusion_table(matrix, labels)
    assert isinstance(note, Paragraph) and isinstance(table, Table)
    assert f"The {MAX_PLOTTED_CLASSES} classes with the most test rows, of {size}" in note.text
    assert table.header[1:] == labels[10:] and [row[0].text for row in table.rows] == labels[10:]
    assert all(len(row) == MAX_PLOTTED_CLASSES + 1 for row in table.rows)
    (whole,) = _confusion_table([row[:5] for row in matrix[:5]], labels[:5])  # few classes: every one, and no note
    assert whole.header[1:] == labels[:5]
    bars = per_class_f1_figure(labels, {"run": [0.5] * size})
    assert [tick.get_text() for tick in bars.axes[0].get_xticklabels()] == labels[:MAX_PLOTTED_CLASSES]


def test_markdown_from_data_cannot_add_links_or_images():
    escaped = _md_escape("see [here](http://x.example) ![img](http://x.example/a.png) | <b>")
    assert "](" not in escaped.replace("\\]", "") and "<b>" not in escaped and "\\|" in escaped


def test_a_long_class_name_is_shortened_on_the_axes_and_kept_whole_in_the_summary():
    """A 200-character class name pushed the confusion matrix off its image; the summary table still names it whole,
    and lists the MAX_PLOTTED_CLASSES largest classes' F1 with a row counting the rest."""
    from pipeline.report.runs import Run
    from pipeline.report.summary import summary_blocks

    long_name = "a very long class name " * 9
    labels = [long_name, "short"]
    figure = confusion_matrix_figure(np.array([[3, 1], [0, 4]]), labels)
    ticks = [tick.get_text() for tick in figure.axes[0].get_yticklabels()]
    assert ticks[0] == long_name[: MAX_TICK_CHARACTERS - 1] + "…" and ticks[1] == "short"
    bars = per_class_f1_figure(labels, {"run": [0.5, 0.7]})
    assert len(bars.axes[0].get_xticklabels()[0].get_text()) == MAX_TICK_CHARACTERS

    size = MAX_PLOTTED_CLASSES + 5
    names = [long_name] + [f"class {i}" for i in range(1, size)]
    per_class = {
        name: {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": size - i} for i, name in enumerate(names)
    }
    metrics = {"labels": names, "test": {"accuracy": 0.5, "macro_f1": 0.5, "num_samples": 100, "per_class": per_class}}
    run = Run(name="run", path=Path("run"), config={}, metrics=metrics, history=[], predictions=None)
    cells = [row[0].text for block in summary_blocks([run]) if hasattr(block, "rows") for row in block.rows]
    f1_rows = [text for text in cells if text.startswith("F1: ")]
    assert (
        f1_rows[0] == f"F1: {long_name}" and f1_rows[MAX_PLOTTED_CLASSES - 1] == f"F1: class {MAX_PLOTTED_CLASSES - 1}"
    )
    assert f1_rows[MAX_PLOTTED_CLASSES:] == ["F1: 5 smaller classes"]
