"""Charts (pipeline/report/plots.py): names from the data are drawn as written, and big label sets stay bounded."""

import time
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import RendererAgg

from pipeline.report.plots import (
    MAX_PLOTTED_CLASSES,
    MAX_TICK_CHARACTERS,
    EvalCurve,
    OperatingCurve,
    confusion_matrix_figure,
    figure_to_png,
    operating_curves_figure,
    per_class_f1_figure,
    reliability_figure,
    validation_curves_figure,
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


def long_names(count: int, length: int = 28) -> list[str]:
    return [f"class {i} of a long name that goes on"[:length] for i in range(count)]


def curve(name: str, offset: float = 0.0) -> OperatingCurve:
    grid = np.linspace(0, 1, 11)
    return OperatingCurve(name, grid, np.sqrt(grid), grid, 1 - grid / 2 + offset / 10, 0.81, 0.77, (0.2, 0.6, 0.8))


# One figure of each kind plots.py draws, with the names that crowd its edges.
FIGURES = {
    "confusion 4 short": lambda: confusion_matrix_figure(np.eye(4) * 9, ["n0 a", "n1 b", "n2 c", "n3 d"], "run"),
    "confusion 4 ag news": lambda: confusion_matrix_figure(np.eye(4) * 9, ["World", "Sports", "Business", "Sci/Tech"]),
    "confusion 2 tiny": lambda: confusion_matrix_figure([[5, 1], [2, 7]], ["a", "b"], "a title longer than its image"),
    "confusion 12 long": lambda: confusion_matrix_figure(np.eye(12) * 9 + 1, long_names(12), "run with long names"),
    "confusion 40 long": lambda: confusion_matrix_figure(np.eye(40) * 9 + 1, long_names(40, 45), "many"),
    "per-class F1 long": lambda: per_class_f1_figure(long_names(12), {"run a": [0.5] * 12, "run b": [0.9] * 12}),
    "per-class F1 short": lambda: per_class_f1_figure(["a", "b"], {"a run with a long name": [0.5, None]}),
    "validation curves": lambda: validation_curves_figure(
        [
            EvalCurve("run a", [10, 20, 30], [5.0, 10.0, 15.0], [0.5, 0.7, 0.8], best_step=30),
            EvalCurve("run b", [10, 20], [None, 400.0], [0.4, 0.6], metric="macro_f1", metric_name="macro-F1"),
        ]
    ),
    "operating curves": lambda: operating_curves_figure([curve("World"), curve("Sci/Tech", 1)], title="run (test)"),
    "reliability": lambda: reliability_figure(
        [{"count": 3, "confidence": 0.6, "accuracy": 0.5}, {"count": 9, "confidence": 0.9, "accuracy": 0.95}],
        [{"count": 3, "confidence": 0.55, "accuracy": 0.5}],
        0.0812,
        0.0104,
        title="a run (test)",
    ),
}


@pytest.mark.parametrize("make", FIGURES.values(), ids=FIGURES.keys())
def test_every_text_of_a_figure_lies_inside_its_saved_image(make, monkeypatch):
    """The confusion matrix's "true class" fell off the left edge of its PNG (constrained layout beside the colour
    bar): every text a figure draws into its saved image must lie inside it. The texts are recorded as the saving
    call renders them (not in its layout passes, which draw nothing), in the saved image's pixels."""
    drawn = []
    draw_text = RendererAgg.draw_text

    def record(renderer, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        draw_text(renderer, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
        if mtext is not None:
            drawn.append((mtext.get_text(), mtext.get_window_extent(renderer)))

    monkeypatch.setattr(RendererAgg, "draw_text", record)
    png = figure_to_png(make())
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")  # the PNG's IHDR
    assert drawn and width > 100 and height > 100
    outside = [
        (text, [round(value) for value in extent.extents])
        for text, extent in drawn
        if extent.x0 < -1 or extent.y0 < -1 or extent.x1 > width + 1 or extent.y1 > height + 1
    ]
    assert not outside, f"texts outside the {width} x {height} image: {outside}"
