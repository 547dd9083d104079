"""Loading a config: YAML files that say only what differs, `extends`, dotted overrides; and saving one.

    config = load_config("configs/ag_news_bert.yaml", ["train.learning_rate=3e-5", "data.max_train_samples=500"])

A wrong key or a value of the wrong type raises `ConfigError` naming the dotted key; in `extends`, later files win.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shlex
import typing
from pathlib import Path
from typing import Any

import yaml

from pipeline.common.errors import one_line
from pipeline.common.io import atomic_write_text
from pipeline.config.checks import validate
from pipeline.config.reading import STANDARD_INPUT
from pipeline.config.schema import LOCAL_OR_HUB_KEYS, LOCAL_PATH_KEYS, PipelineConfig
from pipeline.config.values import ConfigError, build, load_yaml


def _read_yaml(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    if path.resolve() in seen:
        raise ConfigError(f"{path}: 'extends' forms a cycle")
    try:
        content = load_yaml(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start}); save the config as UTF-8") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {one_line(error)}") from None
    if not isinstance(content, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    parents = content.pop("extends", None) or []
    parents = [parents] if isinstance(parents, str) else parents
    if not isinstance(parents, list) or not all(isinstance(parent, str) for parent in parents):
        raise ConfigError(f"{path}: 'extends' must be a file name or a list of file names, got {parents!r}")
    merged: dict[str, Any] = {}
    for parent in parents:  # later files win, and this file wins over all of them
        merged = _merge(merged, _read_yaml(path.parent / parent, seen + (path.resolve(),)))
    return _merge(merged, content)


def _merge(base: dict[str, Any], update: dict[str, Any], section: type = PipelineConfig) -> dict[str, Any]:
    """`update` over `base`: a section (a dataclass: train, train.distill, ...) merges key by key; any other value,
    a mapping such as eval.threshold or train.class_weights included, is replaced whole."""
    hints = typing.get_type_hints(section)
    merged = dict(base)
    for key, value in update.items():
        child = hints.get(key)
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and dataclasses.is_dataclass(child):
            merged[key] = _merge(merged[key], value, child)
        else:
            merged[key] = value
    return merged


# A bare | or > starts a block of text in YAML, empty when nothing indented follows: `label_separator: |` in a file
# reads as "", so such a value must be quoted there ("|"). As a whole override value it means the character.
YAML_BLOCK_INDICATORS = ("|", ">")


def parse_override(text: str) -> tuple[list[str], Any]:
    """'train.learning_rate=3e-5' -> (['train', 'learning_rate'], 3e-5); the value is read as YAML."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override '{text}' is not of the form section.key=value")
    try:
        value = load_yaml(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    if raw.strip() in YAML_BLOCK_INDICATORS:  # YAML reads them as an empty block of text; here they are the character
        value = raw.strip()
    path = key.strip().split(".")
    return path, _as_written(raw, value, _field_type(path))


def override_text(key: str, values: list[str]) -> str:
    """A list of texts as an override a shell passes and parse_override reads back as that list: each item as it is
    where YAML reads it so (Health, N/A), else quoted ("null", "#N/A", "9")."""
    return shlex.quote(f"{key}=[{', '.join(_flow_item(value) for value in values)}]")


def _flow_item(value: str) -> str:
    try:
        plain = load_yaml(f"[{value}]") == [value]
    except yaml.YAMLError:
        plain = False
    return value if plain else json.dumps(value, ensure_ascii=False)


# The words YAML reads as null; nothing at all after the "=" is null too.
YAML_NULL_WORDS = ("~", "null", "Null", "NULL")
# The types of string settings (str, or str | None), whose overrides keep the text YAML would read as another value.
STRING_TYPES = (str, str | None)


def _as_written(raw: str, value: Any, tp: Any) -> Any:
    """An override's value for a string setting as the text written, where YAML reads it as a mapping
    (`data.label_column=DESC:`, a TREC-style label) or as null from text that says no null (`data.delimiter= `, a
    space, which YAML strips to nothing). Any other value, and any other setting's, is YAML's reading."""
    if tp not in STRING_TYPES:
        return value
    written_null = raw == "" or raw.strip() in YAML_NULL_WORDS
    if isinstance(value, dict):  # the text of a key and a colon, as a label_column=DESC: names a column
        return raw.strip()
    return raw if value is None and not written_null else value


def _field_type(path: list[str]) -> Any:
    """The annotated type of the setting at a dotted path (data.delimiter: str | None); None for no such setting."""
    section: Any = PipelineConfig
    for part in path:
        if not dataclasses.is_dataclass(section):
            return None
        section = typing.get_type_hints(section).get(part)
    return section


def apply_overrides(values: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    values = copy.deepcopy(values)
    for text in overrides:
        path, value = parse_override(text)
        node = values
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override '{text}': '{part}' is a value, not a section")
            node = child
        node[path[-1]] = value
    return values


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PipelineConfig:
    values = _read_yaml(Path(path)) if path is not None else {}
    values = apply_overrides(values, overrides or [])
    config = build(PipelineConfig, values)
    validate(config)
    return config


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def with_absolute_paths(values: dict[str, Any], resolve_links: bool = False) -> dict[str, Any]:
    """A copy of a config's values (`to_dict`) whose local paths (LOCAL_PATH_KEYS, LOCAL_OR_HUB_KEYS) are absolute,
    read against the working directory as the run read them. `resolve_links`: with symbolic links resolved too, to
    compare two configs (a path through a linked folder and the same file reached from inside it are one file)."""
    values = copy.deepcopy(values)
    for key in LOCAL_PATH_KEYS + LOCAL_OR_HUB_KEYS:
        *sections, name = key.split(".")
        node = values
        for section in sections:
            node = node.get(section) if isinstance(node, dict) else None
        value = node.get(name) if isinstance(node, dict) else None
        if not isinstance(value, str) or not value or value == STANDARD_INPUT:
            continue
        local = os.path.expanduser(value)
        if key in LOCAL_PATH_KEYS or os.path.exists(local):
            node[name] = os.path.realpath(local) if resolve_links else os.path.abspath(local)
    return values


def save_config(config: PipelineConfig, path: Path) -> None:
    """Write the fully resolved config (every default filled in, local paths absolute) atomically."""
    header = "# Fully resolved config of this run; rerun with: python -m pipeline.finetune --config <this file>\n"
    atomic_write_text(path, header + yaml.safe_dump(with_absolute_paths(to_dict(config)), sort_keys=False))
