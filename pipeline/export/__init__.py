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

Modules: graphs (torch.onnx.export, graph optimisation, int8), verify (the parity and speed measurements and
their table), convert (export_run: the onnx/ folder and its export.json), cli (the command); export.json, the
weights hash and which backend to use are pipeline.run.exports, the runtimes pipeline.predict.runtime. ONNX Runtime and onnx are the optional extra `onnx`.
"""

from pipeline.export.convert import export_run
from pipeline.run.exports import ExportChoice, ExportError, choose_export, read_export_record, weights_sha256

__all__ = ["ExportChoice", "ExportError", "choose_export", "export_run", "read_export_record", "weights_sha256"]
