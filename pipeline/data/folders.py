"""A folder of class folders (aclImdb's train/pos/0_9.txt, the layout of scikit-learn's `load_files`), or of class
files, one text per line (rt-polarity.pos), as labelled rows; and a folder to label, streamed (`open_folder_table`).

    rows = read_class_folders("aclImdb/train", "utf-8", ["neg", "pos"], "data.label_names", True, "data.train_file")

Rows come sorted by class, then file name; each is named by its path in the folder ("pos/0_9.txt").
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pipeline.common.errors import DataError
from pipeline.config.reading import LABEL_COLUMN, TEXT_COLUMN
from pipeline.data.folder_entries import (
    ENCODING_SETTING,
    Document,
    class_folder_entries,
    count_files,
    files_among,
    lines_of,
    listed_names,
    visible_entries,
)
from pipeline.data.folder_sniff import (
    LAYOUTS,
    class_file_names,
    class_files,
    not_class_files,
    refuse_binary_tables,
    refuse_saved_dataset,
    refuse_split_folders,
    warn_class_files_in_folders,
    without_documentation,
)
from pipeline.data.formats.table import Table, batched
from pipeline.data.label_forms import Spellings
from pipeline.data.lines import check_encoding
from pipeline.data.rows import SplitRows

logger = logging.getLogger("pipeline.data.load")
ID_COLUMN = "id"
ROW_COLUMNS = [TEXT_COLUMN, LABEL_COLUMN, ID_COLUMN]
FOLDER_FORMAT = "folder"
# Folders that by convention hold unlabelled texts (aclImdb's train/unsup/): not a class unless listed.
UNLABELLED_FOLDERS = ("unsup", "unlabeled", "unlabelled", "unlabelled_data")
# What a missing column's error adds for a folder's rows.
FOLDER_COLUMNS_HINT = (
    f"; a folder of class folders or class files gives the columns {TEXT_COLUMN} (a file's whole text, or a line of "
    f"a class file), {LABEL_COLUMN} (its class folder or class file) and {ID_COLUMN} (its path in the folder, and "
    f"line): set data.text_columns=[{TEXT_COLUMN}] and data.label_column={LABEL_COLUMN} (rows are named by that path "
    f"with data.id_column unset, or {ID_COLUMN})"
)


def is_folder(path: str) -> bool:
    return Path(path).expanduser().is_dir()


def read_class_folders(
    path: str, encoding: str, classes: Sequence[str] | None, classes_from: str, every_class: bool, origin: str
) -> SplitRows:
    """Every file of `path`'s class folders (or line of its class files) as a row of SplitRows; `classes` None: all."""
    import pandas as pd  # here, not at the top: `pipeline.predict` imports this module and starts without pandas

    refuse_saved_dataset(path, origin)
    folders, loose = class_folder_entries(path)
    files_per_class = by_file = None
    if folders:
        if loose:
            _say_loose(path, loose, logging.INFO)
        refuse_split_folders(folders, path, origin)
        chosen = _chosen(folders, classes, classes_from, every_class, path, origin)
        documents = _class_documents(folders, chosen, path, origin)
        refuse_binary_tables(documents, path, origin)
        warn_class_files_in_folders(documents, path, encoding, ENCODING_SETTING)
        frame = pd.DataFrame(_file_rows(documents, path, encoding, ENCODING_SETTING), columns=ROW_COLUMNS, dtype=object)
        counts = Counter(frame[LABEL_COLUMN])
        files_per_class = {name: counts[name] for name in chosen}  # files read from each, in folder order
    else:
        files = without_documentation(files_among(loose, path), path)
        found = class_files(files, path, encoding, ENCODING_SETTING)
        if found is None:
            why = not_class_files(loose, files, path, encoding, origin)
            raise DataError(f"{path} ({origin}) has no class folders: {LAYOUTS}{why}")
        by_class = {document.label: document.file for document in found}
        chosen = _chosen(by_class, classes, classes_from, every_class, path, origin, kind="file")
        documents = [document for document in found if document.label in chosen]
        frame = pd.DataFrame(_line_rows(documents, path, encoding, ENCODING_SETTING), columns=ROW_COLUMNS, dtype=object)
        by_file = {document.label: document.path for document in documents}  # each class's file
    paths = frame[ID_COLUMN].tolist()  # each row's name: its file's path in the folder (and line)
    return SplitRows(
        frame, path, origin, "file", paths, None, FOLDER_COLUMNS_HINT, files_per_class, class_files=by_file
    )


def _class_documents(folders: dict[str, Path], names: Sequence[str], path: str, origin: str) -> list[Document]:
    """The files of the class folders `names`, in folder then file order."""
    return [
        Document(file, f"{name}/{file.name}", name)
        for name in names
        for file in _documents(folders[name], path, origin)
    ]


def _file_rows(documents: Sequence[Document], path: str, encoding: str, option: str) -> Iterator[dict[str, Any]]:
    """Each document as a row, read one at a time; control characters warned about once, then counted."""
    with_controls = 0
    for document in documents:
        shown = str(Path(path) / document.path)
        with lines_of(document.file, shown, encoding, option, not with_controls) as lines:
            text = "".join(lines)
            with_controls += lines.controls_seen
        yield {TEXT_COLUMN: text, LABEL_COLUMN: document.label, ID_COLUMN: document.path}
    if with_controls > 1:
        logger.warning(f"{path}: {count_files(with_controls - 1)} more read with control characters, as the first")


def _line_rows(documents: Sequence[Document], path: str, encoding: str, option: str) -> Iterator[dict[str, Any]]:
    """Each non-blank line of class files as a row of its file's class, named "rt-polarity.pos:12"."""
    mapping = ", ".join(f"{document.path} -> {document.label}" for document in documents)
    logger.info(f"{path}: a folder of class files, each non-blank line a text of the class its file names: {mapping}")
    seen_controls = False
    for document in documents:
        with lines_of(document.file, str(Path(path) / document.path), encoding, option, not seen_controls) as lines:
            for line in lines:
                text = line.rstrip("\r\n")
                if text.strip():
                    row_id = f"{document.path}:{lines.line_number}"
                    yield {TEXT_COLUMN: text, LABEL_COLUMN: document.label, ID_COLUMN: row_id}
            seen_controls = seen_controls or lines.controls_seen


def _say_loose(path: str, loose: list[Path], level: int) -> None:
    """Files beside the class folders (aclImdb's urls_pos.txt) are not rows: said once."""
    names = listed_names([entry.name for entry in loose])
    logger.log(level, f"{path}: {count_files(len(loose))} beside the class folders, not rows: {names}")


def open_folder_table(
    path: str,
    encoding: str,
    chunk_size: int | None,
    origin: str,
    encoding_option: str,
    classes: Sequence[str] | None = None,
) -> Table:
    """A folder to label as a Table read file by file in training's order, `chunk_size` rows at a time (None: all)."""
    check_encoding(encoding)  # an unknown encoding fails here, not when the first chunk is read
    refuse_saved_dataset(path, origin)
    folders, loose = class_folder_entries(path)
    read, columns = _file_rows, ROW_COLUMNS  # a labelled row per file, as class folders give
    if folders:
        if loose:
            _say_loose(path, loose, logging.WARNING)
        documents = _class_documents(folders, list(folders), path, origin)
        warn_class_files_in_folders(documents, path, encoding, encoding_option)
    else:
        files = files_among(loose, path)
        if not files:
            raise DataError(
                f"{path} ({origin}): the folder holds no files to label (names starting with '.' are not read)"
            )
        found = class_files(files, path, encoding, encoding_option) if _names_classes(files, classes) else None
        if found is not None:
            documents, read = found, _line_rows
        else:  # a folder of files, unlabelled
            documents, columns = [Document(file, file.name, None) for file in files], [TEXT_COLUMN, ID_COLUMN]
    rows = read(documents, path, encoding, encoding_option)
    records = ((row[ID_COLUMN], [row[column] for column in columns]) for row in rows)
    count = None if read is _line_rows else len(documents)
    return Table(path, FOLDER_FORMAT, columns, "file", batched(records, chunk_size), row_count=count)


def _names_classes(files: Sequence[Path], classes: Sequence[str] | None) -> bool:
    """Whether every file's class part is a model class: only that tells class files from an inbox's files."""
    named = class_file_names(files) if classes else None
    if named is None:
        return False
    spellings = Spellings.of(list(classes))
    return all(spellings.index(name) is not None for name in named)


def _chosen(
    entries: dict[str, Path],
    classes: Sequence[str] | None,
    classes_from: str,
    every_class: bool,
    path: str,
    origin: str,
    kind: str = "folder",
) -> list[str]:
    """The classes of `entries` to read, in folder order; unlisted, all but unlabelled folders."""
    if classes is None:
        return _without_unlabelled(entries, classes_from, path, origin) if kind == "folder" else list(entries)
    wanted = set(classes)
    missing = [name for name in classes if name not in entries]
    if missing and every_class:
        looked_for = f"{kind} {str(Path(path) / missing[0])!r}" if kind == "folder" else kind
        raise DataError(
            f"{path} ({origin}): no {looked_for} for class {missing[0]!r} of {classes_from}{f' (nor for {len(missing) - 1} more)' if len(missing) > 1 else ''}; its class {kind}s: {listed_names(list(entries))}"
        )
    chosen = [name for name in entries if name in wanted]
    if not chosen:
        raise DataError(
            f"{path} ({origin}): none of its {kind}s ({listed_names(list(entries))}) is a class of {classes_from} ({', '.join(classes)})"
        )
    if missing:
        logger.info(f"{path}: no {kind} for the classes {', '.join(missing)}: none of its rows are of them")
    left_out = [name for name in entries if name not in wanted]
    if left_out:
        logger.warning(f"{path}: {kind}s left out, not a class of {classes_from}: {listed_names(left_out)}")
    return chosen


def _without_unlabelled(folders: dict[str, Path], classes_from: str, path: str, origin: str) -> list[str]:
    """Every class folder but UNLABELLED_FOLDERS (aclImdb's train/unsup/), each left out with a WARNING."""
    unlabelled = [name for name in folders if name.casefold() in UNLABELLED_FOLDERS]
    for name in unlabelled:
        files = count_files(sum(entry.is_file() for entry in visible_entries(folders[name], str(Path(path) / name))))
        logger.warning(
            f"{path}: the folder {name} ({files}) left out: by its name it holds unlabelled texts, not a class; name it in {classes_from} to read it as one"
        )
    chosen = [name for name in folders if name not in unlabelled]
    if not chosen:
        raise DataError(
            f"{path} ({origin}) has no class folders: {listed_names(unlabelled)} holds unlabelled texts; name it in {classes_from} to read it as a class"
        )
    return chosen


def _documents(folder: Path, path: str, origin: str) -> list[Path]:
    """The files of one class folder, sorted; a folder inside it is an error."""
    shown = str(Path(path) / folder.name)
    entries = visible_entries(folder, shown)
    nested = [entry.name for entry in entries if entry.is_dir()]
    if nested:
        raise DataError(
            f"{shown} holds folders ({listed_names(nested)}), but a class folder holds its documents as files: are the classes a level deeper? Then give the folder that holds them (e.g. {shown}) as {origin}"
        )
    files = files_among(entries, shown)
    if not files:
        raise DataError(
            f"{shown}: the class folder {folder.name!r} holds no files; give it its documents (one per file) or remove it"
        )
    return files
