"""Reading and writing log files: the ``v<N>`` version line, JSON written the way Spark's json4s writes it
(compact, no spaces, non-ASCII kept as UTF-8), line-by-line reading with errors that name the file and the line."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..contract import CancellableOutputStream, CheckpointFileManager
from ..errors import CorruptLogError, UnsupportedLogVersionError

_INT_RE = re.compile(r"[+-]?[0-9]+")
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_decoder = json.JSONDecoder()
FLUSH_BYTES = 1 << 20


def dumps(value: Any) -> str:
    """``value`` as compact JSON, as json4s ``Serialization.write`` renders it (dict order kept)."""
    return _encoder.encode(value)


def json_string(text: str) -> str:
    """A JSON string literal for ``text``."""
    return _encoder.encode(text)


def loads(text: str) -> Any:
    """Parse one JSON value (the whole of ``text``)."""
    return _decoder.decode(text)


def parse_version(text: str, path: str, max_supported: int) -> int:
    """The version of a ``v<N>`` line: :class:`CorruptLogError` when malformed (``xyz``, ``v``, ``v-1``, ``v1x``),
    :class:`UnsupportedLogVersionError` when above ``max_supported``."""
    digits = text[1:] if text.startswith("v") else None
    if digits is None or not _INT_RE.fullmatch(digits) or not -(2**31) <= int(digits) < 2**31 or int(digits) <= 0:
        raise CorruptLogError(path, f"malformed version line {text[:40]!r}: expected 'v<N>' with N a positive integer")
    version = int(digits)
    if version > max_supported:
        raise UnsupportedLogVersionError(
            path, f"log version v{version} is newer than the maximum supported version v{max_supported}; the file was "
                  "written by a newer Spark or checkpointfs")
    return version


class LineWriter:
    """Buffers text for a :class:`CancellableOutputStream`, sending it in chunks of about 1 MiB. It never closes or
    cancels the stream: its owner does."""

    def __init__(self, stream: CancellableOutputStream) -> None:
        self._stream = stream
        self._parts: list[str] = []
        self._size = 0

    def write(self, text: str) -> None:
        """Queue ``text``."""
        self._parts.append(text)
        self._size += len(text)
        if self._size >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Send what is queued to the stream."""
        if self._parts:
            self._stream.write("".join(self._parts).encode("utf-8"))
            self._parts = []
            self._size = 0


class LogLines:
    """The lines of one log file, without their line ends (``\\n``, ``\\r\\n`` or ``\\r``), numbered from 1.

    :meth:`next_line` returns None at the end; :meth:`corrupt` builds an error naming the file and the line last read.
    """

    def __init__(self, path: str, text: io.TextIOBase) -> None:
        self.path = path
        self._text = text
        self.line_number = 0

    def next_line(self) -> str | None:
        """The next line, or None at the end of the file."""
        try:
            line = self._text.readline()
        except UnicodeDecodeError as e:
            raise CorruptLogError(self.path, f"line {self.line_number + 1}: not valid UTF-8 ({e.reason})") from None
        if not line:
            return None
        self.line_number += 1
        return line[:-1] if line.endswith("\n") else line

    def __iter__(self) -> Iterator[str]:
        while True:
            line = self.next_line()
            if line is None:
                return
            yield line

    def first_line(self, what: str = "version line") -> str:
        """The first line; :class:`CorruptLogError` for an empty file."""
        line = self.next_line()
        if line is None:
            raise CorruptLogError(self.path, f"incomplete log file: empty, expected a {what}")
        return line

    def version(self, max_supported: int, strip: bool = False) -> int:
        """Read and check the version line."""
        line = self.first_line()
        return parse_version(line.strip() if strip else line, self.path, max_supported)

    def json_line(self, line: str) -> Any:
        """Parse ``line`` as JSON; :class:`CorruptLogError` naming the line when it is not."""
        try:
            return _decoder.decode(line)
        except ValueError as e:
            raise self.corrupt(f"not valid JSON ({e}); the file may be truncated or corrupted") from None
        except RecursionError:
            raise self.corrupt("JSON nested too deeply to be a log entry") from None

    def corrupt(self, cause: str) -> CorruptLogError:
        """An error about the line last read."""
        return CorruptLogError(self.path, f"line {self.line_number}: {cause}")


@contextmanager
def open_lines(manager: CheckpointFileManager, path: str) -> Iterator[LogLines]:
    """Open ``path`` for line reading; PathNotFoundError when absent."""
    raw = manager.open(path)
    text = io.TextIOWrapper(_as_buffered(raw), encoding="utf-8", errors="strict", newline=None)
    try:
        yield LogLines(path, text)
    finally:
        text.close()


def _as_buffered(raw: Any) -> Any:
    """TextIOWrapper needs ``read1``: wrap streams that lack it."""
    if hasattr(raw, "read1"):
        return raw
    return io.BufferedReader(raw)


def field(lines: LogLines, obj: Any, name: str, kind: type, *, optional: bool = False, default: Any = None) -> Any:
    """``obj[name]`` checked to be of ``kind`` (ints exclude booleans); CorruptLogError naming the line otherwise."""
    if not isinstance(obj, dict):
        raise lines.corrupt(f"expected a JSON object, found {type(obj).__name__}")
    if name not in obj:
        if optional:
            return default
        raise lines.corrupt(f"missing field {name!r}")
    value = obj[name]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise lines.corrupt(f"field {name!r} must be an integer, found {value!r}")
    if not isinstance(value, kind):
        raise lines.corrupt(f"field {name!r} must be {kind.__name__}, found {value!r}")
    return value
