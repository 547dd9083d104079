"""The model as ONNX graphs: the fp32 trace (`export_fp32`), ONNX Runtime's optimised graph, its dynamic int8
quantization and NNCF's static int8 one for OpenVINO."""

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
    """Keep the converters' warnings and logs out of a command whose output is a table and errors one line."""
    # nncf's: its statistics progress bars and INFO lines.
    names = ("onnxruntime", "root", "torch.onnx", "onnxruntime.transformers", "nncf")
    loggers = [logging.getLogger(name) for name in names]
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
    """A throwaway working directory: ONNX Runtime's symbolic shape inference may save a model-sized file into the
    working directory, the user's. Paths given to the converters are absolute."""
    previous = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="pipeline-export-") as scratch:
        os.chdir(scratch)
        try:
            yield
        finally:
            os.chdir(previous)


def export_fp32(model: torch.nn.Module, tokenizer: Any, path: Path, max_length: int, segments: bool = False) -> None:
    """torch.onnx.export (TorchScript path) of the inputs -> logits, batch and sequence dynamic."""
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
    """Trace with eager attention, which ONNX Runtime's optimizer fuses (an SDPA trace it does not); the model gets
    its own attention back after, as verification times it as prediction runs it."""
    current = getattr(model.config, "_attn_implementation", None)
    switched = False
    if current not in (None, "eager") and hasattr(model, "set_attn_implementation"):
        # An architecture that cannot switch is traced as it is.
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            model.set_attn_implementation("eager")
            switched = True
    try:
        yield
    finally:
        if switched:
            model.set_attn_implementation(current)


def optimize_graph(source: Path, target: Path, model_config: Any) -> str:
    """ONNX Runtime's transformer optimizer; returns what was done (the plain graph is kept when it fails)."""
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
    """Dynamic quantization of every MatMul of the unfused graph (the fused Attention would stay fp32): int8 weights
    per channel (per tensor flips many more labels), activations quantized per batch at run time."""
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
    """NNCF's static int8 quantization of the traced graph for OpenVINO, activation ranges measured on `batches`,
    with NNCF's transformer preset."""
    import onnx

    nncf = require_openvino("nncf")
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
