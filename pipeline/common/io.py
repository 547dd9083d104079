"""Atomic file output: written to a temporary file beside the target, then renamed into place, so a crash or
Ctrl-C (or SIGTERM, `terminated_as_interrupt`) never leaves a truncated file; `OutputError` names the user's output.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import math
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any


class Terminated(KeyboardInterrupt):
    """SIGTERM, unwound like Ctrl-C: temporary files removed, the run directory's lock released."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated instead of ending the process where it stands. Only the main
    thread may set handlers: called from another (a notebook's worker thread), the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted_exit_code(interrupt: KeyboardInterrupt) -> int:
    """The exit status a shell gives a process ended by the signal: 143 for SIGTERM, 130 for Ctrl-C."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


class OutputError(OSError):
    """An output that cannot be written, said in one line naming the path the user gave (and `what` the command
    calls it: "output", "--output", "run directory"), never the temporary file or folder standing in for it."""

    def __init__(self, path: str | Path, reason: str, code: int | None = None, what: str = ""):
        super().__init__(code, reason, str(path))
        self.what = what

    def __str__(self) -> str:
        named = f"{self.what} {self.filename}" if self.what else str(self.filename)
        return f"cannot write {named}: {self.strerror}"

    def __reduce__(self) -> tuple[Any, ...]:  # OSError's would pass (errno, strerror, filename) to __init__
        return type(self), (self.filename, self.strerror, self.errno, self.what)


def check_can_write(path: str | Path, what: str = "", inside: bool = False) -> None:
    """Before any work, an OutputError unless `path` can be written: put in place beside its name (atomic_path,
    replace_directory) or, `inside`, written into (a run directory). Its nearest existing folder must take a new
    file: one is made there and removed, since os.access says yes to root on a read-only file system."""
    path = Path(path)
    start = path.absolute() if inside else path.absolute().parent
    existing = next(folder for folder in (start, *start.parents) if folder.exists())
    if not existing.is_dir():
        raise OutputError(path, f"{existing} is a file, not a folder", errno.ENOTDIR, what)
    try:
        handle, probe = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=existing)
    except OSError as error:
        raise OutputError(path, f"{existing}: {error.strerror}", error.errno, what) from None
    os.close(handle)
    os.unlink(probe)


def _unwritable(path: Path, error: OSError) -> OutputError:
    """Making `path`'s folder, or a temporary file or folder in it, failed: why, as check_can_write says it."""
    try:
        check_can_write(path)
    except OutputError as reason:
        return reason
    return OutputError(path, error.strerror or str(error), error.errno)


# A write that fails for want of space names no file: it is the output being written.
FULL_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _raise_naming_target(error: OSError, temporary: Path, target: Path) -> None:
    """Raise `error` as an OutputError naming `target` where it names `temporary` (a file inside it: that file inside
    `target`) or says the disk is full without naming a file; return where it concerns another file, which it names
    itself (the caller raises it as it is)."""
    if error.filename is None and error.errno in FULL_DISK_ERRNOS:
        raise OutputError(target, error.strerror, error.errno) from None
    what = error.what if isinstance(error, OutputError) else ""
    for name in (error.filename, error.filename2):
        if isinstance(name, (str, bytes, os.PathLike)):
            inside = os.path.relpath(os.path.abspath(os.fsdecode(name)), os.path.abspath(temporary))
            if inside != os.pardir and not inside.startswith(os.pardir + os.sep):
                raise OutputError(target / inside, error.strerror or str(error), error.errno, what) from None


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto `path` only if the block succeeds. An OSError
    about the temporary file is raised as an OutputError naming `path`."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise _unwritable(path, error) from None
    os.close(handle)
    temp_path = Path(temp_name)
    try:
        yield temp_path
        # mkstemp creates the file owner-only; give it the permissions a plain open() would have.
        os.chmod(temp_path, 0o666 & ~_current_umask())
        os.replace(temp_path, path)
    except OSError as error:
        _raise_naming_target(error, temp_path, path)
        raise
    finally:
        temp_path.unlink(missing_ok=True)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as temp_path:
        temp_path.write_text(text, encoding="utf-8")


def atomic_write_json(path: str | Path, payload: Any) -> None:
    """Strict JSON: a NaN or infinity (a diverged loss, an undefined metric) is written as null, never as the bare
    NaN that Python's json module would write and other JSON readers reject."""
    atomic_write_text(path, json.dumps(_finite(payload), indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


class CsvRows:
    """Rows of a CSV (or, with `delimiter`, TSV) file with minimal quoting and '\\n' line ends, as every file the
    pipeline writes has them.

    csv.writer quotes a field that holds the delimiter, a quote or a character of the line terminator, but not a
    lone '\\r' when the terminator is '\\n'; such a field would come back split, so rows holding one are quoted.
    """

    def __init__(self, handle: Any, delimiter: str = ","):
        self._minimal = csv.writer(handle, delimiter=delimiter, lineterminator="\n")
        self._quoted = csv.writer(handle, delimiter=delimiter, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def writerow(self, row: Sequence[Any]) -> None:
        writer = self._quoted if any("\r" in value for value in row if isinstance(value, str)) else self._minimal
        writer.writerow(row)

    def writerows(self, rows: Iterable[Sequence[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def atomic_write_csv(path: str | Path, header: list[str], rows: Iterable[Sequence[Any]]) -> None:
    with atomic_path(path) as temp_path, open(temp_path, "w", newline="", encoding="utf-8") as handle:
        writer = CsvRows(handle)
        writer.writerow(header)
        writer.writerows(rows)


def replace_directory(path: str | Path, fill) -> None:
    """Build a directory with `fill(staging_path)` beside `path`, then swap it into place in one rename. An OSError
    about the staging folder or a file in it is raised as an OutputError naming `path` or that file in it."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    except OSError as error:
        raise _unwritable(path, error) from None
    # mkdtemp creates the folder owner-only (0700); give it the permissions a plain mkdir would have.
    os.chmod(staging, 0o777 & ~_current_umask())
    try:
        _fill_and_swap(path, staging, fill)
    except OSError as error:
        _raise_naming_target(error, staging, path)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fill_and_swap(path: Path, staging: Path, fill) -> None:
    retired = path.with_name(f".{path.name}.old")
    fill(staging)
    shutil.rmtree(retired, ignore_errors=True)
    had_old = path.exists()
    if had_old:
        os.replace(path, retired)
    try:
        os.replace(staging, path)
    except OSError:
        if had_old:  # put the previous folder back: a failed swap must not lose it
            os.replace(retired, path)
        raise
    shutil.rmtree(retired, ignore_errors=True)
