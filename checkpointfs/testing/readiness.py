"""Waiting for a test server to be ready: a real request polled until it succeeds, never a fixed sleep.

A process that is alive, or a port that accepts connections, is not a server that serves: MinIO answers S3
requests with ``XMinioServerNotInitialized`` while its storage initialises, a NameNode refuses writes while in
safe mode, a Spark master accepts workers only once elected. Every fixture that starts a server (MinIO, the
MiniDFSCluster, Kafka, the Spark standalone master and workers, the Spark Connect server) waits with
:func:`wait_ready`: a *probe* makes the first request a test would make and either returns (ready) or raises
:class:`NotReady` with the answer it got (connection refused, 503, safe mode, ...), which is retried until the
deadline. Deadlines are generous (:data:`STARTUP_TIMEOUT_S`): on a loaded 2-core machine a JVM takes minutes, not
seconds, to start, and a fixture that waits too little fails a test that would have passed.

When the deadline passes or the process exits first, :class:`ServerNotReadyError` names the server, the deadline,
the last answer and the end of the server's log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from ..polling import poll_until

log = logging.getLogger(__name__)

T = TypeVar("T")

STARTUP_TIMEOUT_S = 300.0
"""How long a test server may take to become ready: a JVM with a cluster inside takes 20-40 s on an idle 2-core
machine and several times that while another process keeps both cores busy."""
MAX_POLL_DELAY_S = 1.0
"""The longest pause between two probes (they start at 50 ms and double)."""


class NotReady(Exception):
    """Raised by a probe: the server is still starting. The message is the answer it gave (or the connection
    error), reported if the deadline passes."""


class ServerNotReadyError(RuntimeError):
    """A test server did not become ready by its deadline, or its process exited while starting."""

    def __init__(self, server: str, timeout_s: float, last_answer: str, log_path: Path | None = None,
                 exit_code: int | None = None) -> None:
        self.server = server
        self.timeout_s = timeout_s
        self.last_answer = last_answer
        self.exit_code = exit_code
        what = (f"{server} exited ({exit_code}) before it was ready" if exit_code is not None
                else f"{server} was not ready within {timeout_s:.0f}s")
        tail = log_tail(log_path)
        super().__init__(f"{what}; last answer: {last_answer}"
                         + (f"\n--- end of {log_path} ---\n{tail}" if tail else ""))


def log_tail(path: Path | None, lines: int = 30) -> str:
    """The last ``lines`` lines of the log at ``path`` ('' when there is none)."""
    if path is None:
        return ""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class _Ready(Generic[T]):
    """A probe's result, so that a probe that returns None still counts as ready."""

    def __init__(self, value: T) -> None:
        self.value = value


def wait_ready(server: str, probe: Callable[[], T], timeout_s: float = STARTUP_TIMEOUT_S, *,
               exit_code: Callable[[], int | None] | None = None, log_path: Path | None = None,
               max_delay_s: float = MAX_POLL_DELAY_S) -> T:
    """Call ``probe`` until it returns, and return its result; while it raises :class:`NotReady`, wait (50 ms,
    doubling up to ``max_delay_s``) and call it again. Any other exception of the probe propagates at once: a
    real answer that is not "not yet" (wrong credentials, a bad request) is the caller's to judge.

    ``exit_code`` (e.g. ``process.poll``) is checked before every probe: a server process that exits fails the
    wait at once. :class:`ServerNotReadyError` names ``server``, the deadline, the last answer and the end of
    ``log_path``."""
    start = time.monotonic()
    last = ["no answer yet"]
    probes = [0]

    def check() -> _Ready[T] | None:
        code = exit_code() if exit_code is not None else None
        if code is not None:
            raise ServerNotReadyError(server, timeout_s, last[0], log_path, exit_code=code)
        probes[0] += 1
        try:
            return _Ready(probe())
        except NotReady as answer:
            if str(answer) != last[0]:
                log.debug("%s not ready yet: %s", server, answer)
            last[0] = str(answer)
            return None

    ready = poll_until(check, start + timeout_s, first_delay_s=0.05, max_delay_s=max_delay_s)
    if ready is None:
        raise ServerNotReadyError(server, timeout_s, last[0], log_path)
    log.debug("%s ready after %.1fs (%d probes)", server, time.monotonic() - start, probes[0])
    return ready.value
