"""The CheckpointFileManager contract (the Python mirror of Spark's trait). docs/contract.md states it in words;
tests/conformance checks every implementation against it."""

from __future__ import annotations

import abc
import contextlib
import io
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO

from . import events
from .errors import FileAlreadyExistsError, WriteOutcomeUnknownError
from .metrics import CheckpointMetrics, OperationCall, RequestMetrics

log = logging.getLogger(__name__)

BytesLike = bytes | bytearray | memoryview
"""What :meth:`CancellableOutputStream.write` accepts."""

PathFilter = Callable[[str], bool]
"""A predicate over full child paths, as given to :meth:`CheckpointFileManager.list`."""


@dataclass(frozen=True)
class FileStatus:
    """One entry of a listing: the full path (in the form the directory was given), size in bytes, whether it is a
    directory, and the last modification time in milliseconds since the epoch (0 where the store has none)."""

    path: str
    size: int
    is_dir: bool
    modification_time_ms: int

    @property
    def name(self) -> str:
        """The last segment of the path."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]


class CancellableOutputStream(io.RawIOBase):
    """A binary output stream whose data becomes visible at its path only through :meth:`close`.

    - :meth:`close` publishes the data whole; :meth:`cancel` discards it and never makes any of it visible.
    - As a context manager: a normal exit closes, an exception cancels and re-raises.
    - Writing after close or cancel raises :class:`ValueError`; cancel after close, close after cancel, and a
      second close are no-ops. A close that raised has finished: what it leaves is what its error says.
    - A stream dropped without close or cancel is cancelled when collected, never published.

    Subclasses implement :meth:`_write`, :meth:`_publish` and :meth:`_discard`.

    ``call``: the manager's measure of the create this stream belongs to (:class:`~checkpointfs.metrics.OperationCall`):
    ``write``, ``close`` and ``cancel`` run with it in progress; the stream finishes it when closed or cancelled,
    counting the bytes published, a cancel, and a conflict or an unknown outcome (each also a WARN naming the file,
    its checkpoint and the stream's ``write_id`` where it has one, :mod:`checkpointfs.events`).
    """

    def __init__(self, path: str, call: OperationCall | None = None) -> None:
        super().__init__()
        self.path = path
        self._state = "open"
        self._state_lock = threading.Lock()
        self._written = 0
        self._call = call

    # -- what subclasses provide --------------------------------------------------------------------------------
    @abc.abstractmethod
    def _write(self, data: memoryview) -> None:
        """Accept ``data`` (the stream is open)."""

    @abc.abstractmethod
    def _publish(self) -> None:
        """Make everything written visible at the path, whole. On failure, leave nothing behind that the error
        does not speak of."""

    @abc.abstractmethod
    def _discard(self) -> None:
        """Drop everything written so that none of it is ever visible."""

    # -- the stream -----------------------------------------------------------------------------------------------
    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:  # type: ignore[override]
        """True once closed or cancelled."""
        return self._state != "open"

    @property
    def cancelled(self) -> bool:
        """True once cancelled."""
        return self._state == "cancelled"

    def tell(self) -> int:
        """Bytes written so far."""
        return self._written

    def write(self, data: BytesLike) -> int:  # type: ignore[override]
        """Write ``data``; return its length."""
        if self._state != "open":
            raise ValueError(f"{self.path}: write to a stream that is already {self._state}")
        view = memoryview(data).cast("B")
        call = self._call
        if call is None:
            self._write(view)
        else:  # _measured(), inlined: writes can be many and small
            token = call.enter()
            try:
                self._write(view)
            except BaseException:
                call.fail()
                raise
            finally:
                call.exit(token)
        self._written += len(view)
        return len(view)

    @contextlib.contextmanager
    def _measured(self) -> Iterator[None]:
        """Run the block with the stream's call in progress; an error raised marks it failed."""
        if self._call is None:
            yield
            return
        with self._call.active():
            try:
                yield
            except BaseException:
                self._call.fail()
                raise

    def _ended(self, error: BaseException | None, *, published: bool, cancelled: bool = False) -> None:
        """Finish the stream's call: the bytes published, a cancel, a conflict or an unknown outcome."""
        call = self._call
        if call is None:
            return
        if published:
            call.count("bytesWritten", self._written)
        if cancelled:
            call.metrics.count("cancels")
        write_id = str(getattr(self, "write_id", ""))
        if isinstance(error, FileAlreadyExistsError) and call.operation == "createIfAbsent":
            call.metrics.count("conflicts")
            context = events.file_context(self.path, write_id)
            log.warning("conflict: %s; this write published nothing %s", error.cause, context,
                        extra=context.extra())
        elif isinstance(error, WriteOutcomeUnknownError):
            call.metrics.count("unknownOutcomes")
            context = events.file_context(self.path, write_id)
            log.warning("unknown outcome: %s; the query must fail %s", error.cause, context, extra=context.extra())
        call.finish(error)

    def flush(self) -> None:
        """No-op: data is published only by :meth:`close`."""

    def close(self) -> None:
        """Publish what was written. A no-op after close or cancel."""
        with self._state_lock:
            if self._state != "open":
                return
            self._state = "closing"
        error: BaseException | None = None
        try:
            with self._measured():
                self._publish()
        except BaseException as e:
            error = e
            raise
        finally:
            self._state = "closed"
            self._ended(error, published=error is None)

    def cancel(self) -> None:
        """Discard what was written; nothing of it becomes visible. A no-op after close or cancel."""
        with self._state_lock:
            if self._state != "open":
                return
            self._state = "cancelling"
        error: BaseException | None = None
        try:
            with self._measured():
                self._discard()
        except BaseException as e:
            error = e
            raise
        finally:
            self._state = "cancelled"
            self._ended(error, published=False, cancelled=True)

    def __enter__(self) -> CancellableOutputStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.cancel()

    def __del__(self) -> None:
        if getattr(self, "_state", None) == "open":
            log.warning("%s: output stream dropped without close() or cancel(); cancelling it", self.path)
            try:
                self.cancel()
            except Exception:
                log.exception("%s: cancel of a dropped stream failed", self.path)


class CheckpointFileManager(abc.ABC):
    """Reads and writes checkpoint files with atomic visibility: the contract of docs/contract.md.

    Paths are full URIs (``s3://bucket/key``, ``file:///dir/f``) or local paths. Managers are thread-safe.
    """

    metrics: CheckpointMetrics
    """The metrics of ``protocol.json``'s table (calls, requests, bytes, failures and latency per operation;
    conflicts, retries, store checks, ...): :mod:`checkpointfs.metrics`."""
    requests: RequestMetrics
    """The requests sent to the store, by the store's own operation names (``PutObject``, ``rename``)."""

    @abc.abstractmethod
    def create_atomic(self, path: str, overwrite_if_possible: bool = False) -> CancellableOutputStream:
        """A stream whose data becomes visible at ``path`` whole, on close, or never.

        With ``overwrite_if_possible=False`` the close never replaces an existing file: it raises
        :class:`~checkpointfs.errors.FileAlreadyExistsError` and leaves that file unchanged (the check may happen at
        create or at close). With True an existing file is replaced where the store allows.
        """

    @abc.abstractmethod
    def open(self, path: str) -> BinaryIO:
        """A readable binary stream of the file; :class:`~checkpointfs.errors.PathNotFoundError` if absent."""

    @abc.abstractmethod
    def list(self, path: str, filter: PathFilter | None = None) -> list[FileStatus]:
        """The direct children of directory ``path`` accepted by ``filter``, sorted by path; ``[]`` for an empty or
        absent directory. Paths keep the form of ``path``."""

    @abc.abstractmethod
    def mkdirs(self, path: str) -> None:
        """Make sure directory ``path`` can hold files (a no-op on stores without directories)."""

    @abc.abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file or a non-empty directory is at ``path``."""

    @abc.abstractmethod
    def delete(self, path: str) -> None:
        """Delete the file or directory tree at ``path``; an absent path is fine."""

    @property
    @abc.abstractmethod
    def is_local(self) -> bool:
        """Whether the manager works on the local file system."""

    def create_checkpoint_directory(self, path: str) -> str:
        """Create the checkpoint root ``path`` and return it, qualified as a full URI where it had no scheme."""
        self.mkdirs(path)
        return self.qualify(path)

    def qualify(self, path: str) -> str:
        """``path`` as a full URI."""
        return path

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default as in Spark's trait
        """Release the manager's resources (clients, connections). Further use is undefined."""

    def __enter__(self) -> CheckpointFileManager:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
