"""ONNX export of a run's model, verified against PyTorch, for fast CPU prediction.

    python -m pipeline.export --model runs/<name> [--format onnx] [--quantize int8]

writes `runs/<name>/onnx/`: the models, each verified against PyTorch fp32, and `export.json`.

Modules: graphs (torch.onnx.export, graph optimisation, int8), verify (parity and speed, and their table), convert
(export_run), cli (the command); reading export.json and choosing a backend is pipeline.run.exports.
"""

from pipeline.export.convert import export_run
from pipeline.run.exports import ExportChoice, ExportError, choose_export, read_export_record, weights_sha256

__all__ = ["ExportChoice", "ExportError", "choose_export", "export_run", "read_export_record", "weights_sha256"]
