"""What a search leaves in its study folder: best.yaml (the best trial's config, to run as it is), trials.csv, and
report.html with its figures (the optimisation history, each parameter's importance, parallel coordinates)."""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.common.errors import one_line
from pipeline.common.io import atomic_path, atomic_write_csv, atomic_write_text
from pipeline.config.load import save_config
from pipeline.config.schema import PipelineConfig
from pipeline.report.render import STYLESHEET

logger = logging.getLogger(__name__)

BEST_CONFIG, TRIALS_TABLE, REPORT = "best.yaml", "trials.csv", "report.html"
FIGURES = {"history": "history.png", "importance": "importance.png", "parallel": "parallel.png"}


@dataclass
class TrialRow:
    """One row of trials.csv and of the report's table."""

    number: int
    state: str
    value: float | None
    seconds: float | None
    params: dict[str, Any]
    error: str

    @classmethod
    def of(cls, trial: Any) -> TrialRow:
        attrs = trial.user_attrs
        return cls(
            trial.number,
            trial.state.name.lower(),
            trial.value,
            attrs.get("seconds"),
            trial.params,
            attrs.get("error", ""),
        )


def shown_parameters(params: dict[str, Any]) -> str:
    """A trial's parameters for a sentence: `train.learning_rate=3.13e-05, train.epochs=2`."""
    return ", ".join(
        f"{key}={value:.3g}" if isinstance(value, float) else f"{key}={value}" for key, value in params.items()
    )


def trial_rows(study: Any) -> list[TrialRow]:
    return [TrialRow.of(trial) for trial in study.get_trials(deepcopy=False)]


def write_trials_table(rows: list[TrialRow], keys: list[str], path: Path) -> None:
    header = ["trial", "state", "value", "seconds", *keys, "error"]
    table = [[r.number, r.state, r.value, r.seconds, *(r.params.get(k) for k in keys), r.error] for r in rows]
    atomic_write_csv(path, header, table)


def write_best_config(config: PipelineConfig, path: Path, run_name: str, output_dir: str) -> None:
    """The best trial's config, named and placed as a run of its own, with the evaluation settings trials skip."""
    config.run.name, config.run.output_dir, config.run.overwrite = run_name, output_dir, False
    save_config(config, path)


def importances(study: Any) -> dict[str, float]:
    """Each parameter's importance (Optuna's fANOVA); empty with fewer than two completed trials, or one value."""
    import optuna

    try:
        return dict(optuna.importance.get_param_importances(study))
    except (RuntimeError, ValueError) as error:
        logger.info(f"Parameter importances not computed: {one_line(error)}")
        return {}


def plot_figures(study: Any, folder: Path, scores: dict[str, float]) -> list[str]:
    """The report's figures as PNG files; the names written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna

    written = []
    values = [(t.number, t.value) for t in study.get_trials(deepcopy=False) if t.value is not None]
    figure, axes = plt.subplots(figsize=(6, 3.5))
    if values:
        numbers, scores_seen = zip(*values)
        best = [max(scores_seen[: i + 1]) for i in range(len(scores_seen))]
        axes.plot(numbers, scores_seen, "o", label="trial")
        axes.step(numbers, best, where="post", label="best so far")
        axes.legend()
    axes.set(xlabel="trial", ylabel="validation score", title="Optimisation history")
    written.append(_save(figure, folder / FIGURES["history"]))
    if scores:
        figure, axes = plt.subplots(figsize=(6, 0.5 + 0.5 * len(scores)))
        axes.barh(list(scores)[::-1], list(scores.values())[::-1])
        axes.set(xlabel="importance (fANOVA)", title="Parameter importance")
        written.append(_save(figure, folder / FIGURES["importance"]))
    if len(values) >= 2:
        try:
            axes = optuna.visualization.matplotlib.plot_parallel_coordinate(study)
            written.append(_save(axes.figure, folder / FIGURES["parallel"]))
        except (ValueError, ImportError) as error:
            logger.info(f"Parallel coordinates not drawn: {one_line(error)}")
    plt.close("all")
    return written


def _save(figure: Any, path: Path) -> str:
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format="png", dpi=100)
    return path.name


def write_report(
    folder: Path, title: str, rows: list[TrialRow], keys: list[str], summary: list[str], study: Any
) -> None:
    """report.html: the summary, each trial's parameters, score, time and state, importances and the figures."""
    scores = importances(study)
    figures = plot_figures(study, folder, scores)

    def cell(value: Any) -> str:
        return html.escape("" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value))

    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["trial", "state", "score", "seconds", *keys, "error"])
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{cell(v)}</td>"
            for v in [r.number, r.state, r.value, r.seconds, *(r.params.get(k) for k in keys), r.error]
        )
        + "</tr>"
        for r in rows
    )
    ranked = (
        "".join(f"<li>{html.escape(k)}: {v:.3f}</li>" for k, v in scores.items())
        or "<li>not enough completed trials</li>"
    )
    images = "".join(f'<p><a href="{name}"><img src="{name}" alt="{name}"></a></p>' for name in figures)
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in summary)
    page = (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLESHEET}</style></head><body><main>"
        f"<h1>{html.escape(title)}</h1><ul>{lines}</ul><p><a href='{BEST_CONFIG}'>{BEST_CONFIG}</a> · "
        f"<a href='{TRIALS_TABLE}'>{TRIALS_TABLE}</a></p><h2>Trials</h2><table><tr>{head}</tr>{body}</table>"
        f"<h2>Parameter importance</h2><ul>{ranked}</ul><h2>Figures</h2>{images}</main></body></html>"
    )
    atomic_write_text(folder / REPORT, page)
