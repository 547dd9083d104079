"""How fast the prediction path labels texts (`prediction_speed`): rows per second through `Predictor.infer`,
tokenization included, after one warm-up batch (the first pass pays one-off costs a long job does not).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

from pipeline.config.schema import EvalConfig
from pipeline.predict.predictor import Predictor
from pipeline.predict.source import PredictError, resolve_model_source
from pipeline.run.directory import PREDICTION_TEXT, RunDir, RunDirError
from pipeline.run.record import Throughput

logger = logging.getLogger("pipeline")


def warm_up(predictor: Predictor, texts: Sequence[str]) -> None:
    predictor.infer(list(texts[: predictor.batch_size]))


def speed_record(predictor: Predictor, rows: int, seconds: float) -> Throughput:
    """metrics.json's throughput entries for `rows` texts labelled in `seconds`, and what ran."""
    backend = predictor.backend_name
    return Throughput(
        predict_rows_per_second=rows / max(seconds, 1e-9),
        predict_rows_timed=rows,
        predict_backend=backend if backend != "torch" else f"torch-{predictor.precision}",
    )


def prediction_speed(predictor: Predictor, texts: Sequence[str]) -> Throughput | None:
    """Rows/s of `predictor.infer` over `texts` (after one warm-up batch), and what ran; None without texts."""
    texts = list(texts)
    if not texts:
        return None
    warm_up(predictor, texts)
    tick = time.perf_counter()
    predictor.infer(texts)
    return speed_record(predictor, len(texts), time.perf_counter() - tick)


def end_of_run_speed(run_dir: Path, texts: Sequence[str], max_length: int) -> Throughput | None:
    """Rows/s of the prediction path on a run's first test `texts`, with the saved model as users will load it;
    None, with a warning, where it cannot load."""
    try:
        # Before metrics.json is written: the model is final (calibrated, with its thresholds), the run not yet.
        source = resolve_model_source(run_dir, require_finished=False)
        predictor = Predictor.from_source(source, max_length=max_length, backend="torch")
    except PredictError as error:
        logger.warning("Prediction speed not measured: %s", error)
        return None
    return prediction_speed(predictor, texts)


def record_run_speed(run_path: str | Path) -> float:
    """Measure a finished run's prediction speed on its own test texts and record it in its metrics.json; the rows/s."""
    run = RunDir(Path(run_path))
    run.check_finished()
    predictions = run.read_predictions()
    if predictions is None:
        raise RunDirError(f"{run.predictions_path}: missing, so there are no test texts to time")
    texts = predictions[PREDICTION_TEXT].head(EvalConfig().predict_speed_rows).tolist()
    record = run.read_record()
    record.throughput = record.throughput or Throughput()
    record.throughput.update(prediction_speed(Predictor.from_path(run.path, backend="torch"), texts))
    run.write_record(record)
    return record.throughput.predict_rows_per_second
