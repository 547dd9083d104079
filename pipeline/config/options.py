"""Command-line options derived from the data settings, as `HfArgumentParser` derives a CLI from dataclasses.

    add_file_options(parser.add_argument, notes=PREDICT_NOTES, unset=("text_columns", "file_format"))
    settings = file_settings(args)   # {"file_format": "csv", "encoding": "utf-8", ...}

`pipeline.predict` describes its input by the settings that describe a run's data files (FILE_SETTINGS).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pipeline.config.data_config import DataConfig
from pipeline.config.load import parse_override
from pipeline.config.reading import VALUE_RULES
from pipeline.config.values import ConfigError, default_of

# The data settings that describe one file's layout and text, in the order a command lists them.
FILE_SETTINGS = (
    "text_columns",
    "text_pair_columns",
    "text_separator",
    "column_names",
    "file_format",
    "encoding",
    "decode_errors",
    "quoting",
    "delimiter",
    "label_prefix",
    "sheet",
    "json_field",
)
# Options whose flag is not the setting's name.
OPTION_NAMES = {"file_format": "format"}
# Data settings the trained model decides, not the file: its task and its classes.
MODEL_DATA_KEYS = ("data.task", "data.label_names", "data.label_names_file")

_FIELDS = {item.name: item for item in dataclasses.fields(DataConfig)}
_HINTS = typing.get_type_hints(DataConfig)
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


def option_name(setting: str) -> str:
    """The dest of a setting's option: `file_format` -> `format`, `column_names` -> `column_names`."""
    return OPTION_NAMES.get(setting, setting)


def flag(setting: str) -> str:
    """The flag of a setting's option: `column_names` -> `--column-names`."""
    return "--" + option_name(setting).replace("_", "-")


def plain_help(setting: str) -> str:
    """A setting's help as a terminal shows it: no Markdown code marks or link targets, argparse's % escaped."""
    text = _LINK.sub(r"\1", _FIELDS[setting].metadata["help"]).replace("`", "")
    return text.replace("%", "%%")


def add_file_options(add: Callable[..., Any], notes: Mapping[str, str], unset: Sequence[str] = ()) -> None:
    """Add an option per FILE_SETTINGS field through `add` (a parser's or group's add_argument). `notes`: what the
    command adds to a setting's help (its own default, where its value comes from); `unset`: the settings whose
    option defaults to None, meaning the command decides (the model's columns, the format by the file's name)."""
    for setting in FILE_SETTINGS:
        default = None if setting in unset else default_of(_FIELDS[setting])
        options: dict[str, Any] = {"dest": option_name(setting), "default": default}
        choices = typing.get_args(_HINTS[setting]) if typing.get_origin(_HINTS[setting]) is Literal else ()
        if choices:  # None stands for `auto` where the command decides
            options["choices"] = tuple(choice for choice in choices if default is not None or choice != "auto")
        kind = _argument_type(setting)
        if kind is not None:
            options["type"] = kind
        note = notes.get(setting)
        options["help"] = plain_help(setting) + (f" ({note})" if note else "")
        add(flag(setting), **options)


def file_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed options back as settings, by DataConfig field name: {"file_format": ..., "encoding": ...}."""
    return {setting: getattr(args, option_name(setting)) for setting in FILE_SETTINGS}


def check_reading_overrides(overrides: Sequence[str]) -> None:
    """`data.*` overrides only, and none that the trained model decides (MODEL_DATA_KEYS): how a file is read."""
    for override in overrides:
        path, _ = parse_override(override)
        key = ".".join(path)
        if path[0] != "data":
            raise ConfigError(f"{override}: only data.* settings apply to evaluation (how the file is read)")
        if key in MODEL_DATA_KEYS:
            raise ConfigError(f"{key}: the trained model decides it (its task and classes); it cannot be overridden")


def _argument_type(setting: str) -> Callable[[str], Any] | None:
    """The argparse type of a setting's option: a list of names is comma-separated; a rule checks its value."""
    tp = _HINTS[setting]  # list[str], or list[str] | None
    if list in (typing.get_origin(tp), *(typing.get_origin(member) for member in typing.get_args(tp))):
        return column_list
    rule = VALUE_RULES.get(setting)
    return None if rule is None else _checked_by(rule)


def _checked_by(rule: Callable[[str], str | None]) -> Callable[[str], str]:
    def check(text: str) -> str:
        problem = rule(text)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return text

    return check


def column_list(text: str) -> list[str]:
    """argparse type for comma-separated column names."""
    columns = [part.strip() for part in text.split(",") if part.strip()]
    if not columns:
        raise argparse.ArgumentTypeError("name at least one column")
    return columns


def positive_int(text: str, least: int = 1) -> int:
    """argparse type for counts (batch, chunk, rows) of pipeline.predict and pipeline.export."""
    kind = "a positive" if least == 1 else "a non-negative"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {kind} integer, got '{text}'") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {kind} integer, got {value}")
    return value


def batch_tokens(text: str) -> int | str:
    """argparse type for --max-batch-tokens: "auto", or a cap where 0 means none."""
    return "auto" if text == "auto" else positive_int(text, least=0)
