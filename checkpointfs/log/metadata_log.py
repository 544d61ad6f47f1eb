"""MetadataLog: Spark's HDFSMetadataLog over any CheckpointFileManager.

One file per batch, ``<dir>/<batchId>``. A batch is written once, with ``create_atomic(overwrite_if_possible=False)``:
when the file is already there the store refuses the write and :meth:`MetadataLog.add` returns False. No existence
check comes before a write, so two racing writers are settled by the store alone, and a batch is never overwritten.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from .. import paths
from ..contract import CheckpointFileManager, FileStatus
from ..errors import CorruptLogError, FileAlreadyExistsError, PathNotFoundError
from . import names
from .io import LineWriter, LogLines, open_lines

log = logging.getLogger(__name__)

T = TypeVar("T")

_PURGE_WITHOUT_LISTING = 3


class MetadataLog(abc.ABC, Generic[T]):
    """A log of one metadata value per batch id in directory ``path``, read and written through ``manager``.

    Subclasses give the file format (:meth:`write_batch`, :meth:`read_batch`). Reads never change the log; a file
    that cannot be parsed raises :class:`~checkpointfs.errors.CorruptLogError` naming it. Names in the directory that
    are not batch ids (``.0.crc``, temp files, ``_SUCCESS``) are ignored, as Spark ignores them.
    """

    compactible = False
    """Whether names may carry the ``.compact`` suffix."""

    def __init__(self, manager: CheckpointFileManager, path: str, *, read_only: bool = False) -> None:
        if not path:
            raise ValueError("a log needs a directory path")
        self.manager = manager
        self.path = path.rstrip("/") or "/"
        self._last_purged = -1
        if not read_only:
            manager.mkdirs(self.path)

    # -- the format -----------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def write_batch(self, out: LineWriter, metadata: T) -> None:
        """Write ``metadata`` as the content of a batch file."""

    @abc.abstractmethod
    def read_batch(self, lines: LogLines) -> T:
        """Parse a batch file."""

    # -- names ----------------------------------------------------------------------------------------------------
    def batch_path(self, batch_id: int) -> str:
        """The file of ``batch_id``."""
        return paths.join(self.path, str(batch_id))

    def batch_id_of(self, name: str) -> int | None:
        """The batch id of file name ``name``, None when it is not a batch file."""
        return names.batch_id_of(name, self.compactible)

    # -- writing --------------------------------------------------------------------------------------------------
    def add(self, batch_id: int, metadata: T) -> bool:
        """Store ``metadata`` as batch ``batch_id``; False when that batch already exists (it is left unchanged)."""
        return self.add_by_writer(batch_id, lambda out: self.write_batch(out, metadata))

    def add_by_writer(self, batch_id: int, fill: Callable[[LineWriter], None]) -> bool:
        """Write batch ``batch_id`` with ``fill``; False when the batch already exists. If ``fill`` raises, the
        write is cancelled (nothing becomes visible) and the error propagates."""
        if batch_id < 0:
            raise ValueError(f"batch id must not be negative, got {batch_id}")
        path = self.batch_path(batch_id)
        try:
            stream = self.manager.create_atomic(path, overwrite_if_possible=False)
        except FileAlreadyExistsError:
            log.info("%s: batch %d already exists", self.path, batch_id)
            return False
        try:
            writer = LineWriter(stream)
            fill(writer)
            writer.flush()
        except BaseException:
            stream.cancel()
            raise
        try:
            stream.close()
        except FileAlreadyExistsError:
            log.info("%s: batch %d already exists (another writer won)", self.path, batch_id)
            return False
        return True

    # -- reading --------------------------------------------------------------------------------------------------
    def get(self, batch_id: int) -> T | None:
        """Batch ``batch_id``, or None when it does not exist."""
        try:
            return self.read_file(self.batch_path(batch_id))
        except PathNotFoundError:
            return None

    def read_file(self, path: str) -> T:
        """Parse the batch file at ``path``; PathNotFoundError when absent."""
        with open_lines(self.manager, path) as lines:
            return self.read_batch(lines)

    def batch_files(self) -> list[tuple[int, FileStatus]]:
        """``(batch id, status)`` of every batch file on the store, by batch id."""
        found = []
        for status in self.manager.list(self.path):
            batch_id = self.batch_id_of(status.name)
            if batch_id is not None and not status.is_dir:
                found.append((batch_id, status))
        return sorted(found, key=lambda item: item[0])

    def batch_ids(self) -> list[int]:
        """The batch ids on the store, ascending."""
        return [batch_id for batch_id, _ in self.batch_files()]

    def latest_batch_id(self) -> int | None:
        """The highest batch id on the store (read from the listing, no file opened), None for an empty log."""
        ids = self.batch_ids()
        return ids[-1] if ids else None

    def get_latest(self) -> tuple[int, T] | None:
        """The latest batch and its metadata, None for an empty log."""
        latest = self.latest_batch_id()
        if latest is None:
            return None
        return latest, self._existing(latest)

    def get_range(self, start: int | None = None, end: int | None = None) -> list[tuple[int, T]]:
        """Batches ``start`` to ``end`` (both inclusive, either open), ascending. The range must be complete:
        a missing ``start`` or ``end`` raises PathNotFoundError, a hole in between CorruptLogError."""
        if start is not None and end is not None and start > end:
            raise ValueError(f"start {start} is after end {end}")
        ids = [i for i in self.batch_ids() if (start is None or i >= start) and (end is None or i <= end)]
        self._verify_range(ids, start, end)
        return [(batch_id, self._existing(batch_id)) for batch_id in ids]

    def _verify_range(self, ids: list[int], start: int | None, end: int | None) -> None:
        if start is not None and (not ids or ids[0] != start):
            raise PathNotFoundError(self.batch_path(start), f"batch {start} does not exist (asked for {start}..{end})")
        if end is not None and (not ids or ids[-1] != end):
            raise PathNotFoundError(self.batch_path(end), f"batch {end} does not exist (asked for {start}..{end})")
        if ids:
            missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
            if missing:
                raise CorruptLogError(self.path, f"batches {_ranges(missing)} are missing between {ids[0]} and "
                                                 f"{ids[-1]}")

    def _existing(self, batch_id: int) -> T:
        path = self.batch_path(batch_id)
        try:
            return self.read_file(path)
        except PathNotFoundError:
            raise CorruptLogError(path, f"batch {batch_id} was listed but cannot be read: it disappeared") from None

    # -- clean-up -------------------------------------------------------------------------------------------------
    def purge(self, threshold: int) -> None:
        """Delete every batch below ``threshold`` (exclusive)."""
        candidates = range(self._last_purged + 1, threshold)
        if len(candidates) <= _PURGE_WITHOUT_LISTING:
            for batch_id in candidates:
                self.manager.delete(self.batch_path(batch_id))
        else:
            for batch_id, status in self.batch_files():
                if batch_id < threshold:
                    self.manager.delete(status.path)
        self._last_purged = threshold - 1

    def purge_after(self, threshold: int) -> None:
        """Delete every batch above ``threshold`` (exclusive)."""
        for batch_id, status in self.batch_files():
            if batch_id > threshold:
                self.manager.delete(status.path)


def _ranges(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:10])
    return shown + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
