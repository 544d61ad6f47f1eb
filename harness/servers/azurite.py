"""AzuriteServer: Azurite (github.com/Azure/Azurite, Microsoft's emulator of Azure Storage), its Blob service alone,
on 127.0.0.1 for tests.

Azurite is the pinned npm release :data:`AZURITE_VERSION`, installed with ``npm install`` into a cache outside any
repository (``~/.cache/checkpointfs/azurite/<version>/``, or ``$CHECKPOINTFS_AZURITE_BIN`` naming an ``azurite-blob``
to use), once, on first use; ``python -m harness.servers.azurite`` installs it (``make backends`` does) and
prints the path of its ``azurite-blob``. 3.35.0 is the newest release whose ``package.json`` accepts Node 20 (3.36
asks for Node 21, 3.37 for 22).

The server runs in its own process (``azurite-blob``: the Blob service only, in memory, on a free port), started by
:meth:`AzuriteServer.start`, which waits until a real request (creating the containers) succeeds, and stopped by its
pid in :meth:`AzuriteServer.stop`. It runs with ``--skipApiVersionCheck``: the Python SDK sends its newest service
version (2026-10-06 for azure-storage-blob 12.31), which Azurite 3.35 does not list and would refuse with 400
InvalidHeaderValue; skipping the check keeps the version production clients send, rather than pinning an older one in
the client. Credentials are Azurite's well-known development account (``devstoreaccount1``).
"""

from __future__ import annotations

import argparse
import fcntl
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checkpointfs.testing.readiness import NotReady, wait_ready
from checkpointfs.testing.server import ProcessServer

from .go_tools import cache_dir

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+

log = logging.getLogger(__name__)

AZURITE_VERSION = "3.35.0"
"""The pinned Azurite release (an npm version of ``azurite``)."""
ACCOUNT_NAME = "devstoreaccount1"
"""Azurite's development account."""
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""The development account's well-known key (published by Microsoft; not a secret)."""
INSTALL_TIMEOUT_S = 600
_LISTENING = re.compile(r"Blob service successfully listens on http://127\.0\.0\.1:(\d+)")


class AzuriteUnavailableError(RuntimeError):
    """Azurite could not be installed or started; the message says why."""


def binary_path() -> Path:
    """Where the pinned ``azurite-blob`` is (or will be) installed; ``$CHECKPOINTFS_AZURITE_BIN`` names another."""
    override = os.environ.get("CHECKPOINTFS_AZURITE_BIN")
    if override:
        return Path(override)
    return cache_dir() / "azurite" / AZURITE_VERSION / "node_modules" / ".bin" / "azurite-blob"


def ensure_binary() -> Path:
    """The installed ``azurite-blob``, installed with ``npm install azurite@<version>`` first if absent (half a
    minute, once). One install at a time (a file lock), into a temporary prefix renamed into place, so that an
    interrupted install never leaves a half-written one in the cache."""
    target = binary_path()
    if target.is_file():
        return target
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise AzuriteUnavailableError(f"Azurite is not installed at {target} and Node.js (node, npm) is not on PATH")
    home = target.parent.parent.parent  # <cache>/azurite/<version>
    home.parent.mkdir(parents=True, exist_ok=True)
    with (home.parent / f".lock-{AZURITE_VERSION}").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        log.warning("installing azurite %s with npm into %s (one time)", AZURITE_VERSION, home)
        staging = Path(tempfile.mkdtemp(dir=home.parent, prefix=f".install-{AZURITE_VERSION}-"))
        try:
            command = [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(staging),
                       f"azurite@{AZURITE_VERSION}"]
            try:
                done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      timeout=INSTALL_TIMEOUT_S, check=False)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise AzuriteUnavailableError(f"could not run npm install azurite@{AZURITE_VERSION}: {e}") from e
            if done.returncode != 0 or not (staging / "node_modules" / ".bin" / "azurite-blob").is_file():
                raise AzuriteUnavailableError(
                    f"npm install azurite@{AZURITE_VERSION} failed (npm registry unreachable?):\n{done.stdout[-4000:]}")
            if home.exists():
                shutil.rmtree(home)
            os.replace(staging, home)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def abfs_hadoop_conf(host: str, account_name: str = ACCOUNT_NAME, account_key: str = ACCOUNT_KEY) -> dict[str, str]:
    """hadoop-azure's ABFS settings (Hadoop keys) for a flat-namespace account over the Blob endpoint at ``host``
    (``127.0.0.1:<port>``: Azurite, or a proxy in front of it), with the account's Shared Key (by default Azurite's
    published development key: no secret): what ``configure(azure=...)`` sets for that endpoint, account and key
    (:func:`checkpointfs.spark.stores.azure_settings`, for the installed pyspark's line)."""
    from checkpointfs.spark._jars import running_line
    from checkpointfs.spark.stores import azure_settings

    return azure_settings({"endpoint": f"http://{host}", "account": account_name, "account_key": account_key},
                          running_line())


class AzuriteServer(ProcessServer):
    """An Azurite Blob service on 127.0.0.1 (a free port, plain HTTP, in memory) with ``containers`` created. Use as
    a context manager or call :meth:`start`/:meth:`stop`. ``extra_args`` go to ``azurite-blob`` (``--loose``...)."""

    account_name = ACCOUNT_NAME
    account_key = ACCOUNT_KEY

    def __init__(self, containers: Iterable[str] = ("checkpoints",), *, startup_timeout_s: float = 120.0,
                 extra_args: Iterable[str] = ()) -> None:
        self.containers = list(containers)
        self._startup_timeout_s = startup_timeout_s
        self._extra_args = list(extra_args)
        self._process: subprocess.Popen[bytes] | None = None
        self._port = 0
        self._base: str | None = None
        self.log_path: Path | None = None

    # -- life cycle ---------------------------------------------------------------------------------------------
    def start(self) -> Self:
        """Start Azurite (installing it first if needed) and wait until it has created the containers."""
        if self._process is not None:
            return self
        binary = ensure_binary()
        self._base = tempfile.mkdtemp(prefix="checkpointfs-azurite-")
        self.log_path = Path(self._base) / "azurite.log"
        # --blobPort 0: the OS picks a free port, which the log names; in memory, so nothing is written to disk
        command = [str(binary), "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence",
                   "--skipApiVersionCheck", "--disableTelemetry", *self._extra_args]
        with open(self.log_path, "ab") as out:
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                             cwd=self._base)
        try:
            wait_ready(f"Azurite {AZURITE_VERSION}", self._probe, self._startup_timeout_s,
                       exit_code=self._process.poll, log_path=self.log_path)
        except BaseException:
            self.stop()
            raise
        log.info("Azurite %s (pid %s) serving at %s", AZURITE_VERSION, self.pid, self.endpoint_url)
        return self

    def _probe(self) -> None:
        """Ready once the log names the port and the containers can be created there (a real request)."""
        if not self._port:
            assert self.log_path is not None
            found = _LISTENING.search(self.log_path.read_text(errors="replace"))
            if found is None:
                raise NotReady("not listening yet")
            self._port = int(found.group(1))
        from azure.core.exceptions import ServiceRequestError

        try:
            for container in self.containers:
                self.create_container(container)
        except ServiceRequestError as e:
            raise NotReady(f"cannot connect: {type(e).__name__}") from None

    def stop(self) -> None:
        """Stop Azurite by its pid and delete its temporary directory."""
        self._terminate()
        self._port = 0
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None

    # -- what clients need --------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port the Blob service listens on."""
        if not self._port:
            raise RuntimeError("AzuriteServer is not started")
        return self._port

    @property
    def endpoint_url(self) -> str:
        """The account's Blob endpoint: ``http://127.0.0.1:<port>/devstoreaccount1``."""
        return f"http://127.0.0.1:{self.port}/{self.account_name}"

    @property
    def connection_string(self) -> str:
        """The development account's connection string for this server."""
        return (f"DefaultEndpointsProtocol=http;AccountName={self.account_name};AccountKey={self.account_key};"
                f"BlobEndpoint={self.endpoint_url};")

    def manager_options(self, endpoint_url: str | None = None) -> dict[str, Any]:
        """Keyword options for ``manager_for("az://...")`` to reach this server (or ``endpoint_url``: a proxy in
        front of it, whose URL path carries the account too)."""
        return {"endpoint_url": endpoint_url or self.endpoint_url, "account_name": self.account_name,
                "account_key": self.account_key}

    def uri(self, key: str = "", container: str | None = None) -> str:
        """``az://<container>/<key>`` (the first container by default)."""
        return f"az://{container or self.containers[0]}/{key.lstrip('/')}"

    def service(self, endpoint_url: str | None = None) -> Any:
        """A ``BlobServiceClient`` of the development account on this server (or ``endpoint_url``), SDK retries
        off: for a test's own requests, not counted by any store."""
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient(endpoint_url or self.endpoint_url, retry_total=0,
                                 credential={"account_name": self.account_name, "account_key": self.account_key})

    def create_container(self, name: str) -> None:
        """Create container ``name`` (no error if it exists)."""
        from azure.core.exceptions import ResourceExistsError

        with self.service() as service:
            try:
                service.create_container(name)
            except ResourceExistsError:
                pass

    def keys(self, prefix: str = "", container: str | None = None, *, uncommitted: bool = False) -> list[str]:
        """The names of the committed blobs under ``prefix`` (``uncommitted``: also the names that have only
        uncommitted blocks)."""
        include = ["uncommittedblobs"] if uncommitted else None
        with self.service() as service:
            blobs = service.get_container_client(container or self.containers[0]).list_blobs(
                name_starts_with=prefix or None, include=include)
            return sorted(str(b.name) for b in blobs)

    def put(self, key: str, data: bytes, container: str | None = None, metadata: dict[str, str] | None = None) -> None:
        """Write blob ``key`` (replacing it), uncounted."""
        with self.service() as service:
            service.get_blob_client(container or self.containers[0], key).upload_blob(
                data, overwrite=True, metadata=metadata)

    def delete(self, key: str, container: str | None = None) -> None:
        """Delete blob ``key``, uncounted."""
        with self.service() as service:
            service.get_blob_client(container or self.containers[0], key).delete_blob()

    def fresh_prefix(self, name: str = "test") -> str:
        """A key prefix of its own for a test (the server is shared, not emptied)."""
        return f"{name}/{uuid.uuid4().hex[:12]}"


def main(argv: list[str] | None = None) -> int:
    """``python -m harness.servers.azurite``: install the pinned Azurite if needed and print the path of its
    ``azurite-blob``."""
    argparse.ArgumentParser(prog="python -m harness.servers.azurite", description=main.__doc__).parse_args(argv)
    try:
        print(ensure_binary())
    except AzuriteUnavailableError as e:
        print(f"checkpointfs: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.exit(main())
