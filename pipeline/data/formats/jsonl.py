"""JSON Lines files as a Table (or one JSON array of objects, or one object whose data.json_field holds them)."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from typing import Any

from pipeline.common.errors import DataError
from pipeline.data.formats.table import ReadOptions, Table, batched
from pipeline.data.lines import LineSource
from pipeline.data.sniff import records_field_hint, refuse_table_as_one_object


def json_table(lines: LineSource, options: ReadOptions) -> Table:
    """JSON Lines, a JSON array of objects, or the list under options.json_field; header: the first chunk's keys."""
    chunk_size, field, field_option = options.chunk_size, options.json_field, options.json_field_option
    objects = _field_records(lines, field, field_option) if field is not None else _json_objects(lines)
    first_batch = list(itertools.islice(objects, chunk_size))
    if not first_batch:
        raise DataError(
            f"{lines.name}: the list {field!r} ({field_option}) is empty" if field else f"{lines.name} is empty"
        )
    hint = ""
    if field is None:
        refuse_table_as_one_object(first_batch[0][1], lines.name, field_option)
        # One record in the whole file: the file is one object.
        if len(first_batch) == 1 and chunk_size != 1:
            hint = records_field_hint(first_batch[0][1], field_option)
    unit = "record" if first_batch[0][0] < 0 else "line"  # a JSON array's objects are numbered as records
    header = list(dict.fromkeys(key for _, record in first_batch for key in record))
    rows = _json_rows(itertools.chain(first_batch, objects), header, lines.name, unit)
    return Table(lines.name, "jsonl", header, unit, batched(rows, chunk_size), lines, missing_column_hint=hint)


def _json_objects(lines: LineSource) -> Iterator[tuple[int, dict]]:
    """(line number, object); for a JSON array, or one object written over several lines, (-record number, object)."""
    source = iter(lines)
    first = True
    for text in source:
        if not text.strip():
            continue
        if text.lstrip().startswith("["):
            yield from _json_records(_whole_json(text + "".join(source), lines.name), lines.name)
            return
        number = lines.line_number
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            # One object indented over several lines (json.dump(..., indent=2)): read whole, as an array is.
            whole = None
            if first and text.lstrip().startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    whole = json.loads(text + "".join(source))
            if isinstance(whole, dict):
                yield -1, whole
                return
            raise DataError(
                f"{lines.name}, line {number}: not valid JSON ({error.msg}, column {error.colno})"
            ) from None
        if not isinstance(record, dict):
            raise DataError(
                f"{lines.name}, line {number}: expected a JSON object with named fields, got {type(record).__name__}"
            )
        first = False
        yield number, record


def _whole_json(content: str, name: str, setting: str = "") -> Any:
    """A whole file's one JSON value; an error names the line. `setting`: why the file must be one value."""
    try:
        return json.loads(content)
    except json.JSONDecodeError as error:
        raise DataError(f"{name}, line {error.lineno}: not valid JSON ({error.msg}){setting}") from None


def _json_records(records: Any, name: str) -> Iterator[tuple[int, dict]]:
    """The objects of a list of records, numbered (negated) by their position in it."""
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise DataError(f"{name}, record {index + 1}: expected a JSON object with named fields")
        yield -(index + 1), record


def _field_records(lines: LineSource, field: str, option: str) -> Iterator[tuple[int, dict]]:
    """The records of a file that is one JSON object whose key `field` (the setting `option`) holds their list."""
    reads = f"; {option} reads a file that is one JSON object holding a list of records"
    document = _whole_json("".join(lines), lines.name, f"{reads} (unset it for JSON Lines)")
    if not isinstance(document, dict):
        raise DataError(f"{lines.name}: the file is a JSON {_json_kind(document)}, not an object{reads}")
    if field not in document:
        keys = ", ".join(repr(key) for key in list(document)[:10])
        raise DataError(f"{lines.name}: no key {field!r} ({option}); the object's keys: {keys or 'none'}")
    records = document[field]
    if not isinstance(records, list):
        raise DataError(f"{lines.name}: {field!r} ({option}) holds a JSON {_json_kind(records)}, not a list of records")
    yield from _json_records(records, lines.name)


def _json_kind(value: Any) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return kinds.get(type(value), "null")


def _json_rows(
    objects: Iterator[tuple[int, dict]], header: list[str], name: str, unit: str
) -> Iterator[tuple[int, list]]:
    known = set(header)
    for number, record in objects:
        number = -number if number < 0 else number
        extra = [key for key in record if key not in known]
        if extra:
            raise DataError(
                f"{name}, {unit} {number}: key {extra[0]!r} does not appear in the first rows read; give every record the same keys (or read more rows per chunk)"
            )
        yield number, [record.get(key) for key in header]
