"""How long this process has run, start-up included, and the timed phases of a run.

`time.perf_counter()` counts from an arbitrary point, so it cannot see the interpreter's start and the imports before
the first line of our code. On Linux the kernel records when the process started (/proc/self/stat, field 22, in
clock ticks since boot, against CLOCK_BOOTTIME): exact to one tick (10 ms). Elsewhere the start is the moment the
`pipeline` package was first imported, which misses only the interpreter's own start (tens of milliseconds).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline import IMPORTED_AT

# The most seconds between the interpreter's start and the import of `pipeline` that is believed.
PLAUSIBLE_START_UP = 60.0


def process_age() -> float | None:
    """Seconds since this process started, from the kernel's record; None where there is none (not Linux)."""
    try:
        stat = Path("/proc/self/stat").read_text()
        # Fields after the command name, which is in parentheses and may hold spaces: field 22 is the 20th.
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def process_start() -> float:
    """When this process started, on the `time.perf_counter()` clock."""
    age = process_age()
    started = time.perf_counter() - age if age is not None else IMPORTED_AT
    # A kernel clock that disagrees (a time namespace, say) would put the start after the import, or far before it.
    return started if IMPORTED_AT - PLAUSIBLE_START_UP <= started <= IMPORTED_AT else IMPORTED_AT


@contextlib.contextmanager
def timed(record: Any, key: str) -> Iterator[None]:
    """Add the seconds the block takes to `record.<key>` (None counts as 0), also when it raises."""
    tick = time.perf_counter()
    try:
        yield
    finally:
        setattr(record, key, (getattr(record, key) or 0.0) + time.perf_counter() - tick)


def exit_without_teardown(code: int) -> None:
    """End a command-line process with `code`, skipping the interpreter's teardown.

    Tearing down the modules of torch, transformers and datasets took 1.6 s after a 45 s tiny run on an idle 2-core
    CPU (8 s on a loaded one): time the user waits for, no phase of the run, and nothing a finished command needs.
    What exit would still do is done here first: other threads finish, atexit handlers run (logging, trackers,
    temporary folders), and the standard streams are flushed. Only for `__main__`: a caller in-process keeps running.
    """
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing left to flush
            stream.flush()
    os._exit(code)
