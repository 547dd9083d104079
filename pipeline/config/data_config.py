"""The `data` section of the config: where the rows come from and how files are read, each setting with its docs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.config.reading import DEFAULT_ENCODING, FASTTEXT_LABEL_PREFIX, LABEL_COLUMN, TEXT_COLUMN
from pipeline.config.values import setting

YOUR_DATA = "your-data.md"
FORMATS = "file-formats.md"


def _see(title: str, page: str, anchor: str = "", word: str = "see") -> str:
    """A link to the topic page that holds a setting's rules (`word="See"` opens a "more" text)."""
    return f"{word} [{title}]({page}{'#' + anchor if anchor else ''})"


@dataclass
class DataConfig:
    source: Literal["hub", "files"] = setting("hub", "`hub` or `files`")
    hub_name: str = setting(
        "fancyzhx/ag_news", "the Hub dataset, or a folder `save_to_disk` wrote; splits it lacks are carved from train"
    )
    hub_config: str | None = setting(None, "the Hub dataset's configuration (subset)")
    hub_splits: dict[str, str] | None = setting(
        None,
        "which Hub split is train, validation or test where the dataset names them otherwise "
        "(`{validation: validation_matched}` for GLUE MNLI); unset: the split of that name (validation: "
        "also `valid`, `val` or `dev`); a name the dataset lacks is an error listing its splits",
    )
    hub_timeout_seconds: float = setting(
        15.0, "how long to wait for the Hub before failing (or falling back to the cache)"
    )
    train_file: str | None = setting(
        None,
        f"a local CSV, TSV, JSON Lines, Parquet, fastText or Excel file (optionally `.gz` or a one-file `.zip`), or a folder of class folders or class files; {_see('File formats', FORMATS)}",
    )
    validation_file: str | None = setting(
        None, "read as `data.train_file` is; none: carved from train (`data.validation_fraction`)"
    )
    test_file: str | None = setting(
        None, "read as `data.train_file` is; none: carved from train (`data.test_fraction`)"
    )
    file_format: Literal["auto", "csv", "tsv", "jsonl", "parquet", "fasttext", "xlsx"] = setting(
        "auto",
        "`csv`, `tsv`, `jsonl`, `parquet`, `fasttext` or `xlsx`; `auto`: from the file's name and content",
        more=_see("Which format a file is", FORMATS, "which-format-a-file-is", word="See"),
    )
    sheet: str | None = setting(
        None,
        "the worksheet of an Excel workbook to read, by its name; none: the first",
        more=_see("Excel workbooks", FORMATS, "excel-workbooks", word="See"),
    )
    label_prefix: str = setting(
        FASTTEXT_LABEL_PREFIX,
        "what marks a label in a fastText file (fastText's `-label`); not empty, no whitespace",
        more=_see("fastText files", FORMATS, "fasttext-files", word="See"),
    )
    encoding: str = setting(
        DEFAULT_ENCODING,
        "the encoding of text files: `auto` (UTF-8, and Windows-1252 for a file that is not UTF-8 and holds no UTF-8 character), or one for every file (`utf-8`, `cp1252`, `utf-16`, ...); a byte-order mark for UTF-16 or UTF-32 is followed",
        more=_see("Encodings", FORMATS, "encodings", word="See"),
    )
    decode_errors: Literal["strict", "replace"] = setting(
        "strict",
        "bytes that are not text in the file's encoding: `strict` stops with an error naming the line; `replace` reads them as U+FFFD and names the lines in a warning",
        more=_see("Encodings", FORMATS, "encodings", word="See"),
    )
    quoting: Literal["auto", "csv", "none"] = setting(
        "auto",
        "double quotes in CSV/TSV files: `csv` encloses fields in them, `none` reads them as text (files that quote nothing, as GLUE's `train.tsv`); `auto`: `csv` unless the file shows it quotes nothing",
        more=_see("Quotes", FORMATS, "quotes", word="See"),
    )
    json_field: str | None = setting(
        None,
        'the key of a JSON file\'s one object whose value is the list of records (`{"version": ..., "data": [{...}, ...]}`: `data`); none: one record per line, or a JSON array',
        more=_see("JSON and JSON Lines", FORMATS, "json-and-json-lines", word="See"),
    )
    delimiter: str | None = setting(
        None,
        "the one character between the fields of a CSV/TSV file when not its format's (comma, or semicolon where the first line shows it; tab), e.g. `@` for the Financial PhraseBank",
        more=_see("Delimiters", FORMATS, "delimiters", word="See"),
    )
    column_names: list[str] | None = setting(
        None,
        "names for the columns of a file without a header row (CSV/TSV files and sheets)",
        more=_see("Headers", FORMATS, "headers", word="See"),
    )
    text_columns: list[str] = setting(
        [TEXT_COLUMN], "columns joined into the text (empty parts skipped; a list cell's items too)"
    )
    text_separator: str = setting(" ", "what joins the text columns")
    text_pair_columns: list[str] | None = setting(
        None,
        "columns joined into the second text of a sentence-pair task (NLI, paraphrase, question and passage), as `text_columns` are",
        more="Needs `tokenizer.truncation: head` and `long_text: truncate`; see [Sentence pairs](sentence-pairs.md)",
    )
    unescape_newlines: bool = setting(
        False,
        "turn backslash-n inside text fields into newlines (the Yelp and Amazon review CSV files); unset, a file with many literal backslash-n gets a WARNING suggesting it",
    )
    label_column: str = setting(
        LABEL_COLUMN,
        f"the column of the labels: class names, or integer ids counting from `data.label_index_base`; {_see('Labels', YOUR_DATA, 'labels')}",
    )
    label_names: list[str] | None = setting(
        None, "class names in id order; unset: the Hub's ClassLabel names, or train's sorted labels"
    )
    label_names_file: str | None = setting(
        None,
        f"a text file of the class names, one per line in id order (or `id<tab>name` lines), read as `data.label_names`; {_see('Class names from a file', YOUR_DATA, 'class-names-from-a-file')}",
    )
    label_index_base: int | None = setting(
        None,
        "Integer labels count from this number (ag_news_csv's class index runs 1-4). Unset: 0 with label_names; ids inferred from train count from 0 when train has a 0, else from 1.",
    )
    task: Literal["single_label", "multi_label"] = setting(
        "single_label", "`multi_label`: a set of classes per row; see [Multi-label data](your-data.md#multi-label-data)"
    )
    label_separator: str = setting("|", "joins a multi-label row's classes in CSV/TSV labels and in predictions")
    label_columns: list[str] | None = setting(
        None, "multi-label: one 0/1 column per class, which are the classes, in this order"
    )
    missing_label_values: list[str] = setting(
        ["NaN", "N/A", "#N/A", "null", "<NA>"],
        'label cells (any case) that mean "no label", as an empty cell does; the list replaces the '
        f"default; {_see('Rows without a label', YOUR_DATA, 'rows-without-a-label')}",
    )
    max_train_samples: int | None = setting(None, "a seeded stratified subset of train of at most this many rows")
    max_eval_samples: int | None = setting(
        None, "seeded stratified subsets of validation and test of at most this many rows"
    )
    test_fraction: float = setting(
        0.1,
        f"the share of the train file carved out (stratified, seeded) as test when there is no such file or Hub split; {_see('Carved out of train', YOUR_DATA, 'carved-out-of-train')}",
    )
    validation_fraction: float = setting(
        0.1, "the share of the train file carved out as validation, as `data.test_fraction` is"
    )
    split_column: str | None = setting(
        None,
        f"a column of the train file that says each row's split (`train`, `validation`, `test`); {_see('One file with a split column', YOUR_DATA, 'one-file-with-a-split-column')}",
    )
    id_column: str | None = setting(
        None,
        "a column of unique row ids, carried into `splits.csv`, `test_predictions.csv` and the reports; unset: the row's line number",
    )
    deduplicate: Literal["none", "within", "across"] = setting(
        "across",
        f"`within` drops repeated texts inside a split, `across` also validation/test texts found in train, `none` only counts them; {_see('Duplicates', YOUR_DATA, 'duplicates')}",
    )
    incomplete_rows: Literal["error", "drop"] = setting(
        "error",
        f"a row without a text or a label: `error` names them, `drop` leaves them out with a warning; {_see('Rows without a label', YOUR_DATA, 'rows-without-a-label')}",
    )
    cache_dir: str = setting("~/.cache/pipeline", "Hub downloads, tokenized splits, teacher logits")
    unlabeled_file: str | None = setting(
        None, "texts without labels (by the train file's text columns) added to the transfer set"
    )
