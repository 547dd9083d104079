"""A folder of class folders as labelled data: aclImdb's train/pos/0_9.txt, 20 Newsgroups' alt.atheism/49960, BBC
News' business/001.txt, the layout scikit-learn's `load_files` reads; or a folder of class files, one text per line
(rotten_tomatoes' rt-polarity.pos and rt-polarity.neg).

    folder = read_class_folders("aclImdb/train", "utf-8", ["neg", "pos"], "data.label_names", True, "data.train_file")

Each immediate subfolder is a class, named by its folder; each file directly inside it is one row, whose text is
the whole file decoded as every text file is (tables.LineSource: the encoding, its byte-order mark, an error naming
the file and line of a byte that does not decode). A row is named by its file's path in the folder ("pos/0_9.txt"),
rows come sorted by class folder, then file name, so that every run reads them in one order. Names that start with
"." (.DS_Store, .ipynb_checkpoints) are not data. Stage 1 turns the rows into the Table a file gives
(data.read_table), of the columns text, label and id, so that nothing after it knows where they came from.

A folder that holds files only is a folder of class files when the files are named apart (the part of their names
that differs: neg, pos of neg.txt, pos.txt or of rt-polarity.neg, rt-polarity.pos) and each holds more non-blank lines
than there are files (`class_files`): each non-blank line is a row of the class its file names, named
"rt-polarity.pos:12" (file and line). Class folders that each hold one such file (rt-polarity.pos put into pos/) are
said in a WARNING: each file is read whole, as one text.

Documentation beside the files (readme, LICENSE.txt) is left aside; files whose lines mostly hold a label already
(a tab, fastText's __label__) or files of as many lines, one of them labels (texts.txt, labels.txt), are not class
files, and the error about the folder says how to read them.

`pipeline.predict --input` reads a folder as a Table streamed file by file (`open_folder_table`): a folder of class
folders as training reads it (every class folder), a folder of class files as training reads it where every file's
class part is one of the model's classes (rt-polarity.pos, rt-polarity.neg for neg and pos: an inbox's documents,
ticket.1001.txt, ticket.1002.txt, are named apart too and may well hold more lines than there are files), or else a
folder of files (an inbox: `0001.txt`, `0002.txt`), each file a row of the columns text and id.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.common.errors import DataError
from pipeline.config.reading import LABEL_COLUMN, TEXT_COLUMN
from pipeline.data.formats.table import Chunk, Table
from pipeline.data.labels import Spellings
from pipeline.data.lines import LineSource, check_encoding
from pipeline.data.rows import SEPARATE_LABELS_HINT
from pipeline.data.sniff import check_wide_encoding
from pipeline.data.split_column import SPLIT_VALUES
from pipeline.data.tables import UnknownFormatError, resolve_format

logger = logging.getLogger("pipeline.data.load")

# The columns of a folder's rows: a file's whole text (TEXT_COLUMN), its class folder's name (LABEL_COLUMN) and its
# path in the folder.
ID_COLUMN = "id"
# A labelled folder's rows, as a Table's columns.
ROW_COLUMNS = [TEXT_COLUMN, LABEL_COLUMN, ID_COLUMN]
# What a folder of data holds, for the error about one that holds neither.
LAYOUTS = (
    "a folder of data holds one folder per class, each holding that class's documents, one per file, or one file per "
    "class (rt-polarity.pos, rt-polarity.neg), one text per line"
)
# The setting that gives the encoding in training, named in its errors (pipeline.predict names --encoding).
ENCODING_SETTING = "data.encoding"
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
# The first part of the names (any case, any ending) of a data set's documentation, shipped beside its data (the SMS
# Spam Collection's readme, UCI's readme.txt): not a class's lines, left aside as aclImdb's urls files are.
DOCUMENTATION_NAMES = frozenset({"readme", "license", "licence", "copying", "notice", "changelog"})
# Lines of a folder's files that tell class files from data already labelled: the first this many non-blank lines of
# each file, where more than half holding a tab or fastText's __label__ make the files labelled lines.
LINES_LOOKED_AT = 1000
# A file whose non-blank lines take at most this share of distinct values holds labels, not texts (tweet_eval's
# train_labels.txt: 0, 1, 2), beside a file of texts of as many lines; class files of as many lines (rt-polarity's
# 5,331 each) hold distinct sentences.
LABEL_FILE_DISTINCT_SHARE = 0.5


@dataclass(frozen=True)
class ClassFolders:
    """The rows of a folder of class folders, or of class files."""

    frame: pd.DataFrame  # TEXT_COLUMN, LABEL_COLUMN, ID_COLUMN: one row per file (per line of class files)
    paths: list[str]  # each row's file in the folder, "pos/0_9.txt" ("rt-polarity.pos:12"): its id, how errors name it
    files_per_class: dict[str, int] | None  # files read from each class folder, in folder order; None: class files
    class_files: dict[str, str] | None = None  # class files: each class's file ("pos": "rt-polarity.pos"); else None


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
    """Every file of the class folders of `path` as a row (or, a folder of files only, every line of its class
    files). `classes` (None: every class folder) are the folders read, the others left out with a warning;
    `every_class`: a class without a folder is an error naming the folder looked for (a misspelt class in training),
    else only a log line (an evaluation file need not hold every class). `classes_from` and `origin` name the
    settings that an error points at."""
    refuse_saved_dataset(path, origin)
    root = Path(path).expanduser()
    folders, loose = _entries(root, path)
    if not folders:
        files = _without_documentation(_files_among([root / name for name in loose], path), path)
        found = class_files(files, path, encoding, ENCODING_SETTING)
        if found is None:
            why = _not_class_files(loose, files, path, encoding, origin)
            raise DataError(f"{path} ({origin}) has no class folders: {LAYOUTS}{why}")
        by_class = {document.label: document.file for document in found}
        chosen = _chosen(by_class, classes, classes_from, every_class, path, origin, kind="file")
        documents = [document for document in found if document.label in chosen]
        rows = _line_rows(documents, path, encoding, ENCODING_SETTING)
        return _class_rows(list(rows), None, {document.label: document.path for document in documents})
    if loose:
        _say_loose(path, loose, logging.INFO)
    _refuse_split_folders(folders, path, origin)
    chosen = _chosen(folders, classes, classes_from, every_class, path, origin)
    documents = _class_documents(folders, chosen, path, origin)
    _refuse_binary_tables(documents, path, origin)
    _warn_class_files_in_folders(documents, path, encoding, ENCODING_SETTING)
    rows = list(_file_rows(documents, path, encoding, ENCODING_SETTING))
    counts = Counter(row[LABEL_COLUMN] for row in rows)
    return _class_rows(rows, {name: counts[name] for name in chosen})


def _class_rows(
    rows: list[dict[str, Any]], files_per_class: dict[str, int] | None, class_files: dict[str, str] | None = None
) -> ClassFolders:
    frame = pd.DataFrame(rows, columns=ROW_COLUMNS, dtype=object)
    return ClassFolders(frame, [row[ID_COLUMN] for row in rows], files_per_class, class_files)


def _not_class_files(loose: list[str], files: Sequence[Path], path: str, encoding: str, origin: str) -> str:
    """Why the files of a folder without class folders are no class files, for the error about it: a data set's own
    files (_data_file: its tables, its splits' files) with the way to read them, or, where their lines say what they
    are, the way to read those (_unlike_class_files)."""
    if not loose:
        return " (it is empty)"
    tables = [file.name for file in files if _table_file(file)]
    if tables:
        # Not decoded as lines: a Parquet shard of the Hub's data/ layout is no text, and its bytes made a false
        # encoding error whose advice led nowhere.
        return (
            f"; it holds a data set's tables ({_listed(tables)}), not class files: {_tables_hint(tables, path, origin)}"
        )
    hint = _unlike_class_files(files, path, encoding, ENCODING_SETTING)
    if hint is not None:
        return f"; its files are no class files: {hint}"
    return (
        f"; the {_files(len(loose))} directly in it are no class's: class files are named apart by their class "
        "(neg.txt, pos.txt; not a table's train.csv, nor a split's train.txt) and each holds more lines than there "
        "are files"
    )


def _tables_hint(tables: list[str], path: str, origin: str) -> str:
    """How to read a data set's tables (their paths in the folder `path`, given as `origin`): each split's file, or
    for Parquet shards the folder as a Hub dataset, which reads them."""
    split = origin.removeprefix("data.").removesuffix("_file")
    example = next((name for name in tables if split in name.lower()), tables[0])
    how = f"give {'each split' if origin.startswith('data.') else 'one'}'s file ({origin}={Path(path) / example})"
    if origin.startswith("data.") and any(_format_of_name(name) == "parquet" for name in tables):
        how += f", or the folder as data.source=hub data.hub_name={path}, which reads a split's Parquet shards"
    return how


# Table formats whose files are no text: one in a class folder is a data set's table, never a document.
BINARY_TABLES = ("parquet", "xlsx")


def _refuse_binary_tables(documents: Sequence[Document], path: str, origin: str) -> None:
    """Class folders that hold Parquet files or workbooks are a data set's folders of tables: a Hub dataset's download
    (README.md beside data/train-00000-of-00001.parquet), or split folders of shards (train/, test/). Read as
    documents, their bytes made a false encoding error; refused, naming them and what to give."""
    tables = [document.path for document in documents if _format_of_name(document.file.name) in BINARY_TABLES]
    if tables:
        raise DataError(
            f"{path} ({origin}) holds a data set's tables in its folders ({_listed(tables)}), not class folders of "
            f"documents: {_tables_hint(tables, path, origin)}"
        )


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


def _file_rows(documents: Sequence[Document], path: str, encoding: str, option: str) -> Iterator[dict[str, Any]]:
    """Each document as a row (its whole text, its class, its path as id), read one at a time. Files read as control
    characters (cp1252 read as latin-1) are warned about once, naming the first file and its line, and counted in one
    line at the end, not one warning per file of a folder of thousands."""
    with_controls = 0
    for document in documents:
        shown = str(Path(path) / document.path)
        with _lines_of(document.file, shown, encoding, option, not with_controls) as lines:
            text = "".join(lines)
            with_controls += lines.controls_seen
        yield {TEXT_COLUMN: text, LABEL_COLUMN: document.label, ID_COLUMN: document.path}
    if with_controls > 1:
        logger.warning("%s: %s more read with control characters, as the first", path, _files(with_controls - 1))


def _line_rows(documents: Sequence[Document], path: str, encoding: str, option: str) -> Iterator[dict[str, Any]]:
    """Each non-blank line of class files as a row of the class its file names (document.label), named by file and
    line ("rt-polarity.pos:12"), in file then line order. Lines read as control characters are warned about once."""
    _say_class_files(path, documents)
    seen_controls = False
    for document in documents:
        with _lines_of(document.file, str(Path(path) / document.path), encoding, option, not seen_controls) as lines:
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
    logger.log(level, "%s: %s beside the class folders, not rows: %s", path, _files(len(loose)), _listed(loose))


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
    folders, loose = _entries(root, path)
    if folders:
        if loose:
            _say_loose(path, loose, logging.WARNING)
        documents = _class_documents(folders, list(folders), path, origin)
        _warn_class_files_in_folders(documents, path, encoding, option)
        return FolderDocuments(documents, labelled=True)
    files = _files_among([root / name for name in loose], path)
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
    """Whether every file's class part (_class_file_names) names one of the model's classes, spelt as labels are
    matched (labels.Spellings: exactly, or in another case). An inbox's documents are named apart too
    (ticket.1001.txt, ticket.1002.txt: "classes" 1001, 1002) and may hold more lines than there are files; only the
    model's classes tell class files (rt-polarity.neg, rt-polarity.pos for a model of neg and pos) from them."""

    named = _class_file_names(files) if classes else None
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


def class_files(files: Sequence[Path], path: str, encoding: str, option: str) -> list[Document] | None:
    """The files of a folder that holds files only as documents of the class each names, when they are class files:
    named apart (_class_file_names), no data set's own files (_data_file), and each of more non-blank lines than
    there are files; else None. The lines tell a class file, many texts, from a document: a class's folder of
    documents given by mistake holds more files than its documents have lines (20 Newsgroups' alt.atheism/: 480
    posts; aclImdb's pos/: 12,500 reviews of a line each)."""
    named = None if any(_data_file(file) for file in files) else _class_file_names(files)
    if named is None:
        return None
    documents = [Document(file, file.name, name) for name, file in named.items()]
    if not all(_more_lines_than(document, len(files), path, encoding, option) for document in documents):
        return None
    if _unlike_class_files(files, path, encoding, option) is not None:
        return None
    return documents


def _documentation(file: Path) -> bool:
    """Whether a file is a data set's documentation (DOCUMENTATION_NAMES: README.md, readme, LICENSE.txt)."""
    return file.name.split(".")[0].casefold() in DOCUMENTATION_NAMES


def _without_documentation(files: Sequence[Path], path: str) -> list[Path]:
    """The files but documentation (_documentation), which is said at INFO: UCI's readme beside SMSSpamCollection
    became a class of its own, its lines texts."""
    aside = [file.name for file in files if _documentation(file)]
    if aside:
        logger.info(
            "%s: %s left aside, documentation rather than a class's lines: %s", path, _files(len(aside)), _listed(aside)
        )
    return [file for file in files if not _documentation(file)]


@dataclass(frozen=True)
class _LineCounts:
    """What a file's non-blank lines say about it, read once: how many, how many of the first LINES_LOOKED_AT hold
    a label already, and their distinct values (counted up to the share that makes a file of labels)."""

    lines: int
    looked_at: int
    labelled: int
    distinct: int


def _unlike_class_files(files: Sequence[Path], path: str, encoding: str, option: str) -> str | None:
    """Why files named apart are not class files, as the way to read them; None where nothing says so. Lines that
    mostly hold a tab or a fastText label are rows already labelled (UCI's amazon_cells_labelled.txt, "text<TAB>0";
    SMSSpamCollection, "ham<TAB>text"), read as a file each; files of as many lines, one of them labels, are texts
    and their labels side by side (texts.txt, labels.txt), joined line by line (data.SEPARATE_LABELS_HINT)."""

    counts = [_line_counts(file, path, encoding, option) for file in files]
    looked_at = sum(count.looked_at for count in counts)
    if looked_at and sum(count.labelled for count in counts) > looked_at / 2:
        return (
            "most of their lines already hold a label (after a tab, or fastText's __label__): give a file itself "
            "as data.train_file, a tab-separated one read as TSV with its columns named in data.column_names (e.g. "
            "[text, label] or [label, text]), a fastText one as it is"
        )
    if len(counts) > 1 and len({count.lines for count in counts}) == 1 and any(map(_holds_labels, counts)):
        return f"as many lines in each, one file of labels: {SEPARATE_LABELS_HINT}"
    return None


def _holds_labels(count: _LineCounts) -> bool:
    return count.distinct <= LABEL_FILE_DISTINCT_SHARE * count.lines


def _line_counts(file: Path, path: str, encoding: str, option: str) -> _LineCounts:
    """A file's _LineCounts, its lines decoded as rows are (an undecodable byte is the error reading gives)."""
    lines = labelled = 0
    distinct: set[str] = set()
    with _lines_of(file, str(Path(path) / file.name), encoding, option, warn_controls=False) as source:
        for line in source:
            text = line.strip()
            if not text:
                continue
            if lines < LINES_LOOKED_AT:
                labelled += "\t" in text or text.startswith("__label__")
            if len(distinct) <= LABEL_FILE_DISTINCT_SHARE * (lines + 1):  # past that share, no file of labels
                distinct.add(text)
            lines += 1
    return _LineCounts(lines, min(lines, LINES_LOOKED_AT), labelled, len(distinct))


def _data_file(file: Path) -> bool:
    """Whether a file is a data set's own rather than a class's lines: a table (its ending one of tables.EXTENSIONS:
    train.csv) or a split's file (a word of its name one of data.SPLIT_VALUES: cooking.train, tweet_eval's
    train_text.txt). A folder of them given for one file (data/ for data/train.csv) was refused, not read as the
    lines of classes "train" and "test"."""

    name = file.name.lower().removesuffix(".gz")
    return _table_file(file) or any(word in SPLIT_VALUES for word in re.split(r"[^a-z0-9]+", name))


def _table_file(file: Path) -> bool:
    """Whether a file's name gives a table's format (tables.EXTENSIONS: train.csv, test.parquet)."""
    return _format_of_name(file.name) is not None


def _format_of_name(name: str) -> str | None:
    """The table format a file's name gives (tables.resolve_format: a trailing .gz looked through), or None."""
    try:
        return resolve_format(name, None, "data.file_format")
    except UnknownFormatError:
        return None


def _class_file_names(files: Sequence[Path]) -> dict[str, Path] | None:
    """Each file by its class: the part of its name (split at dots) that differs between the files, the parts they
    all share before and after it left out: neg, pos of neg.txt, pos.txt and of rt-polarity.neg, rt-polarity.pos.
    None for fewer than two files, or names that leave no such part, or the same one twice."""
    if len(files) < 2:
        return None
    parts = [file.name.split(".") for file in files]
    leading = _shared_length(parts)
    trailing = _shared_length([list(reversed(name)) for name in parts])
    names = [".".join(name[leading : len(name) - trailing]) for name in parts]
    if "" in names or len(set(names)) < len(names):
        return None
    return dict(zip(names, files))


def _shared_length(names: Sequence[Sequence[str]]) -> int:
    """How many leading parts every name shares."""
    return next((index for index, parts in enumerate(zip(*names)) if len(set(parts)) > 1), min(map(len, names)))


def _more_lines_than(document: Document, count: int, path: str, encoding: str, option: str) -> bool:
    """Whether a document holds more than `count` non-blank lines, read only as far as needed to tell."""
    shown = str(Path(path) / document.path)
    with _lines_of(document.file, shown, encoding, option, warn_controls=False) as lines:
        return len(list(itertools.islice((line for line in lines if line.strip()), count + 1))) > count


def _warn_class_files_in_folders(documents: Sequence[Document], path: str, encoding: str, option: str) -> None:
    """Class folders that each hold a single file of more lines than there are such files (rt-polarity.pos put into
    pos/, rt-polarity.neg into neg/) hold class files, each read whole as one text: a run of two rows, without a
    word. Said, with the fix; not refused, since a class folder may hold one long document."""
    if len(documents) < 2 or len({document.label for document in documents}) < len(documents):
        return
    if not all(_more_lines_than(document, len(documents), path, encoding, option) for document in documents):
        return
    logger.warning(
        "%s: each class folder holds a single file (%s), of many lines, read whole as one text: %d rows in all. If each "
        "line is a text, put the files side by side in one folder (a folder of class files: each named by its "
        "class, as %s) and give that folder",
        path,
        _listed([document.path for document in documents]),
        len(documents),
        _listed([f"{document.label}.txt" for document in documents]),
    )


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
            f"{_listed(list(entries))}"
        )
    chosen = [name for name in entries if name in wanted]
    if not chosen:
        raise DataError(
            f"{path} ({origin}): none of its {kind}s ({_listed(list(entries))}) is a class of "
            f"{classes_from} ({', '.join(classes)})"
        )
    if missing:
        logger.info("%s: no %s for the classes %s: none of its rows are of them", path, kind, ", ".join(missing))
    left_out = [name for name in entries if name not in wanted]
    if left_out:
        logger.warning("%s: %ss left out, not a class of %s: %s", path, kind, classes_from, _listed(left_out))
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


@contextlib.contextmanager
def _lines_of(file: Path, shown: str, encoding: str, option: str, warn_controls: bool) -> Iterator[LineSource]:
    """A file's decoded lines (tables.LineSource: its encoding, or the UTF-16 or UTF-32 its byte-order mark says as
    tables.check_wide_encoding reads it, an error naming the file and line of a byte that does not decode; bytes
    0x80-0x9F read as control characters warned about when `warn_controls`).
    `shown` names the file and `option` the setting that gives the encoding, in errors."""
    try:
        handle = open(file, "rb")  # noqa: SIM115 -- closed below; only open() maps to this error
    except OSError as error:
        raise DataError(f"cannot read {shown}: {error.strerror or error}") from None
    with handle:
        lines = LineSource(handle, shown, encoding, file.stat().st_size, option, warn_controls=warn_controls)
        check_wide_encoding(lines, say=False)  # a UTF-16 file (Notepad's "Unicode") by its byte-order mark
        yield lines


def _files(count: int) -> str:
    return f"{count:,} file{'' if count == 1 else 's'}"


def _listed(names: list[str]) -> str:
    """The first NAMES_LOGGED names, and how many more there are."""
    shown = ", ".join(names[:NAMES_LOGGED])
    return shown if len(names) <= NAMES_LOGGED else f"{shown} and {len(names) - NAMES_LOGGED:,} more"
