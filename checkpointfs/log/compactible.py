"""CompactibleLog: Spark's CompactibleFileStreamLog, with compaction that streams.

Every ``compact_interval`` batches, the batch is written as ``<id>.compact`` holding every live entry: those of the
previous compaction file and of the batches since, then the batch's own. The compaction reads its inputs line by
line and writes as it reads, so its memory does not grow with the length of the log. Old batch files are deleted by
Spark's rule (see :meth:`CompactibleLog.delete_expired`).
"""

from __future__ import annotations

import abc
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import ClassVar, TypeVar

from .. import paths
from ..clock import Clock, system_clock
from ..contract import CheckpointFileManager
from ..errors import CorruptLogError, PathNotFoundError
from . import names
from .io import LineWriter, LogLines, open_lines
from .metadata_log import MetadataLog

log = logging.getLogger(__name__)

E = TypeVar("E")

COMPACT_LATENCY_WARN_MS = 2000


class CompactibleLog(MetadataLog[list[E]]):
    """A log whose batches are lists of entries, compacted every ``compact_interval`` batches.

    - ``compact_interval``: the default interval; a log that already holds ``.compact`` files keeps the interval
      they were written with (re-derived from their names as Spark does).
    - ``min_batches_to_retain``, ``cleanup_delay_ms``, ``deletion``: after each batch, when ``deletion`` is on,
      files older than the first compaction batch that keeps ``min_batches_to_retain`` batches, and last modified
      more than ``cleanup_delay_ms`` ago, are deleted.

    Subclasses give the entry format (:meth:`encode_entry`, :meth:`decode_entry`) and may drop entries
    (:meth:`should_retain`).
    """

    compactible = True
    version = 1
    """The version written on the first line, and the highest read."""
    canonical_entries: ClassVar[re.Pattern[str] | None] = None
    """Matches a run of entry lines (joined by ``\\n``) only when each line is exactly what :meth:`encode_entry`
    makes of what :meth:`decode_entry` reads from it (the same bytes as Spark writes). A compaction that drops
    nothing copies such runs as they are instead of decoding and encoding every entry. None: no such shortcut."""

    def __init__(
        self,
        manager: CheckpointFileManager,
        path: str,
        compact_interval: int = 10,
        min_batches_to_retain: int = 100,
        cleanup_delay_ms: int = 600_000,
        deletion: bool = True,
        *,
        read_only: bool = False,
        clock: Clock = system_clock,
    ) -> None:
        if compact_interval <= 0:
            raise ValueError(f"compact_interval must be positive, got {compact_interval}")
        if min_batches_to_retain <= 0:
            raise ValueError(f"min_batches_to_retain must be positive, got {min_batches_to_retain}")
        super().__init__(manager, path, read_only=read_only)
        self.default_compact_interval = compact_interval
        self.min_batches_to_retain = min_batches_to_retain
        self.cleanup_delay_ms = cleanup_delay_ms
        self.deletion = deletion
        self.clock = clock
        self._compact_interval: int | None = None

    # -- the entry format -----------------------------------------------------------------------------------------
    @abc.abstractmethod
    def encode_entry(self, entry: E) -> str:
        """One entry as a JSON line (without the line end)."""

    @abc.abstractmethod
    def decode_entry(self, lines: LogLines, obj: object) -> E:
        """One entry from its parsed JSON; CorruptLogError (``lines.corrupt``) when malformed."""

    def should_retain(self, entry: E, now_ms: int) -> bool:
        """Whether ``entry`` is kept at compaction and returned by :meth:`all_files`; all are by default."""
        return True

    def retains_all(self) -> bool:
        """Whether :meth:`should_retain` keeps every entry, so a compaction need not look at them; a subclass that
        overrides :meth:`should_retain` overrides this too."""
        return type(self).should_retain is CompactibleLog.should_retain

    # -- names ----------------------------------------------------------------------------------------------------
    @property
    def compact_interval(self) -> int:
        """The interval in force: derived once, on first use, from the ``.compact`` files on the store."""
        if self._compact_interval is None:
            compact_ids = [batch_id for batch_id, status in self.batch_files()
                           if status.name.endswith(names.COMPACT_SUFFIX)]
            self._compact_interval = names.compact_interval_from_listing(self.default_compact_interval, compact_ids)
            if self._compact_interval != self.default_compact_interval:
                log.info("%s: compact interval %d from the existing .compact files (default %d)", self.path,
                         self._compact_interval, self.default_compact_interval)
        return self._compact_interval

    def is_compaction_batch(self, batch_id: int) -> bool:
        """Whether ``batch_id`` is written as a ``.compact`` file."""
        return names.is_compaction_batch(batch_id, self.compact_interval)

    def batch_path(self, batch_id: int) -> str:
        suffix = names.COMPACT_SUFFIX if self.is_compaction_batch(batch_id) else ""
        return paths.join(self.path, f"{batch_id}{suffix}")

    # -- the file format ------------------------------------------------------------------------------------------
    def write_batch(self, out: LineWriter, metadata: list[E]) -> None:
        out.write(f"v{self.version}")
        for entry in metadata:
            out.write("\n")
            out.write(self.encode_entry(entry))

    def read_batch(self, lines: LogLines) -> list[E]:
        return list(self._entries(lines))

    def _entries(self, lines: LogLines) -> Iterator[E]:
        lines.version(self.version)
        for line in lines:
            yield self.decode_entry(lines, lines.json_line(line))

    def iter_batch(self, batch_id: int) -> Iterator[E]:
        """The entries of batch ``batch_id``, read as they are consumed; PathNotFoundError when it is absent."""
        with open_lines(self.manager, self.batch_path(batch_id)) as lines:
            yield from self._entries(lines)

    # -- writing --------------------------------------------------------------------------------------------------
    def add(self, batch_id: int, entries: Iterable[E]) -> bool:  # type: ignore[override]
        """Store batch ``batch_id`` (a compaction when its id says so); False when it already exists. Entries may be
        any iterable: a plain batch is written as it is iterated. Expired files are deleted after a successful add
        when ``deletion`` is on."""
        if self.is_compaction_batch(batch_id):
            added = self._compact(batch_id, list(entries))
        else:
            added = self.add_by_writer(batch_id, lambda out: self.write_batch(out, entries))  # type: ignore[arg-type]
        if added and self.deletion:
            self.delete_expired(batch_id)
        return added

    def purge(self, threshold: int) -> None:
        """Not supported: a compactible log manages its own clean-up (Spark refuses it too)."""
        raise NotImplementedError(f"{self.path}: a compactible log deletes its expired files itself; purge is refused")

    def compaction_filter(
        self, batch_id: int, sources: list[int], entries: list[E], cache: dict[int, list[E]]
    ) -> Callable[[E, int], bool] | None:
        """A pre-pass before compacting ``sources`` (batch ids) and the new ``entries`` into ``batch_id``: may
        return a predicate over ``(entry, position)`` that drops entries; positions are -1 for the previous
        ``.compact`` file's entries, then count the entries of the other sources and the new ones in order. None
        keeps everything. Batches read here may be put in ``cache`` so the compaction does not read them again."""
        return None

    def _compact(self, batch_id: int, entries: list[E]) -> bool:
        started = time.monotonic()
        now = self.clock()
        sources = list(names.batches_before_compaction(batch_id, self.compact_interval))
        cache: dict[int, list[E]] = {}
        keep = self.compaction_filter(batch_id, sources, entries, cache)
        retain = self.should_retain
        verbatim = self.canonical_entries if keep is None and self.retains_all() else None

        def fill(out: LineWriter) -> None:
            out.write(f"v{self.version}")
            position = 0

            def emit(entry: E, from_compact: bool) -> None:
                nonlocal position
                where = -1 if from_compact else position
                if not from_compact:
                    position += 1
                if retain(entry, now) and (keep is None or keep(entry, where)):
                    out.write("\n")
                    out.write(self.encode_entry(entry))

            for source in sources:
                from_compact = self.is_compaction_batch(source)
                if verbatim is not None and source not in cache:
                    self._copy_batch(source, batch_id, verbatim, out)
                    continue
                for entry in cache.pop(source) if source in cache else self._needed_batch(source, batch_id):
                    emit(entry, from_compact)
            for entry in entries:
                emit(entry, False)

        added = self.add_by_writer(batch_id, fill)
        elapsed_ms = (time.monotonic() - started) * 1000
        if elapsed_ms >= COMPACT_LATENCY_WARN_MS:
            log.warning("%s: compacting batch %d took %.0f ms", self.path, batch_id, elapsed_ms)
        else:
            log.debug("%s: compacting batch %d took %.0f ms", self.path, batch_id, elapsed_ms)
        return added

    def _needed_batch(self, source: int, for_batch: int) -> Iterator[E]:
        try:
            yield from self.iter_batch(source)
        except PathNotFoundError:
            raise self._missing(source, for_batch) from None

    def _missing(self, source: int, for_batch: int) -> CorruptLogError:
        return CorruptLogError(self.batch_path(source), f"batch {source} is missing, and the compaction of batch "
                                                        f"{for_batch} needs it (compact interval "
                                                        f"{self.compact_interval})")

    def _copy_batch(self, source: int, for_batch: int, canonical: re.Pattern[str], out: LineWriter) -> None:
        """Append every entry of batch ``source`` to ``out``: runs of lines that ``canonical`` matches as they are,
        other lines decoded and encoded again (which checks them and writes them as Spark would)."""
        try:
            with open_lines(self.manager, self.batch_path(source)) as lines:
                lines.version(self.version)
                for run in lines.runs():
                    if canonical.fullmatch(run):
                        out.write("\n")
                        out.write(run)
                        continue
                    for line in lines.lines_of(run):
                        out.write("\n")
                        out.write(self.encode_entry(self.decode_entry(lines, lines.json_line(line))))
        except PathNotFoundError:
            raise self._missing(source, for_batch) from None

    # -- reading the live set -------------------------------------------------------------------------------------
    def all_files(self) -> list[E]:
        """Every live entry: the latest compaction file and the batches after it, without the entries
        :meth:`should_retain` drops. A batch deleted by a concurrent compaction is retried as Spark does."""
        now = self.clock()
        latest = self.latest_batch_id()
        while latest is not None:
            try:
                return self.live_entries(names.valid_batches(latest, self.compact_interval), now)
            except PathNotFoundError as e:
                expected = names.next_compaction_batch_id(latest, self.compact_interval)
                latest = self.latest_batch_id()
                if latest is None or latest < expected:
                    raise CorruptLogError(e.path, f"batch file missing while reading the live entries (latest batch "
                                                  f"{latest}, compact interval {self.compact_interval})") from None
                log.info("%s: a batch vanished while reading; retrying from batch %d", self.path, latest)
        return []

    def live_entries(self, batch_ids: range, now_ms: int) -> list[E]:
        """The retained entries of ``batch_ids``, in log order."""
        return [entry for batch_id in batch_ids for entry in self.iter_batch(batch_id)
                if self.should_retain(entry, now_ms)]

    # -- deleting expired files -----------------------------------------------------------------------------------
    def delete_expired(self, current_batch_id: int) -> list[str]:
        """Spark's rule: once ``compact_interval <= current + 1 - min_batches_to_retain``, delete the batch files
        (plain and ``.compact``) below the first compaction batch that keeps ``min_batches_to_retain`` batches,
        if last modified at least ``cleanup_delay_ms`` ago. Returns the deleted paths."""
        interval = self.compact_interval
        if interval > current_batch_id + 1 - self.min_batches_to_retain:
            return []
        min_batch_id = current_batch_id + 1 - self.min_batches_to_retain
        min_compaction_batch_id = min_batch_id - (min_batch_id % interval) - 1
        expired_before = self.clock() - self.cleanup_delay_ms
        deleted = []
        for batch_id, status in self.batch_files():
            if batch_id < min_compaction_batch_id and status.modification_time_ms <= expired_before:
                self.manager.delete(status.path)
                deleted.append(status.path)
        if deleted:
            log.info("%s: deleted %d expired batch files below batch %d", self.path, len(deleted),
                     min_compaction_batch_id)
        return deleted
