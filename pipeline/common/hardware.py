"""What the machine can do (device, precision, free CPU cores, library versions) and how glibc serves a run's
memory: one answer to "bf16 on this CPU?" for training, evaluation and prediction.

torch is imported inside the functions that use it: prediction on an export runs without it (a 2-3 s import).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import platform
import runpy
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline import __version__

if TYPE_CHECKING:
    import torch


class HardwareError(ValueError):
    """A device or precision was asked for that this machine does not have."""


def cpu_supports_bf16() -> bool:
    """bf16 pays off on a CPU only with native bf16 instructions (AVX512-BF16, AMX, Arm BF16); emulated it is slower."""
    import torch

    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    if any(getattr(torch.cpu, check, lambda: False)() for check in checks):
        return True
    if platform.machine().lower() in ("aarch64", "arm64"):  # Arm's BF16 extension, as oneDNN sees it
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def device_supports_bf16(device: torch.device) -> bool:
    import torch

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
    import torch

    if use_cuda:
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if cpu_supports_bf16() else "no"


def torch_sees_no_gpu() -> bool:
    """True where torch is built without CUDA and ROCm, and so can never see a GPU: known from its version file,
    without importing it. False is no answer: ask torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return True
    version_file = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        build = runpy.run_path(str(version_file))  # __version__, cuda, hip: plain assignments
    except Exception:  # an unusual install: ask torch itself
        return False
    return build.get("cuda") is None and build.get("hip") is None


def resolve_device(name: str) -> torch.device:
    """'auto' takes the GPU when there is one; an unavailable device is an error, not a silent fallback."""
    import torch

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


# What prediction and evaluation accept as --precision (resolve_inference_dtype reads it).
INFERENCE_PRECISIONS = ("auto", "fp32", "bf16")


def resolve_inference_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """Prediction's --precision -> the reduced compute dtype, or None for full fp32. 'auto' takes bf16 where the
    hardware runs it natively; an explicit 'bf16' on a CPU without it is allowed (emulated, slow), on other devices
    not."""
    if precision == "fp32":
        return None
    import torch

    supported = device_supports_bf16(device) if precision == "auto" or device.type != "cpu" else True
    if precision == "bf16" and not supported:
        raise HardwareError(f"--precision bf16 is not supported on {device}; use --precision fp32")
    return torch.bfloat16 if supported else None


def cpu_name() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    return platform.processor() or platform.machine()


def device_info(device: torch.device, num_processes: int) -> dict:
    import torch

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    return {"type": device.type, "name": name, "num_processes": num_processes}


def library_versions() -> dict:
    import accelerate  # slow to import: loaded only when a run records its versions
    import datasets
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "datasets": datasets.__version__,
        "accelerate": accelerate.__version__,
        "pipeline": __version__,
    }


def local_process_count() -> int:
    """Processes sharing this machine's cores: torchrun and `accelerate launch` set LOCAL_WORLD_SIZE."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


def available_cores() -> int:
    """The cores this process may run on (a container's or taskset's limit, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


PROC_STAT = Path("/proc/stat")


def cpu_times(cores: Iterable[int], stat: Path = PROC_STAT) -> dict[int, tuple[int, int]]:
    """(busy, total) clock ticks since boot of each core in `cores`, from /proc/stat ("cpuN user nice system idle
    iowait irq softirq steal ..."); idle and iowait count as free."""
    wanted, times = set(cores), {}
    for line in stat.read_text().splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in wanted:
            ticks = [int(field) for field in fields[:8]]
            times[int(name[3:])] = (sum(ticks) - ticks[3] - ticks[4], sum(ticks))
    return times


def busy_between(first: dict[int, tuple[int, int]], second: dict[int, tuple[int, int]]) -> float:
    """Cores' worth of work done between two `cpu_times` readings (0 to the number of cores)."""
    busy = 0.0
    for core, (busy_after, total_after) in second.items():
        busy_before, total_before = first.get(core, (busy_after, total_after))
        if total_after > total_before:
            busy += (busy_after - busy_before) / (total_after - total_before)
    return busy


def busy_cores(seconds: float = 0.3) -> float | None:
    """How many of this process's cores other work keeps busy, sampled over `seconds` while this process sleeps;
    None where /proc/stat cannot be read (not Linux)."""
    try:
        cores = sorted(os.sched_getaffinity(0))
        first = cpu_times(cores)
        time.sleep(seconds)
        return busy_between(first, cpu_times(cores))
    except (AttributeError, OSError, ValueError):
        return None


def configured_threads() -> int | None:
    """OMP_NUM_THREADS when set to a positive number: the user's thread count, obeyed by PyTorch and ONNX Runtime."""
    configured = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(configured) if configured.isdigit() and int(configured) > 0 else None


def cores_per_process(cores: int | None = None) -> int:
    """`cores` (default: every core this process may use) shared among this machine's processes, at least one."""
    return max(1, (available_cores() if cores is None else cores) // local_process_count())


def cpu_threads(setting: int | None, measure_busy: Callable[[], float | None] = busy_cores) -> tuple[int, str]:
    """(threads per process, why): OMP_NUM_THREADS when set, else `setting` (train.cpu_threads), else the cores
    that other work leaves free (`measure_busy`, called only then), shared among this machine's processes."""
    configured = configured_threads()
    if configured is not None:
        return configured, "OMP_NUM_THREADS"
    if setting is not None:
        return setting, "train.cpu_threads"
    cores, processes = available_cores(), local_process_count()
    share = f", shared by {processes} processes" if processes > 1 else ""
    busy = measure_busy()
    if busy is None:
        return cores_per_process(), f"{cores} cores{share}"
    free = max(0, cores - round(busy))
    return cores_per_process(free), f"{free} of {cores} cores free of other work at start ({busy:.1f} busy){share}"


def runs_weight_copy(dtype: torch.dtype | None, device: torch.device) -> bool:
    """Whether reduced precision runs a bf16 copy of the weights rather than autocast: on a CPU, where autocast
    re-casts every weight at every matmul."""
    import torch

    return dtype == torch.bfloat16 and device.type == "cpu"


@contextlib.contextmanager
def torch_threads_restored() -> Iterator[None]:
    """PyTorch's thread count as it was before: a run that chose its own leaves the caller's (a notebook's) alone."""
    import torch

    previous = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(previous)


# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -3, -4
KEPT_MALLOC_SETTINGS = {M_MMAP_MAX: 0, M_TRIM_THRESHOLD: 2**31 - 1}
# After: where glibc's own sliding thresholds end up once large blocks have been freed (an mmap threshold of 32 MiB,
# its ceiling on 64-bit, and a trim threshold twice that). Any mallopt call stops them sliding, for good, so these
# are set explicitly; its start values (128 KiB) would make later tensor work page-fault more than before the run.
RELEASED_MALLOC_SETTINGS = {M_MMAP_MAX: 65536, M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 64 << 20}


def glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has mallopt and malloc_trim), else None (macOS, musl, Windows)."""
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except (OSError, TypeError):
        return None


@contextlib.contextmanager
def freed_memory_kept(enabled: bool = True) -> Iterator[bool]:
    """Inside: glibc keeps the memory PyTorch frees for its next allocations instead of handing it back to the
    kernel; yields whether it does (False when disabled or not glibc). After: what it kept goes back to the kernel
    (malloc_trim), so a notebook that ran this holds nothing, and large blocks are mmapped again
    (RELEASED_MALLOC_SETTINGS).

    Why: glibc serves blocks over its mmap threshold with a fresh mmap and unmaps them on free, so each new tensor
    of that size page-faults in zeroed pages again, every step and every new batch shape. With no mmap and no
    trimming, the blocks a step frees serve the next step's from memory the process already has."""
    libc = glibc() if enabled else None
    if libc is None:
        yield False
        return
    for parameter, value in KEPT_MALLOC_SETTINGS.items():
        libc.mallopt(parameter, value)
    try:
        yield True
    finally:
        for parameter, value in RELEASED_MALLOC_SETTINGS.items():
            libc.mallopt(parameter, value)
        libc.malloc_trim(0)
