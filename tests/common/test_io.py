"""Atomic file output (pipeline/common/io.py): a file or folder appears complete under its name, or not at all."""

from __future__ import annotations

import csv
import errno
import json
import os
import pickle
import stat
from pathlib import Path

import pytest

from pipeline.common.io import (
    OutputError,
    atomic_path,
    atomic_write_csv,
    atomic_write_json,
    atomic_write_text,
    check_can_write,
    replace_directory,
)
from tests.helpers import UNWRITABLE_KINDS, unwritable_folder


class Boom(RuntimeError):
    pass


@pytest.fixture()
def umask():
    """Set the process umask for one test and restore it afterwards."""
    previous = os.umask(0o022)
    os.umask(previous)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_atomic_write_text_leaves_only_the_file(tmp_path):
    target = tmp_path / "out" / "nested" / "notes.txt"  # missing folders are created
    atomic_write_text(target, "héllo\nwörld\n")
    assert target.read_bytes() == "héllo\nwörld\n".encode()
    assert [p.name for p in target.parent.iterdir()] == ["notes.txt"]


def test_atomic_path_replaces_an_existing_file_only_on_success(tmp_path):
    target = tmp_path / "metrics.json"
    target.write_text("old\n")
    with atomic_path(target) as temp:
        assert temp.parent == tmp_path and temp != target
        temp.write_text("new\n")
        assert target.read_text() == "old\n"  # nothing under the final name until the block ends
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_a_failing_block_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "metrics.json"
    target.write_text("precious\n")
    with pytest.raises(Boom), atomic_path(target) as temp:
        temp.write_text("half writ")
        raise Boom
    assert target.read_text() == "precious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_a_failing_block_creates_no_file_where_there_was_none(tmp_path):
    with pytest.raises(Boom), atomic_path(tmp_path / "new.csv") as temp:
        temp.write_text("a,b\n")
        raise Boom
    assert list(tmp_path.iterdir()) == []


def test_a_block_that_writes_nothing_leaves_an_empty_file(tmp_path):
    with atomic_path(tmp_path / "empty.txt"):
        pass
    assert (tmp_path / "empty.txt").read_bytes() == b""
    assert len(list(tmp_path.iterdir())) == 1


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_new_files_get_the_umask_permissions_not_the_temporary_files(tmp_path, umask, mask):
    umask(mask)
    atomic_write_text(tmp_path / "atomic.txt", "x")
    (tmp_path / "plain.txt").write_text("x")  # what a plain open() gives, for comparison
    assert mode(tmp_path / "atomic.txt") == 0o666 & ~mask == mode(tmp_path / "plain.txt")
    assert mode(tmp_path / "atomic.txt") != 0o600


def test_atomic_write_json_is_readable_indented_utf8(tmp_path):
    payload = {"labels": ["Sci/Tech", "Café"], "test": {"accuracy": 0.5}}
    atomic_write_json(tmp_path / "metrics.json", payload)
    text = (tmp_path / "metrics.json").read_text(encoding="utf-8")
    assert json.loads(text) == payload
    assert "Café" in text  # not \u00e9
    assert text.endswith("}\n") and "\n  " in text


# ---------------------------------------------------------------------------------------------------------------
# replace_directory


def fill_with(files: dict[str, str]):
    def fill(staging: Path) -> None:
        for name, content in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(content)

    return fill


def tree(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): p.read_text() for p in sorted(path.rglob("*")) if p.is_file()}


def test_csv_files_end_lines_with_newline_and_keep_a_lone_carriage_return_inside_its_field(tmp_path):
    rows = [["1", "plain"], ["2", "old mac\rline"], ["3", 'a "quoted", text\nover two lines']]
    atomic_write_csv(tmp_path / "rows.csv", ["id", "text"], rows)
    raw = (tmp_path / "rows.csv").read_bytes()
    assert b"\r\n" not in raw and raw.startswith(b"id,text\n1,plain\n")
    with open(tmp_path / "rows.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == [["id", "text"], *rows]


def test_replace_directory_creates_a_new_folder(tmp_path):
    replace_directory(tmp_path / "model", fill_with({"config.json": "{}", "sub/weights.bin": "w"}))
    assert tree(tmp_path / "model") == {"config.json": "{}", "sub/weights.bin": "w"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_replace_directory_swaps_the_whole_folder_in_one_go(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    fill_with({"config.json": "old", "stale.bin": "old weights"})(target)
    seen_during_fill = {}

    def fill(staging: Path) -> None:
        assert staging.parent == tmp_path and staging != target
        fill_with({"config.json": "new", "weights.bin": "new weights"})(staging)
        seen_during_fill.update(tree(target))  # the old folder is untouched while the new one is built

    replace_directory(target, fill)
    assert seen_during_fill == {"config.json": "old", "stale.bin": "old weights"}
    assert tree(target) == {"config.json": "new", "weights.bin": "new weights"}  # no file of the old one left
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no staging or retired folder left behind


def test_replace_directory_keeps_the_old_folder_when_fill_raises(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    fill_with({"config.json": "old"})(target)

    def fill(staging: Path) -> None:
        (staging / "config.json").write_text("half")
        raise Boom

    with pytest.raises(Boom):
        replace_directory(target, fill)
    assert tree(target) == {"config.json": "old"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]

    with pytest.raises(Boom):
        replace_directory(tmp_path / "fresh", fill)
    assert not (tmp_path / "fresh").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_replace_directory_keeps_the_old_folder_when_the_final_rename_fails(tmp_path, monkeypatch):
    target = tmp_path / "model"
    target.mkdir()
    fill_with({"config.json": "old"})(target)
    real_replace = os.replace

    def failing_replace(source, destination):
        if Path(source).name.endswith(".partial"):  # the staged folder moving into place: e.g. the disk is full
            raise OSError(28, "No space left on device")
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        replace_directory(target, fill_with({"config.json": "new"}))
    monkeypatch.undo()
    assert tree(target) == {"config.json": "old"}


# ---------------------------------------------------------------------------------------------------------------
# An output that cannot be written: checked before any work, and named as the user gave it, never its temporary file


@pytest.mark.parametrize("kind", UNWRITABLE_KINDS)
def test_an_unwritable_place_is_refused_naming_the_path_given(tmp_path, kind):
    folder = unwritable_folder(tmp_path, kind)
    for path, inside in ((folder / "labelled.csv", False), (folder / "ev", False), (folder / "run", True)):
        with pytest.raises(OutputError) as caught:
            check_can_write(path, "--output", inside=inside)
        message = str(caught.value)
        assert message.startswith(f"cannot write --output {path}: ") and ".tmp" not in message, message
    with pytest.raises(OutputError, match=f"cannot write {folder / 'x.csv'}: "):
        atomic_write_text(folder / "x.csv", "a\n")
    with pytest.raises(OutputError, match=f"cannot write {folder / 'ev'}: "):
        replace_directory(folder / "ev", fill_with({"metrics.json": "{}"}))


def test_a_writable_place_passes_and_is_left_as_it_was(tmp_path):
    check_can_write(tmp_path / "new" / "deeper" / "labelled.csv")  # folders still to make: their existing parent
    check_can_write(tmp_path / "run", inside=True)
    (tmp_path / "run").mkdir()
    check_can_write(tmp_path / "run", inside=True)
    assert [p.name for p in tmp_path.iterdir()] == ["run"] and not any((tmp_path / "run").iterdir())


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc, which takes no new file")
def test_a_folder_that_takes_no_file_is_named_not_the_temporary_file(tmp_path):
    """The user sweep's `/proc/x.csv`: the error named '/proc/.x.csv.xkyc3f69.tmp'."""
    with pytest.raises(OutputError) as caught, atomic_path("/proc/x.csv"):
        pass
    assert str(caught.value).startswith("cannot write /proc/x.csv: ") and ".x.csv." not in str(caught.value)


def test_errors_about_the_temporary_file_name_the_output_and_others_pass_unchanged(tmp_path):
    target = tmp_path / "labelled.csv"
    with pytest.raises(OutputError) as caught, atomic_path(target) as temp:
        raise PermissionError(errno.EACCES, "Permission denied", str(temp))
    assert str(caught.value) == f"cannot write {target}: Permission denied"
    assert str(pickle.loads(pickle.dumps(caught.value))) == str(caught.value)  # as it crosses processes
    with pytest.raises(OutputError) as caught, atomic_path(target):
        raise OSError(errno.ENOSPC, "No space left on device")  # a failed write names no file: it is the output's
    assert str(caught.value) == f"cannot write {target}: No space left on device"
    with pytest.raises(FileNotFoundError) as not_ours, atomic_path(target):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(tmp_path / "input.csv"))
    assert not_ours.type is FileNotFoundError and not_ours.value.filename == str(tmp_path / "input.csv")
    assert list(tmp_path.iterdir()) == []


def test_errors_inside_the_staging_folder_name_that_file_in_the_output(tmp_path):
    output = tmp_path / "reports" / "ev"

    def fill(staging: Path) -> None:
        (staging / "report.md").write_text("# ok\n")
        with atomic_path(staging / "metrics.json"):
            raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError) as caught:
        replace_directory(output, fill)
    assert str(caught.value) == f"cannot write {output / 'metrics.json'}: No space left on device"

    def refused(staging: Path) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(staging / "model" / "config.json"))

    with pytest.raises(OutputError, match=f"cannot write {output / 'model' / 'config.json'}: Permission denied$"):
        replace_directory(output, refused)
    assert not output.exists() and list(output.parent.iterdir()) == []
