"""Loading run directories for a report: one `Run` per directory, read through `pipeline.run.directory.RunDir`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.config.schema import DataConfig
from pipeline.run.directory import RunDir, RunDirError, config_setting
from pipeline.run.record import Chosen, RunRecord, is_number
from pipeline.scoring.thresholds import DEFAULT_THRESHOLD

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Run:
    """Everything a report needs from one run directory."""

    name: str
    path: Path
    config: dict[str, Any]
    metrics: RunRecord
    history: list[dict[str, Any]]
    predictions: pd.DataFrame | None
    # What was skipped while loading (e.g. a truncated history line); shown at the top of the report.
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.metrics, dict):
            self.metrics = RunRecord.from_dict(self.metrics)

    @property
    def labels(self) -> list[str]:
        return self.metrics.labels

    @property
    def multi_label(self) -> bool:
        return self.metrics.multi_label

    @property
    def ranking_metric(self) -> str:
        return self.metrics.ranking_metric

    def label_values(self, column: str) -> list[str] | list[frozenset[str]]:
        """A label column of the test predictions comparable across runs: class names, or class sets (runs may join
        their sets with different separators)."""
        values = self.predictions[column].astype(str).tolist()
        if not self.multi_label:
            return values
        separator = config_setting(self.config, "data", "label_separator") or DataConfig().label_separator
        return [frozenset(value.split(separator)) if value else frozenset() for value in values]

    def test_confusion_matrix(self) -> list[list[float]] | None:
        """metrics.json's test confusion matrix ([true][predicted]); None where absent or not a square of that size."""
        matrix, size = self.metrics.test.confusion_matrix, len(self.labels)
        valid = (
            isinstance(matrix, list)
            and len(matrix) == size
            and all(isinstance(row, list) and len(row) == size and all(map(is_number, row)) for row in matrix)
        )
        return matrix if valid else None

    def threshold(self, name: str) -> float:
        """The class's decision threshold; the default where none was chosen."""
        value = ((self.metrics.thresholds and self.metrics.thresholds.thresholds) or {}).get(name)
        return float(value) if is_number(value) else DEFAULT_THRESHOLD

    def chosen(self, name: str) -> Chosen | None:
        chosen = ((self.metrics.thresholds and self.metrics.thresholds.chosen) or {}).get(name)
        return chosen if isinstance(chosen, Chosen) else None

    def thresholded_classes(self) -> list[str]:
        """The classes a threshold decides: every class of a multi-label run, the positive one of a binary one."""
        if self.multi_label:
            return self.labels
        return self.labels[1:] if len(self.labels) == 2 else []


def num_test_samples(run: Run) -> Any:
    """The rows its test figures were measured on: metrics.json's count, else test_predictions.csv's rows."""
    if is_number(run.metrics.test.num_samples):
        return run.metrics.test.num_samples
    return len(run.predictions) if run.predictions is not None else None


def load_run(run_dir: str | Path) -> Run:
    path = Path(run_dir)
    directory = RunDir(path)
    directory.check_finished()
    config, record, notes = directory.read_config(), directory.read_record(), []
    history, predictions = directory.read_history(notes), directory.read_predictions(notes)
    return Run(directory_name(path), path, config, record, history, predictions, notes)


def load_runs(run_dirs: Sequence[str | Path]) -> list[Run]:
    """load_run for each directory, renamed where two share a name."""
    if not run_dirs:
        raise RunDirError("no run directories given")
    runs = [load_run(run_dir) for run_dir in run_dirs]
    for run, name in zip(runs, unique_names([run.path for run in runs])):
        run.name = name
    return runs


def directory_name(path: Path) -> str:
    return path.name or path.resolve().name


def unique_names(paths: Sequence[Path]) -> list[str]:
    names = [directory_name(path) for path in paths]
    if len(set(names)) == len(names):
        return names
    qualified = [f"{path.resolve().parent.name}/{name}" for path, name in zip(paths, names)]
    if len(set(qualified)) == len(qualified):
        return qualified
    return [f"{name} ({index + 1})" for index, name in enumerate(names)]


def model_of(run: Run) -> str:
    """The run's model, or for a pipeline.evaluate folder, that of the run it scored."""
    return str((run.metrics.evaluation and run.metrics.evaluation.model) or run.path.resolve())


def one_model(runs: Sequence[Run]) -> bool:
    """Whether the runs are one model scored on several files: set side by side, never ranked."""
    return len(runs) > 1 and len({model_of(run) for run in runs}) == 1


def same_task(runs: Sequence[Run]) -> bool:
    """Whether the runs do one task (one set of classes, all single- or all multi-label), so their scores compare."""
    return len({(frozenset(run.labels), run.multi_label) for run in runs}) <= 1


def ranks_models(runs: Sequence[Run]) -> bool:
    """Whether the report ranks the runs: several models on one task."""
    return len(runs) > 1 and not one_model(runs) and same_task(runs)


def repeats_its_run(run: Run, runs: Sequence[Run]) -> bool:
    """A pipeline.evaluate folder shown beside the run it scored: its training records are that run's, said once."""
    return run.metrics.evaluation is not None and any(
        other is not run and other.metrics.evaluation is None and model_of(other) == model_of(run) for other in runs
    )
