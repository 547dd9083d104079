"""export.json (docs/run-directory.md), the weights hash, and which backend prediction uses (`choose_export`).
Imports neither onnx nor a runtime, so that prediction and reports can read an export on a core install.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.common.extras import EXTRAS, extra_install, installed
from pipeline.run.directory import MODEL_WEIGHTS_FILE, ONNX_MODEL_FILES, RunDir, is_number

logger = logging.getLogger("pipeline.export")

# Each exported model and the runtime that runs it.
RUNTIMES = {name: "openvino" if name.startswith("openvino") else "onnxruntime" for name in ONNX_MODEL_FILES}
VARIANTS = tuple(RUNTIMES)
PRECISIONS = {
    "fp32": "fp32",
    "int8": "int8, dynamic quantization",
    "openvino": "OpenVINO's float precision: bf16 where the CPU has it, else f32",
    "openvino-int8": "int8, static quantization by NNCF",
}
STATUS_VERIFIED, STATUS_REFUSED = "verified", "refused"

# Refused: labels differ from PyTorch fp32 on more than MAX_DISAGREEMENT of the rows, or accuracy falls by more.
MAX_DISAGREEMENT = 0.005
MAX_ACCURACY_LOSS_POINTS = 0.5
# Below this many verification rows an export is not chosen by --backend auto: 5 x 1/MAX_DISAGREEMENT, five
# disagreements allowed, so that passing is evidence, not luck (fewer rows let a 1%-disagreeing export pass often).
MIN_VERIFICATION_ROWS = 1000
# --backend: auto, PyTorch, or one export by its backend_name, or by its runtime (its unquantized export). int8 runs
# only when named (or chosen by auto): a sharp model turns its small differences into label flips.
BACKEND_VARIANTS = {
    "onnx": "fp32",
    "onnx-fp32": "fp32",
    "onnx-int8": "int8",
    "openvino": "openvino",
    "openvino-int8": "openvino-int8",
}
BACKEND_RUNTIMES = {backend: RUNTIMES[variant] for backend, variant in BACKEND_VARIANTS.items()}
BACKENDS = ("auto", "torch", *BACKEND_RUNTIMES)


class ExportError(ValueError):
    """An export cannot be made, read or used; one line naming the file or the fix."""


def require(module: str) -> Any:
    """Import an optional dependency, or say in one line which extra installs it."""
    # ONNX Runtime (nncf and onnx may import it) writes under ~/.cache/Microsoft unless telemetry is off: a tool run
    # on users' data writes nothing outside the paths they name. The user's own setting wins.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = EXTRAS.get(module.split(".")[0], "onnx")
        raise ExportError(
            f"{module} is not installed: it comes with the optional extra '{extra}' ({extra_install(extra)})"
        ) from None


def too_few_rows(rows: Any) -> str | None:
    """Why exports verified on `rows` rows are not for --backend auto, in one line; None when there were enough."""
    if is_number(rows) and rows >= MIN_VERIFICATION_ROWS:
        return None
    counted = f"{rows:,}" if is_number(rows) else "an unknown number of"
    return f"verified on {counted} rows, fewer than the {MIN_VERIFICATION_ROWS:,} that checking a {MAX_DISAGREEMENT:.1%} disagreement limit needs"


def not_for_auto(rows: Any) -> str | None:
    short = too_few_rows(rows)
    return short and f"no export is eligible: {short}; --backend naming one (onnx, onnx-int8, ...) still runs it"


def verification_rows_of(record: dict[str, Any]) -> Any:
    verification = record.get("verification")
    return verification.get("rows") if isinstance(verification, dict) else None


def backend_name(variant: str) -> str:
    """onnx-fp32, onnx-int8, openvino, openvino-int8: what prediction and reports call an export."""
    return f"onnx-{variant}" if RUNTIMES[variant] == "onnxruntime" else variant


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(model_dir: Path) -> str:
    """sha256 of model.safetensors (of every *.safetensors file in name order for a sharded save)."""
    model_dir = Path(model_dir)
    single = model_dir / MODEL_WEIGHTS_FILE
    files = [single] if single.is_file() else sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise ExportError(f"{model_dir}: no {MODEL_WEIGHTS_FILE}, so the weights an export came from cannot be checked")
    if len(files) == 1:
        return file_sha256(files[0])
    return hashlib.sha256("".join(map(file_sha256, files)).encode()).hexdigest()  # of the files' hashes in order


def read_export_record(run_dir: Path) -> dict[str, Any] | None:
    """The run's export.json, or None when the run has none; ExportError when it is damaged."""
    path = RunDir(Path(run_dir)).export_record_path
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExportError(f"{path}: cannot be read ({type(error).__name__}); re-export the run") from None
    variants = record.get("variants") if isinstance(record, dict) else None
    if not isinstance(variants, dict) or not isinstance(record.get("model_sha256"), str):
        raise ExportError(f"{path}: 'variants' or 'model_sha256' is missing; re-export the run")
    for name, variant in variants.items():
        if name not in VARIANTS or not isinstance(variant, dict) or not isinstance(variant.get("file"), str):
            raise ExportError(f"{path}: variant '{name}' is not one of {', '.join(VARIANTS)} with a 'file'")
    return record


@dataclass(frozen=True)
class ExportChoice:
    """What prediction runs: an exported model (a VARIANTS name) or PyTorch (variant None), and why."""

    variant: str | None
    path: Path | None
    reason: str

    @property
    def backend(self) -> str:
        return "torch" if self.variant is None else backend_name(self.variant)


def _export_command(run_dir: Path) -> str:
    return f"python -m pipeline.export --model {run_dir} --quantize int8"


def choose_export(run_dir: Path | None, model_dir: Path, backend: str, device_type: str = "cpu") -> ExportChoice:
    """`--backend` -> what to run. `torch`: PyTorch. An export's name: that export when verified, else an error.
    `auto`: the export chosen at verification, else PyTorch (on a GPU, or on too few rows). An export of other
    weights, or a file changed since verification, is an ExportError.
    """
    if backend not in BACKENDS:
        raise ExportError(f"unknown backend '{backend}' (use {', '.join(BACKENDS)})")
    if backend == "torch":
        return ExportChoice(None, None, "asked for")
    runtime = BACKEND_RUNTIMES.get(backend)  # None for auto

    def torch_because(reason: str) -> ExportChoice:
        if runtime:
            raise ExportError(f"--backend {backend}: {reason}")
        return ExportChoice(None, None, reason)

    if device_type != "cpu":
        return torch_because(f"exports run on the CPU here, the model on {device_type} (use --device cpu)")
    if run_dir is None:
        return torch_because(
            f"{model_dir} is not in a run directory, so it has no export ({_export_command('runs/<name>')})"
        )
    run = RunDir(Path(run_dir))
    record = read_export_record(run.path)
    if record is None:
        return torch_because(
            f"no verified ONNX export ({run.export_record_path} not found; {_export_command(run.path)})"
        )
    other_weights = _other_weights(run, record, model_dir)
    if other_weights:
        return torch_because(other_weights)
    named = BACKEND_VARIANTS.get(backend)  # None for auto
    variants = {name: v for name, v in record["variants"].items() if named in (None, name)}
    if not variants and named is None:
        return torch_because(f"{run.export_record_path} lists no export; re-export with {_export_command(run.path)}")
    if not variants:
        extra = EXTRAS[runtime]
        needs = f" when the optional extra '{extra}' is installed: {extra_install(extra)}" if extra != "onnx" else ""
        return torch_because(
            f"{run.export_dir} has no {backend_name(named)} export (made by {_export_command(run.path)}{needs})"
        )
    verified = {name: v for name, v in variants.items() if v.get("status") == STATUS_VERIFIED}
    if not verified:
        reasons = "; ".join(f"{name} {v.get('status', '?')}: {v.get('reason', '')}" for name, v in variants.items())
        return torch_because(f"no verified export in {run.export_dir} ({reasons})")
    short = too_few_rows(verification_rows_of(record))
    if named:
        _require_runtime(named, torch_because)
        path = _verified_file(run, verified[named])
        if short:  # what the user asked for runs, but not as if verification had vouched for it
            logger.warning(f"--backend {backend} runs {backend_name(named)}, which auto would not choose: {short}")
        return ExportChoice(named, path, _asked_reason(named, record, short))
    if short:  # also an export.json written before the minimum existed, whose `auto` names an export
        return ExportChoice(None, None, not_for_auto(verification_rows_of(record)))
    return _auto_choice(run, record, verified)


def _other_weights(run: RunDir, record: dict[str, Any], model_dir: Path) -> str | None:
    """Why the export is refused when it was made from other weights than the model's."""
    recorded, actual = record["model_sha256"], weights_sha256(model_dir)
    if recorded == actual:
        return None
    return f"{run.export_dir} was exported from other weights (sha256 {recorded[:12]}, the model's is {actual[:12]}): refused; re-export with {_export_command(run.path)}"


def _asked_reason(variant: str, record: dict[str, Any], short: str | None) -> str:
    """Why an export asked for runs: its precision, whether auto could take it, and the other verified exports."""
    reason = f"asked for, {PRECISIONS[variant]}" + (f"; not eligible for auto: {short}" if short else "")
    others = [
        f"--backend {backend_name(name)} ({PRECISIONS[name]})"
        for name, entry in record["variants"].items()
        if name != variant and entry.get("status") == STATUS_VERIFIED
    ]
    return reason + (f". Also verified: {'; '.join(others)}" if others else "")


def _require_runtime(variant: str, refuse: Any) -> None:
    module = RUNTIMES[variant]
    if not installed(module):
        refuse(
            f"{variant} needs {module}, not installed (the optional extra '{EXTRAS[module]}': {extra_install(EXTRAS[module])})"
        )


def _auto_choice(run: RunDir, record: dict[str, Any], verified: dict[str, dict[str, Any]]) -> ExportChoice:
    """The export verification chose; where its runtime is not installed, the fastest installed verified export
    that beat PyTorch; else PyTorch."""
    picked = record.get("auto")
    if picked not in verified:
        return ExportChoice(None, None, str(record.get("auto_reason") or "no export was faster than PyTorch"))
    if installed(RUNTIMES[picked]):
        path = _verified_file(run, verified[picked])
        return ExportChoice(picked, path, str(record.get("auto_reason") or "verified and faster than PyTorch"))
    missing = f"{picked}, chosen at verification, needs {RUNTIMES[picked]}, not installed"
    usable = {
        name: entry
        for name, entry in verified.items()
        if installed(RUNTIMES[name]) and is_number(entry.get("speedup_vs_torch")) and entry["speedup_vs_torch"] > 1.0
    }
    if not usable:
        return ExportChoice(None, None, f"{missing}, and no other verified export was faster than PyTorch")
    best = max(usable, key=lambda name: _rate(usable[name]))
    speedup = usable[best]["speedup_vs_torch"]
    return ExportChoice(best, _verified_file(run, usable[best]), f"{missing}; {best}: {speedup:.2f}x PyTorch's rows/s")


def _verified_file(run: RunDir, variant: dict[str, Any]) -> Path:
    """The variant's file; ExportError when it is missing or no longer the file verified."""
    path = run.export_dir / variant["file"]
    if not path.is_file():
        raise ExportError(
            f"{path}: missing, though {run.export_record_path} lists it; re-export with {_export_command(run.path)}"
        )
    if variant.get("sha256") and file_sha256(path) != variant["sha256"]:
        raise ExportError(
            f"{path}: changed or corrupted since it was verified (sha256 differs from export.json); re-export with {_export_command(run.path)}"
        )
    return path


def _rate(variant: dict[str, Any]) -> float:
    rate = variant.get("rows_per_second")
    return float(rate) if is_number(rate) else 0.0


@dataclass(frozen=True)
class ParityRow:
    """One line of the parity and speed table (the export command and the run report show it)."""

    backend: str
    label_agreement: float | None
    max_probability_difference: float | None
    accuracy: float | None
    rows_per_second: float | None
    speedup: float | None
    status: str


def parity_rows(record: dict[str, Any]) -> list[ParityRow]:
    """PyTorch fp32 (the reference), PyTorch as --backend torch runs it (when not fp32), then each export."""
    torch_results = record.get("torch") if isinstance(record.get("torch"), dict) else {}
    fp32, default = torch_results.get("fp32") or {}, torch_results.get("default") or {}
    default_is_fp32 = default.get("precision", "fp32") == "fp32"
    reference = "reference" + (", baseline for auto" if default_is_fp32 else "")
    exact = {
        "label_agreement": 1.0,
        "max_probability_difference": 0.0,
        "speedup_vs_torch": 1.0 if default_is_fp32 else None,
    }
    rows = [_parity_row("torch fp32", {**fp32, **exact}, reference)]
    if not default_is_fp32:
        baseline = {**default, "max_probability_difference": None, "speedup_vs_torch": 1.0}
        rows.append(_parity_row(f"torch {default.get('precision')}", baseline, "baseline for auto"))
    short = too_few_rows(verification_rows_of(record))
    for name, entry in record.get("variants", {}).items():
        chosen = ", chosen by auto" if record.get("auto") == name else ""
        if short and entry.get("status") == STATUS_VERIFIED:
            chosen = ", not for auto (too few rows)"
        precision = f" ({entry['precision']})" if entry.get("precision") else ""
        backend = backend_name(name).replace("-", " ") + precision
        rows.append(_parity_row(backend, entry, f"{entry.get('status', '?')}{chosen}"))
    return rows


def _parity_row(backend: str, entry: dict[str, Any], status: str) -> ParityRow:
    """A table row of `entry`'s figures, by export.json's names."""
    figures = ("label_agreement", "max_probability_difference", "accuracy", "rows_per_second", "speedup_vs_torch")
    return ParityRow(backend, *(float(entry[key]) if is_number(entry.get(key)) else None for key in figures), status)


def rows_used(record: dict[str, Any]) -> str:
    verification = record.get("verification") if isinstance(record.get("verification"), dict) else {}
    rows, parts = verification.get("rows"), verification.get("parts")
    where = f" ({', '.join(f'{name} {count}' for name, count in parts.items())})" if isinstance(parts, dict) else ""
    line = f"agreement and max |dp| with PyTorch fp32 on {rows} rows{where}"
    if verification.get("accuracy_rows") == 0:  # a multi-label run's: agreement is the whole check
        line += "; no accuracy (no single gold class per row)"
    elif is_number(verification.get("accuracy_rows")):  # export.json from before top-ups: on the same rows
        line += f"; accuracy on the {verification['accuracy_rows']} labelled {verification.get('accuracy_source')} rows"
    return line


def auto_backend(record: dict[str, Any]) -> str:
    return backend_name(record["auto"]) if record.get("auto") in record.get("variants", {}) else "torch"
