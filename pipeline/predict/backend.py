"""What runs the forward pass: PyTorch (torch_backend.py) or an exported model on the CPU. Both take the same padded
(B, T) int64 batch by input name and give (B, K) float32 logits, so nothing else in prediction depends on the
backend. This module imports no torch: an export runs without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from pipeline.run.exports import backend_name

if TYPE_CHECKING:
    import torch


class Backend(Protocol):
    name: str  # "torch", or an export's backend_name: "onnx-fp32", "onnx-int8", "openvino", "openvino-int8"

    def running(self, compute_dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
        """Entered once around a run of batches; `compute_dtype` None is fp32, else PyTorch's reduced precision."""

    def logits(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """(B, T) int64 arrays by input name (input_ids, attention_mask[, token_type_ids]) -> (B, K) float32 logits."""


@dataclass(eq=False)
class ExportBackend:
    """An exported model; `run` is its runtime's call; `inputs` the names its graph takes; `precision` what the
    runtime computes in, when it chooses."""

    run: Callable[[dict[str, np.ndarray]], np.ndarray]
    variant: str
    path: Path
    inputs: set[str]
    precision: str | None = None

    def __post_init__(self):
        self.name = backend_name(self.variant)

    def running(self, compute_dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def logits(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        if set(batch) != self.inputs:  # a pair's segment ids for a single-text graph, or none for a pair graph
            raise ValueError(f"{self.path} takes {', '.join(sorted(self.inputs))}, given {', '.join(sorted(batch))}")
        return np.asarray(self.run(batch), dtype=np.float32)  # (B, K)
