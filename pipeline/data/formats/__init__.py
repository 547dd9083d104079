"""Each format's reader (READERS), consulted by tables.open_table: (lines, settings, ExitStack) -> Table."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from pipeline.data.formats.delimited import delimited_table
from pipeline.data.formats.fasttext import fasttext_table
from pipeline.data.formats.jsonl import json_table
from pipeline.data.formats.parquet import parquet_table
from pipeline.data.formats.table import ReadOptions, Table
from pipeline.data.formats.xlsx import workbook_table
from pipeline.data.lines import LineSource

Reader = Callable[[LineSource, ReadOptions, contextlib.ExitStack], Table]
# In the order messages list the formats (tables.FORMATS).
READERS: dict[str, Reader] = {
    "csv": lambda lines, options, _: delimited_table(lines, "csv", options),
    "tsv": lambda lines, options, _: delimited_table(lines, "tsv", options),
    "jsonl": lambda lines, options, _: json_table(lines, options),
    "parquet": lambda lines, options, _: parquet_table(lines, options),
    "fasttext": lambda lines, options, _: fasttext_table(lines, options),
    "xlsx": workbook_table,
}
