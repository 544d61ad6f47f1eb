"""The shape every server a test starts shares (the embedded S3, in or out of process, MinIO, MiniDFSCluster)."""

from __future__ import annotations

import os
import signal
import subprocess
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+


class TestServer:
    """A server a test starts: ``start()`` returns it once it serves, ``stop()`` stops what ``start()`` started, and
    ``with server:`` does both."""

    __test__ = False  # not a pytest test class, despite its name

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class ProcessServer(TestServer):
    """A test server that runs as a process of its own (MinIO, MiniDFSCluster, Kafka), kept in ``_process`` by
    ``start()`` and stopped by its pid."""

    _process: subprocess.Popen[Any] | None = None

    @property
    def pid(self) -> int:
        """The server process's id (the one :meth:`stop` stops)."""
        if self._process is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._process.pid

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def _terminate(self, grace_s: float = 15) -> None:
        """Stop the server process by its pid: SIGTERM (a controlled shutdown), then SIGKILL if it is still running
        after ``grace_s``; forget it either way."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()

