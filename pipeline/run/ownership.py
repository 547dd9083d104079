"""Owning a run directory: one process at a time (a lock file holding its id), and an overwrite that deletes only
what the pipeline wrote (pipeline.run.directory's names)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from pipeline.run.directory import (
    CHECKPOINTS_DIR,
    LOCK_FILE,
    RunDirError,
    is_staging_leftover,
    live_lock_owner,
    owned_names,
)


def refuse_if_in_use(path: Path) -> None:
    """A RunDirError when another live process holds the run directory's lock: checked before anything else is
    said about the folder's content, which that run is changing."""
    owner = live_lock_owner(path)
    if owner is not None:
        raise RunDirError(f"{path} is in use by another run (process {owner}); wait for it, or choose another run.name")


@contextlib.contextmanager
def claimed(path: Path) -> Iterator[None]:
    """Hold the run directory for this process (a lock file with its pid); a second run gets a RunDirError at once,
    a stale lock is taken over. Folders it had to create are removed again if left empty."""
    created = [folder for folder in (path, *path.parents) if not folder.exists()]
    path.mkdir(parents=True, exist_ok=True)
    lock = path / LOCK_FILE
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            refuse_if_in_use(path)
            lock.unlink(missing_ok=True)  # stale: its process is gone
            continue
        with os.fdopen(descriptor, "w") as handle:
            handle.write(str(os.getpid()))
        break
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        for folder in created:  # deepest first; a folder something else wrote into stays
            with contextlib.suppress(OSError):
                folder.rmdir()


def clean_staging_leftovers(path: Path) -> list[str]:
    """Remove temporary files and folders that a crashed run left behind (never complete outputs)."""
    removed = []
    for folder in (path, path / CHECKPOINTS_DIR):
        if not folder.is_dir():
            continue
        for child in folder.iterdir():
            if is_staging_leftover(child.name):
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
                removed.append(str(child))
    return removed


def foreign_names(path: Path) -> list[str]:
    """The names in a folder that the pipeline did not write there, sorted: what an overwrite must keep."""
    return sorted(
        child.name
        for child in path.iterdir()
        if child.name not in owned_names() and not is_staging_leftover(child.name)
    )


def clear_for_overwrite(path: Path) -> None:
    """Delete an earlier run's files before a new run writes its own; refuse a folder holding anything else."""
    foreign = foreign_names(path)
    if foreign:
        raise RunDirError(
            f"{path} holds files the pipeline did not write ({', '.join(foreign[:5])}); run.overwrite deletes only run directories: move them, or choose another run.name"
        )
    for child in path.iterdir():
        if child.name != LOCK_FILE:
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
