"""MinioServer: a real MinIO server on 127.0.0.1 for tests, with a temporary data directory and free ports.

The binary is the pinned MinIO release built with ``go install`` into a cache outside any repository
(``~/.cache/checkpointfs/minio/<version>/minio``, or ``$CHECKPOINTFS_MINIO_BIN``), built once on first use:
``python -m harness.servers.minio`` builds it (if needed) and prints its path.

The server runs in its own process, started by :meth:`MinioServer.start` and stopped by its pid in
:meth:`MinioServer.stop`. It offers the same helpers as :class:`~checkpointfs.testing.EmbeddedS3`
(``client``, ``manager_options``, ``hadoop_conf``, ``uri``, ``keys``, ``open_uploads``), without request counting
or fault injection: MinIO is the real thing.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError, ReadTimeoutError

from checkpointfs.testing import endpoint
from checkpointfs.testing.readiness import STARTUP_TIMEOUT_S, NotReady, ServerNotReadyError, wait_ready
from checkpointfs.testing.server import ProcessServer

from .go_tools import cached_binary, go_install

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+

log = logging.getLogger(__name__)

MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
"""The pinned MinIO release (a Go pseudo-version of github.com/minio/minio)."""
MINIO_MODULE = "github.com/minio/minio"
MIN_PART_SIZE = 5 * 1024 * 1024
"""MinIO enforces S3's minimum size of every multipart part but the last (moto can be told to accept less)."""


class MinioUnavailableError(RuntimeError):
    """MinIO could not be built or started; the message says why."""


def binary_path() -> Path:
    """Where the pinned MinIO binary is (or will be) cached (``$CHECKPOINTFS_MINIO_BIN`` names another)."""
    return cached_binary("minio", MINIO_VERSION, "CHECKPOINTFS_MINIO_BIN")


def ensure_binary() -> Path:
    """The cached MinIO binary, built with ``go install`` first if absent (a few minutes, once)."""
    return go_install(MINIO_MODULE, MINIO_VERSION, binary_path(), MinioUnavailableError)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_NOT_READY = frozenset({"XMinioServerNotInitialized", "XMinioReadQuorum", "XMinioWriteQuorum", "ServiceUnavailable",
                        "SlowDown"})
"""Error codes MinIO answers while it is still starting (each with 503 and ``Retry-After: 120``)."""


def not_ready_answer(error: Exception) -> str | None:
    """How ``error`` (of a boto3 call) says the server is still starting, or None when it says something else.

    Start-up answers: no connection yet (refused, closed, timed out), one of :data:`_NOT_READY`, or any 503.
    MinIO's ``Retry-After`` (120 s) is a hint for production clients: a starting test server is polled instead."""
    if isinstance(error, (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError)):
        return f"{type(error).__name__}: {error}"
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        meta = error.response.get("ResponseMetadata", {})
        status = meta.get("HTTPStatusCode", 0)
        if code in _NOT_READY or status == 503:
            retry_after = meta.get("HTTPHeaders", {}).get("retry-after")
            return f"HTTP {status} {code}" + (f" (Retry-After: {retry_after})" if retry_after else "")
    return None


class MinioServer(ProcessServer):
    """A MinIO server process on 127.0.0.1 for tests. Use as a context manager or call :meth:`start`/:meth:`stop`.

    ``root_user``/``root_password`` default to fresh random values (the password is never logged)."""

    def __init__(
        self,
        buckets: Iterable[str] = ("checkpoints",),
        *,
        region: str = "us-east-1",
        root_user: str | None = None,
        root_password: str | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        startup_timeout_s: float = STARTUP_TIMEOUT_S,
    ) -> None:
        self.buckets = list(buckets)
        self.region = region
        self.access_key = root_user or f"checkpointfs-{secrets.token_hex(4)}"
        self.secret_key = root_password or secrets.token_urlsafe(24)
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._own_data_dir: str | None = None
        self._startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._port = 0
        self._log_path: Path | None = None

    # -- life cycle ---------------------------------------------------------------------------------------------
    def start(self) -> Self:
        """Start the server (building the binary first if needed), wait until it is ready, create the buckets.

        Also after :meth:`kill` (a test's restart, on the same data directory): the same wait, the same retries.
        Ready means ``/minio/health/ready`` answers 200 and then the first S3 requests (creating the buckets, or
        ListBuckets when there are none) succeed; answers that say "still starting" are retried until
        ``startup_timeout_s``, and :class:`MinioUnavailableError` names the deadline, the last answer and the end of
        the server's log."""
        if self._process is not None:
            return self
        binary = ensure_binary()
        if self._data_dir is None:
            self._own_data_dir = tempfile.mkdtemp(prefix="checkpointfs-minio-")
            self._data_dir = Path(self._own_data_dir)
        data = self._data_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        self._log_path = self._data_dir / "minio.log"
        # Ports picked free just before the start; on the rare clash (the server exits at once), new ones.
        for attempt in range(3):
            self._port, console = _free_port(), _free_port()
            env = {**os.environ, "MINIO_ROOT_USER": self.access_key, "MINIO_ROOT_PASSWORD": self.secret_key,
                   "MINIO_BROWSER": "off", "MINIO_UPDATE": "off", "MINIO_REGION": self.region,
                   "MINIO_CI_CD": "1"}
            with open(self._log_path, "ab") as out:
                self._process = subprocess.Popen(
                    [str(binary), "server", str(data), "--address", f"127.0.0.1:{self._port}",
                     "--console-address", f"127.0.0.1:{console}", "--quiet"],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
            started = time.monotonic()
            try:
                self._wait_ready(self._startup_timeout_s)
                for bucket in self.buckets:
                    self.create_bucket(bucket)
                if not self.buckets:
                    self._until_served("ListBuckets", lambda client: client.list_buckets())
                break
            except ServerNotReadyError as e:
                self._terminate()
                if e.exit_code is None or attempt == 2:
                    raise MinioUnavailableError(str(e)) from None
                log.warning("MinIO exited while starting (%s), trying new ports", e.exit_code)
            except BaseException:
                self._terminate()
                raise
        log.info("MinIO (pid %s) serving at %s, ready after %.1fs", self.pid, self.endpoint_url,
                 time.monotonic() - started)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        """Wait until MinIO says it is ready to serve requests (``/minio/health/ready``: its storage initialised),
        not merely live: a live server still answers S3 requests with XMinioServerNotInitialized while it starts."""
        url = f"{self.endpoint_url}/minio/health/ready"

        def ready() -> None:
            try:
                with urllib.request.urlopen(url, timeout=5) as answer:
                    if answer.status != 200:
                        raise NotReady(f"{url}: HTTP {answer.status}")
            except urllib.error.HTTPError as e:
                retry_after = e.headers.get("Retry-After")
                raise NotReady(f"{url}: HTTP {e.code}" + (f" (Retry-After: {retry_after})" if retry_after else "")
                               ) from None
            except (urllib.error.URLError, OSError) as e:
                raise NotReady(f"{url}: {getattr(e, 'reason', e)}") from None

        assert self._process is not None
        wait_ready(f"MinIO (pid {self._process.pid}, {self.endpoint_url})", ready, timeout_s,
                   exit_code=self._process.poll, log_path=self._log_path)

    def _until_served(self, operation: str, call: Any) -> Any:
        """``call(client)`` (an S3 request), retried while the answer says the server is still starting."""
        assert self._process is not None
        client = self.client()

        def served() -> Any:
            try:
                return call(client)
            except (ClientError, EndpointConnectionError, ConnectionClosedError, ReadTimeoutError) as e:
                answer = not_ready_answer(e)
                if answer is None:
                    raise
                raise NotReady(f"{operation}: {answer}") from None

        return wait_ready(f"MinIO (pid {self._process.pid}, {self.endpoint_url})", served, self._startup_timeout_s,
                          exit_code=self._process.poll, log_path=self._log_path)

    def kill(self) -> None:
        """SIGKILL the server (a crash), keeping its data directory and credentials; :meth:`start` brings it back
        (on new ports)."""
        if self._process is not None:
            os.kill(self._process.pid, signal.SIGKILL)
            self._process.wait()
            self._process = None

    def stop(self) -> None:
        """Stop the server by its pid and delete the temporary data directory."""
        self._terminate()
        if self._own_data_dir is not None:
            shutil.rmtree(self._own_data_dir, ignore_errors=True)
            self._own_data_dir = None
            self._data_dir = None

    # -- what clients need --------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The S3 API port."""
        if self._process is None:
            raise RuntimeError("MinioServer is not started")
        return self._port

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def client(self, **config: Any) -> Any:
        """A boto3 S3 client with the root credentials (botocore's own retries off)."""
        return boto3.client(
            "s3", endpoint_url=self.endpoint_url, region_name=self.region,
            aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}, **config),
        )

    def manager_options(self) -> dict[str, Any]:
        """Keyword options for :class:`~checkpointfs.DirectWriteManager` or ``manager_for`` to reach this server."""
        return endpoint.manager_options(self.endpoint_url, self.region, self.access_key, self.secret_key)

    def hadoop_conf(self) -> dict[str, str]:
        """The ``fs.s3a.*`` settings for Hadoop's S3A (Spark: prefix each with ``spark.hadoop.``)."""
        return endpoint.hadoop_conf(self.endpoint_url, self.region, self.access_key, self.secret_key)

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` (no error if it exists). Answers that say the server is still starting
        (XMinioServerNotInitialized, a 503 with ``Retry-After``, a refused connection) are retried until the
        start-up timeout."""

        def create(client: Any) -> None:
            try:
                client.create_bucket(Bucket=name)
            except (client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists):
                pass

        self._until_served(f"CreateBucket {name}", create)

    def uri(self, key: str = "", bucket: str | None = None, scheme: str = "s3") -> str:
        """``s3://<bucket>/<key>`` on this server (the first bucket by default)."""
        return f"{scheme}://{bucket or self.buckets[0]}/{key.lstrip('/')}"

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """Every key under ``prefix``."""
        client = self.client()
        out: list[str] = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket or self.buckets[0], Prefix=prefix):
            out.extend(obj["Key"] for obj in page.get("Contents", []))
        return out

    def open_uploads(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """Keys under ``prefix`` of multipart uploads that were neither completed nor aborted.

        MinIO answers ListMultipartUploads only for an empty prefix or a prefix that is a whole key (S3 and moto
        take any prefix), so this lists the bucket's uploads and filters them here."""
        client = self.client()
        out: list[str] = []
        for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=bucket or self.buckets[0]):
            out.extend(u["Key"] for u in page.get("Uploads", []) if u["Key"].startswith(prefix))
        return out

def main(argv: list[str] | None = None) -> int:
    """``python -m harness.servers.minio``: build the pinned MinIO if needed and print the binary's path."""
    try:
        print(ensure_binary())
    except MinioUnavailableError as e:
        print(f"checkpointfs: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.exit(main())
