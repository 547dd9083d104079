"""What the machine can do: the device, the precision it runs well, the CPU's name and the library versions.

Training, evaluation and prediction all ask here, so that "bf16 on this CPU?" has one answer everywhere.
"""

from __future__ import annotations

import os
import platform

import torch


class HardwareError(ValueError):
    """A device or precision was asked for that this machine does not have."""


def cpu_supports_bf16() -> bool:
    """bf16 pays off on a CPU only with native bf16 instructions (AVX512-BF16, AMX, Arm BF16); emulated it is slower."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    if any(getattr(torch.cpu, check, lambda: False)() for check in checks):
        return True
    if platform.machine().lower() in ("aarch64", "arm64"):  # Arm's BF16 extension, as oneDNN sees it
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def device_supports_bf16(device: torch.device) -> bool:
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return cpu_supports_bf16()
    return False


def resolve_mixed_precision(setting: str, use_cuda: bool) -> str:
    """train.mixed_precision -> accelerate's setting. `auto`: bf16 where the GPU or CPU runs it natively, fp16
    (with loss scaling) on older GPUs, else full precision ("no")."""
    if setting != "auto":
        return setting
    if use_cuda:
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if cpu_supports_bf16() else "no"


def resolve_device(name: str) -> torch.device:
    """'auto' takes the GPU when there is one; an unavailable device is an error, not a silent fallback."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise HardwareError(f"unknown device '{name}' (use cpu, cuda, cuda:<index> or auto)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise HardwareError(f"device '{name}' requested but no CUDA GPU is available (use --device cpu)")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise HardwareError(f"device '{name}' does not exist: {torch.cuda.device_count()} GPU(s) visible")
    return device


def resolve_inference_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """Prediction's --precision -> the reduced compute dtype, or None for full fp32. 'auto' takes bf16 where the hardware
    runs it natively; an explicit 'bf16' on a CPU without it is allowed (emulated, slow), on other devices not."""
    if precision == "fp32":
        return None
    supported = device_supports_bf16(device) if precision == "auto" or device.type != "cpu" else True
    if precision == "bf16" and not supported:
        raise HardwareError(f"--precision bf16 is not supported on {device}; use --precision fp32")
    return torch.bfloat16 if supported else None


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info(device: torch.device, num_processes: int) -> dict:
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    return {"type": device.type, "name": name, "num_processes": num_processes}


def library_versions() -> dict:
    import accelerate
    import datasets
    import transformers

    import pipeline

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "datasets": datasets.__version__,
        "accelerate": accelerate.__version__,
        "pipeline": pipeline.__version__,
    }
