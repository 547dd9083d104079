"""Parquet files as a Table, with the class names that `datasets` records in their schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pipeline.common.errors import DataError, one_line
from pipeline.data.formats.table import ReadOptions, Table, batched
from pipeline.data.lines import STDIN_NAME, LineSource


def parquet_table(lines: LineSource, options: ReadOptions) -> Table:
    import pyarrow.parquet as pq

    path = lines.name
    if path == STDIN_NAME or lines.compressed:
        raise DataError(f"{path}: Parquet is read from an uncompressed file, not a stream or .gz")
    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises several unrelated types for a damaged file
        raise DataError(f"{path}: not a readable Parquet file ({type(error).__name__}: {one_line(error)})") from None
    header, metadata = [str(name) for name in parquet.schema_arrow.names], parquet.schema_arrow.metadata
    chunks = batched(_parquet_rows(parquet, path, options.chunk_size), options.chunk_size)
    return Table(path, "parquet", header, "record", chunks, class_names=class_label_names(metadata))


def class_label_names(metadata: dict[bytes, bytes] | None) -> dict[str, list[str]] | None:
    """Each ClassLabel column's names from `datasets`' schema metadata (only ids are stored), or None."""
    try:
        features = json.loads((metadata or {}).get(b"huggingface", b"{}"))["info"]["features"]
    except (ValueError, KeyError, TypeError):
        return None
    names = {}
    for column, feature in features.items() if isinstance(features, dict) else ():
        if isinstance(feature, list) and len(feature) == 1:  # an older writer's list of one feature
            feature = feature[0]
        elif isinstance(feature, dict) and isinstance(feature.get("feature"), dict):  # List / Sequence of it
            feature = feature["feature"]
        if isinstance(feature, dict) and feature.get("_type") == "ClassLabel" and feature.get("names"):
            names[str(column)] = [str(name) for name in feature["names"]]
    return names or None


def _parquet_rows(parquet: Any, path: str, chunk_size: int | None) -> Iterator[tuple[int, list]]:
    number = 0
    try:
        for batch in parquet.iter_batches(batch_size=chunk_size or 65_536):
            for record in zip(*(column.to_pylist() for column in batch.columns)):
                number += 1
                yield number, list(record)
    except OSError as error:
        raise DataError(f"{path}: not a readable Parquet file ({one_line(error)})") from None
