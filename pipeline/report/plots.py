"""Figures for evaluation reports, drawn on `matplotlib.figure.Figure` objects: unlike pyplot, they need no backend
and leave no global figure registry behind (reports are made inside training processes and notebooks)."""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.common.errors import shorten

if TYPE_CHECKING:  # matplotlib loads where a figure is drawn: `pipeline.finetune` starts without it
    from matplotlib.figure import Figure

# Rendered at 1.5x the CSS size so charts stay sharp on high-density screens.
PNG_DPI = 144
# Cropped to the drawn texts: constrained layout alone let the confusion matrix's "true class" fall off the image.
SAVE_OPTIONS = {"format": "png", "dpi": PNG_DPI, "bbox_inches": "tight", "pad_inches": 0.08}
_RUN_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


# Above this many classes, charts show the most frequent ones only: a 2,000-class matrix takes minutes to draw.
MAX_PLOTTED_CLASSES = 30
# Characters of a class name on an axis (a long one pushes the plot off its image); tables give names in full.
MAX_TICK_CHARACTERS = 40


def shown_classes(matrix: Sequence[Sequence[float]] | np.ndarray) -> list[int]:
    """The classes a confusion matrix shows, in class order: above MAX_PLOTTED_CLASSES, those with most true rows."""
    totals = np.asarray(matrix, dtype=float).sum(axis=1)
    if len(totals) <= MAX_PLOTTED_CLASSES:
        return list(range(len(totals)))
    return sorted(np.argsort(-totals, kind="stable")[:MAX_PLOTTED_CLASSES].tolist())


def literal(text: object) -> str:
    """Text from the data or the config shown as written: a "$" would otherwise start matplotlib's mathtext."""
    return str(text).replace("$", r"\$")


def run_color(index: int) -> str:
    return _RUN_COLORS[index % len(_RUN_COLORS)]


@dataclass
class EvalCurve:
    """A validation metric of one run, from the evaluation lines of its history.jsonl."""

    run_name: str
    steps: list[float]
    elapsed_seconds: list[float | None]
    values: list[float]
    best_step: int | None = None
    metric: str = "accuracy"  # the history key after eval_
    metric_name: str = "accuracy"  # as a reader sees it


def new_figure(**options: Any) -> Figure:
    """A matplotlib Figure, constrained layout; matplotlib is imported here, on the first figure drawn."""
    from matplotlib.figure import Figure

    return Figure(**options, layout="constrained")


def figure_to_png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, **SAVE_OPTIONS)
    return buffer.getvalue()


def confusion_matrix_figure(
    matrix: Sequence[Sequence[float]] | np.ndarray, labels: Sequence[str], title: str | None = None
) -> Figure:
    """Counts in the cells, colour by share of the true class (row-normalised) so rare classes stay readable."""
    from matplotlib.ticker import PercentFormatter

    counts = np.asarray(matrix, dtype=float)
    if counts.ndim != 2 or counts.shape != (len(labels), len(labels)):
        raise ValueError(f"confusion matrix of shape {counts.shape} does not match {len(labels)} labels")
    labels = [literal(shorten(label, MAX_TICK_CHARACTERS)) for label in labels]
    if len(labels) > MAX_PLOTTED_CLASSES:
        keep = shown_classes(counts)
        counts, labels = counts[np.ix_(keep, keep)], [labels[index] for index in keep]
        title = f"{title or ''} ({MAX_PLOTTED_CLASSES} most frequent classes)".strip()
    row_totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, row_totals, out=np.zeros_like(counts), where=row_totals > 0)

    num_classes = len(labels)
    side_inches = min(12.0, max(4.8, 0.75 * num_classes + 2.6))
    figure = new_figure(figsize=(side_inches + 0.9, side_inches))
    axes = figure.add_subplot()
    image = axes.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0)
    colorbar = figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    colorbar.set_label("share of the true class")
    colorbar.ax.yaxis.set_major_formatter(PercentFormatter(1.0))

    cell_font_size = 11 if num_classes <= 6 else 9 if num_classes <= 12 else 7
    for row in range(num_classes):
        for column in range(num_classes):
            text_color = "white" if shares[row, column] > 0.55 else "#1a1a1a"
            count = f"{int(round(counts[row, column])):,}"
            axes.text(column, row, count, ha="center", va="center", color=text_color, fontsize=cell_font_size)

    axes.set_xticks(range(num_classes), labels=labels)
    axes.set_yticks(range(num_classes), labels=labels)
    longest_label = max((len(label) for label in labels), default=0)
    if longest_label * num_classes > 36:
        axes.tick_params(axis="x", labelrotation=35)
        for tick_label in axes.get_xticklabels():
            tick_label.set_horizontalalignment("right")
            tick_label.set_rotation_mode("anchor")
    axes.set(xlabel="predicted class", ylabel="true class")
    if title:
        axes.set_title(literal(title))
    return figure


def shared_metric_name(curves: Sequence[EvalCurve]) -> str | None:
    """The name of the metric every curve is drawn in, if they share one."""
    names = {curve.metric_name for curve in curves}
    return names.pop() if len(names) == 1 else None


def validation_curves_figure(curves: Sequence[EvalCurve]) -> Figure:
    """Each run's validation metric against optimizer steps (left) and training time (right); curves in different
    metrics share the axis (each a share from 0 to 1) and name their metric in the legend."""
    from matplotlib.ticker import MaxNLocator

    shared = shared_metric_name(curves)
    figure = new_figure(figsize=(11.0, 4.2))
    by_step, by_time = figure.subplots(1, 2, sharey=True)
    longest_seconds = max((s for curve in curves for s in curve.elapsed_seconds if s is not None), default=0.0)
    time_unit, time_divisor = ("min", 60.0) if longest_seconds > 180 else ("s", 1.0)

    for index, curve in enumerate(curves):
        color = run_color(index)
        marker = "o" if len(curve.steps) <= 40 else None
        label = literal(curve.run_name if shared else f"{curve.run_name} ({curve.metric_name})")
        by_step.plot(curve.steps, curve.values, color=color, marker=marker, markersize=3.5, label=label)
        timed = [(s / time_divisor, a) for s, a in zip(curve.elapsed_seconds, curve.values) if s is not None]
        if timed:
            by_time.plot(*zip(*timed), color=color, marker=marker, markersize=3.5, label=label)
        if curve.best_step in curve.steps:  # a star on the evaluation whose model was kept
            index = curve.steps.index(curve.best_step)
            star = dict(marker="*", markersize=13, color=color, markeredgecolor="black", markeredgewidth=0.6, zorder=5)
            by_step.plot([curve.steps[index]], [curve.values[index]], **star)
            if curve.elapsed_seconds[index] is not None:
                by_time.plot([curve.elapsed_seconds[index] / time_divisor], [curve.values[index]], **star)

    by_step.set_xlabel("optimizer step")
    by_step.set_ylabel(f"validation {shared}" if shared else "validation metric that selected each model")
    by_step.xaxis.set_major_locator(MaxNLocator(integer=True))
    by_time.set_xlabel(f"training time ({time_unit})")
    # Steps of 1, 2 or 5 (times a power of ten) keep _percent_ticks' decimal count exact.
    by_step.yaxis.set_major_locator(MaxNLocator(nbins=7, steps=[1, 2, 5, 10]))
    if all(curve.metric == "accuracy" for curve in curves):
        by_step.yaxis.set_major_formatter(_percent_ticks(by_step.yaxis))
    for axes in (by_step, by_time):
        axes.grid(alpha=0.3)
    by_step.legend(loc="lower right", fontsize=9)
    return figure


def _percent_ticks(axis: Any) -> Callable[[float, int | None], str]:
    """Fractions as percents with as many decimals as the axis's tick step needs: 80%, or 80.5% on a narrow range."""

    def percent(value: float, pos: int | None = None) -> str:
        ticks = np.asarray(axis.get_majorticklocs(), dtype=float)
        steps = np.diff(ticks) if len(ticks) > 1 else np.array([1.0])
        step_points = 100 * float(np.min(np.abs(steps))) or 1.0
        decimals = max(0, -math.floor(math.log10(step_points) + 1e-9))
        return f"{100 * value:.{decimals}f}%"

    return percent


def per_class_f1_figure(labels: Sequence[str], f1_by_run: Mapping[str, Sequence[float | None]]) -> Figure:
    """Grouped bars, one group per class (the first MAX_PLOTTED_CLASSES: callers order them), one bar per run."""
    if len(labels) > MAX_PLOTTED_CLASSES:
        labels = list(labels[:MAX_PLOTTED_CLASSES])
        f1_by_run = {name: list(values[:MAX_PLOTTED_CLASSES]) for name, values in f1_by_run.items()}
    num_classes, num_runs = len(labels), max(1, len(f1_by_run))
    width_inches = min(16.0, max(6.5, 0.55 * num_classes * num_runs + 2.5))
    figure = new_figure(figsize=(width_inches, 4.2))
    axes = figure.add_subplot()
    group_positions = np.arange(num_classes)
    bar_width = 0.8 / num_runs
    show_values = num_classes * num_runs <= 32
    for index, (run_name, f1_values) in enumerate(f1_by_run.items()):
        offsets = group_positions + (index - (num_runs - 1) / 2) * bar_width
        heights = [np.nan if value is None else value for value in f1_values]
        bars = axes.bar(offsets, heights, width=bar_width, color=run_color(index), label=literal(run_name))
        if show_values:
            axes.bar_label(bars, labels=["" if np.isnan(h) else f"{h:.2f}" for h in heights], fontsize=8, padding=2)
    axes.set_xticks(group_positions, labels=[literal(shorten(label, MAX_TICK_CHARACTERS)) for label in labels])
    if max((len(label) for label in labels), default=0) * num_classes > 60:
        axes.tick_params(axis="x", labelrotation=30)
    axes.set(ylim=(0.0, 1.08), ylabel="F1 on test")
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    # Legend above the axes: inside, it would cover the bars of high-F1 classes.
    axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(num_runs, 4), frameon=False, fontsize=9)
    return figure


@dataclass
class OperatingCurve:
    """One class's ROC and precision-recall curves on the test split, with the chosen threshold's point."""

    name: str
    false_positive_rate: np.ndarray
    true_positive_rate: np.ndarray
    recall: np.ndarray
    precision: np.ndarray
    roc_auc: float
    average_precision: float
    # (false positive rate, recall, precision) at the decision threshold; precision None where it labels no row.
    point: tuple[float, float, float | None] | None = None


def operating_curves_figure(curves: Sequence[OperatingCurve], title: str | None = None) -> Figure:
    """ROC (left) and precision-recall (right) curves, one line per class; a dot marks the operating point."""
    figure = new_figure(figsize=(11.0, 4.4))
    roc, pr = figure.subplots(1, 2)
    for index, curve in enumerate(curves):
        color = run_color(index)
        name = literal(curve.name)
        roc_label = f"{name} (AUC {curve.roc_auc:.3f})"
        roc.plot(curve.false_positive_rate, curve.true_positive_rate, color=color, label=roc_label)
        pr.plot(curve.recall, curve.precision, color=color, label=f"{name} (AP {curve.average_precision:.3f})")
        if curve.point is not None:
            fpr, recall, precision = curve.point
            dot = dict(marker="o", markersize=8, color=color, markeredgecolor="black", markeredgewidth=0.8, zorder=5)
            roc.plot([fpr], [recall], **dot)
            if precision is not None:
                pr.plot([recall], [precision], **dot)
    roc.plot([0, 1], [0, 1], color="#999999", linestyle=":", linewidth=1)
    roc.set(xlabel="false positive rate", ylabel="true positive rate (recall)")
    pr.set(xlabel="recall", ylabel="precision")
    for axes in (roc, pr):
        axes.set(xlim=(0, 1), ylim=(0, 1.02))
        axes.grid(alpha=0.3)
        axes.legend(loc="lower right" if axes is roc else "lower left", fontsize=8)
    if title:
        figure.suptitle(literal(title))
    return figure


def reliability_figure(
    before: Sequence[Mapping],
    after: Sequence[Mapping],
    ece_before: float | None,
    ece_after: float | None,
    title: str | None = None,
) -> Figure:
    """Accuracy against mean confidence per bin (metrics.json's records), before and after calibration."""
    figure = new_figure(figsize=(5.6, 4.8))
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color="#999999", linestyle=":", linewidth=1, label="perfectly calibrated")
    for bins, ece, color, name in (
        (before, ece_before, run_color(1), "before"),
        (after, ece_after, run_color(0), "after"),
    ):
        points = [(b["confidence"], b["accuracy"]) for b in bins if b.get("count")]
        if not points:
            continue
        label = f"{name} (ECE {ece:.4f})" if ece is not None else name
        axes.plot(*zip(*points), color=color, marker="o", markersize=4, label=label)
    axes.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="mean confidence in bin", ylabel="accuracy in bin")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", fontsize=8)
    if title:
        axes.set_title(literal(title))
    return figure
