"""FileSink: a rolling file sink for object stores, after Apex Malhar's AbstractFileOutputOperator.

Rows are routed to directories by a user function, written as JSON lines (or Parquet), in part files rotated by
size and by number of batches, optionally compressed. Open part files live in an LRU cache bounded by
``max_open_files``: an evicted one is closed (published) and a later row of its route starts a new part. A part file
is visible to manifest readers only once its batch is committed to ``_spark_metadata`` through the commit protocol,
so Spark and :func:`~checkpointfs.sink.committed_files` never see a partial batch.

Batches and durability: with ``rotation_batches=1`` (the default) each :meth:`FileSink.write_batch` commits its
batch before returning. With ``rotation_batches=N`` part files stay open across up to N batches and the group
commits when it closes them: until then its batches are pending, and after a crash the caller must replay from
``committed_through + 1`` (engines that never replay a returned batch, such as Spark's foreachBatch, need N=1).
A batch id already committed is skipped.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Literal

from .. import paths
from ..clock import Clock, system_clock
from ..contract import CheckpointFileManager
from ..errors import CorruptLogError, FileAlreadyExistsError
from ..factory import manager_for
from ..log.names import COMPACT_SUFFIX
from ..log.sink_log import METADATA_DIR, FileStreamSinkLog
from .commit_protocol import ManifestCommitProtocol, TaskAttempt
from .formats import PartWriter, Row, part_format
from .gc import collect_garbage
from .groups import GROUPS_DIR, GroupLog, GroupRecord
from .manifest_paths import canonical_manifest_path, canonical_store_path, from_manifest_path

log = logging.getLogger(__name__)

Router = Callable[[Row], "str | None"]
"""Maps a row to the directory (relative to the sink's path, e.g. ``date=2024-05-01``) its part file goes to;
``""`` or None for the sink's own directory."""


class FileSink:
    """Writes batches of rows under ``path`` with exactly-once commits. See the module doc.

    Options: ``partition_by`` (a :data:`Router`), ``format`` (``json`` or ``parquet``), ``compression`` (None,
    ``gzip``, ``zstd``), ``max_bytes`` (rotate a part once this many bytes went to the store), ``rotation_batches``,
    ``max_open_files``, ``sse``/``sse_kms_key_id`` (server-side encryption, passed to the S3 manager),
    the sink log's ``compact_interval``, ``min_batches_to_retain``, ``cleanup_delay_ms``, ``deletion``,
    ``retention_ms``, ``gc_grace_ms`` (the age below which :meth:`gc` leaves unreferenced files alone), and
    ``listing_lag_s`` (how long a batch id past the last committed one waits for a lagging store to show the
    batches before it, before it is refused as out of order).
    Without ``manager``, one is made by :func:`checkpointfs.manager_for` with ``manager_options``.
    """

    def __init__(
        self,
        path: str,
        *,
        manager: CheckpointFileManager | None = None,
        partition_by: Router | None = None,
        format: Literal["json", "parquet"] = "json",
        compression: Literal["gzip", "zstd"] | None = None,
        max_bytes: int | None = None,
        rotation_batches: int = 1,
        max_open_files: int = 100,
        sse: Literal["AES256", "aws:kms"] | None = None,
        sse_kms_key_id: str | None = None,
        compact_interval: int = 10,
        min_batches_to_retain: int = 100,
        cleanup_delay_ms: int = 600_000,
        deletion: bool = True,
        retention_ms: int | None = None,
        gc_grace_ms: int = 3_600_000,
        listing_lag_s: float = 5.0,
        clock: Clock = system_clock,
        **manager_options: Any,
    ) -> None:
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        if rotation_batches < 1:
            raise ValueError(f"rotation_batches must be at least 1, got {rotation_batches}")
        if max_open_files < 1:
            raise ValueError(f"max_open_files must be at least 1, got {max_open_files}")
        self.extension, self._new_writer = part_format(format, compression)
        if manager is None:
            if sse:
                manager_options["sse"] = sse
            if sse_kms_key_id:
                manager_options["sse_kms_key_id"] = sse_kms_key_id
            manager = manager_for(path, **manager_options)
            self._owns_manager = True
        else:
            if sse or sse_kms_key_id or manager_options:
                raise ValueError("with a ready manager, set encryption and options on the manager itself")
            self._owns_manager = False
        self.manager = manager
        self.path = path.rstrip("/")
        self.partition_by = partition_by
        self.max_bytes = max_bytes
        self.rotation_batches = rotation_batches
        self.max_open_files = max_open_files
        self.gc_grace_ms = gc_grace_ms
        self.listing_lag_s = listing_lag_s
        self.clock = clock
        self.sink_log = FileStreamSinkLog(
            manager, paths.join(self.path, METADATA_DIR), compact_interval, min_batches_to_retain, cleanup_delay_ms,
            deletion, retention_ms, clock=clock)
        self._groups = GroupLog(manager, paths.join(self.path, GROUPS_DIR), read_only=True)
        self._open: OrderedDict[str, PartWriter] = OrderedDict()
        self._pending: list[int] = []
        self._protocol: ManifestCommitProtocol | None = None
        self._task: TaskAttempt | None = None
        self._counter = 0
        self._closed = False
        self._needs_recovery = False
        self.committed_through = self._recover()

    # -- recovery -------------------------------------------------------------------------------------------------
    def _recover(self) -> int:
        """The last committed batch id (-1 for none), after finishing a group commit a crash interrupted."""
        committed = self._latest_committed()
        record_ids = self._groups.batch_ids()
        if not record_ids:
            return committed
        first = record_ids[-1]
        record = self._groups.get(first)
        if record is None:
            raise CorruptLogError(self._groups.batch_path(first), "group record vanished while recovering")
        if first > committed + 1:
            raise CorruptLogError(self._groups.batch_path(first),
                                  f"group record for batch {first} but the sink log ends at batch {committed}")
        if first == committed + 1:
            log.warning("%s: finishing the commit of batches %d..%d interrupted by a crash", self.path, first,
                        record.last_batch_id)
            self.sink_log.add(first, record.files)
        for batch_id in range(max(first + 1, committed + 1), record.last_batch_id + 1):
            self.sink_log.add(batch_id, [])
        for old in record_ids[:-1]:
            self.manager.delete(self._groups.batch_path(old))
        return max(committed, record.last_batch_id)

    def _latest_committed(self) -> int:
        """The latest sink-log batch: the listing's, then probed forward by name, since a store's listing may lag
        behind its latest writes (one HEAD per probe)."""
        latest = self.sink_log.latest_batch_id()
        committed = -1 if latest is None else latest
        while self._batch_exists(committed + 1):
            committed += 1
        return committed

    def _batch_exists(self, batch_id: int) -> bool:
        plain = paths.join(self.sink_log.path, str(batch_id))
        return self.manager.exists(plain) or self.manager.exists(plain + COMPACT_SUFFIX)

    # -- writing --------------------------------------------------------------------------------------------------
    def write_batch(self, batch_id: int, rows: Iterable[Row]) -> bool:
        """Write ``rows`` as batch ``batch_id``. False (nothing written) when the batch is already committed. Batch
        ids must follow each other. On an error every pending batch is abandoned: its files are deleted or never
        become visible, and the caller resumes from ``committed_through + 1``."""
        self._check_open()
        if batch_id <= self.committed_through:
            log.info("%s: skipping batch %d, already committed", self.path, batch_id)
            return False
        expected = self._pending[-1] + 1 if self._pending else self.committed_through + 1
        if batch_id > expected and not self._pending:
            if self._caught_up_to(batch_id):
                log.info("%s: skipping batch %d, already committed", self.path, batch_id)
                return False
            expected = self.committed_through + 1
        if batch_id != expected:
            raise ValueError(f"{self.path}: batch {batch_id} is out of order; the next batch is {expected}")
        if not self._pending:
            self._start_job(batch_id)
        self._pending.append(batch_id)
        try:
            for row in rows:
                self._write_row(row)
        except BaseException:
            self._abort()
            raise
        if len(self._pending) >= self.rotation_batches:
            return self._commit_group()
        return True

    def _caught_up_to(self, batch_id: int) -> bool:
        """Look again, for up to ``listing_lag_s``, for committed batches a lagging store did not show yet; True
        when ``batch_id`` turns out to be committed."""
        deadline = time.monotonic() + self.listing_lag_s
        delay = 0.05
        while True:
            self.committed_through = self._recover()
            if batch_id <= self.committed_through:
                return True
            if batch_id == self.committed_through + 1 or time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def flush(self) -> None:
        """Close the open part files and commit the pending batches now."""
        self._check_open()
        if self._pending:
            self._commit_group()

    @property
    def pending_batches(self) -> list[int]:
        """Batches written but not yet committed."""
        return list(self._pending)

    def _start_job(self, batch_id: int) -> None:
        self._protocol = ManifestCommitProtocol(self.manager, self.path, self.sink_log, batch_id, clock=self.clock)
        self._protocol.setup_job()
        self._task = self._protocol.setup_task(0)
        self._counter = 0

    def _write_row(self, row: Row) -> None:
        route = self._route(row)
        writer = self._open.get(route)
        if writer is None:
            writer = self._open_part(route)
        else:
            self._open.move_to_end(route)
        writer.write(row)
        if self.max_bytes is not None and writer.bytes_written() >= self.max_bytes:
            del self._open[route]
            writer.close()

    def _route(self, row: Row) -> str:
        if self.partition_by is None:
            return ""
        route = self.partition_by(row) or ""
        segments = route.strip("/").split("/") if route.strip("/") else []
        for segment in segments:
            if segment in ("", ".", "..") or segment.startswith(("_", ".")):
                raise ValueError(f"partition_by gave {route!r}: directory names must not be empty, '.', '..' or "
                                 "start with '_' or '.'")
        return "/".join(segments)

    def _open_part(self, route: str) -> PartWriter:
        assert self._protocol is not None and self._task is not None
        while len(self._open) >= self.max_open_files:
            evicted_route, evicted = self._open.popitem(last=False)
            log.debug("%s: closing the part of %r (least recently used)", self.path, evicted_route)
            evicted.close()
        stream = self._protocol.create_task_file(self._task, route or None, f"-c{self._counter:03d}{self.extension}")
        self._counter += 1
        writer = self._new_writer(stream)
        self._open[route] = writer
        return writer

    def _commit_group(self) -> bool:
        """Close the open parts and commit the pending batches; False when a single pending batch turned out to be
        committed already (a listing that lagged hid it): its new files are then deleted."""
        protocol, task = self._protocol, self._task
        assert protocol is not None and task is not None
        try:
            while self._open:
                _, writer = self._open.popitem(last=False)
                writer.close()
            statuses = protocol.commit_task(task)
            protocol.on_task_commit(statuses)
        except BaseException:
            self._abort()
            raise
        first, last = self._pending[0], self._pending[-1]
        self._pending = []
        self._protocol = self._task = None
        if first == last:
            try:
                protocol.commit_job([statuses])
            except FileAlreadyExistsError:
                # The store refused the batch file: this batch is committed already. Ours are unreferenced files.
                log.warning("%s: batch %d was already committed (the listing lagged); dropping this attempt's %d "
                            "files", self.path, first, len(task.added))
                for path in task.added:
                    self.manager.delete(path)
                self.committed_through = max(self.committed_through, first)
                return False
            except BaseException:
                self._needs_recovery = True  # the commit may or may not have landed: never delete these files
                raise
            self.committed_through = last
            return True
        try:
            if not self._groups.add(first, GroupRecord(last, statuses)):
                raise FileAlreadyExistsError(self._groups.batch_path(first), f"Race while writing batch {first}")
            protocol.commit_job([statuses])
            for batch_id in range(first + 1, last + 1):
                if not self.sink_log.add(batch_id, []):
                    raise FileAlreadyExistsError(self.sink_log.batch_path(batch_id),
                                                 f"Race while writing batch {batch_id}")
        except BaseException:
            # The commit may or may not have landed: never delete these files here; learn the state again first.
            self._needs_recovery = True
            raise
        self.committed_through = last
        for old in self._groups.batch_ids():
            if old < first:
                self.manager.delete(self._groups.batch_path(old))
        return True

    def _abort(self) -> None:
        protocol, task = self._protocol, self._task
        while self._open:
            _, writer = self._open.popitem(last=False)
            writer.cancel()
        if protocol is not None and task is not None:
            protocol.abort_task(task)
            protocol.abort_job()
        if self._pending:
            log.warning("%s: abandoned pending batches %s; resume from batch %d", self.path, self._pending,
                        self.committed_through + 1)
        self._pending = []
        self._protocol = self._task = None

    # -- reading and housekeeping ---------------------------------------------------------------------------------
    def committed_files(self) -> list[str]:
        """The committed part files, as store paths (retention of the sink log applied)."""
        return [from_manifest_path(status.path) for status in self.sink_log.all_files() if not status.is_dir]

    def gc(self, grace_ms: int | None = None) -> list[str]:
        """Delete the part files under the sink's path that no manifest entry references and that were last
        modified more than ``grace_ms`` (default ``gc_grace_ms``) ago; files of pending batches are kept. Returns the
        deleted paths."""
        self._check_open()
        grace = self.gc_grace_ms if grace_ms is None else grace_ms
        keep = {canonical_manifest_path(status.path) for status in self.sink_log.all_files()}
        if self._task is not None:
            keep.update(canonical_store_path(path) for path in self._task.added)
        return collect_garbage(self.manager, self.path, keep, self.clock() - grace)

    def close(self) -> None:
        """Commit pending batches and release the manager if this sink made it."""
        if self._closed:
            return
        try:
            if self._pending:
                self._commit_group()
        finally:
            self._closed = True
            if self._owns_manager:
                self.manager.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self.path}: the sink is closed")
        if self._needs_recovery:
            self.committed_through = self._recover()
            self._needs_recovery = False

    def __enter__(self) -> FileSink:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self._abort()
            self._closed = True
            if self._owns_manager:
                self.manager.close()
