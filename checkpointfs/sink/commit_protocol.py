"""ManifestCommitProtocol: Spark's ManifestFileCommitProtocol in Python.

Tasks write part files (``part-<split>-<uuid><ext>``) through the manager, so on S3 a part file is invisible until
its stream is closed, and never visible if cancelled. A job's commit adds the tasks' files to the sink log as one
batch: only then do readers that honour the manifest see them. Files of a failed task or job are deleted.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from .. import paths
from ..clock import Clock, system_clock
from ..contract import CancellableOutputStream, CheckpointFileManager
from ..errors import CheckpointFsError, FileAlreadyExistsError, PathNotFoundError
from ..log.sink_log import FileStreamSinkLog, SinkFileStatus
from .manifest_paths import from_manifest_path, to_manifest_path

log = logging.getLogger(__name__)


@dataclass
class TaskAttempt:
    """One task's files: ``added`` (paths given out), and the statuses of those written through
    :meth:`ManifestCommitProtocol.create_task_file` once closed."""

    split: int
    added: list[str] = field(default_factory=list)
    written: dict[str, SinkFileStatus] = field(default_factory=dict)
    streams: list[TrackedStream] = field(default_factory=list)


class TrackedStream(CancellableOutputStream):
    """A part file's stream that records the file's size and close time in its task when it is published."""

    def __init__(self, inner: CancellableOutputStream, task: TaskAttempt, clock: Clock) -> None:
        super().__init__(inner.path)
        self._inner = inner
        self._task = task
        self._clock = clock

    def _write(self, data: memoryview) -> None:
        self._inner.write(data)

    def _publish(self) -> None:
        size = self._inner.tell()
        self._inner.close()
        self._task.written[self.path] = SinkFileStatus(to_manifest_path(self.path), size,
                                                       modification_time=self._clock())

    def _discard(self) -> None:
        self._inner.cancel()


class ManifestCommitProtocol:
    """Commits the part files of batch ``batch_id`` written under ``output_dir`` into ``sink_log``.

    The order is Spark's: :meth:`setup_job`, then per task :meth:`setup_task`, :meth:`new_task_temp_file` or
    :meth:`create_task_file`, :meth:`commit_task` (or :meth:`abort_task`) and :meth:`on_task_commit`; finally
    :meth:`commit_job` (or :meth:`abort_job`).
    """

    def __init__(self, manager: CheckpointFileManager, output_dir: str, sink_log: FileStreamSinkLog, batch_id: int,
                 *, clock: Clock = system_clock) -> None:
        self.manager = manager
        self.output_dir = output_dir.rstrip("/")
        self.sink_log = sink_log
        self.batch_id = batch_id
        self.clock = clock
        self.pending: list[str] | None = None

    def setup_job(self) -> None:
        """Start the job: no files pending."""
        self.pending = []

    def setup_task(self, split: int = 0) -> TaskAttempt:
        """Start task number ``split``."""
        if split < 0:
            raise ValueError(f"split must not be negative, got {split}")
        return TaskAttempt(split)

    def new_task_temp_file(self, task: TaskAttempt, dir: str | None, ext: str) -> str:
        """A new part file path ``<output>[/<dir>]/part-<split:05d>-<uuid><ext>`` for the task to write through
        the manager (its size is read back at :meth:`commit_task`)."""
        name = f"part-{task.split:05d}-{uuid.uuid4()}{ext}"
        base = paths.join(self.output_dir, dir) if dir else self.output_dir
        path = paths.join(base, name)
        task.added.append(path)
        return path

    def create_task_file(self, task: TaskAttempt, dir: str | None, ext: str) -> TrackedStream:
        """A new part file opened for writing; its size and time are recorded when it is closed."""
        path = self.new_task_temp_file(task, dir, ext)
        stream = TrackedStream(self.manager.create_atomic(path, overwrite_if_possible=False), task, self.clock)
        task.streams.append(stream)
        return stream

    def commit_task(self, task: TaskAttempt) -> list[SinkFileStatus]:
        """The statuses of the task's files. Files given out by :meth:`new_task_temp_file` are looked up by listing
        their directories; a cancelled tracked file is left out; a tracked file still open is an error."""
        open_paths = [s.path for s in task.streams if not s.closed]
        if open_paths:
            raise ValueError(f"close or cancel the task's files before committing it: {open_paths[:3]}")
        cancelled = {s.path for s in task.streams if s.cancelled}
        unknown = [p for p in task.added if p not in task.written and p not in cancelled]
        listed = self._stat(unknown)
        statuses = []
        for path in task.added:
            if path in task.written:
                statuses.append(task.written[path])
            elif path in listed:
                statuses.append(listed[path])
        return statuses

    def _stat(self, files: list[str]) -> dict[str, SinkFileStatus]:
        found: dict[str, SinkFileStatus] = {}
        by_dir: dict[str, set[str]] = {}
        for path in files:
            by_dir.setdefault(paths.parent(path), set()).add(path)
        for directory, wanted in by_dir.items():
            for status in self.manager.list(directory, lambda child, w=wanted: child in w):  # type: ignore[misc]
                found[status.path] = SinkFileStatus(to_manifest_path(status.path), status.size,
                                                    modification_time=status.modification_time_ms)
        missing = [p for p in files if p not in found]
        if missing:
            raise PathNotFoundError(missing[0], f"a part file of the task does not exist ({len(missing)} missing)")
        return found

    def abort_task(self, task: TaskAttempt) -> None:
        """Cancel the task's open files and delete the ones already written (best effort)."""
        for stream in task.streams:
            stream.cancel()
        for path in task.added:
            self._delete_quietly(path)

    def on_task_commit(self, statuses: list[SinkFileStatus]) -> None:
        """Note a committed task's files as pending until the job commits."""
        self._require_job().extend(status.path for status in statuses)

    def commit_job(self, task_commits: Iterable[list[SinkFileStatus]]) -> None:
        """Add every task's files to the sink log as batch ``batch_id``. If the batch exists already, raise
        FileAlreadyExistsError reading "Race while writing batch <id>" (the files are then left for gc)."""
        statuses = [status for commit in task_commits for status in commit]
        self._require_job().clear()  # never delete files that may already be in the manifest
        if not self.sink_log.add(self.batch_id, statuses):
            raise FileAlreadyExistsError(self.sink_log.batch_path(self.batch_id),
                                         f"Race while writing batch {self.batch_id}")
        log.info("%s: committed batch %d (%d files)", self.output_dir, self.batch_id, len(statuses))

    def abort_job(self) -> None:
        """Delete the files of committed tasks of a job that will not commit (best effort)."""
        pending = self._require_job()
        for manifest_path in pending:
            self._delete_quietly(self._store_form(from_manifest_path(manifest_path)))
        pending.clear()

    def _store_form(self, local_or_uri: str) -> str:
        parsed = paths.parse(self.output_dir)
        if parsed.scheme in paths.S3_SCHEMES and local_or_uri.startswith(("s3a://", "s3n://", "s3://")):
            return f"{parsed.scheme}://{local_or_uri.split('://', 1)[1]}"
        return local_or_uri

    def _delete_quietly(self, path: str) -> None:
        try:
            self.manager.delete(path)
        except CheckpointFsError as e:
            log.warning("%s: could not delete %s (%s); continuing", self.output_dir, path, e.cause)

    def _require_job(self) -> list[str]:
        if self.pending is None:
            raise RuntimeError("setup_job must be called first")
        return self.pending
