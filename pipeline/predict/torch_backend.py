"""The PyTorch backend: a model in eval mode on its device, in fp32 or PyTorch's reduced precision. torch is
imported where it runs, so that the predictor, which imports this module, starts without it for an export."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from pipeline.common.hardware import runs_weight_copy

if TYPE_CHECKING:
    import torch


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
        import torch

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
        import torch

        inputs = {name: torch.from_numpy(array).to(self.device) for name, array in batch.items()}
        return self.running_model(**inputs).logits.float().cpu().numpy()  # (B, K)
