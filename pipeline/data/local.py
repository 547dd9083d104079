"""Splits from local files (data.source: files), each read whole or as a folder of class folders."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pipeline.common.errors import DataError
from pipeline.config.reading import LABEL_COLUMN, STANDARD_INPUT, normalise_name
from pipeline.config.schema import DataConfig
from pipeline.data.build import input_values, label_columns_of
from pipeline.data.folders import is_folder, read_class_folders
from pipeline.data.formats.header import looks_like_data, unnamed_column
from pipeline.data.formats.table import REPEATED_HEADER, Chunk, Table, repeated_header_warning
from pipeline.data.rows import FILE_KEYS, SEPARATE_LABELS_HINT, SplitRows
from pipeline.data.splits import RemovedRow
from pipeline.data.tables import LAYOUT_SETTINGS, UnknownFormatError, open_table, settings_not_read
from pipeline.data.text import TextSpec, is_blank, resolve_columns

logger = logging.getLogger("pipeline.data.load")


def read_file_tables(config: DataConfig) -> dict[str, SplitRows]:
    """Read the configured train/validation/test files; a missing test or validation file is carved from train."""
    if not config.train_file:
        raise DataError("data.train_file is required when data.source is 'files'")
    paths = {"train": config.train_file, "validation": config.validation_file, "test": config.test_file}
    tables = {
        split: read_table(path, FILE_KEYS[split], config, config.column_names) for split, path in paths.items() if path
    }
    _warn_class_folders_only_in_train(tables, config)
    for table in tables.values():
        _warn_values_in_unnamed_columns(table, config)
    return tables


def _warn_values_in_unnamed_columns(table: SplitRows, config: DataConfig) -> None:
    """WARN about values in unnamed columns: texts cut at an unquoted comma (SMS spam.csv)."""
    read = [*TextSpec.from_data_config(config).input_columns, *label_columns_of(config)]
    read = {normalise_name(name) for name in (*read, config.id_column, config.split_column) if name}
    unnamed = [
        name
        for index, name in enumerate(table.frame.columns)
        if name == unnamed_column(index) and normalise_name(name) not in read
    ]
    filled = {name: [not is_blank(value) for value in table.frame[name]] for name in unnamed}
    # A column that fills every row is a nameless column (pandas' index), not texts' ends.
    filled = {name: cells for name, cells in filled.items() if any(cells) and not all(cells)}
    rows = [row for row, cells in enumerate(zip(*filled.values())) if any(cells)]
    unnamed = list(filled)
    if rows:
        where = f"{table.unit} {table.number(rows[0])}{table.and_more(rows)}"
        logger.warning(
            f"{table.source}: {where}, {len(rows):,} of {len(table.frame):,}, hold{'s' if len(rows) == 1 else ''} "
            f"values in the column{'s' if len(unnamed) > 1 else ''} without a name in the header "
            f"({', '.join(unnamed)}), which no setting reads; if they continue the text (a comma left unquoted), add "
            f"{'it' if len(unnamed) == 1 else 'them'} to data.text_columns"
        )


def _warn_class_folders_only_in_train(tables: dict[str, SplitRows], config: DataConfig) -> None:
    """WARN when a held-out split lacks some of train's class folders (an unlabelled folder?)."""
    trained = tables["train"].files_per_class
    if config.label_names is not None or trained is None:
        return
    for split in ("validation", "test"):
        held_out = tables[split].files_per_class if split in tables else None
        missing = [name for name in trained if held_out is not None and name not in held_out]
        if missing:
            many = len(missing) > 1
            logger.warning(
                f"{tables[split].source} ({FILE_KEYS[split]}) lacks the class folder{'s' if many else ''} "
                f"{', '.join(missing)} of {tables['train'].source} (data.train_file): with data.label_names unset each "
                f"of its class folders is a class, and the model learns {'classes' if many else 'a class'} that no "
                f"{split} row has; if that is not meant (a folder of unlabelled texts), list the classes in "
                "data.label_names"
            )


# Many corpora come without a header row (ag_news_csv, DBpedia, go_emotions' TSV).
HEADERLESS_HINT = "; the file has no header row? Name its columns in data.column_names"
# For an evaluation file with the text columns but no label column (GLUE's test.tsv).
UNLABELLED_HINT = "; if the file has no labels (a test set's held back, as GLUE's test.tsv): it is not scored but labelled by a trained model, with python -m pipeline.predict --model <run> --input <file>"


def read_table(path: str, origin: str, config: DataConfig, column_names: list[str] | None) -> SplitRows:
    """One whole file, read as the data settings say, as a SplitRows of raw values; a folder as class folders."""
    if is_folder(path):
        listed_in = "data.label_names_file" if config.label_names_file else "data.label_names"
        return read_folder(path, origin, config, config.label_names, listed_in, every_class=True)
    if not Path(path).expanduser().is_file() and path != STANDARD_INPUT:
        raise DataError(f"{origin}: file not found: {path} (looked for {Path(path).expanduser().resolve()})")
    try:
        settings = {key: getattr(config, key) for key in LAYOUT_SETTINGS if key != "column_names"}
        with open_table(path, config.file_format, column_names, config.encoding, **settings) as table:
            chunks = list(table.chunks)
    except UnknownFormatError as error:  # most often one text per line, labels elsewhere
        raise UnknownFormatError(f"{error}; if it holds one text per line: {SEPARATE_LABELS_HINT}") from None
    _warn_settings_not_read(path, origin, config, *settings_not_read(table.format))
    frame, numbers, repeated = _frame_of(table, chunks, path, origin)
    if table.format == "fasttext" and config.task == "multi_label":
        # A fastText line's labels are words, already apart: never split at data.label_separator.
        frame[LABEL_COLUMN] = [[value] if isinstance(value, str) else value for value in frame[LABEL_COLUMN]]
    # What the reader saw of the file says more than a guess from its header.
    hint = table.missing_column_hint
    if not hint:
        hint = HEADERLESS_HINT if column_names is None and looks_like_data(table.header, table.format) else ""
        hint += _missing_labels_hint(table.header, config, origin)
    return SplitRows(
        frame,
        path,
        origin,
        table.unit,
        numbers,
        table.quoting,
        hint,
        delimiter=table.delimiter,
        sheet=table.sheet,
        class_names=table.class_names,
        repeated_headers=repeated,
    )


def _frame_of(table: Table, chunks: list[Chunk], path: str, origin: str) -> tuple[pd.DataFrame, list, SplitRows | None]:
    """A file's rows as a frame of raw values, their numbers, and its repeated header rows (or None)."""
    records, numbers, repeats = [], [], []
    for chunk in chunks:
        for number, record in zip(chunk.numbers, chunk.records):
            if table.repeats_header(record):
                repeats.append((number, record))
            else:
                records.append(record)
                numbers.append(number)
    frame = pd.DataFrame(records, columns=table.header, dtype=object)
    if not repeats:
        return frame, numbers, None
    repeated_frame = pd.DataFrame([record for _, record in repeats], columns=table.header, dtype=object)
    repeated = SplitRows(repeated_frame, path, origin, table.unit, [number for number, _ in repeats], sheet=table.sheet)
    return frame, numbers, repeated


def warn_repeated_headers(table: SplitRows, outcome: str) -> None:
    """One warning for the rows of a file that repeated its header row, if any."""
    headers = table.repeated_headers
    if headers is not None:
        rows = list(range(len(headers.frame)))
        where, header_row = headers.where(0), headers.frame.iloc[0].tolist()
        logger.warning(repeated_header_warning(where, header_row, headers.and_more(rows), outcome))


def repeated_header_rows(table: SplitRows, split: str, config: DataConfig) -> list[RemovedRow]:
    """The rows of `split`'s file that repeated its header, as removed_rows.csv lists them."""
    headers = table.repeated_headers
    if headers is None:
        return []
    warn_repeated_headers(table, "left out of the data, listed in removed_rows.csv")
    rows = list(range(len(headers.frame)))
    spec = TextSpec.from_data_config(config)
    ids = headers.column(config.id_column, "data.id_column") if config.id_column else list(map(headers.number, rows))
    values = input_values(headers, spec)
    return [
        RemovedRow(
            split,
            str(ids[row]),
            f"{REPEATED_HEADER}, {headers.unit} {headers.number(row)}",
            spec.partial_text(values[row]),
        )
        for row in rows
    ]


def _missing_labels_hint(header: list[str], config: DataConfig, origin: str) -> str:
    """What a file without its label column(s) most likely is, for the error: "" when it has them."""
    if _finds(header, label_columns_of(config)):
        return ""
    if len(header) == 1:
        return f"; the file has one column: {SEPARATE_LABELS_HINT}"
    if origin != FILE_KEYS["train"] and _finds(header, TextSpec.from_data_config(config).input_columns):
        return UNLABELLED_HINT
    return ""


def _finds(header: list[str], columns: Sequence[str]) -> bool:
    """Whether every one of `columns` is in the header (as resolve_columns finds them)."""
    try:
        resolve_columns(header, columns, "", "")
    except DataError:
        return False
    return True


def _warn_settings_not_read(path: str, origin: str, config: DataConfig, keys: Sequence[str], what: str) -> None:
    """WARN about settings given that do not describe the source read (`what`: a folder, a workbook)."""
    defaults = {setting.name: setting.default for setting in dataclasses.fields(config)}
    given = [f"data.{key}" for key in keys if getattr(config, key) != defaults[key]]
    if given:
        logger.warning(f"{path} ({origin}) is {what}, which these file settings do not describe: {', '.join(given)}")


FILE_LAYOUT_KEYS = ("file_format", *LAYOUT_SETTINGS)


def read_folder(
    path: str, origin: str, config: DataConfig, classes: list[str] | None, classes_from: str, every_class: bool
) -> SplitRows:
    """A folder of class folders as the SplitRows of its files; `classes` (from `classes_from`) are those read."""
    _warn_settings_not_read(path, origin, config, FILE_LAYOUT_KEYS, "a folder of class folders")
    return read_class_folders(path, config.encoding, classes, classes_from, every_class, origin)


def file_class_names(tables: dict[str, SplitRows], config: DataConfig) -> list[str] | None:
    """The class names a Parquet train file's ClassLabel records, where data.label_names is unset; else None."""
    if config.label_columns:
        return None
    names = _recorded_names(tables["train"], config.label_column)
    if names is None:
        return None
    if config.label_names is not None:  # the user's names win
        for table in tables.values():
            warn_other_class_names(table, config.label_column, config.label_names, "data.label_names")
        return None
    logger.info(f"Classes from {tables['train'].source}'s ClassLabel column '{config.label_column}': {names}")
    for table in tables.values():
        warn_other_class_names(table, config.label_column, names, f"those of {tables['train'].source}")
    return names


def _recorded_names(table: SplitRows, column: str) -> list[str] | None:
    """The class names a file records for `column`, found as the column is."""
    recorded = table.class_names or {}
    try:
        (position,) = resolve_columns(list(recorded), [column], table.source, "data.label_column")
    except DataError:
        return None
    return recorded[list(recorded)[position]]


def warn_other_class_names(table: SplitRows, column: str, names: list[str], whose: str) -> None:
    """WARN about a file whose ClassLabel column names other classes than the run's."""
    recorded = _recorded_names(table, column)
    if recorded is not None and recorded != list(names):
        logger.warning(
            f"{table.source}, column '{column}': the file's ClassLabel names ({', '.join(recorded)}) are not {whose} ({', '.join(names)}); its ids are read as the latter's"
        )
