"""How fast the prediction path labels texts (`prediction_speed`): rows per second through `Predictor.infer`,
tokenization included, after one warm-up batch (the first pass pays one-off costs a long job does not).

At the end of a run the figure costs no pass of its own: it is the test pass's rate (`test_pass_speed`), on the export
`--backend auto` chooses where the run made one, or that export's rate as its verification timed it (`export_speed`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.predict.predictor import Predictor
from pipeline.predict.source import PredictError, resolve_model_source
from pipeline.run.directory import PREDICTION_TEXT, RunDir, RunDirError
from pipeline.run.exports import auto_backend, verification_rows_of
from pipeline.run.record import Throughput

logger = logging.getLogger("pipeline")

# Test texts `record_run_speed` times for a finished run.
RECORD_SPEED_ROWS = 512


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


def test_pass_speed(texts: int, seconds: float | None, backend: str) -> Throughput | None:
    """The test pass's texts per second (tokenized beforehand, on every process together), as the run's figure;
    `backend`: what ran it ("torch-fp32", "torch-bf16", or an export's backend name)."""
    if not texts or not seconds:
        return None
    return Throughput(predict_rows_per_second=texts / seconds, predict_rows_timed=texts, predict_backend=backend)


def export_speed(export: dict[str, Any]) -> Throughput | None:
    """From a run's export.json: the rows/s of the backend `--backend auto` chooses (PyTorch's own where it chooses
    no export), as its verification timed them on the validation texts; None without a verification."""
    backend = auto_backend(export)
    if backend == "torch":
        entry = (export.get("torch") or {}).get("default") or {}
        backend = f"torch-{entry.get('precision', 'fp32')}"
    else:
        entry = export["variants"][export["auto"]]
    if not entry.get("rows_per_second"):
        return None
    return Throughput(
        predict_rows_per_second=entry["rows_per_second"],
        predict_rows_timed=verification_rows_of(export),
        predict_backend=backend,
    )


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
    texts = predictions[PREDICTION_TEXT].head(RECORD_SPEED_ROWS).tolist()
    record = run.read_record()
    record.throughput = record.throughput or Throughput()
    record.throughput.update(prediction_speed(Predictor.from_path(run.path, backend="torch"), texts))
    run.write_record(record)
    return record.throughput.predict_rows_per_second
