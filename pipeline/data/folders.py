"""A folder of class folders as labelled data: aclImdb's train/pos/0_9.txt, 20 Newsgroups' alt.atheism/49960, BBC
News' business/001.txt, the layout scikit-learn's `load_files` reads; or a folder of class files, one text per line
(rotten_tomatoes' rt-polarity.pos and rt-polarity.neg).

    folder = read_class_folders("aclImdb/train", "utf-8", ["neg", "pos"], "data.label_names", True, "data.train_file")

Each immediate subfolder is a class, named by its folder; each file directly inside it is one row, whose text is
the whole file decoded as every text file is (lines.LineSource: the encoding, its byte-order mark, an error naming
the file and line of a byte that does not decode). A row is named by its file's path in the folder ("pos/0_9.txt"),
rows come sorted by class folder, then file name, so that every run reads them in one order. Names that start with
"." (.DS_Store, .ipynb_checkpoints) are not data. Stage 1 turns the rows into the Table a file gives
(local.read_table), of the columns text, label and id, so that nothing after it knows where they came from.

A folder of files only is read as class files (one class per file, a text per line, named "rt-polarity.pos:12")
where folder_sniff.class_files says so.

`pipeline.predict --input` reads a folder as a Table streamed file by file (`open_folder_table`): a folder of class
folders as training reads it (every class folder), a folder of class files as training reads it where every file's
class part is one of the model's classes (rt-polarity.pos, rt-polarity.neg for neg and pos: an inbox's documents,
ticket.1001.txt, ticket.1002.txt, are named apart too and may well hold more lines than there are files), or else a
folder of files (an inbox: `0001.txt`, `0002.txt`), each file a row of the columns text and id.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

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
from pipeline.data.formats.table import Chunk, Table
from pipeline.data.label_forms import Spellings
from pipeline.data.lines import check_encoding

logger = logging.getLogger("pipeline.data.load")
# The columns of a folder's rows: a file's whole text (TEXT_COLUMN), its class folder's name (LABEL_COLUMN) and its
# path in the folder.
ID_COLUMN = "id"
# A labelled folder's rows, as a Table's columns.
ROW_COLUMNS = [TEXT_COLUMN, LABEL_COLUMN, ID_COLUMN]
# A folder's format, as a Table names it: what pipeline.predict's output takes for "the input's format" (none it
# writes, so CSV for stdout).
FOLDER_FORMAT = "folder"
# Folders that, by the convention of the data sets that ship them (aclImdb's train/unsup/), hold unlabelled texts:
# not a class, unless the classes listed name one.
UNLABELLED_FOLDERS = ("unsup", "unlabeled", "unlabelled", "unlabelled_data")


@dataclass(frozen=True)
class ClassFolders:
    """The rows of a folder of class folders, or of class files."""

    frame: pd.DataFrame  # TEXT_COLUMN, LABEL_COLUMN, ID_COLUMN: one row per file (per line of class files)
    paths: list[str]  # each row's file in the folder, "pos/0_9.txt" ("rt-polarity.pos:12"): its id, how errors name it
    files_per_class: dict[str, int] | None  # files read from each class folder, in folder order; None: class files
    class_files: dict[str, str] | None = None  # class files: each class's file ("pos": "rt-polarity.pos"); else None


def is_folder(path: str) -> bool:
    return Path(path).expanduser().is_dir()


def read_class_folders(
    path: str, encoding: str, classes: Sequence[str] | None, classes_from: str, every_class: bool, origin: str
) -> ClassFolders:
    """Every file of the class folders of `path` as a row (or, a folder of files only, every line of its class
    files). `classes` (None: every class folder) are the folders read, the others left out with a warning;
    `every_class`: a class without a folder is an error naming the folder looked for (a misspelt class in training),
    else only a log line (an evaluation file need not hold every class). `classes_from` and `origin` name the
    settings that an error points at."""
    refuse_saved_dataset(path, origin)
    root = Path(path).expanduser()
    folders, loose = class_folder_entries(root, path)
    if not folders:
        files = without_documentation(files_among([root / name for name in loose], path), path)
        found = class_files(files, path, encoding, ENCODING_SETTING)
        if found is None:
            why = not_class_files(loose, files, path, encoding, origin)
            raise DataError(f"{path} ({origin}) has no class folders: {LAYOUTS}{why}")
        by_class = {document.label: document.file for document in found}
        chosen = _chosen(by_class, classes, classes_from, every_class, path, origin, kind="file")
        documents = [document for document in found if document.label in chosen]
        rows = _line_rows(documents, path, encoding, ENCODING_SETTING)
        return _class_rows(list(rows), None, {document.label: document.path for document in documents})
    if loose:
        _say_loose(path, loose, logging.INFO)
    refuse_split_folders(folders, path, origin)
    chosen = _chosen(folders, classes, classes_from, every_class, path, origin)
    documents = _class_documents(folders, chosen, path, origin)
    refuse_binary_tables(documents, path, origin)
    warn_class_files_in_folders(documents, path, encoding, ENCODING_SETTING)
    rows = list(_file_rows(documents, path, encoding, ENCODING_SETTING))
    counts = Counter(row[LABEL_COLUMN] for row in rows)
    return _class_rows(rows, {name: counts[name] for name in chosen})


def _class_rows(
    rows: list[dict[str, Any]], files_per_class: dict[str, int] | None, class_files: dict[str, str] | None = None
) -> ClassFolders:
    frame = pd.DataFrame(rows, columns=ROW_COLUMNS, dtype=object)
    return ClassFolders(frame, [row[ID_COLUMN] for row in rows], files_per_class, class_files)


def _class_documents(folders: dict[str, Path], names: Sequence[str], path: str, origin: str) -> list[Document]:
    """The files of the class folders `names`, in folder then file order."""
    return [
        Document(file, f"{name}/{file.name}", name)
        for name in names
        for file in _documents(folders[name], path, origin)
    ]


def _file_rows(documents: Sequence[Document], path: str, encoding: str, option: str) -> Iterator[dict[str, Any]]:
    """Each document as a row (its whole text, its class, its path as id), read one at a time. Files read as control
    characters (cp1252 read as latin-1) are warned about once, naming the first file and its line, and counted in one
    line at the end, not one warning per file of a folder of thousands."""
    with_controls = 0
    for document in documents:
        shown = str(Path(path) / document.path)
        with lines_of(document.file, shown, encoding, option, not with_controls) as lines:
            text = "".join(lines)
            with_controls += lines.controls_seen
        yield {TEXT_COLUMN: text, LABEL_COLUMN: document.label, ID_COLUMN: document.path}
    if with_controls > 1:
        logger.warning("%s: %s more read with control characters, as the first", path, count_files(with_controls - 1))


def _line_rows(documents: Sequence[Document], path: str, encoding: str, option: str) -> Iterator[dict[str, Any]]:
    """Each non-blank line of class files as a row of the class its file names (document.label), named by file and
    line ("rt-polarity.pos:12"), in file then line order. Lines read as control characters are warned about once."""
    _say_class_files(path, documents)
    seen_controls = False
    for document in documents:
        with lines_of(document.file, str(Path(path) / document.path), encoding, option, not seen_controls) as lines:
            for line in lines:
                text = line.rstrip("\r\n")
                if text.strip():
                    row_id = f"{document.path}:{lines.line_number}"
                    yield {TEXT_COLUMN: text, LABEL_COLUMN: document.label, ID_COLUMN: row_id}
            seen_controls = seen_controls or lines.controls_seen


def _say_class_files(path: str, documents: Sequence[Document]) -> None:
    """Which class each class file's lines are of: the name part that tells the files apart, said at INFO."""
    mapping = ", ".join(f"{document.path} -> {document.label}" for document in documents)
    logger.info(
        "%s: a folder of class files, each non-blank line a text of the class its file names: %s", path, mapping
    )


def _say_loose(path: str, loose: list[str], level: int) -> None:
    """Files beside the class folders (aclImdb's urls_pos.txt) are no class's, so not rows: said once."""
    logger.log(
        level, "%s: %s beside the class folders, not rows: %s", path, count_files(len(loose)), listed_names(loose)
    )


# ---------------------------------------------------------------------------------------------------------------
# A folder to label (pipeline.predict --input), streamed file by file


@dataclass(frozen=True)
class FolderDocuments:
    """The files of a folder to label, in reading order, and which kind of folder holds them."""

    documents: list[Document]
    labelled: bool  # a folder of class folders or of class files (rows with a label), else a folder of files
    lines: bool = False  # a folder of class files: a row per non-blank line, not per file

    @property
    def columns(self) -> list[str]:
        """The columns of its rows: training's, without the label for a folder of files."""
        return ROW_COLUMNS if self.labelled else [TEXT_COLUMN, ID_COLUMN]


def list_documents(
    path: str, origin: str, encoding: str, option: str, classes: Sequence[str] | None = None
) -> FolderDocuments:
    """The files of a folder to label, unread (but for the lines that tell class files), in training's order. A
    folder that holds folders is a folder of class folders, read by training's rules: every class folder; the files
    beside them are not rows (a WARNING here, where every document given is to be labelled); a folder inside a class
    folder, or a class folder without files, is an error. A folder that holds files only is a folder of class files
    where training reads one and every file's class is one of the model's `classes` (_names_classes), else a folder
    of files, each one row. `option` names the encoding's setting in errors."""
    refuse_saved_dataset(path, origin)
    root = Path(path).expanduser()
    folders, loose = class_folder_entries(root, path)
    if folders:
        if loose:
            _say_loose(path, loose, logging.WARNING)
        documents = _class_documents(folders, list(folders), path, origin)
        warn_class_files_in_folders(documents, path, encoding, option)
        return FolderDocuments(documents, labelled=True)
    files = files_among([root / name for name in loose], path)
    if not files:
        raise DataError(f"{path} ({origin}): the folder holds no files to label (names starting with '.' are not read)")
    found = class_files(files, path, encoding, option) if _names_classes(files, classes) else None
    if found is not None:
        return FolderDocuments(found, labelled=True, lines=True)
    return FolderDocuments([Document(file, file.name, None) for file in files], labelled=False)


def open_folder_table(
    path: str,
    encoding: str,
    chunk_size: int | None,
    origin: str,
    encoding_option: str,
    classes: Sequence[str] | None = None,
) -> Table:
    """A folder to label (list_documents) as a Table whose chunks are read file by file, `chunk_size` rows at a
    time (None: all in one), so that memory holds one chunk's texts and the list of names whatever the number of
    files, as for a CSV file. Each file is decoded as training decodes it; `encoding_option` is named in errors. The
    rows are counted before reading where they are files, not where they are the lines of class files. `classes`:
    the model's, which files must name to be read as class files (None: none are)."""
    check_encoding(encoding)  # an unknown encoding fails here, not when the first chunk is read
    listing = list_documents(path, origin, encoding, encoding_option, classes)
    chunks = _document_chunks(listing, path, encoding, encoding_option, chunk_size)
    count = None if listing.lines else len(listing.documents)
    return Table(path, FOLDER_FORMAT, listing.columns, "file", chunks, row_count=count)


def _names_classes(files: Sequence[Path], classes: Sequence[str] | None) -> bool:
    """Whether every file's class part (class_file_names) names one of the model's classes, spelt as labels are
    matched (label_forms.Spellings: exactly, or in another case). An inbox's documents are named apart too
    (ticket.1001.txt, ticket.1002.txt: "classes" 1001, 1002) and may hold more lines than there are files; only the
    model's classes tell class files (rt-polarity.neg, rt-polarity.pos for a model of neg and pos) from them."""

    named = class_file_names(files) if classes else None
    if named is None:
        return False
    spellings = Spellings.of(list(classes))
    return all(spellings.index(name) is not None for name in named)


def _document_chunks(
    listing: FolderDocuments, path: str, encoding: str, option: str, size: int | None
) -> Iterator[Chunk]:
    """The rows of `listing`, `size` at a time (None: all), each named by its path in the folder (and line)."""
    read = _line_rows if listing.lines else _file_rows
    rows = read(listing.documents, path, encoding, option)
    while batch := list(itertools.islice(rows, size or None)):
        records = [[row[column] for column in listing.columns] for row in batch]
        yield Chunk(records, [row[ID_COLUMN] for row in batch])


# ---------------------------------------------------------------------------------------------------------------
# Class files: one text per line, a file per class


def _chosen(
    entries: dict[str, Path],
    classes: Sequence[str] | None,
    classes_from: str,
    every_class: bool,
    path: str,
    origin: str,
    kind: str = "folder",
) -> list[str]:
    """The classes to read, in folder order, of `entries`: class folders, or (`kind` "file") class files by the class
    each names. Unlisted, every one but the folders of unlabelled texts."""
    if classes is None:
        return _without_unlabelled(entries, classes_from, path, origin) if kind == "folder" else list(entries)
    wanted = set(classes)
    missing = [name for name in classes if name not in entries]
    if missing and every_class:
        looked_for = f"{kind} {str(Path(path) / missing[0])!r}" if kind == "folder" else kind
        raise DataError(
            f"{path} ({origin}): no {looked_for} for class {missing[0]!r} of {classes_from}"
            f"{f' (nor for {len(missing) - 1} more)' if len(missing) > 1 else ''}; its class {kind}s: "
            f"{listed_names(list(entries))}"
        )
    chosen = [name for name in entries if name in wanted]
    if not chosen:
        raise DataError(
            f"{path} ({origin}): none of its {kind}s ({listed_names(list(entries))}) is a class of "
            f"{classes_from} ({', '.join(classes)})"
        )
    if missing:
        logger.info("%s: no %s for the classes %s: none of its rows are of them", path, kind, ", ".join(missing))
    left_out = [name for name in entries if name not in wanted]
    if left_out:
        logger.warning("%s: %ss left out, not a class of %s: %s", path, kind, classes_from, listed_names(left_out))
    return chosen


def _without_unlabelled(folders: dict[str, Path], classes_from: str, path: str, origin: str) -> list[str]:
    """Every class folder but those named as holding unlabelled texts (UNLABELLED_FOLDERS: aclImdb's train/unsup/,
    50,000 reviews that made a third class), each left out with a WARNING naming it and its files."""
    unlabelled = [name for name in folders if name.casefold() in UNLABELLED_FOLDERS]
    for name in unlabelled:
        files = count_files(sum(entry.is_file() for entry in visible_entries(folders[name], str(Path(path) / name))))
        logger.warning(
            "%s: the folder %s (%s) left out: by its name it holds unlabelled texts, not a class; name it in %s to "
            "read it as one",
            path,
            name,
            files,
            classes_from,
        )
    chosen = [name for name in folders if name not in unlabelled]
    if not chosen:
        raise DataError(
            f"{path} ({origin}) has no class folders: {listed_names(unlabelled)} holds unlabelled texts; name it in "
            f"{classes_from} to read it as a class"
        )
    return chosen


def _documents(folder: Path, path: str, origin: str) -> list[Path]:
    """The files of one class folder, sorted by name. A folder inside it is an error rather than a class's documents
    silently left out (a folder whose every folder holds folders was refused before, by refuse_split_folders)."""
    shown = str(Path(path) / folder.name)
    entries = visible_entries(folder, shown)
    nested = [entry.name for entry in entries if entry.is_dir()]
    if nested:
        raise DataError(
            f"{shown} holds folders ({listed_names(nested)}), but a class folder holds its documents as files: are the "
            f"classes a level deeper? Then give the folder that holds them (e.g. {shown}) as {origin}"
        )
    files = files_among(entries, shown)
    if not files:
        raise DataError(
            f"{shown}: the class folder {folder.name!r} holds no files; give it its documents (one per file) or "
            "remove it"
        )
    return files
