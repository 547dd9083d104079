"""How the files of one reading were decoded (`DecodingLog`): those read as Windows-1252 under `data.encoding: auto`,
and the lines whose bad bytes `data.decode_errors: replace` read as U+FFFD; one WARNING for all, and metrics.json's
record.

A reading (stage 1, `pipeline.evaluate`'s file, `pipeline.predict`'s input) opens one log with `decoding(...)`; every
`LineSource` opened inside it reports to it. The log travels as a context variable, so that the many readers between
a setting and the lines (tables, class folders, their sniffing) need no new argument.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

AUTO = "auto"  # data.encoding: UTF-8, or Windows-1252 for a file that holds no UTF-8
FALLBACK_ENCODING = "cp1252"
FALLBACK_NAME = "Windows-1252"
STRICT, REPLACE = "strict", "replace"
# A valid UTF-8 multi-byte sequence (RFC 3629: no overlongs, no surrogates): a file holding one is UTF-8 text.
UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
    rb"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)
LINES_NAMED = 10  # lines named per file in the warning; the record keeps every one


def windows_1252(raw: bytes) -> str:
    """Bytes as Windows-1252, as browsers read it (WHATWG): the five bytes cp1252 leaves undefined (0x81, 0x8D, 0x8F,
    0x90, 0x9D) become the control characters of the same number rather than an error."""
    return raw.decode(FALLBACK_ENCODING, errors="pipeline-c1")


def decode_whole(raw: bytes, encoding: str) -> str:
    """A small file read whole (a list of class names): `auto` as the line readers take it, for the whole file."""
    if encoding.strip().lower() != AUTO:
        return raw.decode(encoding)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        if UTF8_SEQUENCE.search(raw):
            raise
    return windows_1252(raw)


def _c1_controls(error: UnicodeDecodeError) -> tuple[str, int]:
    return error.object[error.start : error.end].decode("latin-1"), error.end


codecs.register_error("pipeline-c1", _c1_controls)


@dataclass
class FileDecoding:
    encoding: str | None = None  # set where the file was read other than as asked (auto: Windows-1252)
    replaced_lines: list[int] = field(default_factory=list)  # lines whose bad bytes were read as U+FFFD

    def to_dict(self) -> dict[str, Any]:
        return {"encoding": self.encoding, "replaced_lines": self.replaced_lines}


@dataclass
class DecodingLog:
    errors: str = STRICT  # data.decode_errors
    option: str = "data.encoding"
    files: dict[str, FileDecoding] = field(default_factory=dict)

    def read_as(self, name: str, encoding: str) -> None:
        self.files.setdefault(name, FileDecoding()).encoding = encoding

    def replaced(self, name: str, line: int) -> None:
        lines = self.files.setdefault(name, FileDecoding()).replaced_lines
        if line not in lines:  # a folder's files are sniffed, then read: each line counted once
            lines.append(line)

    def warn(self) -> None:
        """One WARNING naming every file read as Windows-1252, one naming every file with replaced bytes."""
        fallback = [name for name, file in self.files.items() if file.encoding]
        if fallback:
            logger.warning(
                f"Read as {FALLBACK_NAME}, not UTF-8 ({self.option}: auto; each is not UTF-8 and holds no UTF-8 character), "
                f"{len(fallback)} file{'s' if len(fallback) > 1 else ''}: {', '.join(fallback)}"
            )
        replaced = [(name, file.replaced_lines) for name, file in self.files.items() if file.replaced_lines]
        if replaced:
            where = "; ".join(f"{name}, {_lines(numbers)}" for name, numbers in replaced)
            logger.warning(f"Bytes that are not text read as U+FFFD (decode_errors: replace): {where}")

    def record(self, setting: str) -> dict[str, Any] | None:
        """metrics.json `data.decoding`; None when every file read as asked."""
        if not self.files:
            return None
        files = {name: file.to_dict() for name, file in self.files.items()}
        return {"setting": setting, "errors": self.errors, "files": files}


def _lines(numbers: list[int]) -> str:
    shown = ", ".join(str(number) for number in numbers[:LINES_NAMED])
    more = f" and {len(numbers) - LINES_NAMED} more" if len(numbers) > LINES_NAMED else ""
    return f"line{'s' if len(numbers) > 1 else ''} {shown}{more}"


_current: contextvars.ContextVar[DecodingLog | None] = contextvars.ContextVar("decoding", default=None)


def current_log() -> DecodingLog:
    """The open reading's log; outside one, a log of its own (strict, reported nowhere)."""
    return _current.get() or DecodingLog()


@contextlib.contextmanager
def decoding(errors: str = STRICT, option: str = "data.encoding", warn: bool = True) -> Iterator[DecodingLog]:
    """Open a reading's log; on leaving, its one WARNING (when `warn`)."""
    log = DecodingLog(errors, option)
    token = _current.set(log)
    try:
        yield log
    finally:
        _current.reset(token)
    if warn:
        log.warn()
