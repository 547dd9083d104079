"""Decoded, numbered physical lines of a (possibly gzipped) byte stream, with errors naming the line (LineSource)."""

from __future__ import annotations

import codecs
import gzip
import io
import logging
import re
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO

from pipeline.common.errors import DataError, one_line
from pipeline.data.decoding import AUTO, FALLBACK_NAME, REPLACE, UTF8_SEQUENCE, current_log, windows_1252

logger = logging.getLogger(__name__)
BYTE_ORDER_MARK = "\ufeff"  # as a decoded character
GZIP_MAGIC = b"\x1f\x8b"


class EncodingError(DataError):
    """Bytes that are not text in the file's encoding; the message names the file, the line and the setting."""


# What reading a damaged gzip file, or a zip archive's damaged file (a wrong CRC), raises.
READ_ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile)
# A buffered file's own 4 KiB is too few lines to tell how a file quotes (quoting.reads_quotes).
HEAD_BYTES = 65536
STDIN_NAME = "<stdin>"  # standard input, as errors name it


def check_encoding(encoding: str) -> str:
    """The codec to decode with (utf-8 also drops a byte-order mark; `auto` starts as utf-8); messages quote the name
    as given."""
    if encoding.strip().lower() == AUTO:
        return "utf-8-sig"
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise DataError(f"unknown encoding '{encoding}' (e.g. utf-8, latin-1, cp1252, utf-16)") from None
    return "utf-8-sig" if name == "utf-8" else name


# Bytes 0x80-0x9F are cp1252's quotes, dashes and euro but latin-1's controls: lost without an error.
_C1_CONTROLS = re.compile("[\x80-\x9f]")


def _likely_encoding(raw_line: bytes) -> str:
    """What a line latin-1 reads as controls was written in: UTF-8 where it decodes so, else cp1252."""
    try:
        raw_line.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252 (a file saved on Windows: ’ “ ” – €)"
    return "utf-8 (the line is valid UTF-8)"


def _advice(option: str) -> str:
    """What to set for bytes that are not text: never one encoding for every file, which would mis-read the others."""
    errors = "--decode-errors" if option.startswith("--") else "data.decode_errors"
    return (
        f"set {option} to auto (UTF-8, and {FALLBACK_NAME} for a file that holds no UTF-8), give this file's own "
        f"encoding, or set {errors} to replace (bad bytes read as U+FFFD)"
    )


def splits_on_newline_bytes(encoding: str) -> bool:
    """Whether b"\\n" ends a line in this encoding (ASCII-compatible ones); UTF-16/32 must be decoded first."""
    return "\n".encode(encoding.removesuffix("-sig")) == b"\n"


class LineSource:
    """Decoded, numbered lines of a (gzipped) byte stream; ASCII-compatible ones decoded line by line."""

    def __init__(
        self,
        raw: IO[bytes],
        name: str,
        encoding: str,
        size: int | None,
        option: str = "data.encoding",
        warn_controls: bool = True,
    ):
        self.raw = raw
        self.option = option  # the setting that gives the encoding, named in errors
        self.name = name
        # Before anything is read (from a pipe that may be long): an unknown encoding fails here.
        self.encoding = check_encoding(encoding)
        self.named_encoding = encoding
        # auto: UTF-8, until a line that is not, in a file that held no UTF-8 so far: Windows-1252 from there on.
        self.auto = encoding.strip().lower() == AUTO
        self.fallback_line: int | None = None  # the first line read as Windows-1252
        self.utf8_line: int | None = None  # the first line with a UTF-8 multi-byte character
        self.log = current_log()
        self.size = size  # bytes on disk (compressed size for gzip); None for a pipe
        self.line_number = 0
        # Warn about control characters once per source; a folder warns about its first such file only.
        self.warn_controls = warn_controls
        self.controls_seen = False
        self._bytes_read = 0
        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
        self.compressed = buffered.peek(2)[:2] == GZIP_MAGIC
        content = gzip.GzipFile(fileobj=buffered, mode="rb") if self.compressed else buffered
        # Only a file gets the HEAD_BYTES buffer: peeking a pipe would wait for 64 KiB or its end.
        self._stream: IO[bytes] = io.BufferedReader(content, buffer_size=HEAD_BYTES) if _is_file(raw) else content

    def read_as(self, encoding: str) -> None:
        """Decode with another encoding, before any line is read: the one a file's byte-order mark says."""
        self.encoding, self.named_encoding, self.auto = check_encoding(encoding), encoding, False

    def head(self, count: int) -> bytes:
        """The first bytes of the content, unconsumed: from a file up to HEAD_BYTES, from a pipe what has arrived."""
        peek = getattr(self._stream, "peek", None)
        try:
            return peek(count)[:count] if peek else b""
        except READ_ERRORS as error:
            raise DataError(f"{self.name}: cannot read (corrupt gzip or zip data?): {one_line(error)}") from None

    def head_text(self) -> str:
        """The start of the content as text, decoded leniently, without the byte-order mark."""
        return self.head(HEAD_BYTES).decode(self.encoding, errors="ignore").lstrip(BYTE_ORDER_MARK)

    def position(self) -> int:
        """Bytes consumed so far (compressed for gzip), for a progress estimate."""
        if self.compressed:
            try:
                return self.raw.tell()
            except OSError:
                return 0
        return self._bytes_read

    def __iter__(self) -> Iterator[str]:
        if not splits_on_newline_bytes(self.encoding):
            yield from self._decoded_stream_lines()
            return
        self.decoder = codecs.getincrementaldecoder(self.encoding)(errors="strict")
        # Encodings that decode 0x92 (cp1252's ’) to a control character, as latin-1 does, may be the wrong one.
        watch_controls = b"\x92".decode(self.encoding.removesuffix("-sig"), errors="replace") == "\x92"
        try:
            for raw_line in self._stream:
                self.line_number += 1
                self._bytes_read += len(raw_line)
                line = self._decode(raw_line)
                if watch_controls and _C1_CONTROLS.search(line):
                    watch_controls, self.controls_seen = False, True  # once per file
                    if self.warn_controls:
                        logger.warning(
                            f"{self.name}, line {self.line_number}: bytes 0x80-0x9F read as {self.named_encoding} are control characters, not text; give {self.option} {_likely_encoding(raw_line)}"
                        )
                yield line
        except READ_ERRORS as error:  # a damaged gzip or zip file
            raise self._corrupt(error) from None
        try:
            self.decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise EncodingError(
                f"{self.name}, line {self.line_number}: the file ends inside a {self.named_encoding} character; give the file's encoding with {self.option}"
            ) from None

    def _decode(self, raw_line: bytes) -> str:
        """One line: in the file's encoding; under auto, Windows-1252 once the file shows it is not UTF-8."""
        if self.fallback_line is not None:
            if not UTF8_SEQUENCE.search(raw_line):
                return windows_1252(raw_line)
            if self.log.errors != REPLACE:
                raise self._mixed(self.line_number, self.fallback_line)
            self.log.replaced(self.name, self.line_number)  # a mixed file: its UTF-8 lines as UTF-8
            return raw_line.decode("utf-8", errors="replace")
        try:
            line = self.decoder.decode(raw_line)
        except UnicodeDecodeError as error:
            return self._undecodable(raw_line, error)
        if self.auto and self.utf8_line is None and UTF8_SEQUENCE.search(raw_line):
            self.utf8_line = self.line_number
        return line

    def _undecodable(self, raw_line: bytes, error: UnicodeDecodeError) -> str:
        """A line that is not valid in the encoding: Windows-1252 from here (auto, a file with no UTF-8 so far), U+FFFD
        for its bad bytes (decode_errors: replace), or an error naming the line."""
        self.decoder.reset()  # a failed decode may leave a partial character behind
        if self.auto and self.utf8_line is None and not UTF8_SEQUENCE.search(raw_line):
            self.fallback_line = self.line_number
            self.log.read_as(self.name, FALLBACK_NAME)
            return windows_1252(raw_line)
        if self.log.errors == REPLACE:
            self.log.replaced(self.name, self.line_number)
            return raw_line.decode(self.encoding, errors="replace")
        if self.auto:
            raise self._mixed(self.utf8_line or self.line_number, self.line_number)
        bad = raw_line[error.start : error.end]
        raise EncodingError(
            f"{self.name}, line {self.line_number}: bytes that are not valid {self.named_encoding} "
            f"({bad!r} at byte {error.start + 1} of the line); {_advice(self.option)}"
        )

    def _mixed(self, utf8_line: int, other_line: int) -> EncodingError:
        errors = "--decode-errors" if self.option.startswith("--") else "data.decode_errors"
        first, second = sorted((utf8_line, other_line))
        return EncodingError(
            f"{self.name}, lines {first} and {second}: the file mixes UTF-8 characters (line {utf8_line}) with bytes "
            f"that are not UTF-8 (line {other_line}), so no one encoding reads it; convert the file to UTF-8, or set "
            f"{errors} to replace (its bad bytes read as U+FFFD)"
        )

    def _decoded_stream_lines(self) -> Iterator[str]:
        text = io.TextIOWrapper(self._stream, encoding=self.encoding, errors="strict", newline="")
        try:
            for line in text:
                self.line_number += 1
                self._bytes_read += len(line.encode(self.encoding, errors="replace"))
                yield line
        except UnicodeDecodeError as error:
            raise EncodingError(
                f"{self.name}, line {self.line_number + 1}: not valid {self.named_encoding} ({error.reason}); give the file's encoding with {self.option}"
            ) from None
        except READ_ERRORS as error:
            raise self._corrupt(error) from None
        finally:
            text.detach()

    def _corrupt(self, error: BaseException) -> DataError:
        return DataError(f"{self.name}: cannot read (truncated or corrupt gzip or zip data?): {one_line(error)}")


def _is_file(raw: IO[bytes]) -> bool:
    """Whether a stream is a file (seekable: reading ahead never waits for a writer), not a pipe or a socket."""
    try:
        return raw.seekable()
    except (OSError, ValueError):
        return False
