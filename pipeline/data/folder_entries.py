"""What a folder holds, as folders read it: visible entries by name, regular files, a file's decoded lines."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pipeline.common.errors import DataError
from pipeline.data.lines import LineSource
from pipeline.data.sniff import check_wide_encoding

logger = logging.getLogger("pipeline.data.load")
ENCODING_SETTING = "data.encoding"
NAMES_LOGGED = 5


@dataclass(frozen=True)
class Document:
    """One file of a folder, not read yet."""

    file: Path  # on disk
    path: str  # in the folder ("pos/0_9.txt", "0001.txt"): its id, and how an error names it
    label: str | None  # its class folder's name; None in a folder of files


def visible_entries(folder: Path, shown: str) -> list[Path]:
    """The entries of a folder but hidden ones (a name starting with "."), sorted by name."""
    try:
        return sorted((entry for entry in folder.iterdir() if not _hidden(entry.name)), key=lambda e: e.name)
    except OSError as error:
        raise DataError(f"cannot read the folder {shown}: {error.strerror or error}") from None


def _hidden(name: str) -> bool:
    """Names starting with "." (.DS_Store, .ipynb_checkpoints) are not data."""
    return name.startswith(".")


def class_folder_entries(path: str) -> tuple[dict[str, Path], list[Path]]:
    """The class folders by name, and the other entries (aclImdb's labeledBow.feat, urls_pos.txt)."""
    entries = visible_entries(Path(path).expanduser(), path)
    folders = {entry.name: entry for entry in entries if entry.is_dir()}
    return folders, [entry for entry in entries if entry.name not in folders]


def holds_folders(folder: Path) -> bool:
    """Whether a folder holds a folder that is not hidden."""
    try:
        with os.scandir(folder) as entries:  # no stat per file
            return any(entry.is_dir() and not _hidden(entry.name) for entry in entries)
    except OSError:
        return False  # listing its files fails with its own error


def files_among(entries: list[Path], shown: str) -> list[Path]:
    """The regular files among a folder's entries; anything else (a broken link) is left out with a WARNING."""
    files = [entry for entry in entries if entry.is_file()]
    others = [entry.name for entry in entries if not entry.is_file() and not entry.is_dir()]
    if others:
        logger.warning(f"{shown}: left out, neither a file nor a folder (a broken link?): {listed_names(others)}")
    return files


@contextlib.contextmanager
def lines_of(file: Path, shown: str, encoding: str, option: str, warn_controls: bool) -> Iterator[LineSource]:
    """A file's decoded lines (a UTF-16/32 byte-order mark honoured); `shown` and `option` word errors."""
    try:
        handle = open(file, "rb")  # noqa: SIM115 -- closed below; only open() maps to this error
    except OSError as error:
        raise DataError(f"cannot read {shown}: {error.strerror or error}") from None
    with handle:
        lines = LineSource(handle, shown, encoding, file.stat().st_size, option, warn_controls=warn_controls)
        check_wide_encoding(lines, say=False)
        yield lines


def count_files(count: int) -> str:
    return f"{count:,} file{'' if count == 1 else 's'}"


def listed_names(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_LOGGED])
    return shown if len(names) <= NAMES_LOGGED else f"{shown} and {len(names) - NAMES_LOGGED:,} more"
