"""EmbeddedS3Process: the embedded S3 (:class:`~checkpointfs.testing.EmbeddedS3`) served from a child process of
its own, for benchmarks. In one process the store's CPU (moto parsing, hashing and assembling objects) shares the
client's interpreter and GIL, so a "distant" store's work would slow the client; in a child it runs on its own.

The parent talks to the child over a pipe: it reads and clears the request log, sets the fault plan (as a spec,
see :meth:`FaultPlan.from_spec`), resets the store, and stops the child by its handle. The child keeps object
bodies up to ``key_buffer_size`` in memory (moto's ``MOTO_S3_DEFAULT_KEY_BUFFER_SIZE``; moto's default spills
bodies over about 5 MiB to temporary files, which a real store's latency does not include).
"""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from . import endpoint
from .embedded_s3 import DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY, EmbeddedS3, s3_client
from .faults import FaultPlan
from .readiness import STARTUP_TIMEOUT_S
from .requests import Request
from .server import TestServer

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+

DEFAULT_KEY_BUFFER_SIZE = 1 << 30
"""Bodies up to 1 GiB stay in the child's memory."""
_STOP_TIMEOUT_S = 10.0


def _serve(conn: Connection, buckets: list[str], min_part_size: int | None, key_buffer_size: int) -> None:
    """The child: serve an EmbeddedS3 and answer the parent's commands until told to stop or the pipe closes."""
    os.environ["MOTO_S3_DEFAULT_KEY_BUFFER_SIZE"] = str(key_buffer_size)
    with EmbeddedS3(buckets, min_part_size=min_part_size) as s3:
        conn.send(s3.endpoint_url)
        while True:
            try:
                command, arg = conn.recv()
            except EOFError:
                return
            if command == "stop":
                conn.send(None)
                return
            try:
                conn.send(_command(s3, command, arg))
            except Exception as e:  # noqa: BLE001 - reported to the parent, which raises it
                conn.send(RuntimeError(f"embedded S3 child: {command} failed: {type(e).__name__}: {e}"))


def _command(s3: EmbeddedS3, command: str, arg: Any) -> Any:
    if command == "requests":
        return s3.requests.all()
    if command == "clear":
        s3.requests.clear()
        return None
    if command == "faults":
        s3.faults = FaultPlan.from_spec(arg) if arg is not None else FaultPlan()
        return None
    if command == "reset":  # keeps the fault plan, as the parent set it
        plan = s3.faults
        s3.reset()
        s3.faults = plan
        return None
    raise ValueError(f"unknown command {command!r}")


class EmbeddedS3Process(TestServer):
    """An embedded S3 in a child process (started with ``spawn``). Use as a context manager or call
    :meth:`start`/:meth:`stop`. Offers what benchmarks use of :class:`EmbeddedS3`: :attr:`endpoint_url`,
    :meth:`client`, :meth:`manager_options`, :meth:`uri`, the request log (:meth:`requests`,
    :meth:`clear_requests`), :meth:`set_faults` and :meth:`reset`."""

    region = "us-east-1"
    access_key = DEFAULT_ACCESS_KEY
    secret_key = DEFAULT_SECRET_KEY

    def __init__(self, buckets: list[str] | tuple[str, ...] = ("checkpoints",), *, min_part_size: int | None = None,
                 key_buffer_size: int = DEFAULT_KEY_BUFFER_SIZE) -> None:
        self.buckets = list(buckets)
        self._min_part_size = min_part_size
        self._key_buffer_size = key_buffer_size
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._endpoint_url: str | None = None

    # -- life cycle ---------------------------------------------------------------------------------------------
    def start(self) -> Self:
        """Start the child and wait until it serves (its buckets created), for up to 300 s."""
        if self._process is not None:
            return self
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, name="embedded-s3",
                                        args=(child, self.buckets, self._min_part_size, self._key_buffer_size))
        self._process.start()
        child.close()
        self._conn = parent
        # The child answers once its server has created the buckets (a served request), or closes the pipe.
        if not parent.poll(STARTUP_TIMEOUT_S):
            process, self._process, self._conn = self._process, None, None
            parent.close()
            process.terminate()  # by its handle: a child that never answered would not answer "stop" either
            process.join()
            raise RuntimeError(f"embedded S3 child (pid {process.pid}) did not serve within {STARTUP_TIMEOUT_S:.0f}s")
        try:
            self._endpoint_url = parent.recv()
        except EOFError:
            process = self._process
            self.stop()
            raise RuntimeError(
                f"embedded S3 child (pid {process.pid}) exited with code {process.exitcode} before serving (its "
                "error is on stderr above). The child is started with multiprocessing's 'spawn', which imports the "
                "calling script again: a script must start it from under `if __name__ == \"__main__\":`") from None
        return self

    def stop(self) -> None:
        """Tell the child to stop; end it by its handle if it does not within 10 s."""
        process, conn = self._process, self._conn
        self._process = self._conn = self._endpoint_url = None
        if conn is not None:
            try:
                conn.send(("stop", None))
                conn.recv()
            except (EOFError, OSError):
                pass
            conn.close()
        if process is not None:
            process.join(_STOP_TIMEOUT_S)
            if process.is_alive():
                process.terminate()
                process.join()

    @property
    def pid(self) -> int | None:
        """The child's process id (None when stopped)."""
        return self._process.pid if self._process is not None else None

    # -- control ------------------------------------------------------------------------------------------------
    def _call(self, command: str, arg: Any = None) -> Any:
        if self._conn is None:
            raise RuntimeError("EmbeddedS3Process is not started")
        self._conn.send((command, arg))
        answer = self._conn.recv()
        if isinstance(answer, Exception):
            raise answer
        return answer

    def requests(self) -> list[Request]:
        """Every request the child's store counted since the last :meth:`clear_requests`, in order."""
        answer: list[Request] = self._call("requests")
        return answer

    def clear_requests(self) -> None:
        """Forget the requests counted so far."""
        self._call("clear")

    def set_faults(self, spec: dict[str, Any] | str | None) -> None:
        """Put a fault plan in force, given as a spec of :meth:`FaultPlan.from_spec` (None: no faults)."""
        self._call("faults", spec)

    def reset(self) -> None:
        """Empty the store, recreate the buckets and clear the request log; the fault plan stays."""
        self._call("reset")

    # -- what clients need --------------------------------------------------------------------------------------
    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._endpoint_url is None:
            raise RuntimeError("EmbeddedS3Process is not started")
        return self._endpoint_url

    def client(self, admin: bool = False) -> Any:
        """A boto3 S3 client for the child's endpoint, as :meth:`EmbeddedS3.client`."""
        return s3_client(self.endpoint_url, self.region, self.access_key, self.secret_key, admin)

    def manager_options(self) -> dict[str, Any]:
        """Keyword options for :class:`~checkpointfs.DirectWriteManager` to reach the child's endpoint."""
        return endpoint.manager_options(self.endpoint_url, self.region, self.access_key, self.secret_key)

    def uri(self, key: str = "", bucket: str | None = None, scheme: str = "s3") -> str:
        """``s3://<bucket>/<key>`` for this store (the first bucket by default)."""
        return f"{scheme}://{bucket or self.buckets[0]}/{key.lstrip('/')}"
