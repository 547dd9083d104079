"""The config reference page and pipeline.predict's file options, both derived from the config's field docs."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from pipeline.config.data_config import DataConfig
from pipeline.config.options import FILE_SETTINGS, add_file_options, file_settings, flag, option_name
from pipeline.config.reference import COMMAND, PAGE, SECTIONS, render
from pipeline.predict.cli import _parser


def test_the_committed_reference_page_is_the_generated_one():
    assert PAGE.read_text(encoding="utf-8") == render(), f"docs/config-reference.md is out of date: run {COMMAND}"


@pytest.mark.parametrize(("prefix", "section"), [(prefix, section) for prefix, section, _ in SECTIONS])
def test_every_setting_has_its_help(prefix, section):
    undocumented = [item.name for item in dataclasses.fields(section) if not item.metadata.get("help", "").strip()]
    assert not undocumented, f"{prefix}: settings without metadata help: {undocumented}"


def test_every_setting_has_a_row_in_the_page():
    page = render()
    for prefix, section, _ in SECTIONS:
        for item in dataclasses.fields(section):
            assert f"`{prefix}.{item.name}" in page


def test_file_options_take_flag_type_choices_and_default_from_the_fields():
    parser = argparse.ArgumentParser()
    add_file_options(parser.add_argument, notes={"sheet": "a note"}, unset=("file_format",))
    actions = {action.dest: action for action in parser._actions}
    assert flag("column_names") == "--column-names" and flag("file_format") == "--format"
    assert actions["format"].choices == ("csv", "tsv", "jsonl", "parquet", "fasttext", "xlsx")
    assert actions["quoting"].choices == ("auto", "csv", "none") and actions["quoting"].default == "auto"
    assert actions["encoding"].default == DataConfig().encoding
    assert actions["sheet"].help.endswith("(a note)")
    args = parser.parse_args(["--column-names", "a, b", "--format", "csv", "--delimiter", ";"])
    settings = file_settings(args)
    assert set(settings) == set(FILE_SETTINGS)
    assert settings["column_names"] == ["a", "b"] and settings["file_format"] == "csv" and settings["delimiter"] == ";"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--delimiter", "ab"], "must be one character"),
        (["--label-prefix", "a b"], "cannot hold whitespace"),
        (["--column-names", ","], "name at least one column"),
    ],
)
def test_file_options_check_values_as_the_settings_do(argv, message, capsys):
    parser = argparse.ArgumentParser()
    add_file_options(parser.add_argument, notes={})
    with pytest.raises(SystemExit):
        parser.parse_args(argv)
    assert message in capsys.readouterr().err


def test_predict_lists_every_file_setting_as_an_option():
    dests = {action.dest for action in _parser()._actions}
    assert {option_name(setting) for setting in FILE_SETTINGS} <= dests
