"""The runtimes that run an export on the CPU (`open_backend`): ONNX Runtime sessions and OpenVINO compiled models,
with one-line errors for files they cannot load."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pipeline.common.errors import one_line
from pipeline.common.hardware import configured_threads, cores_per_process
from pipeline.predict.backend import ExportBackend
from pipeline.run.exports import RUNTIMES, ExportError, require
from pipeline.text.windows import SEGMENT_IDS

INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "logits"
# What OpenVINO computes in besides int8, per variant; absent lets it choose (bf16 where the CPU has it).
# int8 with bf16 around it differs from PyTorch fp32 too often to pass verification; f32 keeps it within.
OPENVINO_PRECISION = {"openvino-int8": "f32"}


def onnx_threads() -> int:
    """Intra-op threads: OMP_NUM_THREADS when set, else this process's share of the cores."""
    return configured_threads() or cores_per_process()


def graph_inputs(segments: bool) -> tuple[str, ...]:
    """A sentence-pair model's graph takes its segment ids too (unless it reads none, as RoBERTa)."""
    return (*INPUT_NAMES, SEGMENT_IDS) if segments else INPUT_NAMES


def _check_interface(path: Path, inputs: list[str], outputs: list[str]) -> None:
    if sorted(inputs) not in (sorted(graph_inputs(False)), sorted(graph_inputs(True))) or OUTPUT_NAME not in outputs:
        raise ExportError(
            f"{path}: expected inputs {', '.join(INPUT_NAMES)} (and {SEGMENT_IDS} for sentence pairs) and output {OUTPUT_NAME}, found inputs {', '.join(inputs)} and outputs {', '.join(outputs)}"
        )


def open_session(path: Path, threads: int | None = None) -> Any:
    """An ONNX Runtime CPU session on `path`, its inputs and output checked."""
    ort = require("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or onnx_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: its warnings would break the one-line contract on stderr
    # Idle threads sleep instead of spinning: on a shared CPU spinning threads steal the cores the work needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # ORT raises its own exception types for damaged files
        raise ExportError(
            f"{path}: ONNX Runtime cannot load it (corrupted or not an ONNX model): {one_line(error)}"
        ) from None
    _check_interface(path, [node.name for node in session.get_inputs()], [node.name for node in session.get_outputs()])
    return session


def open_backend(variant: str, path: Path, threads: int | None = None, precision: str | None = None) -> Any:
    """The ExportBackend of an exported model, run by its variant's runtime."""
    if RUNTIMES[variant] == "openvino":
        compiled = open_openvino(path, threads, precision or OPENVINO_PRECISION.get(variant))
        request = compiled.create_infer_request()
        inputs, computes = set(openvino_inputs(compiled)), openvino_precision(compiled)
        return ExportBackend(lambda batch: request.infer(batch)[OUTPUT_NAME], variant, path, inputs, computes)
    session = open_session(path, threads)
    inputs = {node.name for node in session.get_inputs()}
    return ExportBackend(lambda batch: session.run([OUTPUT_NAME], batch)[0], variant, path, inputs)


def require_openvino(module: str = "openvino") -> Any:
    """openvino or nncf; one line naming the extra when missing. Both send usage telemetry unless opted out; a tool
    run on users' data sends nothing, so they are imported with openvino_telemetry hidden, as when not installed."""
    if "openvino_telemetry" in sys.modules:  # imported before us by the caller's own code: theirs to decide
        return require(module)
    sys.modules["openvino_telemetry"] = None  # import openvino_telemetry now raises ImportError
    try:
        return require(module)
    finally:
        del sys.modules["openvino_telemetry"]


def open_openvino(path: Path, threads: int | None = None, precision: str | None = None) -> Any:
    """An OpenVINO CPU compiled model on `path`, its inputs and outputs checked; `precision` None lets it choose."""
    ov = require_openvino()
    settings = {"INFERENCE_NUM_THREADS": threads or onnx_threads(), "PERFORMANCE_HINT": "LATENCY"}
    if precision:
        settings["INFERENCE_PRECISION_HINT"] = precision
    try:
        compiled = ov.Core().compile_model(str(path), "CPU", settings)
    except Exception as error:  # OpenVINO raises RuntimeError with a multi-line report for damaged files
        raise ExportError(
            f"{path}: OpenVINO cannot load it (corrupted or not an ONNX model): {one_line(error)[:300]}"
        ) from None
    names = {name for node in compiled.inputs for name in node.get_names()}  # a node may have several names
    outputs = [name for node in compiled.outputs for name in node.get_names()]
    _check_interface(path, openvino_inputs(compiled) or sorted(names), outputs)
    return compiled


def openvino_inputs(compiled: Any) -> list[str]:
    """The graph inputs, of those an export has, that an OpenVINO compiled model takes."""
    names = {name for node in compiled.inputs for name in node.get_names()}
    return [name for name in graph_inputs(True) if name in names]


def openvino_precision(compiled: Any) -> str:
    """The precision OpenVINO computes in (what is not int8): "bf16", "f16" or "f32"."""
    value = str(compiled.get_property("INFERENCE_PRECISION_HINT"))  # e.g. "<Type: 'bfloat16'>"
    for name, spellings in (("bf16", ("bfloat16", "bf16")), ("f16", ("float16", "f16")), ("f32", ("float32", "f32"))):
        if any(spelling in value for spelling in spellings):
            return name
    return value
