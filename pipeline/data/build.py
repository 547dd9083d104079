"""A split's raw rows -> the `text` + `label` + `row_id` dataset; rows without a text or label dropped or refused."""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any

import datasets

from pipeline.common.errors import DataError
from pipeline.config.schema import DataConfig
from pipeline.data.label_scheme import LabelScheme, MissingLabel, describe_missing, missing_label_rows
from pipeline.data.label_sets import INDICATOR_SETS_COLUMN, indicator_sets, label_sets
from pipeline.data.labels import label_ids
from pipeline.data.rows import SplitRows
from pipeline.data.splits import MULTI_LABEL_COLUMN, RemovedRow
from pipeline.data.text import ESCAPED_NEWLINE, INCOMPLETE_ROWS_HINT, TextSpec, is_missing, resolve_columns, segments_of

logger = logging.getLogger("pipeline.data.load")


def read_indicator_columns(tables: dict[str, SplitRows], config: DataConfig) -> tuple[dict[str, SplitRows], DataConfig]:
    """data.label_columns (0/1 per class) gathered into one list column, the returned config's label column."""
    if not config.label_columns:
        return tables, config
    missing = MissingLabel.of(config, None)
    with_sets = {}
    for split, table in tables.items():
        frame = table.frame.copy()
        frame[INDICATOR_SETS_COLUMN] = indicator_sets(table, config.label_columns, missing)
        with_sets[split] = dataclasses.replace(table, frame=frame)
    return with_sets, dataclasses.replace(
        config, label_column=INDICATOR_SETS_COLUMN, label_names=list(config.label_columns)
    )


def label_columns_of(config: DataConfig) -> list[str]:
    return list(config.label_columns) if config.label_columns else [config.label_column]


def require_columns(available: list[str], needed: list[str], source: str, config: DataConfig) -> None:
    text_keys = dict(TextSpec.from_data_config(config).named_columns())  # a text column and the setting naming it
    for column in needed:
        key = text_keys.get(column, "data.text_columns")
        if column in label_columns_of(config):
            key = "data.label_columns" if config.label_columns else "data.label_column"
        elif column == config.split_column:
            key = "data.split_column"
        resolve_columns(available, [column], source, key)


def to_dataset(table: SplitRows, config: DataConfig, scheme: LabelScheme) -> datasets.Dataset:
    """The `text` + `label` + `row_id` dataset of one split."""
    texts, ids = build_texts(table, TextSpec.from_data_config(config)), row_ids(table, config.id_column)
    if config.task == "multi_label":
        key, feature = MULTI_LABEL_COLUMN, datasets.List(datasets.Value("float32"), length=len(scheme.names))
        labels = label_sets(table, config.label_column, scheme, config.label_separator).tolist()
    else:
        key, feature = "label", datasets.ClassLabel(names=scheme.names)
        labels = label_ids(table, config.label_column, scheme)
    string = datasets.Value("string")
    features = datasets.Features({"text": string, key: feature, "row_id": string})
    return datasets.Dataset.from_dict({"text": texts, key: labels, "row_id": ids}, features=features)


def row_ids(table: SplitRows, id_column: str | None) -> list[str]:
    """The data's own ids (non-empty, unique but for rows repeated whole), else the row's line or record number."""
    if id_column is None:
        return [str(table.number(row)) for row in range(len(table.frame))]
    ids, first_row = [], {}
    for row, value in enumerate(table.column(id_column, "data.id_column")):
        text = "" if is_missing(value) else str(value).strip()
        if not text:
            raise DataError(f"{table.where(row)}, column '{id_column}' (data.id_column): the id is empty")
        # Rows that repeat whole are duplicates (data.deduplicate's), not two rows one id names.
        earlier = first_row.get(text)
        if earlier is not None and list(map(str, table.frame.iloc[row])) != list(map(str, table.frame.iloc[earlier])):
            raise DataError(
                f"{table.where(row)}, column '{id_column}' (data.id_column): id {text!r} repeats "
                f"{table.where(earlier)} with other values; ids must be unique (rows that repeat whole are "
                "duplicates, which data.deduplicate removes; with no column of unique ids, leave data.id_column unset)"
            )
        first_row.setdefault(text, row)
        ids.append(text)
    return ids


def build_texts(table: SplitRows, spec: TextSpec) -> list[str]:
    """Each row's text by text.TextSpec; empty texts are one error naming the first row and how many more."""
    texts = texts_of(table, spec)
    empty = [row for row, text in enumerate(texts) if not text]
    if empty:
        raise DataError(
            f"{table.where(empty[0])}: {spec.describe_empty()}{table.and_more(empty)}; fill or remove these rows, {INCOMPLETE_ROWS_HINT}"
        )
    _warn_if_numbers_only(texts, table, spec)
    _suggest_unescaping(texts, table, spec)
    return texts


# A literal backslash-n suggests data.unescape_newlines only when many texts hold one (a path or code may).
ESCAPED_NEWLINE_SHARE = 0.05
MIN_ESCAPED_NEWLINE_ROWS = 3


def _suggest_unescaping(texts: list[str], table: SplitRows, spec: TextSpec) -> None:
    """One line per file when data.unescape_newlines is off and many of its texts hold a literal backslash-n."""
    if spec.unescape_newlines:
        return
    escaped = sum(1 for text in texts if ESCAPED_NEWLINE in text)
    if escaped >= MIN_ESCAPED_NEWLINE_ROWS and escaped >= ESCAPED_NEWLINE_SHARE * len(texts):
        logger.warning(
            f"{table.source}: {escaped} of {len(texts)} texts hold a literal backslash-n (\\n), the line break of the Yelp and Amazon review CSV files; set data.unescape_newlines=true to read it as one"
        )


# Texts of digits and number punctuation only (an id, a price, a date as data.text_columns): warned about.
_NUMBER_ONLY = re.compile(r"[\d\s.,:/+\-]+")
NUMBER_ONLY_SHARE = 0.9
MIN_ROWS_FOR_NUMBER_WARNING = 10


def _warn_if_numbers_only(texts: list[str], table: SplitRows, spec: TextSpec) -> None:
    """Judged per side of a pair: numbers beside words are as suspect."""
    for side, (columns, key) in enumerate(spec.side_columns()):
        numeric = sum(1 for text in texts if _NUMBER_ONLY.fullmatch(segments_of(text)[side]))
        if len(texts) >= MIN_ROWS_FOR_NUMBER_WARNING and numeric >= NUMBER_ONLY_SHARE * len(texts):
            logger.warning(
                f"{table.source}: {numeric} of {len(texts)} texts are numbers only ({key}: {', '.join(columns)}): an id or a numeric column? The model learns from words"
            )


def texts_of(table: SplitRows, spec: TextSpec) -> list[str]:
    return [spec.text_of(parts) for parts in input_values(table, spec)]


def input_values(table: SplitRows, spec: TextSpec) -> list[tuple[Any, ...]]:
    return list(zip(*(table.column(column, key) for column, key in spec.named_columns())))


def drop_incomplete(
    table: SplitRows, split: str, config: DataConfig, missing: MissingLabel
) -> tuple[SplitRows, list[RemovedRow]]:
    """Rows without a text or a label: dropped with why (`incomplete_rows: drop`), else one error naming all."""
    spec = TextSpec.from_data_config(config)
    no_label = missing_label_rows(table, config, missing)  # first: a file lacking its columns is told its label's
    values = input_values(table, spec)
    no_text = {row: what for row, parts in enumerate(values) if (what := spec.what_is_empty(parts))}
    if config.incomplete_rows != "drop":
        _refuse_incomplete(table, config, spec, no_text, no_label)
        return table, []
    ids = row_ids(table, config.id_column)
    kept, dropped, removed = [], [], []
    for row, parts in enumerate(values):
        label = no_label.get(row)
        missing_parts = [no_text.get(row), None if label is None else _lacking_label(label[1])]
        missing_parts = [what for what in missing_parts if what]
        if missing_parts:
            dropped.append(row)
            reason = f"incomplete: no {' and no '.join(missing_parts)} (data.incomplete_rows: drop)"
            removed.append(RemovedRow(split, ids[row], reason, spec.partial_text(parts)))
        else:
            kept.append(row)
    if dropped:
        logger.warning(
            f"{table.source}: {len(removed)} of {len(values)} rows left out, without a text or a label (data.incomplete_rows: drop): {table.unit} {table.number(dropped[0])}{table.and_more(dropped)}; listed in removed_rows.csv"
        )
    if not kept:
        raise DataError(
            f"The {split} split is empty: every one of the {len(values)} rows of {table.source} ({table.origin}) lacks a text or a label; check {' and '.join(spec.keys())}, and data.label_column"
        )
    return table.subset(kept), removed


def _lacking_label(written: str) -> str:
    return f"label ({written!r} marks none)" if written else "label"


def _refuse_incomplete(
    table: SplitRows, config: DataConfig, spec: TextSpec, no_text: dict[int, str], no_label: dict[int, tuple[str, str]]
) -> None:
    """One error naming the rows without a text and those without a label."""
    problems = []
    if no_text:
        rows = list(no_text)
        problems.append(f"{table.where(rows[0])}: {spec.describe_empty()}{table.and_more(rows)}")
    if no_label:
        rows = list(no_label)
        column = no_label[rows[0]][0]
        written = [text for _, text in no_label.values()]
        setting = " (data.label_columns)" if config.label_columns else ""
        what = f"column '{column}'{setting}: {describe_missing(written, indicator=bool(config.label_columns))}"
        problems.append(f"{table.where(rows[0])}, {what}{table.and_more(rows)}")
    if problems:
        raise DataError(f"{'; '.join(problems)}; fill or remove these rows, {INCOMPLETE_ROWS_HINT}")
