"""After stage 4, on the main process: the baseline, the ensemble, the label audit and the speed sample added to the
record; then metrics.json, the test predictions, the plots, the report and the model card written."""

from __future__ import annotations

import time

import datasets
import numpy as np

from pipeline.card.write import write_model_card
from pipeline.common import clock
from pipeline.config.schema import PipelineConfig
from pipeline.finetune.stages import Evaluated, Prepared
from pipeline.predict.speed import end_of_run_speed, export_speed, test_pass_speed
from pipeline.report import plot_confusion_matrix, write_report
from pipeline.run.directory import RunDir
from pipeline.run.exports import auto_backend
from pipeline.run.record import Baseline, RunRecord, Throughput
from pipeline.scoring.baseline import baseline_and_model
from pipeline.scoring.ensemble import add_ensemble
from pipeline.scoring.evaluation import EvalResult, write_predictions
from pipeline.scoring.label_audit import audit_training_run, document_means


def close_timings(config: PipelineConfig, record: RunRecord, start: float) -> None:
    """metrics.json rewritten with the whole process timed (the outputs, which follow its first writing, included),
    and the run's last line, which shows the split."""
    run, timings = RunDir(config.run_dir), record.timings
    timings.close(time.perf_counter() - start)
    run.write_record(record)
    print(
        f"Test {record.headline_scores}; trained at {record.throughput.train_samples_per_second:.1f} samples/s; total {record.timings.total_seconds:.0f} s ({record.timings.split}). Run directory: {run.path}"
    )


def finish_run(
    config: PipelineConfig,
    prepared: Prepared,
    record: RunRecord,
    evaluated: Evaluated,
    dynamics: np.ndarray | None,
    start: float,
) -> None:
    """Main process, after stage 4: the TF-IDF baseline, the ensemble with it (eval.ensemble), the label audit and
    the prediction path's speed added to the record, then metrics.json (timed up to it), the test predictions,
    reports and model card written."""
    timings, results = record.timings, evaluated.scoring.results
    with clock.timed(timings, "baseline_seconds"):  # on one CPU thread (nothing collective runs meanwhile)
        baseline, fitted = baseline_and_model(config.eval.baseline, prepared.data.splits, prepared.labels)
    record.baseline = Baseline.from_dict(baseline) if baseline is not None else None
    model_dir = RunDir(config.run_dir).model_dir
    with clock.timed(timings, "ensemble_seconds"):
        test = add_ensemble(config, prepared.data.splits, results, fitted, record, model_dir)
    costs = (record.timings.total_seconds, record.baseline.train_seconds if record.baseline else None)
    if dynamics is not None:  # windows of chunked documents -> their documents
        dynamics = document_means(dynamics, prepared.rows["train"].documents)
    splits, path = prepared.data.splits, RunDir(config.run_dir).label_issues_path
    with clock.timed(timings, "label_audit_seconds"):
        record.label_audit = audit_training_run(
            config.eval.label_audit, config.run.seed, splits, prepared.labels, dynamics, results, costs, path
        )
    split = prepared.data.splits["test"]
    if config.eval.predict_speed_rows:  # a pass of its own, through the prediction path as users load it
        texts = split.select(range(min(len(split), config.eval.predict_speed_rows)))["text"]
        with clock.timed(timings, "predict_speed_seconds"):
            record.throughput.update(end_of_run_speed(config.run_dir, texts, prepared.tokenization.max_length))
    else:  # no pass of its own
        record.throughput.update(
            run_speed(evaluated, len(split), timings.test_seconds, record.training.scoring_precision)
        )
    timings.close(time.perf_counter() - start)
    with clock.timed(timings, "outputs_seconds"):
        write_outputs(config, record, test, prepared.data.splits["test"])


def run_speed(evaluated: Evaluated, texts: int, seconds: float | None, torch_precision: str) -> Throughput | None:
    """The run's prediction speed at no cost of its own: the test pass's rate on what ran it. Under several
    processes the pass stays on PyTorch; where `--backend auto` chooses an export, its verification's rate instead."""
    export, backend = evaluated.export, evaluated.test_backend
    if export is not None and backend is None and auto_backend(export) != "torch":
        return export_speed(export)
    return test_pass_speed(texts, seconds, backend or f"torch-{torch_precision}")


def write_outputs(config: PipelineConfig, record: RunRecord, test: EvalResult, test_split: datasets.Dataset) -> None:
    run = RunDir(config.run_dir)
    run.write_record(record)
    if config.eval.save_predictions:
        write_predictions(run.predictions_path, test, test_split, record.labels, config.data.label_separator)
    if "confusion_matrix" in test.metrics:  # multi-label tasks have per-class counts instead
        plot_confusion_matrix(
            test.metrics["confusion_matrix"],
            record.labels,
            run.confusion_matrix_path,
            title=f"{config.run.name} (test)",
        )
    write_report([run.path], run.path)
    write_model_card(run.path)
