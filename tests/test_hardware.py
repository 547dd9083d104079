"""Tests for pipeline/hardware.py: one answer to "which device and precision" for training and prediction."""

import pytest
import torch

from pipeline import hardware
from pipeline.hardware import HardwareError, resolve_device, resolve_inference_dtype, resolve_mixed_precision


def test_mixed_precision_auto_resolution(monkeypatch):
    assert resolve_mixed_precision("no", use_cuda=True) == "no"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_mixed_precision("auto", use_cuda=True) == "fp16"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_mixed_precision("auto", use_cuda=True) == "bf16"
    monkeypatch.setattr(hardware, "cpu_supports_bf16", lambda: False)
    assert resolve_mixed_precision("auto", use_cuda=False) == "no"
    monkeypatch.setattr(hardware, "cpu_supports_bf16", lambda: True)
    assert resolve_mixed_precision("auto", use_cuda=False) == "bf16"


def test_training_and_prediction_agree_on_cpu_bf16(monkeypatch):
    """The same CPU check decides autocast for training and for prediction."""
    cpu = torch.device("cpu")
    for native in (False, True):
        monkeypatch.setattr(hardware, "cpu_supports_bf16", lambda native=native: native)
        training_bf16 = resolve_mixed_precision("auto", use_cuda=False) == "bf16"
        prediction_bf16 = resolve_inference_dtype("auto", cpu) == torch.bfloat16
        assert training_bf16 == prediction_bf16 == native
    assert resolve_inference_dtype("fp32", cpu) is None
    assert resolve_inference_dtype("bf16", cpu) == torch.bfloat16  # asked for explicitly: emulated is allowed


def test_arm_bf16_is_asked_of_onednn(monkeypatch):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    monkeypatch.setattr(hardware.platform, "machine", lambda: "x86_64")
    assert hardware.cpu_supports_bf16() is False
    monkeypatch.setattr(hardware.platform, "machine", lambda: "aarch64")
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True, raising=False)
    assert hardware.cpu_supports_bf16() is True


def test_unavailable_devices_are_errors_not_fallbacks(monkeypatch):
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(HardwareError, match="unknown device 'gpu0'"):
        resolve_device("gpu0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(HardwareError, match="no CUDA GPU"):
        resolve_device("cuda")
    assert resolve_device("auto") == torch.device("cpu")


def test_environment_is_described():
    info = hardware.device_info(torch.device("cpu"), num_processes=2)
    assert info["type"] == "cpu" and info["num_processes"] == 2 and info["name"]
    assert hardware.library_versions()["torch"] == torch.__version__
