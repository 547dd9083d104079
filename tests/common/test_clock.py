"""The process clock (pipeline.common.clock): the start-up it sees, phases it adds up, and an exit without teardown
that still does what a finished command needs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from pipeline.common import clock
from tests.helpers import REPO_ROOT


def python(code: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)


def test_a_fresh_process_counts_its_start_up_from_before_its_first_line():
    """Sleeping before `pipeline` is imported is start-up the perf_counter clock alone cannot see."""
    code = "import time; time.sleep(0.5)\nfrom pipeline.common import clock\nprint(time.perf_counter() - clock.process_start())"
    age = float(python(code).stdout)
    assert 0.5 <= age < 5.0


def test_this_process_is_older_than_its_import_of_pipeline():
    assert time.perf_counter() - clock.process_start() >= time.perf_counter() - clock.IMPORTED_AT - 0.05


def test_timed_blocks_add_up_also_when_one_raises():
    record = SimpleNamespace(seconds=None)
    with clock.timed(record, "seconds"):
        time.sleep(0.05)
    with pytest.raises(ValueError), clock.timed(record, "seconds"):
        time.sleep(0.05)
        raise ValueError
    assert 0.1 <= record.seconds < 1.0


def test_an_exit_without_teardown_still_runs_atexit_flushes_and_keeps_its_status(tmp_path):
    marker = tmp_path / "atexit.txt"
    code = (
        "import atexit, sys, threading, time\n"
        "from pipeline.common.clock import exit_without_teardown\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').write('ran'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread done'))).start()\n"
        "sys.stdout.write('buffered, not yet flushed')\n"
        "exit_without_teardown(3)\n"
    )
    result = python(code)
    assert result.returncode == 3 and marker.read_text() == "ran"
    assert "buffered, not yet flushed" in result.stdout and "thread done" in result.stdout
