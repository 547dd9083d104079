"""The `data` section of the config: where the rows come from and how files are read, each setting with its docs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pipeline.config.reading import DEFAULT_ENCODING, FASTTEXT_LABEL_PREFIX, LABEL_COLUMN, TEXT_COLUMN


@dataclass
class DataConfig:
    source: Literal["hub", "files"] = field(
        default="hub",
        metadata={"help": "`hub` or `files`"},
    )
    hub_name: str = field(
        default="fancyzhx/ag_news",
        metadata={
            "help": "the Hub dataset (or a folder `save_to_disk` wrote; a single saved Dataset is train): its train, "
            "validation and test splits (what it lacks is carved from train); a ClassLabel's -1 is a missing "
            "label, and a split labelled -1 throughout (GLUE's test splits) is left out with a warning and "
            "carved instead"
        },
    )
    hub_config: str | None = field(
        default=None,
        metadata={"help": "the Hub dataset's configuration (subset), as `load_dataset(hub_name, hub_config)` takes it"},
    )
    hub_splits: dict[str, str] | None = field(
        default=None,
        metadata={
            "help": "which Hub split is train, validation or test where the dataset names them otherwise: "
            "`{validation: validation_matched, test: validation_mismatched}` for GLUE MNLI (on the command "
            "line `'data.hub_splits={validation: validation_matched}'`); unset, or for a split it leaves out, "
            "the split of that name, and for validation one named `valid`, `val` or `dev`. Splits left unused "
            "are named in an INFO line, a WARNING when validation or test is carved from train instead; a "
            "name the dataset lacks is an error listing its splits"
        },
    )
    hub_timeout_seconds: float = field(
        default=15.0,
        metadata={"help": "how long to wait for the Hub before failing (or falling back to the cache)"},
    )
    train_file: str | None = field(
        default=None,
        metadata={
            "help": "local CSV, TSV, JSON Lines, Parquet or fastText (optionally `.gz`), an Excel workbook (`.xlsx`, "
            'with the `excel` extra: "Excel workbooks" in "Your own data"), or a folder of class folders (one '
            "folder per class, one document per file) or of class files (one file per class, one text per "
            "line: [File formats](file-formats.md#a-folder-of-class-folders); a folder `save_to_disk` wrote "
            "is refused, naming `data.hub_name`, which reads it); a file that names no format "
            "(`train_text.txt`, TREC's `train_5500.label`) or has one column, without labels, is an error "
            "that says how to bring labels kept in another file into it (`paste train_labels.txt "
            "train_text.txt > train.tsv`, then `data.column_names=[label, text]`), and a validation or test "
            "file with the text columns but no label column (GLUE's `test.tsv`) one that points to "
            "`pipeline.predict`, which labels such files; an `.xls` (Excel 97-2003) or OpenDocument workbook "
            "is refused, whatever its name, with the advice to save the sheet as CSV UTF-8, and a bzip2, xz "
            "or zstd file (Kaggle's `train.ft.txt.bz2`) with the command that decompresses it; a `.zip` "
            "archive (not a workbook) that holds one file (macOS's `__MACOSX/` entries aside) is read as that "
            "file, its format by that file's name (`train.zip/train.csv, line 7` in messages), and one of "
            "several files or none is an error listing them (a Parquet file or a workbook inside is read "
            "unzipped); a CSV/TSV header cell left empty names its column as pandas does (`Unnamed: 2`, "
            "counted from 0), here and in `pipeline.predict`'s output, and rows holding values in such a "
            "column that no setting names get one WARNING naming them (a column that every row fills, as "
            "pandas' index, is none) (Kaggle's SMS `spam.csv` holds the end of some texts there, cut at an "
            "unquoted comma: add the columns to `data.text_columns`). A CSV/TSV row (or sheet row) that "
            "repeats the header row, every cell as written (`cat a.csv b.csv` leaves b.csv's header among the "
            "rows), is no data: left out with one WARNING per file naming its line and how many more, listed "
            "in `removed_rows.csv` and counted in `metrics.json` `data.repeated_headers` (in "
            "`pipeline.evaluate` too); a file without a header row (`data.column_names`) loses only a row "
            "that is exactly those names"
        },
    )
    validation_file: str | None = field(
        default=None,
        metadata={
            "help": "the validation file, read as `data.train_file` is; none: carved from train (`data.validation_fraction`)"
        },
    )
    test_file: str | None = field(
        default=None,
        metadata={
            "help": "the test file, read as `data.train_file` is; none: carved from train (`data.test_fraction`)"
        },
    )
    file_format: Literal["auto", "csv", "tsv", "jsonl", "parquet", "fasttext", "xlsx"] = field(
        default="auto",
        metadata={
            "help": "`csv`, `tsv`, `jsonl`, `parquet`, `fasttext` or `xlsx`; `auto`: from the file name (a name of no "
            "known ending is `fasttext` when its first 20 non-blank lines all start with the label prefix; an "
            "Excel workbook is one by its content, whatever its name)",
            "more": "A CSV/TSV file whose lines all start with `data.label_prefix` is refused: see [Your own "
            "data](your-data.md). A CSV file whose first line has no comma but several semicolon-separated "
            'fields (a spreadsheet\'s "CSV" where the comma is the decimal mark) is read with semicolons, and '
            "one whose first line has neither but several tab-separated fields (a TSV file named `.csv`; as "
            "many as `data.column_names`, when given) with tabs, each with an INFO line, here and in "
            "`pipeline.predict`",
        },
    )
    sheet: str | None = field(
        default=None,
        metadata={
            "help": "the worksheet of an Excel workbook to read, by its name (case ignored where no name matches exactly); none: the first",
            "more": "Every workbook of the run is read so; a workbook of several sheets says which it read in an INFO "
            "line. An unknown name is an error listing the sheets; given with a file that is not a workbook, "
            "a warning names it. A sheet read without the configured columns (or without rows), in a workbook "
            "of several, is an error naming the other sheets (`data.sheet=Data`), unless its first row looks "
            "like data (a number, a text), where the error says it has no header row. `pipeline.predict "
            "--sheet` is the same for its input (not taken from the run)",
        },
    )
    label_prefix: str = field(
        default=FASTTEXT_LABEL_PREFIX,
        metadata={
            "help": "what marks a label in a fastText file (fastText's `-label`): the words that start with it lead "
            "or end each line and are its labels (column `label`), the rest its text (column `text`); not "
            "empty, no whitespace",
            "more": "`pipeline.predict --label-prefix` is the same for its input (not taken from the run)",
        },
    )
    encoding: str = field(
        default=DEFAULT_ENCODING,
        metadata={
            "help": "the encoding of text files (`latin-1`, `cp1252`, `utf-16`, ...); a file whose byte-order mark says UTF-16 or UTF-32 is read as such",
            "more": 'Read as `utf-8`, a file whose byte-order mark says UTF-16 or UTF-32 (Excel\'s "Unicode text") is '
            "read in that encoding, with an INFO line, and with another encoding given one with a byte-order "
            "mark is an error naming the mark's. A byte that does not decode is an error naming the line, "
            "which suggests `cp1252` (Windows, Excel's \"CSV\" export) where the line's undecodable bytes are "
            "0x80-0x9F and `latin-1` otherwise. Read as `latin-1`, bytes 0x80-0x9F (cp1252's quotes, dashes "
            "and €, or part of a UTF-8 character) are control characters: a warning names the line and the "
            "likely encoding",
        },
    )
    quoting: Literal["auto", "csv", "none"] = field(
        default="auto",
        metadata={
            "help": "double quotes in CSV/TSV files: `csv` encloses a field in them (which may then hold delimiters, "
            "line breaks and doubled quotes); `none` reads them as text, for files that quote nothing (GLUE's "
            "`train.tsv`, the SMS Spam Collection), where a text may start with one; `auto`: `csv`, unless "
            "the file's start shows that it quotes nothing",
            "more": "`auto` reads as `none` a TSV file whose first 64 KiB (from a pipe, what has arrived) hold a "
            'field that goes on after its closing quote (`"Free" entry`). '
            "Every file of the run is read so (train, validation, test, `unlabeled_file`); `none` is pandas' "
            "`quoting=csv.QUOTE_NONE`. `auto` also reads as `none` a file read with a `data.delimiter` other "
            "than a comma or semicolon that shows such a field, and one whose quoted field takes in the tab "
            "and line break between two rows (a sentence opening a quotation that the next row's closes: each "
            "of its lines a whole row with quotes read as text, in a column whose values repeat holding one "
            "the rows before held, as a label), which no quoting writer writes (an INFO line names it). A "
            "properly quoted file is never read as unquoted; an unquoted one whose first such text lies "
            "further on stops there with an error naming this setting and the lines, and so does such a "
            "quoted field in a comma- or semicolon-separated file after 100 rows that quoted nothing (a "
            "review over several lines, its commas and all, is read as quoted). How each file was read is "
            "recorded in `metrics.json` (`data.quoting.read`, per split: `csv` or `none`; `pipeline.evaluate` "
            "records its file's as `test`) and stated in the model card's training data. `pipeline.predict "
            "--quoting` is the same for its input (not taken from the run: like the encoding, a property of "
            "the file; `auto` and `csv` stop with an error naming `--quoting` where `none` would keep a "
            "quoted file's quotes in its texts); its output quotes where needed, which `auto` reads back",
        },
    )
    json_field: str | None = field(
        default=None,
        metadata={
            "help": 'the key of a JSON file\'s one object whose value is the list of records (`{"version": ..., "data": [{...}, ...]}`: `data`); none: one record per line, or a JSON array',
            "more": 'SQuAD-style and many exported files are so, and the `datasets` library\'s `load_dataset("json", '
            "field=...)` reads them so; the records are numbered by their place in that list (`record 7`). "
            "Unset, a file that is one object (on one line or indented) is one record, and the error about "
            "its missing columns names the key holding a list of objects (`data.json_field=data`). Given with "
            "another format, a warning names it. `pipeline.predict --json-field` is the same for its input "
            "(not taken from the run)",
        },
    )
    delimiter: str | None = field(
        default=None,
        metadata={
            "help": "the one character between the fields of a CSV/TSV file when not its format's (a comma, or a "
            "semicolon on a first line that shows it; a tab), e.g. `@` for the Financial PhraseBank's "
            "`sentence@label` lines; with it, `auto` quoting also reads a field that goes on after its closing "
            "quote as unquoted text",
            "more": "Unset, also the character that Excel's first line `sep=;` names (a line that is no row); a CSV "
            "file read as one column whose later lines split into several stops with an error naming this "
            "setting. The PhraseBank's `Sentences_AllAgree.txt` also needs `file_format: csv`, `encoding: "
            'latin-1`, `column_names: [sentence, label]`. Quote it in a YAML file (`"@"`: a bare `@` is not '
            "YAML, and a bare `|` or `>` starts an empty block of text; on the command line "
            "`data.delimiter=|` is the character); a double quote or a line break is refused. "
            "`pipeline.predict --delimiter` is the same for its input (not taken from the run); its output is "
            "a plain CSV/TSV",
        },
    )
    column_names: list[str] | None = field(
        default=None,
        metadata={
            "help": "names for the columns of a file without a header row (CSV/TSV files and sheets); a first row "
            "equal to them is still read as a header, and one holding some of them otherwise is an error",
            "more": "That row (a header of its own, or theirs in another order) is never read as a data row",
        },
    )
    text_columns: list[str] = field(
        default_factory=lambda: [TEXT_COLUMN],
        metadata={
            "help": "columns joined into the text (empty parts skipped; a JSON/Parquet list is its items joined the same way)"
        },
    )
    text_separator: str = field(
        default=" ",
        metadata={"help": "what joins the text columns"},
    )
    text_pair_columns: list[str] | None = field(
        default=None,
        metadata={
            "help": "columns joined into the second text of a sentence-pair task (NLI, paraphrase, question and passage), as `text_columns` are",
            "more": "The model reads `[CLS] first [SEP] second [SEP]` with segment ids 0 and 1 (see [Sentence pairs](sentence-pairs.md)). Needs `tokenizer.truncation: head` and `long_text: truncate`",
        },
    )
    unescape_newlines: bool = field(
        default=False,
        metadata={
            "help": "turn backslash-n inside text fields into newlines (the Yelp and Amazon review CSV files write a "
            "line break so); unset, a file of which at least 3 texts and 5% hold a literal backslash-n gets a "
            "WARNING suggesting it (AG News's few are mostly a backslash before a word: `social\\network`)"
        },
    )
    label_column: str = field(
        default=LABEL_COLUMN,
        metadata={
            "help": "the column of the labels: class names, or integer ids counting from the base (unset: 0 "
            "with names, but a train file of ids none of which is 0 must say its base, 1 or 0: counting "
            "from 1 without its last class, "
            "DBpedia's file would read one class off; inferred ids count from 0 when train has a 0, else from 1, so "
            "labels written 1..K make K classes). Unset names: all-integer train labels are ids, anything else names "
            "(sorted); a column is read one way only, ids never index inferred names, and over 1,000 inferred classes "
            "(or sparse ids like one stray `2004`), integer labels that skip ids (sentiment140's `0` and `4`: "
            "`label_names: ['0', '4']` makes them two classes), negative ones (polarity `-1`, `0`, `1`: "
            "`label_index_base: -1`), a column where most rows' label is their own (a text or id column) or more than "
            "20 distinct fractional numbers (a regression target: `0.13`, `0.57`, ...) is an error until "
            "`label_names` lists them. A Parquet file written by `datasets` (`Dataset.to_parquet`, the Hub's "
            "`train-00000-of-00001.parquet`) names the classes of its ClassLabel column (or list of ClassLabel) as a "
            "Hub dataset does (ids from 0, `-1` no label), unless `label_names` or `label_names_file` is set. A label "
            "matches its class in any letter case (`POSITIVE`, ` Positive` for `positive`; a boolean written as "
            "JSON's `true`, pandas' `True` or a spreadsheet's `TRUE`) and spacing (`Toys>Games` or `Toys  >  Games` "
            "for `Toys > Games`: runs of spaces are one, and spaces beside punctuation are none) unless two classes "
            "differ only so, the class keeping the name as listed: so listing the classes in `label_names` reads a "
            "column's messy spellings as one class each; classes found in train that differ only so (or in number "
            "format, `1` and `1.0` among names) stay classes as written, named in a WARNING that points to "
            '`label_names` (`label_names: ["false", "true"]`, quoted: a bare `false` is a YAML boolean). Where a '
            'class name is a number (`label_names: ["1.0", "2.0", "4.5"]`, or such names found in train), labels are '
            "matched by value and never read as ids (`label_index_base` then unused): `4`, `+4` or `4.00` is the "
            "class `4.0`, not the fifth class counting from 0, and a number that names no class (`0`) is an error "
            "naming the file, line, column and the value. Where every class name is a boolean (`True`/`False`, "
            "`yes`/`no`, `1`/`0`, any case), labels are matched by meaning as `data.label_columns` cells are, never "
            'as ids: `1`, `1.0`, `true` and `yes` are the class `True` whatever its place in `label_names` (`["True", '
            '"False"]` read 1 as `False` before), so a column mixing `true` and `1` reads with `label_names: '
            '["False", "True"]`'
        },
    )
    label_names: list[str] | None = field(
        default=None,
        metadata={
            "help": "Class names in id order. Unset: taken from the Hub's ClassLabel, or the sorted distinct string labels."
        },
    )
    label_names_file: str | None = field(
        default=None,
        metadata={
            "help": "a text file of the class names, one per line in id order, read as `data.label_names` (the "
            "`classes.txt` beside ag_news_csv's, DBpedia's and Yelp's CSV files, whose ids count from 1: "
            "`data.label_index_base: 1`); an empty line among them or a repeated name is an error naming the "
            "line; not with `label_names` or `label_columns`. A file whose every non-blank line is an id, a "
            "tab and a name (tweet_eval's `mapping.txt`: `0\\tanger`) maps ids to names, in any line order; "
            "its ids run from `data.label_index_base` (unset: 0), where the labels' ids start, without a gap "
            "or a repeat, else an error names the file and line. Names separated from a number by spaces only "
            "are names (`1 star`, `2 stars`)"
        },
    )
    label_index_base: int | None = field(
        default=None,
        metadata={
            "help": "Integer labels count from this number (ag_news_csv's class index runs 1-4). Unset: 0 with "
            "label_names (a train file of ids without a 0 must set it: labels.refuse_unsaid_id_base); integer "
            "labels inferred from train count from 0 when train has a 0, else from 1 (labels written 1..K)."
        },
    )
    task: Literal["single_label", "multi_label"] = field(
        default="single_label",
        metadata={
            "help": "`multi_label`: a set of classes per row (a list, or a string joined by the separator); see [Scores you can act on](scores-and-thresholds.md)"
        },
    )
    label_separator: str = field(
        default="|",
        metadata={
            "help": "Joins a multi-label row's classes in CSV/TSV labels and in predictions, so no class name may contain it."
        },
    )
    label_columns: list[str] | None = field(
        default=None,
        metadata={
            "help": "multi-label files with one 0/1 column per class: those columns, which are then the classes in this order (`data.label_column` and `data.label_names` unused)"
        },
    )
    missing_label_values: list[str] = field(
        default_factory=lambda: ["NaN", "N/A", "#N/A", "null", "<NA>"],
        metadata={
            "help": 'label cells (stripped, any case) that mean "no label", as an empty cell does: the row is '
            "incomplete (`data.incomplete_rows`); multi-label, one inside a set makes the row incomplete. The "
            'list replaces the default: `[NaN, N/A, "-"]` adds SNLI\'s `-`. An empty value, or a class of '
            "`data.label_names`, is an error naming the key. `-1` is no label wherever labels are ids of "
            "named classes, whatever this says (see [Rows without a "
            "label](your-data.md#rows-without-a-label))"
        },
    )
    max_train_samples: int | None = field(
        default=None,
        metadata={"help": "a seeded stratified subset of train of at most this many rows"},
    )
    max_eval_samples: int | None = field(
        default=None,
        metadata={"help": "seeded stratified subsets of validation and test of at most this many rows"},
    )
    test_fraction: float = field(
        default=0.1,
        metadata={
            "help": "the share of the train file carved out (stratified by label, seeded, every class on both "
            "sides) as test when there is no such file or Hub split; a class with a single row is an error "
            "naming it (the first ten such classes)"
        },
    )
    validation_fraction: float = field(
        default=0.1,
        metadata={"help": "the share of the train file carved out as validation, as `data.test_fraction` is"},
    )
    split_column: str | None = field(
        default=None,
        metadata={
            "help": "a column of the train file (or of a Hub dataset with only a train split) that says each row's "
            "split, as amazon-massive-intent's `partition` and many Kaggle CSVs' `split` do: `train`; "
            "`validation`, `valid`, `val` or `dev`; `test` (any case, surrounding spaces ignored). The rows "
            "are divided first, keeping their line numbers, and then read as separate files are (classes from "
            "the train rows only); a split the column never names is carved from train as above. An empty "
            "value, one that names no split (MASSIVE's `unsup`) and a file without train rows are errors "
            "naming the file, line and column; not with `data.validation_file` or `data.test_file`, nor the "
            "label, text, indicator or id column, nor a Hub dataset that has validation or test splits. "
            "Recorded in `metrics.json` `data.split_column` and the model card; `pipeline.evaluate` scores "
            "its whole file, whatever that column says"
        },
    )
    id_column: str | None = field(
        default=None,
        metadata={
            "help": "a column of unique row ids, carried into `splits.csv`, `test_predictions.csv` and every report "
            "table that lists rows (a row repeated whole, its id too, is a duplicate for `data.deduplicate`; "
            "an id on two different rows is an error); unset: the row's line number"
        },
    )
    deduplicate: Literal["none", "within", "across"] = field(
        default="across",
        metadata={
            "help": "exact duplicate texts (after whitespace normalisation) are always counted and texts with two "
            "labels reported; `within` drops repeats inside a split, `across` also drops validation/test "
            "texts found in train (leakage), `none` only counts. Every removed row is listed in "
            "`removed_rows.csv`"
        },
    )
    incomplete_rows: Literal["error", "drop"] = field(
        default="error",
        metadata={
            "help": "a row without a text (every text column empty) or, single-label, without a label (an empty cell, "
            "a mark of `data.missing_label_values`, `-1` where labels are ids of named classes; or such a "
            "`data.label_columns` cell; multi-label, a mark inside a set): `error` names them all in one "
            "message (the first rows without a text and the first without a label, each with how many more); "
            "`drop` leaves them out of their split with a warning, lists each in `removed_rows.csv` (why: no "
            "text, no label) and counts them in `metrics.json` `data.incomplete_rows`. A multi-label row "
            "without labels is negative for every class, not incomplete"
        },
    )
    cache_dir: str = field(
        default="~/.cache/pipeline",
        metadata={"help": "Hub downloads, tokenized splits, teacher logits"},
    )
    unlabeled_file: str | None = field(
        default=None,
        metadata={
            "help": "texts without labels (the train file's text columns) added to the transfer set; an empty text is an error naming the row"
        },
    )
