"""Make an encoder folder saved before the modelling code travelled with it loadable without this package
(`python -m pipeline.report --upgrade-model RUN`): re-saved in place with `modeling_encoder.py` and the `auto_map`,
the same weights, every other file kept.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipeline.common.io import replace_directory
from pipeline.models.modeling_encoder import MODEL_TYPE, EncoderForSequenceClassification
from pipeline.run.directory import MODEL_CONFIG_FILE, RunDir, is_model_dir, is_run_dir

# What save_pretrained writes for this model: replaced by the new save, never copied from the old folder.
_REWRITTEN = (
    "config.json",
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


class UpgradeError(ValueError):
    """The folder cannot be upgraded (not a model folder, not the from-scratch encoder); the message says why."""


def upgrade_model_dir(path: str | Path) -> str:
    """Re-save an encoder folder with its code and auto_map; returns a one-line message saying what was done."""
    path = Path(path)
    if not is_run_dir(path) and not is_model_dir(path):
        raise UpgradeError(f"{path}: neither a run directory nor a saved model folder (no {MODEL_CONFIG_FILE})")
    model_dir = RunDir(path).model_dir if is_run_dir(path) else path
    config_path = model_dir / MODEL_CONFIG_FILE
    try:
        saved = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UpgradeError(f"{config_path}: cannot be read as JSON ({error})") from None
    model_type = saved.get("model_type") if isinstance(saved, dict) else None
    if model_type != MODEL_TYPE:
        raise UpgradeError(
            f"{model_dir}: model_type {model_type!r} is not the from-scratch encoder ({MODEL_TYPE!r}); transformers' own architectures load without trust_remote_code, nothing to upgrade"
        )
    code_name = f"{EncoderForSequenceClassification.__module__.rsplit('.', 1)[-1]}.py"
    if saved.get("auto_map") and (model_dir / code_name).is_file():
        return f"{model_dir}: already holds {code_name} and an auto_map; nothing to do"

    model = EncoderForSequenceClassification.from_pretrained(model_dir)

    def fill(staging: Path) -> None:
        for item in model_dir.iterdir():
            if item.name in _REWRITTEN or item.name == code_name:
                continue
            if item.is_dir():
                shutil.copytree(item, staging / item.name)
            else:
                shutil.copy2(item, staging / item.name)
        model.save_pretrained(staging)

    replace_directory(model_dir, fill)
    return f"{model_dir}: re-saved with {code_name} and an auto_map; it now loads without the pipeline package: AutoModelForSequenceClassification.from_pretrained('{model_dir}', trust_remote_code=True)"
