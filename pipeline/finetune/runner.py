"""One run, the stages in order into one run directory: `run(config)`, timed from the process's start."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed

from pipeline import distill
from pipeline.common import clock, hardware
from pipeline.config.schema import PipelineConfig
from pipeline.finetune.finish import close_timings, finish_run
from pipeline.finetune.stages import OnValidation, build_record, evaluate, prepare, train
from pipeline.run import ownership
from pipeline.run.record import Timings
from pipeline.train.loop import create_accelerator
from pipeline.train.start import check_run_dir, start_run_dir
from pipeline.train.trackers import log_test_metrics


def set_cpu_threads(setting: int | None, accelerator: Accelerator) -> dict[str, Any]:
    """On a CPU, PyTorch's threads per process (hardware.cpu_threads), stated and recorded; nothing on a GPU."""
    if accelerator.device.type != "cpu":
        return {}
    threads, reason = hardware.cpu_threads(setting)
    torch.set_num_threads(threads)
    accelerator.print(f"CPU threads: {threads} per process ({reason})")
    return {"cpu_threads": threads, "cpu_threads_reason": reason}


def end_run(accelerator: Accelerator, keep_process_group: bool) -> None:
    """Closes the trackers and, unless kept, the process group: nothing collective may follow. A group destroyed
    and opened again on the same port races the other processes (gloo's connectFullMesh is refused)."""
    if keep_process_group:
        for tracker in accelerator.trackers:
            tracker.finish()
    else:
        accelerator.end_training()


def run(
    config: PipelineConfig,
    started: float | None = None,
    on_validation: OnValidation | None = None,
    keep_process_group: bool = False,
) -> dict[str, Any]:
    """Stages 1-4 for one config; returns metrics.json's content. `started`: when the process started, on the
    perf_counter clock (clock.process_start), so that timings count the start-up; None: from this call.
    `on_validation`: see OnValidation. `keep_process_group`: under several processes, leave the process group up
    for the caller's next run (pipeline.tune's trials); the caller destroys it."""
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    start = time.perf_counter() if started is None else started
    timings = Timings(startup_seconds=None if started is None else time.perf_counter() - started)
    with clock.timed(timings, "setup_seconds"):
        accelerator = create_accelerator(config.train, config.run_dir)
        if accelerator.is_main_process:  # before this process claims it: the other ranks would see its own lock
            ownership.refuse_if_in_use(config.run_dir)
        check_run_dir(config)
        teacher = distill.resolve_teacher(config.train.distill) if config.train.distill.teacher else None
    claim = ownership.claimed(config.run_dir) if accelerator.is_main_process else contextlib.nullcontext()
    keep_memory = config.train.keep_freed_memory and accelerator.device.type == "cpu"
    with claim, hardware.torch_threads_restored(), hardware.freed_memory_kept(keep_memory) as memory_kept:
        with clock.timed(timings, "setup_seconds"):
            accelerator.wait_for_everyone()  # every process samples the load at once, none of them busy yet
            threads = set_cpu_threads(config.train.cpu_threads, accelerator)
            set_seed(config.run.seed)
        prepared = prepare(config, accelerator, timings, teacher)
        with clock.timed(timings, "setup_seconds"):
            if accelerator.is_main_process:
                start_run_dir(config, prepared.data)
            accelerator.wait_for_everyone()
        training, num_parameters = train(config, prepared, accelerator, timings, start, on_validation)
        evaluated = evaluate(config, prepared, accelerator, timings, training.best_validation_logits)
        scoring = evaluated.scoring
        log_test_metrics(accelerator, scoring.results["test"].metrics, training.state.global_step)
        timings.close(time.perf_counter() - start)  # closed again at the end; metrics.json is written before it
        device = {**hardware.device_info(accelerator.device, accelerator.num_processes), **threads}
        device["freed_memory_kept"] = memory_kept
        record = build_record(
            config, prepared, training, scoring, timings, evaluated.rows_scored, num_parameters, started_at, device
        )
        if accelerator.is_main_process:
            finish_run(config, prepared, record, evaluated, training.train_dynamics, start)
        accelerator.wait_for_everyone()
    end_run(accelerator, keep_process_group)
    if accelerator.is_main_process:
        close_timings(config, record, start)
    return record.to_dict()
