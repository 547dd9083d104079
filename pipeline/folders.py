"""A folder of class folders as labelled data: aclImdb's train/pos/0_9.txt, 20 Newsgroups' alt.atheism/49960, BBC
News' business/001.txt, the layout scikit-learn's `load_files` reads.

    folder = read_class_folders("aclImdb/train", "utf-8", ["neg", "pos"], "data.label_names", True, "data.train_file")

Each immediate subfolder is a class, named by its folder; each file directly inside it is one row, whose text is
the whole file decoded as every text file is (tables.LineSource: the encoding, its byte-order mark, an error naming
the file and line of a byte that does not decode). A row is named by its file's path in the folder ("pos/0_9.txt"),
rows come sorted by class folder, then file name, so that every run reads them in one order. Names that start with
"." (.DS_Store, .ipynb_checkpoints) are not data. Stage 1 turns the rows into the Table a file gives
(data.read_table), of the columns text, label and id, so that nothing after it knows where they came from.

`pipeline.predict --input` reads a folder as a Table streamed file by file (`open_folder_table`): a folder of class
folders as training reads it (every class folder), or a folder of files (an inbox: `0001.txt`, `0002.txt`), each file
a row of the columns text and id.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pipeline.tables import LABEL_COLUMN, TEXT_COLUMN, Chunk, DataError, LineSource, Table, check_encoding

logger = logging.getLogger("pipeline.data")

# The columns of a folder's rows: a file's whole text (TEXT_COLUMN), its class folder's name (LABEL_COLUMN) and its
# path in the folder.
ID_COLUMN = "id"
# Names listed in a log line about what was not read, at most.
NAMES_LOGGED = 5
# A folder's format, as a Table names it: what pipeline.predict's output takes for "the input's format" (none it
# writes, so CSV for stdout).
FOLDER_FORMAT = "folder"
# The files `datasets`' save_to_disk writes at the top of its folder: a DatasetDict's dataset_dict.json (its splits
# are subfolders), a single Dataset's state.json (datasets.config.DATASETDICT_JSON_FILENAME and
# DATASET_STATE_JSON_FILENAME). Such a folder is Arrow data, read by data.hub_name, not class folders of documents.
SAVED_DATASET_FILES = ("dataset_dict.json", "state.json")
# Folders that, by the convention of the data sets that ship them (aclImdb's train/unsup/), hold unlabelled texts:
# not a class, unless the classes listed name one.
UNLABELLED_FOLDERS = ("unsup", "unlabeled", "unlabelled", "unlabelled_data")


@dataclass(frozen=True)
class ClassFolders:
    """The rows of a folder of class folders."""

    frame: pd.DataFrame  # TEXT_COLUMN, LABEL_COLUMN, ID_COLUMN: one row per file
    paths: list[str]  # each row's file in the folder, "pos/0_9.txt": its id and how an error names it
    files_per_class: dict[str, int]  # files read from each class folder, in folder order


def is_folder(path: str) -> bool:
    return Path(path).expanduser().is_dir()


def is_saved_dataset(folder: Path) -> bool:
    """Whether a folder is one that `datasets`' save_to_disk wrote (SAVED_DATASET_FILES)."""
    return bool(_saved_files(folder))


def _saved_files(folder: Path) -> list[str]:
    """The SAVED_DATASET_FILES the folder holds."""
    return [name for name in SAVED_DATASET_FILES if (folder / name).is_file()]


def refuse_saved_dataset(path: str, origin: str) -> None:
    """A save_to_disk folder read as class folders made its split folders classes and its .arrow files documents
    (failing on their bytes, or "training" on them under a single-byte encoding); read as a folder of files, each
    .arrow file a text to label. Training reads it by data.hub_name; elsewhere its split is written to a file."""
    saved = _saved_files(Path(path).expanduser())
    if not saved:
        return
    if origin.startswith("data."):
        how = f"set data.source=hub data.hub_name={path}, which reads its splits"
    else:
        how = (
            f"write the split to a file (datasets.load_from_disk({path!r})['test'].to_json('test.jsonl')) and give that"
        )
    raise DataError(
        f"{path} ({origin}) is a dataset saved by the datasets library (save_to_disk: {_listed(saved)}), "
        f"not a folder of documents: {how}"
    )


def read_class_folders(
    path: str, encoding: str, classes: Sequence[str] | None, classes_from: str, every_class: bool, origin: str
) -> ClassFolders:
    """Every file of the class folders of `path` as a row. `classes` (None: every class folder) are the folders read,
    the others left out with a warning; `every_class`: a class without a folder is an error naming the folder looked
    for (a misspelt class in training), else only a log line (an evaluation file need not hold every class).
    `classes_from` and `origin` name the settings that an error points at."""
    refuse_saved_dataset(path, origin)
    root = Path(path).expanduser()
    folders, loose = _entries(root, path)
    if not folders:
        beside = f"; the {_files(len(loose))} directly in it are no class's" if loose else " (it is empty)"
        raise DataError(
            f"{path} ({origin}) has no class folders: a folder of data holds one folder per class, each holding that "
            f"class's documents, one per file{beside}"
        )
    if loose:
        _say_loose(path, loose, logging.INFO)
    _refuse_split_folders(folders, path, origin)
    chosen = _chosen(folders, classes, classes_from, every_class, path, origin)
    documents = _class_documents(folders, chosen, path, origin)
    texts = list(_read_texts(documents, path, encoding, "data.encoding"))
    paths = [document.path for document in documents]
    labels = [document.label for document in documents]
    frame = pd.DataFrame({TEXT_COLUMN: texts, LABEL_COLUMN: labels, ID_COLUMN: paths}, dtype=object)
    counts = Counter(labels)
    files_per_class = {name: counts[name] for name in chosen}
    return ClassFolders(frame, paths, files_per_class)


@dataclass(frozen=True)
class Document:
    """One file of a folder, not read yet."""

    file: Path  # on disk
    path: str  # in the folder ("pos/0_9.txt", "0001.txt"): its id, and how an error names it
    label: str | None  # its class folder's name; None in a folder of files


def _class_documents(folders: dict[str, Path], names: Sequence[str], path: str, origin: str) -> list[Document]:
    """The files of the class folders `names`, in folder then file order."""
    return [
        Document(file, f"{name}/{file.name}", name)
        for name in names
        for file in _documents(folders[name], path, origin)
    ]


def _read_texts(documents: Sequence[Document], path: str, encoding: str, option: str) -> Iterator[str]:
    """Each document's whole text, read one at a time. Files read as control characters (cp1252 read as latin-1)
    are warned about once, naming the first file and its line, and counted in one line at the end, not one warning
    per file of a folder of thousands."""
    with_controls = 0
    for document in documents:
        shown = str(Path(path) / document.path)
        text, controls = _read_document(document.file, shown, encoding, not with_controls, option)
        with_controls += controls
        yield text
    if with_controls > 1:
        logger.warning("%s: %s more read with control characters, as the first", path, _files(with_controls - 1))


def _say_loose(path: str, loose: list[str], level: int) -> None:
    """Files beside the class folders (aclImdb's urls_pos.txt) are no class's, so not rows: said once."""
    logger.log(level, "%s: %s beside the class folders, not rows: %s", path, _files(len(loose)), _listed(loose))


# ---------------------------------------------------------------------------------------------------------------
# A folder to label (pipeline.predict --input), streamed file by file


@dataclass(frozen=True)
class FolderDocuments:
    """The files of a folder to label, in reading order, and which kind of folder holds them."""

    documents: list[Document]
    class_folders: bool  # a folder of class folders (rows with a label), else a folder of files

    @property
    def columns(self) -> list[str]:
        """The columns of its rows: training's, without the label for a folder of files."""
        return [TEXT_COLUMN, LABEL_COLUMN, ID_COLUMN] if self.class_folders else [TEXT_COLUMN, ID_COLUMN]


def list_documents(path: str, origin: str) -> FolderDocuments:
    """The files of a folder to label, unread, in training's order. A folder that holds folders is a folder of class
    folders, read by training's rules: every class folder; the files beside them are not rows (a WARNING here, where
    every document given is to be labelled); a folder inside a class folder, or a class folder without files, is an
    error. A folder that holds files only is a folder of files, each one row."""
    refuse_saved_dataset(path, origin)
    root = Path(path).expanduser()
    folders, loose = _entries(root, path)
    if folders:
        if loose:
            _say_loose(path, loose, logging.WARNING)
        return FolderDocuments(_class_documents(folders, list(folders), path, origin), class_folders=True)
    files = _files_among([root / name for name in loose], path)
    if not files:
        raise DataError(f"{path} ({origin}): the folder holds no files to label (names starting with '.' are not read)")
    return FolderDocuments([Document(file, file.name, None) for file in files], class_folders=False)


def open_folder_table(path: str, encoding: str, chunk_size: int | None, origin: str, encoding_option: str) -> Table:
    """A folder to label (list_documents) as a Table whose chunks are read file by file, `chunk_size` files at a
    time (None: all in one), so that memory holds one chunk's texts and the list of names whatever the number of
    files, as for a CSV file. Each file is decoded as training decodes it; `encoding_option` is named in errors."""
    check_encoding(encoding)  # an unknown encoding fails here, not when the first chunk is read
    listing = list_documents(path, origin)
    size = chunk_size or len(listing.documents)
    chunks = _document_chunks(listing, path, encoding, encoding_option, size)
    return Table(path, FOLDER_FORMAT, listing.columns, "file", chunks, row_count=len(listing.documents))


def _document_chunks(listing: FolderDocuments, path: str, encoding: str, option: str, size: int) -> Iterator[Chunk]:
    """The rows of `listing`, `size` files at a time, each named by its path in the folder."""
    texts = _read_texts(listing.documents, path, encoding, option)
    for start in range(0, len(listing.documents), size):
        batch = listing.documents[start : start + size]
        records = []
        for document, text in zip(batch, texts):
            values = {TEXT_COLUMN: text, LABEL_COLUMN: document.label, ID_COLUMN: document.path}
            records.append([values[column] for column in listing.columns])
        yield Chunk(records, [document.path for document in batch])
    next(texts, None)  # ends the reading, which then counts the files read as control characters


def _visible(folder: Path, shown: str) -> list[Path]:
    """The entries of a folder but hidden ones (a name starting with "."), sorted by name."""
    try:
        return sorted((entry for entry in folder.iterdir() if not _hidden(entry.name)), key=lambda e: e.name)
    except OSError as error:
        raise DataError(f"cannot read the folder {shown}: {error.strerror or error}") from None


def _hidden(name: str) -> bool:
    """Names that start with "." (.DS_Store, .ipynb_checkpoints) are not data."""
    return name.startswith(".")


def _entries(root: Path, path: str) -> tuple[dict[str, Path], list[str]]:
    """The class folders by name, and the names of the other entries (aclImdb's labeledBow.feat, urls_pos.txt)."""
    entries = _visible(root, path)
    folders = {entry.name: entry for entry in entries if entry.is_dir()}
    return folders, [entry.name for entry in entries if entry.name not in folders]


def _refuse_split_folders(folders: dict[str, Path], path: str, origin: str) -> None:
    """A folder whose every folder holds folders is a level above the class folders: a data set's folder of split
    folders (20news-bydate/ holding 20news-bydate-train/alt.atheism/, aclImdb/ holding train/neg/). Said before the
    classes are looked for, which would otherwise name the split folders as classes without a folder, or suggest
    the first of them (a test split) as the folder to give."""
    if not all(_holds_folders(folder) for folder in folders.values()):
        return
    splits = [str(Path(path) / name) for name in folders]
    raise DataError(
        f"{path} ({origin}) holds folders of class folders ({_listed(list(folders))}), not class folders: give "
        f"this split's folder as {origin} (one of {_listed(splits)})"
    )


def _holds_folders(folder: Path) -> bool:
    """Whether a folder holds a folder that is not hidden."""
    try:
        with os.scandir(folder) as entries:  # the entry's type comes with the listing: no stat per file
            return any(entry.is_dir() and not _hidden(entry.name) for entry in entries)
    except OSError:
        return False  # reading it fails with its own error naming it, when its files are listed


def _chosen(
    folders: dict[str, Path],
    classes: Sequence[str] | None,
    classes_from: str,
    every_class: bool,
    path: str,
    origin: str,
) -> list[str]:
    """The class folders to read, in folder order: unlisted, every one but those of unlabelled texts."""
    if classes is None:
        return _without_unlabelled(folders, classes_from, path, origin)
    wanted = set(classes)
    missing = [name for name in classes if name not in folders]
    if missing and every_class:
        raise DataError(
            f"{path} ({origin}): no folder {str(Path(path) / missing[0])!r} for class {missing[0]!r} of {classes_from}"
            f"{f' (nor for {len(missing) - 1} more)' if len(missing) > 1 else ''}; its class folders: "
            f"{_listed(list(folders))}"
        )
    chosen = [name for name in folders if name in wanted]
    if not chosen:
        raise DataError(
            f"{path} ({origin}): none of its folders ({_listed(list(folders))}) is a class of "
            f"{classes_from} ({', '.join(classes)})"
        )
    if missing:
        logger.info("%s: no folder for the classes %s: none of its rows are of them", path, ", ".join(missing))
    left_out = [name for name in folders if name not in wanted]
    if left_out:
        logger.warning("%s: folders left out, not a class of %s: %s", path, classes_from, _listed(left_out))
    return chosen


def _without_unlabelled(folders: dict[str, Path], classes_from: str, path: str, origin: str) -> list[str]:
    """Every class folder but those named as holding unlabelled texts (UNLABELLED_FOLDERS: aclImdb's train/unsup/,
    50,000 reviews that made a third class), each left out with a WARNING naming it and its files."""
    unlabelled = [name for name in folders if name.casefold() in UNLABELLED_FOLDERS]
    for name in unlabelled:
        files = _files(sum(entry.is_file() for entry in _visible(folders[name], str(Path(path) / name))))
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
            f"{path} ({origin}) has no class folders: {_listed(unlabelled)} holds unlabelled texts; name it in "
            f"{classes_from} to read it as a class"
        )
    return chosen


def _documents(folder: Path, path: str, origin: str) -> list[Path]:
    """The files of one class folder, sorted by name. A folder inside it is an error rather than a class's documents
    silently left out (a folder whose every folder holds folders was refused before, by _refuse_split_folders)."""
    shown = str(Path(path) / folder.name)
    entries = _visible(folder, shown)
    nested = [entry.name for entry in entries if entry.is_dir()]
    if nested:
        raise DataError(
            f"{shown} holds folders ({_listed(nested)}), but a class folder holds its documents as files: are the "
            f"classes a level deeper? Then give the folder that holds them (e.g. {shown}) as {origin}"
        )
    files = _files_among(entries, shown)
    if not files:
        raise DataError(
            f"{shown}: the class folder {folder.name!r} holds no files; give it its documents (one per file) or "
            "remove it"
        )
    return files


def _files_among(entries: list[Path], shown: str) -> list[Path]:
    """The regular files among a folder's entries (not folders). Anything else (a broken link, a pipe) is left out
    with a WARNING naming it, rather than a document silently missing from the rows."""
    files = [entry for entry in entries if entry.is_file()]
    others = [entry.name for entry in entries if not entry.is_file() and not entry.is_dir()]
    if others:
        logger.warning("%s: left out, neither a file nor a folder (a broken link?): %s", shown, _listed(others))
    return files


def _read_document(file: Path, shown: str, encoding: str, warn_controls: bool, option: str) -> tuple[str, bool]:
    """A file's whole text, and whether bytes 0x80-0x9F in it were read as control characters (the wrong encoding:
    tables.LineSource warns, naming the line, when `warn_controls`). `option` gives the encoding, named in errors as
    the user wrote it."""
    try:
        handle = open(file, "rb")  # noqa: SIM115 -- closed below; only open() maps to this error
    except OSError as error:
        raise DataError(f"cannot read {shown}: {error.strerror or error}") from None
    with handle:
        lines = LineSource(handle, shown, encoding, file.stat().st_size, option, warn_controls=warn_controls)
        return "".join(lines), lines.controls_seen


def _files(count: int) -> str:
    return f"{count:,} file{'' if count == 1 else 's'}"


def _listed(names: list[str]) -> str:
    """The first NAMES_LOGGED names, and how many more there are."""
    shown = ", ".join(names[:NAMES_LOGGED])
    return shown if len(names) <= NAMES_LOGGED else f"{shown} and {len(names) - NAMES_LOGGED:,} more"
