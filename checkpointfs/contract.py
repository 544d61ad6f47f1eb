"""The CheckpointFileManager contract (the Python mirror of Spark's trait). docs/contract.md states it in words;
tests/conformance checks every implementation against it."""

from __future__ import annotations

import abc
import io
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO

from .metrics import RequestMetrics

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
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._state = "open"
        self._state_lock = threading.Lock()
        self._written = 0

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
        self._write(view)
        self._written += len(view)
        return len(view)

    def flush(self) -> None:
        """No-op: data is published only by :meth:`close`."""

    def close(self) -> None:
        """Publish what was written. A no-op after close or cancel."""
        with self._state_lock:
            if self._state != "open":
                return
            self._state = "closing"
        try:
            self._publish()
        finally:
            self._state = "closed"

    def cancel(self) -> None:
        """Discard what was written; nothing of it becomes visible. A no-op after close or cancel."""
        with self._state_lock:
            if self._state != "open":
                return
            self._state = "cancelling"
        try:
            self._discard()
        finally:
            self._state = "cancelled"

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

    metrics: RequestMetrics

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
