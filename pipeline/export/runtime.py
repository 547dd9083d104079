"""ONNX Runtime sessions for prediction: threads per process, and one-line errors for files it cannot load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.export.record import ExportError, require
from pipeline.hardware import configured_threads, cores_per_process
from pipeline.tables import one_line

INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "logits"


def onnx_threads() -> int:
    """Intra-op threads of an ONNX Runtime session: OMP_NUM_THREADS when set (the knob PyTorch obeys too), else
    the cores available to this process divided by the processes on this machine, so that N processes do not
    each start one thread per core."""
    return configured_threads() or cores_per_process()


def open_session(path: Path, threads: int | None = None) -> Any:
    """An ONNX Runtime CPU session on `path`, checked to take input_ids + attention_mask and give logits."""
    ort = require("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or onnx_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: its warnings would break the one-line contract on stderr
    # Idle threads sleep instead of spinning: on a CPU shared with other jobs spinning threads steal the cores the
    # work needs (MiniLM int8 ran 15% faster without it on a busy 2-core machine); batches of 128 rows keep each
    # operator long enough that waking the threads costs little.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # ORT raises its own exception types for damaged files
        raise ExportError(
            f"{path}: ONNX Runtime cannot load it (corrupted or not an ONNX model): {one_line(error)}"
        ) from None
    inputs = sorted(node.name for node in session.get_inputs())
    outputs = [node.name for node in session.get_outputs()]
    if inputs != sorted(INPUT_NAMES) or OUTPUT_NAME not in outputs:
        raise ExportError(
            f"{path}: expected inputs {', '.join(INPUT_NAMES)} and output {OUTPUT_NAME}, "
            f"found inputs {', '.join(inputs)} and outputs {', '.join(outputs)}"
        )
    return session
