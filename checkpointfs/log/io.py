"""Reading and writing log files: the ``v<N>`` version line, JSON written the way Spark's json4s writes it
(compact, no spaces, non-ASCII kept as UTF-8), line-by-line reading with errors that name the file and the line."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

from ..contract import CancellableOutputStream, CheckpointFileManager
from ..errors import CorruptLogError, UnsupportedLogVersionError

_INT_RE = re.compile(r"[+-]?[0-9]+")
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_decoder = json.JSONDecoder()
FLUSH_BYTES = 1 << 20
READ_BYTES = 1 << 20
"""How much of a log file is read at a time."""
_NEWLINES_B = re.compile(rb"\r\n|\r|\n")
_CONTROL_ESCAPE = re.compile(r"\\(?:\\|u00[0-9a-f]{2})")


def _upper_hex(match: re.Match[str]) -> str:
    escape = match.group()
    return escape if escape == "\\\\" else "\\u00" + escape[4:].upper()


def _jackson_escapes(text: str) -> str:
    """Jackson (which json4s writes with) escapes control characters as ``\\u00XX`` with upper-case hex digits;
    Python's encoder uses lower case. Rewrite them so the bytes are Spark's."""
    return _CONTROL_ESCAPE.sub(_upper_hex, text) if "\\u00" in text else text


# Every alternative below consumes a token no other can start (a plain character, or an escape from its backslash),
# and entries of a run are separated by a newline none of them holds: matching is linear without possessive
# quantifiers, which Python 3.10 lacks. On 3.11+ they are kept, to give up on a failing line at once.
_POSSESSIVE = "+" if sys.version_info >= (3, 11) else ""
_PLAIN_RUN = "++" if _POSSESSIVE else ""  # 3.10: one plain character per repetition, never a nested quantifier
CANONICAL_STRING = rf'"(?:[^"\\\x00-\x1f]{_PLAIN_RUN}|\\["\\bfnrt]|\\u00(?:0[0-7BEF]|1[0-9A-F]))*{_POSSESSIVE}"'
"""A regular expression for a JSON string literal exactly as :func:`json_string` writes it (and Spark does)."""
CANONICAL_INT = r"(?:0|-?[1-9][0-9]{0,18})"
"""A regular expression for an integer of at most 19 digits exactly as Python and Spark write it."""


def canonical_run(entry: str) -> re.Pattern[str]:
    """A pattern that matches a run of lines joined by ``\\n``, each matching ``entry``."""
    return re.compile(f"{entry}(?:\\n{entry})*{_POSSESSIVE}")


def dumps(value: Any) -> str:
    """``value`` as compact JSON, as json4s ``Serialization.write`` renders it (dict order kept)."""
    return _jackson_escapes(_encoder.encode(value))


def json_string(text: str) -> str:
    """A JSON string literal for ``text``, escaped as Spark (json4s over Jackson) escapes it."""
    return _jackson_escapes(_encoder.encode(text))


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

    Read in runs of whole lines of about ``READ_BYTES`` (:meth:`runs`), or one at a time (:meth:`next_line`,
    iteration). :meth:`corrupt` builds an error naming the file and the line last read.
    """

    def __init__(self, path: str, raw: BinaryIO) -> None:
        self.path = path
        self._raw = raw
        self._tail = b""
        self._eof = False
        self._pending: list[str] = []
        self._next = 0
        self.line_number = 0

    def _read_run(self) -> str | None:
        """The next whole lines read from the file, decoded, joined by ``\\n`` (whatever their line ends were) and
        without a final line end; None at the end of the file. Does not move :attr:`line_number`."""
        while True:
            if self._eof:
                if not self._tail:
                    return None
                data, self._tail = self._tail, b""
                return self._decode(data, final=True)
            chunk = self._raw.read(READ_BYTES)
            if not chunk:
                self._eof = True
                continue
            data = self._tail + chunk if self._tail else chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                cut = data.rfind(b"\r", 0, len(data) - 1)  # a final \r may be the first half of \r\n
            if cut < 0:
                self._tail = data
                continue
            self._tail = data[cut + 1:]
            return self._decode(data[:cut + 1], final=False)

    def _decode(self, data: bytes, final: bool) -> str:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = self.line_number + len(_NEWLINES_B.split(data[:e.start]))
            raise CorruptLogError(self.path, f"line {line}: not valid UTF-8 ({e.reason})") from None
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if text.endswith("\n"):
            return text[:-1]
        if not final:
            raise AssertionError("a run of whole lines ends with a line end")
        return text

    def runs(self) -> Iterator[str]:
        """The remaining lines in runs of whole lines joined by ``\\n``. While a run is being handled,
        :attr:`line_number` is that of the line before it (use :meth:`lines_of` to step through it line by line);
        it moves past the run when the next is asked for."""
        if self._next < len(self._pending):
            pending = self._pending[self._next:]
            self._pending, self._next = [], 0
            start = self.line_number
            yield "\n".join(pending)
            self.line_number = start + len(pending)
        while True:
            run = self._read_run()
            if run is None:
                return
            start = self.line_number
            yield run
            self.line_number = start + run.count("\n") + 1

    def lines_of(self, run: str) -> Iterator[str]:
        """The lines of ``run`` (from :meth:`runs`), counting them in :attr:`line_number`."""
        for line in run.split("\n"):
            self.line_number += 1
            yield line

    def next_line(self) -> str | None:
        """The next line, or None at the end of the file."""
        if self._next >= len(self._pending):
            run = self._read_run()
            if run is None:
                return None
            self._pending, self._next = run.split("\n"), 0
        line = self._pending[self._next]
        self._next += 1
        self.line_number += 1
        return line

    def __iter__(self) -> Iterator[str]:
        for run in self.runs():
            yield from self.lines_of(run)

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
    raw = _as_buffered(manager.open(path))
    try:
        yield LogLines(path, raw)
    finally:
        raw.close()


def _as_buffered(raw: Any) -> Any:
    """A stream whose ``read(n)`` returns ``n`` bytes unless at the end: wrap raw streams that may return fewer."""
    if isinstance(raw, io.RawIOBase):
        return io.BufferedReader(raw, READ_BYTES)
    return raw


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
