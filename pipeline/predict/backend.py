"""What runs the forward pass: PyTorch or an exported model on the CPU. Both take the same padded (B, T) int64
batch by input name and give (B, K) float32 logits, so nothing else in prediction depends on the backend.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from pipeline.common.hardware import runs_weight_copy
from pipeline.run.exports import backend_name


class Backend(Protocol):
    name: str  # "torch", or an export's backend_name: "onnx-fp32", "onnx-int8", "openvino", "openvino-int8"

    def running(self, compute_dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
        """Entered once around a run of batches; `compute_dtype` None is fp32, else PyTorch's reduced precision."""

    def logits(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """(B, T) int64 arrays by input name (input_ids, attention_mask[, token_type_ids]) -> (B, K) float32 logits."""


class TorchBackend:
    """PyTorch. In bf16 on a CPU it runs a bf16 copy of the weights rather than autocast; the fp32 weights stay for
    near-tie rechecks. `bf16_weights=False` keeps autocast."""

    name = "torch"

    def __init__(self, model: torch.nn.Module, device: torch.device, bf16_weights: bool = True):
        self.model = model
        self.device = device
        self.bf16_weights = bf16_weights
        self.running_model = model
        self._copies: dict[torch.dtype, torch.nn.Module] = {}  # compute dtype -> a copy of the model in it

    @contextlib.contextmanager
    def running(self, compute_dtype: torch.dtype | None) -> Iterator[None]:
        self.running_model, autocast = self.model, contextlib.nullcontext()
        if self.bf16_weights and runs_weight_copy(compute_dtype, self.device):
            self.running_model = self._copy_in(compute_dtype)
        elif compute_dtype is not None:
            autocast = torch.autocast(self.device.type, dtype=compute_dtype)
        with torch.inference_mode(), autocast:
            yield

    def _copy_in(self, dtype: torch.dtype) -> torch.nn.Module:
        if dtype not in self._copies:
            self._copies[dtype] = copy.deepcopy(self.model).to(dtype).eval()
        return self._copies[dtype]

    def logits(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        inputs = {name: torch.from_numpy(array).to(self.device) for name, array in batch.items()}
        return self.running_model(**inputs).logits.float().cpu().numpy()  # (B, K)


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
