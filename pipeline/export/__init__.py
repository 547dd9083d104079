"""ONNX export of a run's model, verified against PyTorch, for fast CPU prediction.

    python -m pipeline.export --model runs/<name> [--format onnx] [--quantize int8]

writes `runs/<name>/onnx/` (names in pipeline.run.directory): `model.onnx` (fp32), with `--quantize int8` also
`model.int8.onnx`, the OpenVINO models when its extra is installed, and `export.json`: each model verified against
PyTorch fp32 on the run's rows (pipeline.export.verify says how, and when an export is refused) and the sha256 of
the weights it was made from. `pipeline.predict --backend auto` takes the fastest verified export when it beats
PyTorch here and was verified on at least 1,000 rows, else PyTorch.

Modules: graphs (torch.onnx.export, graph optimisation, int8), verify (the parity and speed measurements and
their table), convert (export_run: the onnx/ folder and its export.json), cli (the command); export.json, the
weights hash and which backend to use are pipeline.run.exports, the runtimes pipeline.predict.runtime. ONNX Runtime
and onnx are the optional extra `onnx`.
"""

from pipeline.export.convert import export_run
from pipeline.run.exports import ExportChoice, ExportError, choose_export, read_export_record, weights_sha256

__all__ = ["ExportChoice", "ExportError", "choose_export", "export_run", "read_export_record", "weights_sha256"]
