"""The defaults that data settings and the readers (pipeline.data) share, and the rules that say a setting cannot
work: here, so that a default is written once and the config layer needs nothing from the layers above it.
"""

from __future__ import annotations

# What marks a label in a fastText file (`__label__sports Some text`): fastText's own default, which its `-label` option
# changes; data.label_prefix and pipeline.predict's --label-prefix default to it.
FASTTEXT_LABEL_PREFIX = "__label__"
STANDARD_INPUT = "-"  # a file name that reads standard input
# The encoding of text files unless said otherwise (data.encoding, pipeline.predict's --encoding): a byte-order mark
# of UTF-16 or UTF-32 overrides it (check_wide_encoding). auto: UTF-8, and Windows-1252 for a file that is not UTF-8
# and holds no UTF-8 character (pipeline.data.decoding).
DEFAULT_ENCODING = "auto"
# The columns of data that names none of its own (fastText lines, a folder of class folders' files): its texts and its
# labels, the defaults of data.text_columns and data.label_column, so that such data is read by the defaults alone.
TEXT_COLUMN, LABEL_COLUMN = "text", "label"
# A sentence pair (data.text_pair_columns: NLI's premise and hypothesis, a question and a passage) travels through
# stage 1, the caches and the written files as one text, its two segments joined by this mark; only encoding
# (pipeline.text.windows) parts them again, into BERT's [CLS] A [SEP] B [SEP] with segment ids 0 and 1. One text per row
# keeps deduplication, splits, caches and outputs the same code for pairs. The mark is the printable "symbol for
# record separator", so a written pair reads "question␞passage"; a cell's own ␞ is read as a space, so only the text
# rule makes pairs.
PAIR_MARK = "\u241e"


def normalise_name(name: str) -> str:
    """Header names match ignoring case and surrounding spaces ("Title " is "title")."""
    return str(name).strip().casefold()


def delimiter_problem(delimiter: str) -> str | None:
    """Why a given field delimiter (data.delimiter, pipeline.predict's --delimiter) cannot separate fields, or None:
    it must be one character that is not a double quote (it opens quoted fields) or a line break (it ends rows)."""
    if not delimiter:
        return 'must be one character, got none (in a YAML file quote a | or >: "|"; bare, it starts a block of text)'
    if len(delimiter) != 1:
        return f"must be one character, got {delimiter!r} (a tab: \"\\t\" in YAML, $'\\t' in a shell)"
    if delimiter in '"\r\n':
        return f"cannot be {delimiter!r}: a double quote encloses fields and a line break ends rows"
    return None


def label_prefix_problem(prefix: str) -> str | None:
    """Why a given fastText label prefix (data.label_prefix, pipeline.predict's --label-prefix) cannot mark labels,
    or None: fastText splits a line into words at whitespace, so a prefix must be a non-empty run of non-space
    characters."""
    if not prefix:
        return f"must not be empty (fastText's is {FASTTEXT_LABEL_PREFIX})"
    if any(character.isspace() for character in prefix):
        return f"cannot hold whitespace, which separates a line's words, got {prefix!r}"
    return None


# The rule a data setting's value obeys, by its name: checked in the config (checks.py) and, as their argparse type, in
# the options derived from the setting (options.py).
VALUE_RULES = {"delimiter": delimiter_problem, "label_prefix": label_prefix_problem}
