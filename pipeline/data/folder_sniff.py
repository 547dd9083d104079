"""Folders that are not class folders, and a folder of files read as class files (one class per file)."""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Sequence
from pathlib import Path

from pipeline.common.errors import DataError
from pipeline.data.folder_entries import ENCODING_SETTING, Document, count_files, holds_folders, lines_of, listed_names
from pipeline.data.rows import SEPARATE_LABELS_HINT
from pipeline.data.split_column import SPLIT_VALUES
from pipeline.data.tables import format_of_name

logger = logging.getLogger("pipeline.data.load")
LAYOUTS = "a folder of data holds one folder per class, each holding that class's documents, one per file, or one file per class (rt-polarity.pos, rt-polarity.neg), one text per line"
# What `datasets`' save_to_disk writes at the top of its folder (a DatasetDict's, a Dataset's): Arrow data.
SAVED_DATASET_FILES = ("dataset_dict.json", "state.json")
DOCUMENTATION_NAMES = frozenset({"readme", "license", "licence", "copying", "notice", "changelog"})
# Non-blank lines of each file looked at: over half with a tab or __label__ means rows already labelled.
LINES_LOOKED_AT = 1000
# At most this share of distinct lines: a file of labels (tweet_eval's train_labels.txt), not class texts.
LABEL_FILE_DISTINCT_SHARE = 0.5


def saved_dataset_files(folder: Path) -> list[str]:
    return [name for name in SAVED_DATASET_FILES if (folder / name).is_file()]


def refuse_saved_dataset(path: str, origin: str) -> None:
    """Refuse a save_to_disk folder: read as class folders its .arrow files became documents."""
    saved = saved_dataset_files(Path(path).expanduser())
    if not saved:
        return
    how = f"write the split to a file (datasets.load_from_disk({path!r})['test'].to_json('test.jsonl')) and give that"
    if origin.startswith("data."):  # a data file's setting
        how = f"set data.source=hub data.hub_name={path}, which reads its splits"
    raise DataError(
        f"{path} ({origin}) is a dataset saved by the datasets library (save_to_disk: {listed_names(saved)}), not a folder of documents: {how}"
    )


def not_class_files(loose: list[Path], files: Sequence[Path], path: str, encoding: str, origin: str) -> str:
    """Why a folder's files are no class files, with the way to read them, for the error."""
    if not loose:
        return " (it is empty)"
    tables = [file.name for file in files if format_of_name(file.name) is not None]
    if tables:
        # Not decoded as lines: a Parquet shard's bytes made a misleading encoding error.
        return f"; it holds a data set's tables ({listed_names(tables)}), not class files: {_tables_hint(tables, path, origin)}"
    hint = _unlike_class_files(files, path, encoding, ENCODING_SETTING)
    if hint is not None:
        return f"; its files are no class files: {hint}"
    return f"; the {count_files(len(loose))} directly in it are no class's: class files are named apart by their class (neg.txt, pos.txt; not a table's train.csv, nor a split's train.txt) and each holds more lines than there are files"


def _tables_hint(tables: list[str], path: str, origin: str) -> str:
    """How to read a data set's tables: each split's file, or for Parquet the folder as a Hub dataset."""
    split = origin.removeprefix("data.").removesuffix("_file")
    example = next((name for name in tables if split in name.lower()), tables[0])
    how = f"give {'each split' if origin.startswith('data.') else 'one'}'s file ({origin}={Path(path) / example})"
    if origin.startswith("data.") and any(format_of_name(name) == "parquet" for name in tables):
        how += f", or the folder as data.source=hub data.hub_name={path}, which reads a split's Parquet shards"
    return how


def refuse_binary_tables(documents: Sequence[Document], path: str, origin: str) -> None:
    """Refuse class folders holding Parquet files or workbooks: a data set's folders of tables, not documents."""
    tables = [document.path for document in documents if format_of_name(document.file.name) in BINARY_TABLES]
    if tables:
        raise DataError(
            f"{path} ({origin}) holds a data set's tables in its folders ({listed_names(tables)}), not class folders of documents: {_tables_hint(tables, path, origin)}"
        )


def class_files(files: Sequence[Path], path: str, encoding: str, option: str) -> list[Document] | None:
    """Documents of the class each file names, if named apart and each longer than the file count; else None."""
    named = None if any(_data_file(file) for file in files) else class_file_names(files)
    if named is None:
        return None
    documents = [Document(file, file.name, name) for name, file in named.items()]
    if not all(_more_lines_than(document, len(files), path, encoding, option) for document in documents):
        return None
    if _unlike_class_files(files, path, encoding, option) is not None:
        return None
    return documents


def _documentation(file: Path) -> bool:
    """Whether a file is documentation (README.md, LICENSE.txt)."""
    return file.name.split(".")[0].casefold() in DOCUMENTATION_NAMES


def without_documentation(files: Sequence[Path], path: str) -> list[Path]:
    """The files but documentation, said at INFO (UCI's readme became a class of its own)."""
    aside = [file.name for file in files if _documentation(file)]
    if aside:
        logger.info(
            f"{path}: {count_files(len(aside))} left aside, documentation rather than a class's lines: {listed_names(aside)}"
        )
    return [file for file in files if not _documentation(file)]


def _unlike_class_files(files: Sequence[Path], path: str, encoding: str, option: str) -> str | None:
    """Why files named apart are no class files (rows already labelled, texts beside labels), or None."""
    counts = [_line_counts(file, path, encoding, option) for file in files]
    looked_at = sum(min(lines, LINES_LOOKED_AT) for lines, _, _ in counts)
    if looked_at and sum(labelled for _, labelled, _ in counts) > looked_at / 2:
        return (
            "most of their lines already hold a label (after a tab, or fastText's __label__): give a file itself "
            "as data.train_file, a tab-separated one read as TSV with its columns named in data.column_names (e.g. "
            "[text, label] or [label, text]), a fastText one as it is"
        )
    labels = any(distinct <= LABEL_FILE_DISTINCT_SHARE * lines for lines, _, distinct in counts)
    if len(counts) > 1 and len({lines for lines, _, _ in counts}) == 1 and labels:
        return f"as many lines in each, one file of labels: {SEPARATE_LABELS_HINT}"
    return None


def _line_counts(file: Path, path: str, encoding: str, option: str) -> tuple[int, int, int]:
    """A file's non-blank lines, decoded as rows are: how many, how many hold a label already, how many distinct."""
    lines = labelled = 0
    distinct: set[str] = set()
    with lines_of(file, str(Path(path) / file.name), encoding, option, warn_controls=False) as source:
        for line in source:
            text = line.strip()
            if not text:
                continue
            if lines < LINES_LOOKED_AT:
                labelled += "\t" in text or text.startswith("__label__")
            if len(distinct) <= LABEL_FILE_DISTINCT_SHARE * (lines + 1):  # past that, no file of labels
                distinct.add(text)
            lines += 1
    return lines, labelled, len(distinct)


def _data_file(file: Path) -> bool:
    """Whether a file is a data set's own, not a class's lines: a table (train.csv) or a split's (cooking.train)."""
    name = file.name.lower().removesuffix(".gz")
    return format_of_name(file.name) is not None or any(word in SPLIT_VALUES for word in re.split(r"[^a-z0-9]+", name))


def class_file_names(files: Sequence[Path]) -> dict[str, Path] | None:
    """Each file by the dot-separated name part that differs between them (neg of rt-polarity.neg), or None."""
    if len(files) < 2:
        return None
    parts = [file.name.split(".") for file in files]
    leading = _shared_length(parts)
    trailing = _shared_length([list(reversed(name)) for name in parts])
    names = [".".join(name[leading : len(name) - trailing]) for name in parts]
    return None if "" in names or len(set(names)) < len(names) else dict(zip(names, files))


def _shared_length(names: Sequence[Sequence[str]]) -> int:
    return next((index for index, parts in enumerate(zip(*names)) if len(set(parts)) > 1), min(map(len, names)))


def _more_lines_than(document: Document, count: int, path: str, encoding: str, option: str) -> bool:
    """Whether a document holds more than `count` non-blank lines, read only as far as needed."""
    shown = str(Path(path) / document.path)
    with lines_of(document.file, shown, encoding, option, warn_controls=False) as lines:
        return len(list(itertools.islice((line for line in lines if line.strip()), count + 1))) > count


def warn_class_files_in_folders(documents: Sequence[Document], path: str, encoding: str, option: str) -> None:
    """WARN when each class folder holds one file of many lines (rt-polarity.pos in pos/): read whole as one text."""
    if len(documents) < 2 or len({document.label for document in documents}) < len(documents):
        return
    if not all(_more_lines_than(document, len(documents), path, encoding, option) for document in documents):
        return
    files = listed_names([document.path for document in documents])
    named = listed_names([f"{document.label}.txt" for document in documents])
    logger.warning(
        f"{path}: each class folder holds a single file ({files}), of many lines, read whole as one text: "
        f"{len(documents)} rows in all. If each line is a text, put the files side by side in one folder (a folder "
        f"of class files: each named by its class, as {named}) and give that folder"
    )


def refuse_split_folders(folders: dict[str, Path], path: str, origin: str) -> None:
    """Refuse a folder whose every folder holds folders: split folders (aclImdb/ holding train/neg/), a level up."""
    if not all(holds_folders(folder) for folder in folders.values()):
        return
    splits = [str(Path(path) / name) for name in folders]
    raise DataError(
        f"{path} ({origin}) holds folders of class folders ({listed_names(list(folders))}), not class folders: give this split's folder as {origin} (one of {listed_names(splits)})"
    )


# Table formats whose files are no text: one in a class folder is a data set's table, never a document.
BINARY_TABLES = ("parquet", "xlsx")
