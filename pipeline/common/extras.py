"""Optional extras: whether an optional module is installed, and the command that installs its extra."""

from __future__ import annotations

import importlib.util

# The optional extra that installs each optional module, and its command.
EXTRAS = {"onnx": "onnx", "onnxruntime": "onnx", "openvino": "openvino", "nncf": "openvino", "cleanlab": "audit"}
# The trackers of train.report_to and the search of pipeline.tune, each its own extra.
EXTRAS.update({name: name for name in ("tensorboard", "mlflow", "wandb", "trackio")} | {"optuna": "tune"})


def extra_install(extra: str) -> str:
    return f'pip install -e ".[{extra}]"'


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
