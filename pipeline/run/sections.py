"""The generic codec of metrics.json's sections (pipeline/run/record.py): a `Section` is a dataclass whose fields are
its known keys; `from_dict` and `to_dict` read and write it, keeping unknown keys and nulls as they were.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

S = TypeVar("S", bound="Section")


@dataclass
class Section:
    """A JSON object of metrics.json: its known keys as fields, the rest in `extra`."""

    extra: dict[str, Any] = field(default_factory=dict, repr=False, kw_only=True, metadata={"internal": True})
    # The keys as read, in their order: written in it again, a null as null, so reading and writing changes nothing.
    read_keys: list[str] = field(
        default_factory=list, repr=False, compare=False, kw_only=True, metadata={"internal": True}
    )

    @classmethod
    def from_dict(cls: type[S], data: dict[str, Any]) -> S:
        hints, values, extra = _hints(cls), {}, {}
        fields = {f.name: f for f in section_fields(cls)}
        for key, value in data.items():
            decoded = _decode(hints[key], value) if key in fields else _UNREADABLE
            # Unknown keys, another version's shape where a section was expected, and null where every run has a
            # section: kept as they were, never a crash.
            if decoded is _UNREADABLE or (decoded is None and fields[key].default is not None):
                extra[key] = value
            else:
                values[key] = decoded
        return cls(**values, extra=extra, read_keys=list(data))

    def to_dict(self) -> dict[str, Any]:
        names = [f.name for f in section_fields(type(self))]
        out = {}
        for key in dict.fromkeys([*self.read_keys, *names, *self.extra]):
            value = getattr(self, key) if key in names else None
            if key in names and (not _blank(value) or (key in self.read_keys and key not in self.extra)):
                out[key] = _encode(value)
            elif key in self.extra:  # unknown, or unreadable as its section (unless set since)
                out[key] = self.extra[key]
        return out

    def update(self: S, other: S | None) -> None:
        """Take every field `other` has (not None): one record's figures added to another's."""
        for f in section_fields(type(self)) if other is not None else ():
            if getattr(other, f.name) is not None:
                setattr(self, f.name, getattr(other, f.name))


_UNREADABLE = object()


def _blank(value: Any) -> bool:
    """Nothing to write: None, or a section with nothing in it (one a file lacked)."""
    return value is None or (isinstance(value, Section) and not value.to_dict())


def section_fields(cls: type) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if not f.metadata.get("internal")]


_hints = functools.cache(typing.get_type_hints)  # a section's field types, resolved once


def _unwrap(hint: Any) -> Any:
    """X from `X | None`."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return next(arg for arg in typing.get_args(hint) if arg is not type(None))
    return hint


def _section_type(hint: Any) -> type[Section] | None:
    """The Section class a hint names, through `X | None`."""
    hint = _unwrap(hint)
    return hint if isinstance(hint, type) and issubclass(hint, Section) else None


def _decode(hint: Any, value: Any) -> Any:
    section = _section_type(hint)
    if section is not None and value is not None and not isinstance(value, section):
        return section.from_dict(value) if isinstance(value, dict) else _UNREADABLE
    if typing.get_origin(_unwrap(hint)) is dict and isinstance(value, dict):
        inner = _section_type(typing.get_args(_unwrap(hint))[1])
        if inner is not None:
            return {k: inner.from_dict(v) if isinstance(v, dict) else v for k, v in value.items()}
    return value


def _encode(value: Any) -> Any:
    if isinstance(value, Section):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value
