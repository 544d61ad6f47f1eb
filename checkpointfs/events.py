"""What the logs say of a file, for an operator: the checkpoint it belongs to, the file, its batch id (or state
version) when its name gives one, and the write id of the write in question.

Managers log, through their module loggers:

- one INFO per checkpoint root and process, when a manager first writes under it (:func:`announce_root`): how the
  files are written (directly, or through a temp file and a rename) and whether the store is checked;
- one WARN per conflict, settled ambiguity, unknown outcome and orphan upload cleaned up, ending with the file's
  :class:`FileContext` (``[checkpoint=s3://b/q file=s3://b/q/offsets/12 batch=12 write_id=4f0c...]``), whose
  fields are also set on the log record (``record.checkpoint``, ``record.file``, ``record.batch``,
  ``record.version``, ``record.write_id``) for structured handlers;
- nothing at INFO per file.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from .protocol import is_log_batch_name
from .protocol import load as _load_protocol

__all__ = ["FileContext", "announce_root", "checkpoint_root", "file_context", "forget_announced_roots"]

_LOG_DIRECTORIES = frozenset({"offsets", "commits", "_spark_metadata"})
"""Directories that hold a metadata log's batches right under a checkpoint root (a sink's output for
``_spark_metadata``)."""
_STATE_FILE = re.compile(_load_protocol()["file_names"]["state_file"])


def _split(path: str) -> tuple[str, list[str]]:
    """The part of ``path`` no root can be shorter than (``s3://bucket``, ``file://``, ``/`` or ``""``), and the
    segments after it."""
    if "://" in path:
        scheme, rest = path.split("://", 1)
        authority, _, key = rest.partition("/")
        return f"{scheme}://{authority}", [s for s in key.split("/") if s]
    if path.startswith("/"):
        return "", ["", *[s for s in path.split("/") if s]]
    return "", [s for s in path.split("/") if s]


def _join(base: str, segments: list[str]) -> str:
    if not base:
        if segments == [""]:
            return "/"
        return "/".join(segments) or "."
    return "/".join([base, *segments])


def _root_index(segments: list[str]) -> tuple[int, str]:
    """Where the checkpoint root ends among ``segments`` (those of a file's path), and what the file is in it: a
    ``log`` batch file's directory, a ``state`` store file, ``metadata``, or ``other`` (the file's directory is taken
    for the root)."""
    n = len(segments)
    if n >= 2 and segments[-2] in _LOG_DIRECTORIES:
        return n - 2, "log"
    if n >= 3 and segments[-3] == "sources":
        return n - 3, "log"
    for i in range(n - 3, -1, -1):  # <root>/state/<operator>/...: the rightmost such "state"
        if segments[i] == "state" and segments[i + 1].isdigit():
            return i, "state"
    if n >= 1 and segments[-1] in ("metadata", ".metadata.crc"):
        return n - 1, "metadata"
    return max(n - 1, 0), "other"


def checkpoint_root(path: str) -> str:
    """The checkpoint root of the file ``path``: the part before ``offsets/``, ``commits/``, ``sources/<n>/``,
    ``state/<operator>/``, the checkpoint's ``metadata`` file, or ``_spark_metadata/`` (whose root is a file sink's
    output directory); for any other file, its directory."""
    base, segments = _split(path)
    end, _ = _root_index(segments)
    return _join(base, segments[:end])


@dataclass(frozen=True)
class FileContext:
    """A file as a log line names it: its checkpoint ``root``, the ``file`` (its full path), the ``batch`` id a
    metadata-log file's name gives (``offsets/12``, ``sources/0/12.compact``: 12), the ``version`` a state store
    file's name gives (``state/0/3/12.delta``: 12, a state version, not a batch id), and the ``write_id`` of the
    write (``""`` when there is none)."""

    root: str
    file: str
    batch: int | None = None
    version: int | None = None
    write_id: str = ""

    def __str__(self) -> str:
        fields = [f"checkpoint={self.root}", f"file={self.file}"]
        if self.batch is not None:
            fields.append(f"batch={self.batch}")
        if self.version is not None:
            fields.append(f"version={self.version}")
        if self.write_id:
            fields.append(f"write_id={self.write_id}")
        return "[" + " ".join(fields) + "]"

    def extra(self) -> dict[str, Any]:
        """The fields, for ``logging``'s ``extra``."""
        return {"checkpoint": self.root, "file": self.file, "batch": self.batch, "version": self.version,
                "write_id": self.write_id}


def _leading_number(name: str) -> int:
    digits = ""
    for ch in name:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits)


def file_context(path: str, write_id: str = "") -> FileContext:
    """The :class:`FileContext` of the file ``path`` written with ``write_id``."""
    base, segments = _split(path)
    end, kind = _root_index(segments)
    name = segments[-1] if segments else ""
    batch = _leading_number(name) if kind == "log" and is_log_batch_name(name) else None
    version = _leading_number(name) if kind == "state" and _STATE_FILE.fullmatch(name) else None
    return FileContext(_join(base, segments[:end]), path, batch, version, write_id)


_announced_lock = threading.Lock()
_announced: set[str] = set()


def announce_root(logger: logging.Logger, path: str, how: str) -> None:
    """Log at INFO, the first time in this process a file is written under the checkpoint root of ``path``, how
    this manager writes there (``how``). A file outside a checkpoint's layout (a file sink's data files, in as many
    partition directories as there are partitions) announces nothing: that would be an INFO per directory."""
    base, segments = _split(path)
    end, kind = _root_index(segments)
    if kind == "other":
        return
    root = _join(base, segments[:end])
    with _announced_lock:
        if root in _announced:
            return
        _announced.add(root)
    logger.info("checkpoint %s: %s", root, how, extra={"checkpoint": root})


def forget_announced_roots() -> None:
    """Forget which roots were announced (for tests)."""
    with _announced_lock:
        _announced.clear()
