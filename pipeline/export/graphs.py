"""The model as ONNX graphs, one per runtime: the fp32 trace, ONNX Runtime's optimised graph, its dynamic int8
quantization and NNCF's static int8 one for OpenVINO (pipeline.export.convert says which runtime gets which).
The converters warn and log freely; `quiet` keeps that out of a command whose output is a table."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pipeline.common.errors import one_line
from pipeline.predict.runtime import INPUT_NAMES, graph_inputs, require_openvino
from pipeline.run.exports import ExportError

OPSET = 17


class _LogitsOnly(torch.nn.Module):
    """(input_ids, attention_mask[, token_type_ids]) -> logits: the exported graph's whole interface."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(graph_inputs(len(inputs) > len(INPUT_NAMES)), inputs))).logits  # (B, K)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The exporter, optimizer and quantizer warn and log freely (tracer warnings, pre-processing advice); a
    command whose output is a table and whose errors are one line keeps them out."""
    loggers = [logging.getLogger(name) for name in ("onnxruntime", "root", "torch.onnx", "onnxruntime.transformers")]
    levels = [item.level for item in loggers]
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        for item in loggers:
            item.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for item, level in zip(loggers, levels):
                item.setLevel(level)


@contextlib.contextmanager
def scratch_working_directory() -> Iterator[None]:
    """The converters run from a throwaway working directory: when ONNX Runtime's symbolic shape inference gives up,
    it saves `sym_shape_infer_temp.onnx` and the model's weights (a uuid-named .data file, as large as the model)
    into the working directory, which is the user's, not the export's. Paths given to the converters are absolute."""
    previous = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="pipeline-export-") as scratch:
        os.chdir(scratch)
        try:
            yield
        finally:
            os.chdir(previous)


def export_fp32(model: torch.nn.Module, tokenizer: Any, path: Path, max_length: int, segments: bool = False) -> None:
    """torch.onnx.export of (input_ids, attention_mask) -> logits, batch and sequence dynamic; with `segments`
    (sentence pairs) token_type_ids is an input too."""
    # Two rows, one padded: the traced graph then keeps the attention mask for every batch, padded or not.
    texts = ["export", "an export sample text, long enough that the first row is padded"]
    encoded = tokenizer(
        texts,
        *([["a second text", "and another"]] if segments else []),
        padding=True,
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
        return_token_type_ids=segments,
    )
    inputs = graph_inputs(segments)
    wrapper = _LogitsOnly(model).eval()
    eager = _eager_attention(model)
    axes = {**{name: {0: "batch", 1: "sequence"} for name in inputs}, "logits": {0: "batch"}}
    try:
        with eager, quiet(), torch.inference_mode(False), torch.no_grad():
            torch.onnx.export(
                wrapper,
                tuple(encoded[name] for name in inputs),
                str(path),
                input_names=list(inputs),
                output_names=["logits"],
                dynamic_axes=axes,
                opset_version=OPSET,
                do_constant_folding=True,
                dynamo=False,
            )
    except Exception as error:  # the exporter raises many types; the message is what matters
        raise ExportError(f"torch.onnx.export failed for {type(model).__name__}: {one_line(error)}") from None
    finally:
        model.eval()  # the exporter restores training flags through the wrapper; keep the model in eval mode


@contextlib.contextmanager
def _eager_attention(model: torch.nn.Module) -> Iterator[None]:
    """Trace transformers' models with their eager attention: ONNX Runtime's optimizer recognises that pattern and
    fuses it into one Attention operator (the SDPA trace it does not). The model gets its own attention back after,
    as verification times it as prediction runs it. Models that choose no attention implementation (the
    from-scratch encoder) are traced as they are."""
    current = getattr(model.config, "_attn_implementation", None)
    if current in (None, "eager") or not hasattr(model, "set_attn_implementation"):
        yield
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.set_attn_implementation("eager")
    except Exception:  # an architecture that cannot switch is traced as it is
        yield
        return
    try:
        yield
    finally:
        model.set_attn_implementation(current)


def optimize_graph(source: Path, target: Path, model_config: Any) -> str:
    """ONNX Runtime's transformer optimizer (attention, LayerNorm, GELU fusions); returns what was done.
    The unoptimised graph is kept when the optimizer fails: verification measures whichever is used."""
    heads = getattr(model_config, "num_attention_heads", None) or getattr(model_config, "num_heads", 0)
    hidden = getattr(model_config, "hidden_size", 0)
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        with quiet():
            optimized = optimize_model(
                str(source),
                model_type="bert",
                num_heads=int(heads),
                hidden_size=int(hidden),
                opt_level=1,
                use_gpu=False,
            )
            optimized.save_model_to_file(str(target))
            fused = {name: count for name, count in optimized.get_fused_operator_statistics().items() if count}
    except Exception as error:  # optional speed-up: fall back to the plain graph
        shutil.copyfile(source, target)
        return f"none (ONNX Runtime's transformer optimizer failed: {one_line(error)[:200]})"
    fused_text = ", ".join(f"{name} x{count}" for name, count in sorted(fused.items())) or "nothing fused"
    return f"onnxruntime.transformers optimizer (bert): {fused_text}"


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic quantization of every MatMul of the unfused graph (all projections and the attention products):
    int8 weights per channel, activations quantized per batch at run time; embeddings, LayerNorm and softmax stay
    fp32. On MiniLM fine-tuned on 5,000 AG News rows (2,000 test rows, 2 threads, idle AVX-512 VNNI CPU): 360-373
    rows/s with 99.70% of labels as PyTorch fp32's, against 266-272 rows/s (99.65%) for the MatMuls left around
    the fused Attention operator, and 333 rows/s for the fused QAttention. Weights per tensor instead of per
    channel changed 1.35% of the labels."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Fused contrib operators (BiasGelu, SkipLayerNormalization...) defeat ONNX shape inference: their outputs are
    # float tensors, which is what the quantizer then assumes.
    options = {"DefaultTensorType": onnx.TensorProto.FLOAT}
    try:
        with quiet():
            quantize_dynamic(
                str(source),
                str(target),
                op_types_to_quantize=["MatMul"],
                per_channel=True,
                weight_type=QuantType.QInt8,
                extra_options=options,
            )
    except Exception as error:
        raise ExportError(f"int8 quantization of {source.name} failed: {one_line(error)}") from None


def quantize_openvino_int8(source: Path, target: Path, batches: list[dict[str, np.ndarray]]) -> None:
    """NNCF's static int8 quantization of the traced graph for OpenVINO: int8 weights per channel and activation
    ranges measured on `batches` (training rows), with NNCF's transformer preset (softmax, LayerNorm, GELU and the
    attention's score products stay in floating point). On MiniLM fine-tuned on 5,000 AG News rows (3,000 test
    rows, 2 threads, idle AVX-512 CPU): 586 rows/s with f32 for the rest (3.5x PyTorch fp32), 99.7% of labels as
    PyTorch fp32's. ONNX Runtime's static QDQ quantization of every MatMul ran 242 rows/s under OpenVINO at 98.6%."""
    import onnx

    nncf = require_openvino("nncf")
    nncf_logger = logging.getLogger("nncf")
    level = nncf_logger.level
    nncf_logger.setLevel(logging.ERROR)  # its statistics progress bars and INFO lines
    try:
        with quiet():
            quantized = nncf.quantize(
                onnx.load(str(source)),
                nncf.Dataset(batches),
                model_type=nncf.ModelType.TRANSFORMER,
                subset_size=len(batches),
            )
            onnx.save(quantized, str(target))
    except Exception as error:
        raise ExportError(
            f"NNCF int8 quantization of {source.name} failed (--no-openvino skips OpenVINO's models): {one_line(error)}"
        ) from None
    finally:
        nncf_logger.setLevel(level)
