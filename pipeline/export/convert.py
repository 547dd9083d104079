"""Export a run's model to ONNX (and int8), verify it against PyTorch, record it.

    record = export_run("runs/ag_news_minilm", quantize="int8")

Each runtime gets the graph it runs fastest (pipeline.export.graphs makes them): ONNX Runtime the optimized fp32
graph and a dynamic int8 one of the unfused trace; OpenVINO (when installed) the trace and NNCF's static int8 of it.
Everything is built in a staging folder and swapped in as the run's onnx/ folder in one rename, so a failed export
leaves the previous one intact.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import logging
import platform
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

from pipeline.common.extras import installed
from pipeline.common.hardware import cpu_name
from pipeline.common.io import atomic_write_json, replace_directory
from pipeline.data.splits import column_values
from pipeline.export.graphs import (
    OPSET,
    export_fp32,
    optimize_graph,
    quantize_int8,
    quantize_openvino_int8,
    scratch_working_directory,
)
from pipeline.export.verify import (
    VerificationRows,
    format_record,
    reference_predictor,
    validation_gold,
    verification_rows,
    verify_exports,
)
from pipeline.predict.runtime import graph_inputs, onnx_threads, require_openvino
from pipeline.predict.source import (
    ModelSource,
    PredictError,
    load_model_and_tokenizer,
    reraised_as,
    resolve_model_source,
    settings_source,
)
from pipeline.run.directory import (
    EXPORT_RECORD_FILE,
    EXPORT_REFUSED_DIR,
    MODEL_CONFIG_FILE,
    ONNX_MODEL_FILES,
    RunDir,
    RunDirError,
)
from pipeline.run.exports import (
    RUNTIMES,
    STATUS_REFUSED,
    ExportError,
    file_sha256,
    require,
    too_few_rows,
    weights_sha256,
)
from pipeline.run.ownership import claimed
from pipeline.text.windows import reads_segments

logger = logging.getLogger("pipeline.export")

DEFAULT_MAX_ROWS = 2000
DEFAULT_BATCH_SIZE = 128  # rows per forward pass while verifying
DEFAULT_ROUNDS = 2  # timed passes per backend; the best counts
QUANTIZE_CHOICES = ("int8",)


def check_sequence_classifier(model_dir: Path) -> None:
    """A folder whose config.json names no *ForSequenceClassification architecture would load with a random head."""
    path = model_dir / MODEL_CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ExportError(f"{path}: cannot be read as a model config ({type(error).__name__})") from None
    architectures = config.get("architectures") if isinstance(config, dict) else None
    if not architectures or not any(str(name).endswith("ForSequenceClassification") for name in architectures):
        named = ", ".join(map(str, architectures)) if architectures else "none recorded"
        raise ExportError(f"{model_dir} is not a sequence-classification model (architectures: {named})")


def _openvino_variants(asked: bool | None, quantize: str | None) -> list[str]:
    """OpenVINO's models to make: when asked (`True`: required), or by default (`None`) when installed; the int8
    one with `quantize`, by default only where NNCF is installed."""
    if asked is False or (asked is None and not installed("openvino")):
        return []
    require_openvino("openvino")
    if not quantize or (asked is None and not installed("nncf")):
        return ["openvino"]
    require_openvino("nncf")
    return ["openvino", "openvino-int8"]


@dataclass(frozen=True)
class ExportOptions:
    """export_run's settings, and the caller's own rows (`texts` with class names `gold`, `top_up` texts by source,
    `calibration` training texts) instead of the run's re-created validation split."""

    max_rows: int | None = DEFAULT_MAX_ROWS
    batch_size: int = DEFAULT_BATCH_SIZE
    optimize: bool = True
    openvino: bool | None = None
    texts: Sequence[str] | None = None
    gold: Sequence[str] | None = None
    source_note: str | None = None
    calibration: Sequence[str] | None = None
    top_up: dict[str, Sequence[str]] | None = None
    rounds: int = DEFAULT_ROUNDS
    seed: int = 0

    def given_rows(self) -> VerificationRows:
        return VerificationRows(
            list(self.texts),
            list(self.gold) if self.gold is not None else None,
            self.source_note or "texts given by the caller",
            list(self.calibration or []),
            "training rows given by the caller",
            top_up={name: list(pool) for name, pool in (self.top_up or {}).items()},
        )


def export_run(path: str | Path, quantize: str | None = None, **options: Any) -> dict[str, Any]:
    """Write the run's onnx/ folder (fp32, int8 with quantize="int8", OpenVINO's models), each verified against
    PyTorch fp32; `options` are ExportOptions' fields; returns export.json's content."""
    options = ExportOptions(**options)
    variants = _variants(quantize, options)
    with reraised_as(ExportError, PredictError):
        source = resolve_model_source(path)
    if source.run_dir is None:
        raise ExportError(
            f"{path} is a saved model but not in a run directory: an export is written into a run (runs/<name>/onnx) and verified on the run's validation split"
        )
    run = RunDir(source.run_dir)
    # A run still training holds its directory (its model may still change), and an export holds it too.
    with reraised_as(ExportError, RunDirError), claimed(run.path):
        return _export(run, source, variants, options)


def _variants(quantize: str | None, options: ExportOptions) -> list[str]:
    """The models to make: fp32, int8 when quantized, and OpenVINO's where its extra is installed (or asked for)."""
    if quantize not in (None, *QUANTIZE_CHOICES):
        raise ExportError(f"unknown quantization '{quantize}' (use {', '.join(QUANTIZE_CHOICES)})")
    require("onnx")
    require("onnxruntime")
    return ["fp32"] + (["int8"] if quantize else []) + _openvino_variants(options.openvino, quantize)


def _export(run: RunDir, source: ModelSource, variants: list[str], options: ExportOptions) -> dict[str, Any]:
    check_sequence_classifier(source.model_dir)
    with reraised_as(ExportError, PredictError):
        model, tokenizer = load_model_and_tokenizer(source.model_dir)
    model_sha256 = weights_sha256(source.model_dir)
    rows = verification_rows(run) if options.texts is None else options.given_rows()
    rows = rows.sample(options.max_rows, options.seed, calibrating="openvino-int8" in variants)
    if not rows.texts:
        raise ExportError(f"{run.path}: no rows to verify the export on ({rows.source})")
    reference = reference_predictor(model, tokenizer, source, options.batch_size)
    # A sentence-pair model's graph takes the segment ids that prediction feeds it.
    segments = bool(source.text_spec.pair_columns) and reads_segments(tokenizer)
    record: dict[str, Any] = {}

    def fill(staging: Path) -> None:
        staging = staging.resolve()
        with scratch_working_directory():
            graph, calibration_note = _convert(staging, reference, variants, rows, options, segments)
        files = {variant: staging / ONNX_MODEL_FILES[variant] for variant in variants}
        results = verify_exports(reference, files, rows, options.rounds)
        record.update(_build_record(model_sha256, graph, rows, results, files, reference, calibration_note, segments))
        _set_refused_aside(staging, record, files)
        atomic_write_json(staging / EXPORT_RECORD_FILE, record)

    replace_directory(run.export_dir, fill)
    return record


def _convert(
    staging: Path, reference: Any, variants: list[str], rows: VerificationRows, options: ExportOptions, segments: bool
) -> tuple[str, dict[str, Any] | None]:
    """Each of `variants` made in `staging` from one trace of `reference`'s model; what the optimizer did and the
    calibration rows."""
    calibration_note = None
    fp32_path = staging / ONNX_MODEL_FILES["fp32"]
    traced = staging / ".traced.onnx"
    export_fp32(reference.model, reference.tokenizer, traced, reference.max_length, segments)
    if "int8" in variants:
        quantize_int8(traced, staging / ONNX_MODEL_FILES["int8"])
    if "openvino" in variants:
        shutil.copyfile(traced, staging / ONNX_MODEL_FILES["openvino"])
    if "openvino-int8" in variants:
        calibration_texts, calibration_source = rows.calibration_texts(options.seed)
        batches = reference.padded_batches(calibration_texts)
        quantize_openvino_int8(traced, staging / ONNX_MODEL_FILES["openvino-int8"], batches)
        calibration_note = {"variant": "openvino-int8", "rows": len(calibration_texts), "source": calibration_source}
    if options.optimize:
        graph = optimize_graph(traced, fp32_path, reference.model.config)
        traced.unlink()
    else:
        graph = "none (optimize=False)"
        traced.rename(fp32_path)
    return graph, calibration_note


def _set_refused_aside(staging: Path, record: dict[str, Any], files: dict[str, Path]) -> None:
    """Move each export that failed verification into refused/ (kept for inspection, never used)."""
    for variant, entry in record["variants"].items():
        if entry["status"] == STATUS_REFUSED:
            refused = staging / EXPORT_REFUSED_DIR / files[variant].name
            refused.parent.mkdir(exist_ok=True)
            files[variant].rename(refused)
            entry["file"] = f"{EXPORT_REFUSED_DIR}/{refused.name}"


def _build_record(
    model_sha256: str,
    graph: str,
    rows: VerificationRows,
    results: Any,
    files: dict[str, Path],
    reference: Any,
    calibration: dict[str, Any] | None,
    segments: bool,
) -> dict[str, Any]:
    runtimes = sorted({RUNTIMES[variant] for variant in files})
    record = {
        "format": "onnx",
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model_sha256": model_sha256,
        "opset": OPSET,
        "exporter": "torch.onnx.export (TorchScript, dynamo=False; transformers models traced with eager attention)",
        "graph_optimization": graph,
        "inputs": list(graph_inputs(segments)),
        "outputs": ["logits"],
        "verification": {
            "rows": len(rows.texts),
            "source": rows.source,
            "parts": rows.parts or {rows.name: len(rows.texts)},
            "accuracy_rows": rows.labelled_rows,
            "accuracy_source": rows.name,
            "max_length": reference.max_length,
            "batch_size": reference.batch_size,
            "threads": {"torch": torch.get_num_threads(), **{runtime: onnx_threads() for runtime in runtimes}},
            "timed_passes": results.timed_passes,
            "machine": cpu_name(),
            "max_disagreement": results.max_disagreement,
            "max_accuracy_loss_points": results.max_accuracy_loss_points,
            "min_rows_for_auto": results.min_rows_for_auto,
            "eligible_for_auto": too_few_rows(len(rows.texts)) is None,
        },
        "torch": results.torch,
        "variants": {
            variant: {
                "file": files[variant].name,
                "sha256": file_sha256(files[variant]),
                "size_bytes": files[variant].stat().st_size,
                **result,
            }
            for variant, result in results.variants.items()
        },
        "auto": results.auto,
        "auto_reason": results.auto_reason,
        "versions": _versions({*runtimes, *(["nncf"] if calibration else [])}),
    }
    if calibration:
        record["calibration"] = calibration
    return record


def _versions(runtimes: set[str]) -> dict[str, str]:
    import onnx
    import onnxruntime

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        **{name: importlib.metadata.version(name) for name in ("openvino", "nncf") if name in runtimes},
        "numpy": np.__version__,
    }


def export_in_run(config: Any, max_length: int, validation: Any, train: Any = None, test: Any = None) -> dict[str, Any]:
    """`eval.export: onnx|int8` in stage 4, by the run that holds the directory: its saved model (calibrated, with
    its thresholds) exported and verified on the splits already in memory, before the test pass, so that the test
    pass can run on what `--backend auto` will choose. Prints the table; returns export.json's content."""
    run = RunDir(config.run_dir)
    with reraised_as(ExportError, RunDirError):
        source = settings_source(run.model_dir, run.read_config(), max_length, run.path)
    options = ExportOptions(
        texts=column_values(validation, "text"),
        gold=validation_gold(validation, config.data.task),
        source_note="validation split",
        calibration=column_values(train, "text") if train is not None else None,
        top_up={name: column_values(split, "text") for name, split in (("test", test), ("train", train)) if split},
        batch_size=config.eval.batch_size,
        seed=config.run.seed,
    )
    quantize = "int8" if config.eval.export == "int8" else None
    with reraised_as(ExportError, RunDirError):
        record = _export(run, source, _variants(quantize, options), options)
    print(format_record(record))
    return record
