"""Optional extras: whether an optional module is installed, and the command that installs its extra."""

from __future__ import annotations

import importlib.util

# The optional extra that installs each optional module, and its command.
EXTRAS = {"onnx": "onnx", "onnxruntime": "onnx", "openvino": "openvino", "nncf": "openvino", "cleanlab": "audit"}


def extra_install(extra: str) -> str:
    return f'pip install -e ".[{extra}]"'


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
