"""Charts (pipeline/plots.py): names from the data are drawn as written, and big label sets stay bounded."""

import time

import numpy as np

from pipeline.plots import MAX_PLOTTED_CLASSES, confusion_matrix_figure, figure_to_png, per_class_f1_figure
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


def test_markdown_from_data_cannot_add_links_or_images():
    escaped = _md_escape("see [here](http://x.example) ![img](http://x.example/a.png) | <b>")
    assert "](" not in escaped.replace("\\]", "") and "<b>" not in escaped and "\\|" in escaped
