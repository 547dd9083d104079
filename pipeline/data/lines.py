"""Decoded physical lines of a (possibly gzip-compressed) byte stream, numbered, with the errors that name the
line and the encoding setting to change (LineSource).
"""

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

logger = logging.getLogger(__name__)
BYTE_ORDER_MARK = "\ufeff"  # as a decoded character
GZIP_MAGIC = b"\x1f\x8b"


class EncodingError(DataError):
    """Bytes that are not text in the encoding a file is read with: the message names the file, the line and the
    setting that gives the encoding; a caller that knows a likelier encoding may add it."""


# What reading a damaged gzip file, or a zip archive's damaged file (a wrong CRC), raises.
READ_ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile)
# Bytes of a text file's start that `LineSource.head` can show: a buffered file's own buffer holds only 4 KiB, about
# 50 lines of short texts, too few to tell how a file quotes (quoting.reads_quotes).
HEAD_BYTES = 65536
STDIN_NAME = "<stdin>"  # standard input, as errors name it


def check_encoding(encoding: str) -> str:
    """The codec to decode with: utf-8 also drops a byte-order mark (Excel writes one) from the header. Python's
    name for it ("iso8859-1" for "latin1"), which messages do not quote: they name the encoding as the user gave it."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise DataError(f"unknown encoding '{encoding}' (e.g. utf-8, latin-1, cp1252, utf-16)") from None
    return "utf-8-sig" if name == "utf-8" else name


# Bytes 0x80-0x9F are text in cp1252 (’ “ ” – … €) but C1 control characters in latin-1, which no text holds: a
# Windows file read as latin-1 (the encoding most often advised for "not UTF-8") loses its quotes, dashes and euro
# signs without an error (the tokenizer drops control characters) and prediction writes them back as controls.
_C1_CONTROLS = re.compile("[\x80-\x9f]")


def _reads_high_bytes_as_controls(encoding: str) -> bool:
    """Whether this encoding decodes the byte 0x92 (cp1252's ’) to the control character U+0092, as latin-1 does."""
    return b"\x92".decode(encoding.removesuffix("-sig"), errors="replace") == "\x92"


def _likely_encoding(raw_line: bytes) -> str:
    """What a line whose high bytes latin-1 reads as control characters was written in: UTF-8 (’ is E2 80 99) when it
    decodes as such, else cp1252, which Windows writes."""
    try:
        raw_line.decode("utf-8")
    except UnicodeDecodeError:
        return "cp1252 (a file saved on Windows: ’ “ ” – €)"
    return "utf-8 (the line is valid UTF-8)"


def _suggested_encoding(raw_line: bytes, codec: str) -> str:
    """The encoding an undecodable line was most likely written in. Bytes 0x80-0x9F that `codec` cannot decode are
    cp1252's ’ “ ” – … € (Windows, and Excel's "CSV" export), which latin-1 would read as control characters without
    an error; other high bytes are any single-byte encoding's letters, which latin-1 reads."""
    undecodable = raw_line.decode(codec, errors="surrogateescape")
    if any("\udc80" <= character <= "\udc9f" for character in undecodable):
        return 'cp1252, as Windows and Excel\'s "CSV" export write: its bytes 0x80-0x9F are ’ “ ” – €'
    return "latin-1"


def splits_on_newline_bytes(encoding: str) -> bool:
    """Whether b"\\n" ends a line in this encoding (ASCII-compatible ones); UTF-16/32 must be decoded first."""
    return "\n".encode(encoding.removesuffix("-sig")) == b"\n"


class LineSource:
    """Decoded physical lines of a (possibly gzip-compressed) byte stream, counting lines and bytes read.

    ASCII-compatible encodings are split on newline bytes and decoded line by line, so a bad byte is reported with
    its line; UTF-16 and UTF-32 are decoded as a stream first (their newline is not the byte 0x0A). `encoding` is the
    value of the setting `option` as the user wrote it: `self.encoding` is its codec, which decodes, and
    `self.named_encoding` that value, which messages quote.
    """

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
        # Before anything is read (from a pipe, the first bytes may be long in coming): an unknown encoding fails here.
        self.encoding = check_encoding(encoding)
        # As the user wrote it ("latin1", not Python's "iso8859-1"), so that a message points at the setting's value.
        self.named_encoding = encoding
        self.size = size  # bytes on disk (compressed size for gzip); None for a pipe
        self.line_number = 0
        # Whether a line read as control characters is warned about (once per source), and whether one was seen: a
        # folder of class folders reads thousands of files and warns about its first such file only.
        self.warn_controls = warn_controls
        self.controls_seen = False
        self._bytes_read = 0
        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
        self.compressed = buffered.peek(2)[:2] == GZIP_MAGIC
        content = gzip.GzipFile(fileobj=buffered, mode="rb") if self.compressed else buffered
        # Only a file gets the HEAD_BYTES buffer: peeking into it reads until it is full, which from a pipe means
        # waiting for 64 KiB or the end of input before the header is read (a slow producer streams nothing).
        self._stream: IO[bytes] = io.BufferedReader(content, buffer_size=HEAD_BYTES) if _is_file(raw) else content

    def read_as(self, encoding: str) -> None:
        """Decode with another encoding, before any line is read: the one a file's byte-order mark says."""
        self.encoding, self.named_encoding = check_encoding(encoding), encoding

    def head(self, count: int) -> bytes:
        """The first bytes of the (decompressed) content, without consuming them: from a file, up to HEAD_BYTES;
        from a pipe, what the stream's own peek gives (what has arrived, up to its buffer's size), without waiting
        for the rest."""
        peek = getattr(self._stream, "peek", None)
        try:
            return peek(count)[:count] if peek else b""
        except READ_ERRORS as error:
            raise DataError(f"{self.name}: cannot read (corrupt gzip or zip data?): {one_line(error)}") from None

    def head_text(self) -> str:
        """The start of the content (head(HEAD_BYTES)) as text, for a look ahead at its first lines: decoded leniently
        (its last character may be cut), without the byte-order mark."""
        return self.head(HEAD_BYTES).decode(self.encoding, errors="ignore").lstrip(BYTE_ORDER_MARK)

    def position(self) -> int:
        """Bytes of the file consumed so far (compressed bytes for gzip), for a progress estimate."""
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
        decoder = codecs.getincrementaldecoder(self.encoding)(errors="strict")
        watch_controls = _reads_high_bytes_as_controls(self.encoding)
        for raw_line in self._raw_lines(self._stream):
            self.line_number += 1
            self._bytes_read += len(raw_line)
            try:
                line = decoder.decode(raw_line)
            except UnicodeDecodeError as error:
                bad = raw_line[error.start : error.end]
                raise EncodingError(
                    f"{self.name}, line {self.line_number}: bytes that are not valid {self.named_encoding} "
                    f"({bad!r} at byte {error.start + 1} of the line); give the file's encoding with {self.option} "
                    f"(e.g. {_suggested_encoding(raw_line, self.encoding)})"
                ) from None
            if watch_controls and _C1_CONTROLS.search(line):
                watch_controls, self.controls_seen = False, True  # once per file
                if self.warn_controls:
                    logger.warning(
                        "%s, line %d: bytes 0x80-0x9F read as %s are control characters, not text; give %s %s",
                        self.name,
                        self.line_number,
                        self.named_encoding,
                        self.option,
                        _likely_encoding(raw_line),
                    )
            yield line
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise EncodingError(
                f"{self.name}, line {self.line_number}: the file ends inside a {self.named_encoding} character; "
                f"give the file's encoding with {self.option}"
            ) from None

    def _raw_lines(self, stream: IO[bytes]) -> Iterator[bytes]:
        lines = iter(stream)
        while True:
            try:
                yield next(lines)
            except StopIteration:
                return
            except READ_ERRORS as error:
                raise DataError(
                    f"{self.name}: cannot read (truncated or corrupt gzip or zip data?): {one_line(error)}"
                ) from None

    def _decoded_stream_lines(self) -> Iterator[str]:
        text = io.TextIOWrapper(self._stream, encoding=self.encoding, errors="strict", newline="")
        try:
            for line in text:
                self.line_number += 1
                self._bytes_read += len(line.encode(self.encoding, errors="replace"))
                yield line
        except UnicodeDecodeError as error:
            raise EncodingError(
                f"{self.name}, line {self.line_number + 1}: not valid {self.named_encoding} ({error.reason}); "
                f"give the file's encoding with {self.option}"
            ) from None
        except READ_ERRORS as error:
            raise DataError(
                f"{self.name}: cannot read (truncated or corrupt gzip or zip data?): {one_line(error)}"
            ) from None
        finally:
            text.detach()


def _is_file(raw: IO[bytes]) -> bool:
    """Whether a stream is a file (or stdin redirected from one) rather than a pipe or a socket: a file can be
    sought, and reading ahead of it never waits for a writer."""
    try:
        return raw.seekable()
    except (OSError, ValueError):
        return False
