"""How a config value is read: YAML text, and a value checked (and coerced) against its setting's annotated type;
`describe` says a type as the reference and the error messages say it ("a number, 'best_f1' or null").
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import types
import typing
from typing import Any, Literal, Union

import yaml


class ConfigError(ValueError):
    """A config key is unknown, or its value has the wrong type or is out of range."""


def default_of(item: dataclasses.Field) -> Any:
    """A field's default value (a fresh one where a factory makes it)."""
    return item.default_factory() if item.default_factory is not dataclasses.MISSING else item.default


def setting(default: Any, help: str, **more: str) -> Any:
    """A config field: its default (a list, or a section's class, is made anew for each config) and its docs, the
    `help` and optional `more` and `shown` texts that docs/config-reference.md renders. pyproject.toml tells ruff
    that it makes a field (flake8-bugbear's extend-immutable-calls)."""
    docs = {"help": help, **more}
    if isinstance(default, (list, type)):
        return dataclasses.field(default_factory=default.copy if isinstance(default, list) else default, metadata=docs)
    return dataclasses.field(default=default, metadata=docs)


BOOLEAN_WORDS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


class _ConfigLoader(yaml.SafeLoader):
    """YAML with YAML 1.2's booleans: only true and false. YAML 1.1 also reads yes, no, on and off as booleans,
    which turned class names such as yes/no into True/False; a boolean setting still takes those words
    (`_coerce_scalar`)."""


_ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml(text: str) -> Any:
    """A config's YAML text (a file, or an override's value) as Python values."""
    return yaml.load(text, Loader=_ConfigLoader)  # a SafeLoader: no Python objects


_SCALAR_NAMES = {float: "a number", int: "an integer", bool: "true or false", str: "a string"}
_SCALAR_PLURALS = {float: "numbers", int: "integers", bool: "booleans", str: "strings"}


def describe(tp: Any) -> str:
    """A type as a config reader would say it: "a number, 'best_f1' or null"."""
    options = _options(tp)
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


def _options(tp: Any) -> list[str]:
    """The alternatives a type allows, unions and literals flattened."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return [repr(a) for a in typing.get_args(tp)]
    if origin in (Union, types.UnionType):
        return [option for arg in typing.get_args(tp) for option in _options(arg)]
    if origin is list:
        (item,) = typing.get_args(tp)
        return [f"a list of {_SCALAR_PLURALS.get(item) or _nested(item)}"]
    if origin is dict:
        return [f"a mapping of names to {_nested(typing.get_args(tp)[1])}"]
    if tp is type(None):
        return ["null"]
    return [_SCALAR_NAMES.get(tp, getattr(tp, "__name__", str(tp)))]


def _nested(tp: Any) -> str:
    """A member type inside a list or mapping, bracketed where it is itself a choice."""
    described = describe(tp)
    return f"({described})" if " or " in described else described


def coerce(value: Any, tp: Any, key: str) -> Any:
    """Return `value` as type `tp`, or raise ConfigError naming `key`."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return _coerce_union(value, tp, key)
    if origin is Literal:
        return _coerce_literal(value, tp, key)
    if origin is dict:
        return _coerce_dict(value, tp, key)
    if origin is list:
        return _coerce_list(value, tp, key)
    if tp in (bool, int, float, str):
        return _coerce_scalar(value, tp, key)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping of {tp.__name__} fields, got {value!r}")
        return build(tp, value, key)
    raise ConfigError(f"{key}: unsupported type {tp!r}")


def _coerce_union(value: Any, tp: Any, key: str) -> Any:
    """The first member of the union that accepts `value` (None where the union allows it)."""
    args = typing.get_args(tp)
    if value is None and type(None) in args:
        return None
    members = [arg for arg in args if arg is not type(None)]
    # X | None, or a mapping (list) where only one member is one: that member's own error says more (which item,
    # and why) than the whole union's.
    container = dict if isinstance(value, dict) else list if isinstance(value, list) else None
    shaped = [arg for arg in members if container is not None and typing.get_origin(arg) is container]
    if len(members) == 1 or len(shaped) == 1:
        return coerce(value, shaped[0] if len(shaped) == 1 else members[0], key)
    for arg in members:
        with contextlib.suppress(ConfigError):
            return coerce(value, arg, key)
    raise ConfigError(f"{key}: expected {describe(tp)}, got {value!r}")


def _coerce_literal(value: Any, tp: Any, key: str) -> Any:
    options = typing.get_args(tp)
    if isinstance(value, bool):  # a bare true/false (and, from older YAML readers, yes/no/on/off)
        spellings = {word for word, meaning in BOOLEAN_WORDS.items() if meaning is value}
        value = next((option for option in options if str(option).lower() in spellings), value)
    if value in options and not isinstance(value, bool):
        return value
    raise ConfigError(f"{key}: expected {describe(tp)}, got {value!r}")


def _coerce_dict(value: Any, tp: Any, key: str) -> dict:
    key_type, value_type = typing.get_args(tp)
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected {describe(tp)}, got {value!r}")
    return {coerce(name, key_type, key): coerce(item, value_type, f"{key}.{name}") for name, item in value.items()}


def _coerce_list(value: Any, tp: Any, key: str) -> list:
    (item_type,) = typing.get_args(tp)
    if isinstance(value, str):  # "title,description" on the command line
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{key}: expected {describe(tp)}, got {value!r}")
    return [coerce(item, item_type, f"{key}[{i}]") for i, item in enumerate(value)]


def _coerce_scalar(value: Any, tp: type, key: str) -> Any:
    """bool, int, float or str; YAML's own readings of numbers and strings are accepted where unambiguous (a bool is
    neither a number nor a string)."""
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in BOOLEAN_WORDS:
            return BOOLEAN_WORDS[value.lower()]
    elif isinstance(value, bool):
        pass
    elif tp is int and isinstance(value, int):
        return value
    elif tp is float and isinstance(value, (int, float)):
        return float(value)
    elif tp is float and isinstance(value, str):  # YAML 1.1 reads "3e-5" (no dot) as a string
        with contextlib.suppress(ValueError):
            return float(value)
    elif tp is str and isinstance(value, (str, int, float)):
        return value if isinstance(value, str) else str(value)
    quote = " (YAML reads a bare true or false so: quote it)" if tp is str and isinstance(value, bool) else ""
    raise ConfigError(f"{key}: expected {_SCALAR_NAMES[tp]}, got {value!r}{quote}")


def check_types(instance: Any, prefix: str) -> None:
    """Coerce every field of a dataclass instance to its annotated type in place (as YAML values are)."""
    hints = typing.get_type_hints(type(instance))
    for item in dataclasses.fields(instance):
        setattr(instance, item.name, coerce(getattr(instance, item.name), hints[item.name], f"{prefix}.{item.name}"))


def build(cls: type, values: dict[str, Any], prefix: str = "") -> Any:
    """Instantiate dataclass `cls` from a (possibly partial) nested dict, defaults filling the rest."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in values.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if key not in names:
            known = ", ".join(sorted(names))
            raise ConfigError(f"unknown config key '{dotted}' (known keys here: {known})")
        kwargs[key] = coerce(value, hints[key], dotted)
    return cls(**kwargs)
