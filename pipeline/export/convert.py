"""Export a run's model to ONNX (and int8), verify it against PyTorch, record it.

    record = export_run("runs/ag_news_minilm", quantize="int8")

The fp32 model comes from torch.onnx.export's TorchScript path (dynamo=False: it needs no onnxscript and traces
transformers' BERT and the from-scratch encoder alike), with batch and sequence axes dynamic. Each runtime then gets
the graph it runs fastest:

- ONNX Runtime (extra `onnx`): `model.onnx`, the graph after ONNX Runtime's transformer optimizer fused attention,
  LayerNorm and GELU where it recognised them; `model.int8.onnx`, `quantize_dynamic` of the traced, unfused graph
  (int8 weights, activations quantized per batch at run time): there every projection, the attention's Q/K/V
  included, is a plain MatMul the quantizer can take, while the fused Attention operator would stay fp32.
- OpenVINO (extra `openvino`, made when it is installed): `model.openvino.onnx`, the traced graph (OpenVINO reads
  no ONNX Runtime fused operator; it fuses on its own and computes in bf16 where the CPU has it);
  `model.openvino-int8.onnx`, NNCF's static int8 quantization of it (activation ranges calibrated on training
  rows), which OpenVINO runs with int8 kernels.

Everything is built in a staging folder and swapped in as the run's onnx/ folder in one rename, so a failed export
leaves the previous one intact.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import logging
import os
import platform
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pipeline.common.errors import one_line
from pipeline.common.extras import installed
from pipeline.common.io import atomic_write_json, replace_directory
from pipeline.data.splits import column_values
from pipeline.predict.runtime import INPUT_NAMES, graph_inputs
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

OPSET = 17
DEFAULT_MAX_ROWS = 2000
DEFAULT_BATCH_SIZE = 128  # rows per forward pass while verifying
DEFAULT_ROUNDS = 2  # timed passes per backend; the best counts
QUANTIZE_CHOICES = ("int8",)


class _LogitsOnly(torch.nn.Module):
    """(input_ids, attention_mask[, token_type_ids]) -> logits: the exported graph's whole interface."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(graph_inputs(len(inputs) > len(INPUT_NAMES)), inputs))).logits  # (B, K)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
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
def _scratch_working_directory() -> Iterator[None]:
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


def check_sequence_classifier(model_dir: Path) -> None:
    """A folder whose config.json names no *ForSequenceClassification architecture would load with a random head."""
    import json

    path = model_dir / MODEL_CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ExportError(f"{path}: cannot be read as a model config ({type(error).__name__})") from None
    architectures = config.get("architectures") if isinstance(config, dict) else None
    if not architectures or not any(str(name).endswith("ForSequenceClassification") for name in architectures):
        named = ", ".join(map(str, architectures)) if architectures else "none recorded"
        raise ExportError(f"{model_dir} is not a sequence-classification model (architectures: {named})")


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
        with eager, _quiet(), torch.inference_mode(False), torch.no_grad():
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

        with _quiet():
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
        with _quiet():
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

    from pipeline.predict.runtime import require_openvino

    nncf = require_openvino("nncf")
    nncf_logger = logging.getLogger("nncf")
    level = nncf_logger.level
    nncf_logger.setLevel(logging.ERROR)  # its statistics progress bars and INFO lines
    try:
        with _quiet():
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


def _openvino_variants(asked: bool | None, quantize: str | None) -> list[str]:
    """OpenVINO's models to make: when asked (`True`, its extra then required), or by default (`None`) when openvino
    is installed; the int8 one with `quantize`, which by default also needs NNCF installed (the same extra)."""
    from pipeline.predict.runtime import require_openvino

    if asked is False or (asked is None and not installed("openvino")):
        return []
    require_openvino("openvino")
    if not quantize or (asked is None and not installed("nncf")):
        return ["openvino"]
    require_openvino("nncf")
    return ["openvino", "openvino-int8"]


def export_run(
    path: str | Path,
    quantize: str | None = None,
    *,
    max_rows: int | None = DEFAULT_MAX_ROWS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    optimize: bool = True,
    openvino: bool | None = None,
    texts: Sequence[str] | None = None,
    gold: Sequence[str] | None = None,
    source_note: str | None = None,
    calibration: Sequence[str] | None = None,
    top_up: dict[str, Sequence[str]] | None = None,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = 0,
) -> dict[str, Any]:
    """Write the run's onnx/ folder (fp32, and int8 with quantize="int8"; the OpenVINO models too when `openvino`,
    by default when it is installed), each verified against PyTorch fp32 on the run's validation rows topped up
    with its test and train texts (or `texts` with gold class names `gold`, topped up from `top_up`, unlabelled texts
    by source, and `calibration` training texts); returns export.json's content."""
    from pipeline.predict.source import PredictError, resolve_model_source

    if quantize not in (None, *QUANTIZE_CHOICES):
        raise ExportError(f"unknown quantization '{quantize}' (use {', '.join(QUANTIZE_CHOICES)})")
    require("onnx")
    require("onnxruntime")
    openvino_variants = _openvino_variants(openvino, quantize)
    try:
        source = resolve_model_source(path)
    except PredictError as error:
        raise ExportError(str(error)) from None
    if source.run_dir is None:
        raise ExportError(
            f"{path} is a saved model but not in a run directory: an export is written into a run (runs/<name>/onnx) "
            "and verified on the run's validation split"
        )
    run = RunDir(source.run_dir)
    check_sequence_classifier(source.model_dir)
    try:
        # A run still training holds its directory (its model may still change): the export is refused then, and
        # while it runs, a training run of the same name is.
        with claimed(run.path):
            return _export(
                run,
                source,
                quantize,
                openvino_variants,
                max_rows,
                batch_size,
                optimize,
                texts,
                gold,
                source_note,
                calibration,
                top_up,
                rounds,
                seed,
            )
    except RunDirError as error:
        raise ExportError(str(error)) from None


def _export(
    run: RunDir,
    source: Any,
    quantize: str | None,
    openvino_variants: list[str],
    max_rows: int | None,
    batch_size: int,
    optimize: bool,
    texts: Sequence[str] | None,
    gold: Sequence[str] | None,
    source_note: str | None,
    calibration: Sequence[str] | None,
    top_up: dict[str, Sequence[str]] | None,
    rounds: int,
    seed: int,
) -> dict[str, Any]:
    from pipeline.export import verify
    from pipeline.predict.source import PredictError, load_model_and_tokenizer

    try:
        model, tokenizer = load_model_and_tokenizer(source.model_dir)
    except PredictError as error:
        raise ExportError(str(error)) from None
    model_sha256 = weights_sha256(source.model_dir)
    rows = (
        verify.verification_rows(run) if texts is None else _given_rows(texts, gold, source_note, calibration, top_up)
    )
    rows = rows.sample(max_rows, seed, calibrating="openvino-int8" in openvino_variants)
    if not rows.texts:
        raise ExportError(f"{run.path}: no rows to verify the export on ({rows.source})")
    reference = verify.reference_predictor(model, tokenizer, source, batch_size)
    # A sentence-pair model's graph takes the segment ids that prediction feeds it (windows.reads_segments).
    segments = bool(source.text_spec.pair_columns) and reads_segments(tokenizer)
    variants = ["fp32"] + (["int8"] if quantize else []) + openvino_variants
    record: dict[str, Any] = {}

    def fill(staging: Path) -> None:
        staging = staging.resolve()
        with _scratch_working_directory():
            graph, calibration_note = _convert(
                staging, model, tokenizer, reference, variants, rows, seed, optimize, segments
            )
        files = {variant: staging / ONNX_MODEL_FILES[variant] for variant in variants}
        results = verify.verify_exports(reference, files, rows, rounds)
        record.update(_build_record(model_sha256, graph, rows, results, files, reference, calibration_note, segments))
        _set_refused_aside(staging, record, files)
        atomic_write_json(staging / EXPORT_RECORD_FILE, record)

    replace_directory(run.export_dir, fill)
    return record


def _given_rows(
    texts: Sequence[str],
    gold: Sequence[str] | None,
    source_note: str | None,
    calibration: Sequence[str] | None,
    top_up: dict[str, Sequence[str]] | None,
) -> Any:
    """The caller's verification rows (finetune's in-memory splits) instead of the run's re-created validation split."""
    from pipeline.export.verify import VerificationRows

    return VerificationRows(
        list(texts),
        list(gold) if gold is not None else None,
        source_note or "texts given by the caller",
        list(calibration or []),
        "training rows given by the caller",
        top_up={name: list(pool) for name, pool in (top_up or {}).items()},
    )


def _convert(
    staging: Path,
    model: torch.nn.Module,
    tokenizer: Any,
    reference: Any,
    variants: list[str],
    rows: Any,
    seed: int,
    optimize: bool,
    segments: bool,
) -> tuple[str, dict[str, Any] | None]:
    """The traced graph and each of `variants` made from it in `staging`; what the optimizer did and, for a static
    int8 model, which rows it calibrated on."""
    calibration_note = None
    fp32_path = staging / ONNX_MODEL_FILES["fp32"]
    traced = staging / ".traced.onnx"
    export_fp32(model, tokenizer, traced, reference.max_length, segments)
    if "int8" in variants:
        quantize_int8(traced, staging / ONNX_MODEL_FILES["int8"])
    if "openvino" in variants:
        shutil.copyfile(traced, staging / ONNX_MODEL_FILES["openvino"])
    if "openvino-int8" in variants:
        calibration_texts, calibration_source = rows.calibration_texts(seed)
        batches = reference.padded_batches(calibration_texts)
        quantize_openvino_int8(traced, staging / ONNX_MODEL_FILES["openvino-int8"], batches)
        calibration_note = {"variant": "openvino-int8", "rows": len(calibration_texts), "source": calibration_source}
    if optimize:
        graph = optimize_graph(traced, fp32_path, model.config)
        traced.unlink()
    else:
        graph = "none (optimize=False)"
        traced.rename(fp32_path)
    return graph, calibration_note


def _set_refused_aside(staging: Path, record: dict[str, Any], files: dict[str, Path]) -> None:
    """Move each export that failed verification into refused/ (kept for inspection, never used); the record names
    its file there."""
    for variant, entry in record["variants"].items():
        if entry["status"] == STATUS_REFUSED:
            refused = staging / EXPORT_REFUSED_DIR / files[variant].name
            refused.parent.mkdir(exist_ok=True)
            files[variant].rename(refused)
            entry["file"] = f"{EXPORT_REFUSED_DIR}/{refused.name}"


def _build_record(
    model_sha256: str,
    graph: str,
    rows: Any,
    results: Any,
    files: dict[str, Path],
    reference: Any,
    calibration: dict[str, Any] | None,
    segments: bool,
) -> dict[str, Any]:
    import importlib.metadata

    import onnx
    import onnxruntime
    import transformers

    from pipeline.common.hardware import cpu_name
    from pipeline.predict.runtime import onnx_threads

    variants = {}
    for variant, result in results.variants.items():
        variants[variant] = {
            "file": files[variant].name,
            "sha256": file_sha256(files[variant]),
            "size_bytes": files[variant].stat().st_size,
            **result,
        }
    runtimes = sorted({RUNTIMES[variant] for variant in files})
    runtimes_used = {*runtimes, *(["nncf"] if calibration else [])}
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
            # label agreement and probability differences: every row; accuracy: the labelled rows
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
        "variants": variants,
        "auto": results.auto,
        "auto_reason": results.auto_reason,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
            **{name: importlib.metadata.version(name) for name in ("openvino", "nncf") if name in runtimes_used},
            "numpy": np.__version__,
        },
    }
    if calibration:
        record["calibration"] = calibration
    return record


def export_after_training(config: Any, validation: Any, train: Any = None, test: Any = None) -> dict[str, Any]:
    """`eval.export: onnx|int8` at the end of a run (main process): export and verify on the validation split
    already in memory, topped up with the test and train texts when it is smaller than the sample (a static int8
    model calibrates on training rows), print the table, and rewrite the run's report so that it shows it."""
    from pipeline.export.cli import format_record
    from pipeline.export.verify import validation_gold
    from pipeline.report import write_report

    record = export_run(
        config.run_dir,
        "int8" if config.eval.export == "int8" else None,
        texts=column_values(validation, "text"),
        gold=validation_gold(validation, config.data.task),
        source_note="validation split",
        calibration=column_values(train, "text") if train is not None else None,
        top_up={name: column_values(split, "text") for name, split in (("test", test), ("train", train)) if split},
        batch_size=config.eval.batch_size,
        seed=config.run.seed,
    )
    print(format_record(record))
    write_report([config.run_dir], config.run_dir)
    return record
