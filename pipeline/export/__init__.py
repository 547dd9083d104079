"""ONNX export of a run's model, verified against PyTorch, for fast CPU prediction.

    python -m pipeline.export --model runs/<name> [--format onnx] [--quantize int8]

writes `runs/<name>/onnx/` (names in pipeline.run.directory): `model.onnx` (fp32; inputs input_ids and attention_mask, and
token_type_ids for sentence pairs; output logits, batch and sequence axes dynamic), with `--quantize int8` also `model.int8.onnx` (dynamic int8
quantization), and `export.json`: each model scored against PyTorch fp32 on the run's validation rows, topped up
with its test and train texts when there are fewer than --max-rows (label agreement and largest probability
difference on every row, accuracy on the labelled ones, rows/s on this machine) and the sha256 of the weights it was
made from. An export that disagrees with PyTorch on more than 0.5% of the rows or loses more than 0.5 accuracy
points is refused: moved to `onnx/refused/` and never used. `pipeline.predict --backend auto` takes the fastest
verified export when it beats PyTorch here and was verified on at least 1,000 rows, else PyTorch.

Modules: record (export.json, weights hash, which backend to use: no ONNX import), runtime (ONNX Runtime
sessions and threads), convert (torch.onnx.export, graph optimisation, int8), verify (the parity and speed
measurements), cli (the command). ONNX Runtime and onnx are the optional extra `onnx`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.run.exports import (
    ExportChoice,
    ExportError,
    choose_export,
    read_export_record,
    weights_sha256,
)

__all__ = [
    "ExportChoice",
    "ExportError",
    "choose_export",
    "export_run",
    "read_export_record",
    "weights_sha256",
]


def export_run(path: str | Path, quantize: str | None = None, **options: Any) -> dict[str, Any]:
    """Export, verify and record (see pipeline.export.convert.export_run); returns export.json's content."""
    from pipeline.export.convert import export_run as run

    return run(path, quantize=quantize, **options)
