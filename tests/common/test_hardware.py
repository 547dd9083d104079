"""Tests for pipeline/common/hardware.py: one answer to "which device and precision" for training and prediction."""

import json
import resource
import subprocess
import sys

import pytest
import torch

from pipeline.common import hardware
from pipeline.common.hardware import HardwareError, resolve_device, resolve_inference_dtype, resolve_mixed_precision


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


def test_a_torch_build_without_cuda_or_rocm_is_known_from_its_version_file(tmp_path, monkeypatch):
    """--device auto is the CPU, known without importing torch, exactly where torch itself would say no GPU."""
    import importlib.util

    assert hardware.torch_sees_no_gpu() == (torch.version.cuda is None and torch.version.hip is None)
    builds = {
        "cpu": "cuda = None\nhip = None\n",
        "cuda": "cuda = '12.4'\nhip = None\n",
        "rocm": "cuda = None\nhip = '6.2'\n",
    }
    for name, version in builds.items():
        package = tmp_path / name / "torch"
        package.mkdir(parents=True)
        (package / "version.py").write_text(f"__version__ = '2.13.0'\n{version}")
        monkeypatch.setattr(importlib.util, "find_spec", lambda module, *a, package=package: spec_of(package))
        assert hardware.torch_sees_no_gpu() == (name == "cpu"), name
    (tmp_path / "cpu" / "torch" / "version.py").write_text("cuda = undefined_name\n")  # unreadable: ask torch itself
    monkeypatch.setattr(importlib.util, "find_spec", lambda module, *a: spec_of(tmp_path / "cpu" / "torch"))
    assert hardware.torch_sees_no_gpu() is False


def spec_of(package):
    """A find_spec answer for a `torch` package at `package` (the function reads only its folder)."""
    import importlib.machinery

    spec = importlib.machinery.ModuleSpec("torch", None, is_package=True)
    spec.submodule_search_locations = [str(package)]
    return spec


def test_environment_is_described():
    info = hardware.device_info(torch.device("cpu"), num_processes=2)
    assert info["type"] == "cpu" and info["num_processes"] == 2 and info["name"]
    assert hardware.library_versions()["torch"] == torch.__version__


STAT = """cpu  700 0 300 900 100 0 0 0 0 0
cpu0 500 0 100 300 100 0 0 0 0 0
cpu1 200 0 200 600 0 0 0 0 0 0
intr 12345
"""


def test_cpu_times_read_busy_and_total_ticks_per_core(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text(STAT)
    assert hardware.cpu_times([0, 1], stat) == {0: (600, 1000), 1: (400, 1000)}
    assert hardware.cpu_times([1], stat) == {1: (400, 1000)}  # the aggregate "cpu" line is never a core
    later = {0: (600 + 100, 1000 + 100), 1: (400 + 25, 1000 + 100)}  # core 0 fully busy, core 1 a quarter
    assert hardware.busy_between(hardware.cpu_times([0, 1], stat), later) == pytest.approx(1.25)


def test_the_batch_token_budget_caps_cpu_batches_and_leaves_gpu_batches_whole():
    from pipeline.config.schema import MAX_BATCH_TOKENS, batch_token_budget

    cpu, gpu = "cpu", "cuda"
    assert batch_token_budget("auto", cpu) == MAX_BATCH_TOKENS
    assert batch_token_budget("auto", gpu) is None
    assert batch_token_budget(1000, gpu) == batch_token_budget(1000, cpu) == 1000
    assert batch_token_budget(None, cpu) is None and batch_token_budget(0, cpu) is None


def test_cpu_threads_take_the_cores_other_work_leaves_free(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    monkeypatch.setattr(hardware, "available_cores", lambda: 4)
    assert hardware.cpu_threads(None, lambda: 0.2)[0] == 4  # idle: every core
    threads, reason = hardware.cpu_threads(None, lambda: 1.0)
    assert threads == 3 and "3 of 4 cores free" in reason
    assert hardware.cpu_threads(None, lambda: 3.9)[0] == 1  # never fewer than one
    assert hardware.cpu_threads(None, lambda: None)[0] == 4  # no /proc/stat: every core
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert hardware.cpu_threads(None, lambda: 0.0)[0] == 2  # shared by this machine's processes

    def not_measured():
        raise AssertionError("the load is sampled only when nothing else decides")

    assert hardware.cpu_threads(3, not_measured) == (3, "train.cpu_threads")
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    assert hardware.cpu_threads(3, not_measured) == (5, "OMP_NUM_THREADS")


def test_busy_cores_sees_a_busy_process(tmp_path):
    import subprocess
    import sys

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert hardware.busy_cores(0.5) >= 0.6  # one process spinning: about one core's worth
    finally:
        busy.kill()
        busy.wait()


def test_a_runs_thread_count_is_undone_afterwards():
    before = torch.get_num_threads()
    with hardware.torch_threads_restored():
        torch.set_num_threads(1)
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_only_bf16_on_a_cpu_runs_a_copy_of_the_weights():
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert hardware.runs_weight_copy(torch.bfloat16, cpu)
    assert not hardware.runs_weight_copy(None, cpu)  # fp32: the model itself
    assert not hardware.runs_weight_copy(torch.bfloat16, gpu)  # a GPU keeps autocast
    assert not hardware.runs_weight_copy(torch.float16, cpu)


FAULTS_SCRIPT = """
import json, resource, torch
from pipeline.common import hardware

SIZES = [16 << 20] + [2 << 20] * 4 + [256 << 10] * 8  # floats: like a step, one 64 MiB, four 8 MiB, eight 1 MiB

def step():
    tensors = [torch.zeros(n) for n in SIZES]  # made, filled, freed
    del tensors

def page_faults_of_steps(count=3):
    step()  # unmeasured
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(count):
        step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

faults = {"before": page_faults_of_steps()}
with hardware.freed_memory_kept() as kept:
    faults["inside"] = page_faults_of_steps()
faults["after"] = page_faults_of_steps()
print(json.dumps({"kept": kept, **faults}))
"""


@pytest.mark.skipif(hardware.glibc() is None, reason="mallopt is glibc's: not this platform's C library")
def test_freed_memory_is_reused_inside_and_handed_back_after():
    # A fresh process, as the commands that use it are: a test process's heap carries every earlier test's blocks.
    done = subprocess.run([sys.executable, "-c", FAULTS_SCRIPT], capture_output=True, text=True, check=True)
    faults = json.loads(done.stdout.splitlines()[-1])
    pages = 3 * (104 << 20) // resource.getpagesize()  # three steps of 104 MiB
    assert faults["kept"]
    assert faults["before"] > pages // 3  # glibc's default: the largest blocks are fresh mmaps, faulted in again
    assert faults["inside"] < pages // 50  # freed blocks serve the next step
    assert faults["after"] > pages // 3  # large blocks are mmapped again


def test_freed_memory_kept_can_be_turned_off():
    with hardware.freed_memory_kept(enabled=False) as kept:
        assert not kept
