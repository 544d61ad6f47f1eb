"""FakeGcsServer: fake-gcs-server (github.com/fsouza/fake-gcs-server, an emulator of Google Cloud Storage's JSON
API) on 127.0.0.1 for tests, and Google's Cloud Storage connector for Hadoop (``gs://``) to reach it from Spark.

The server binary is the pinned release built with ``go install`` into a cache outside any repository
(``~/.cache/checkpointfs/fake-gcs-server/<version>/fake-gcs-server``, or ``$CHECKPOINTFS_FAKE_GCS_BIN``), built once
on first use. The connector is the pinned ``gcs-connector`` shaded jar of :mod:`checkpointfs.spark.lines` (every
dependency relocated under ``com.google.cloud.hadoop.repackaged``: nothing clashes with Spark's own jars), one pin
per range of Hadoop versions (:func:`running_connector` picks the installed pyspark's), fetched once as
``configure(gcs=...)`` fetches it (:func:`checkpointfs.spark.maven.gcs_connector_jar`: into
``~/.cache/checkpointfs/gcs-connector/<version>/``), or ``$CHECKPOINTFS_GCS_CONNECTOR_JAR``.
``python -m harness.servers.fake_gcs`` builds the server (if needed) and prints its path; ``--connector
[HADOOP_VERSION]`` also fetches the connector and prints the jar's path.

The server runs in its own process, started by :meth:`FakeGcsServer.start` and stopped by its pid in
:meth:`FakeGcsServer.stop`; it answers without authentication (so does the connector's ``UNAUTHENTICATED`` mode).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from checkpointfs.polling import poll
from checkpointfs.spark.lines import (
    GCS_ABSTRACT_FILESYSTEM_CLASS,
    GCS_CONNECTOR,
    GCS_FILESYSTEM_CLASS,
    HADOOP_35_GCS_SIZES,
    GcsConnector,
    gcs_connector_for,
)
from checkpointfs.spark.maven import JarResolutionError, gcs_connector_dir, gcs_connector_jar
from checkpointfs.testing.server import ProcessServer

from .go_tools import cached_binary, go_install

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+

log = logging.getLogger(__name__)

FAKE_GCS_VERSION = "v1.56.1"
"""The pinned fake-gcs-server release (a tag of github.com/fsouza/fake-gcs-server)."""
FAKE_GCS_MODULE = "github.com/fsouza/fake-gcs-server"


class FakeGcsUnavailableError(RuntimeError):
    """fake-gcs-server or the GCS connector could not be built, fetched or started; the message says why."""


class GcsRequestError(RuntimeError):
    """fake-gcs-server answered a request of :class:`FakeGcsServer`'s helpers with an error status."""

    def __init__(self, method: str, url: str, status: int, message: str) -> None:
        super().__init__(f"{method} {url}: {status} {message}")
        self.status = status


def binary_path() -> Path:
    """Where the pinned fake-gcs-server binary is (or will be) cached (``$CHECKPOINTFS_FAKE_GCS_BIN`` names another)."""
    return cached_binary("fake-gcs-server", FAKE_GCS_VERSION, "CHECKPOINTFS_FAKE_GCS_BIN")


def ensure_binary() -> Path:
    """The cached fake-gcs-server binary, built with ``go install`` first if absent (a few minutes, once)."""
    return go_install(FAKE_GCS_MODULE, FAKE_GCS_VERSION, binary_path(), FakeGcsUnavailableError)


def connector_jar_path(connector: GcsConnector) -> Path:
    """Where ``connector``'s jar is (or will be) cached; ``$CHECKPOINTFS_GCS_CONNECTOR_JAR`` names another."""
    override = os.environ.get("CHECKPOINTFS_GCS_CONNECTOR_JAR")
    return Path(override) if override else gcs_connector_dir(connector) / connector.jar_name


def ensure_connector_jar(connector: GcsConnector) -> Path:
    """``connector``'s jar: ``$CHECKPOINTFS_GCS_CONNECTOR_JAR``, else the one ``configure(gcs=...)`` fetches (once,
    about 40 MB from Maven Central the first time). Safe to call from concurrent processes."""
    override = os.environ.get("CHECKPOINTFS_GCS_CONNECTOR_JAR")
    if override:
        return Path(override)
    try:
        return gcs_connector_jar(connector)
    except JarResolutionError as e:
        raise FakeGcsUnavailableError(str(e)) from e


def connector_for_hadoop(hadoop_version: str) -> GcsConnector:
    """The pinned connector that runs on ``hadoop_version`` (``"3.3.4"``, ``"3.5.0"``)."""
    return gcs_connector_for(hadoop_version)


def running_connector() -> GcsConnector:
    """The pinned connector for the Hadoop of the pyspark installed here (:mod:`checkpointfs.spark.lines`)."""
    from checkpointfs.spark._jars import running_line

    return connector_for_hadoop(running_line().hadoop)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeGcsServer(ProcessServer):
    """A fake-gcs-server process on 127.0.0.1 for tests (plain HTTP, no authentication). Use as a context manager or
    call :meth:`start`/:meth:`stop`.

    ``backend``: ``memory`` (the default: objects live in the server process) or ``filesystem`` (a temporary
    directory, deleted by :meth:`stop`). ``log_level``: the server's (``info`` logs every request), into
    :attr:`log_path`."""

    def __init__(
        self,
        buckets: Iterable[str] = ("checkpoints",),
        *,
        project: str = "checkpointfs-test",
        backend: Literal["memory", "filesystem"] = "memory",
        startup_timeout_s: float = 60.0,
        request_timeout_s: float = 10.0,
        log_level: str = "warn",
    ) -> None:
        self.buckets = list(buckets)
        self.log_level = log_level
        self.project = project
        self.backend = backend
        self._startup_timeout_s = startup_timeout_s
        self._request_timeout_s = request_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._port = 0
        self._base: str | None = None
        self.log_path: Path | None = None

    # -- life cycle ---------------------------------------------------------------------------------------------
    def start(self) -> Self:
        """Start the server (building the binary first if needed), wait until it serves, create the buckets."""
        if self._process is not None:
            return self
        binary = ensure_binary()
        self._base = tempfile.mkdtemp(prefix="checkpointfs-fake-gcs-")
        self.log_path = Path(self._base) / "fake-gcs-server.log"
        # The FAKE_GCS_* variables set the server's defaults; every setting is given as a flag instead.
        env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_GCS_")}
        # A port picked free just before the start; on the rare clash, try again with a new one.
        for _attempt in range(3):
            self._port = _free_port()
            address = f"127.0.0.1:{self._port}"
            command = [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self._port),
                       # Hosts the server answers as its own, and the address of the resumable uploads it hands out
                       # (Location header): this server, not storage.googleapis.com.
                       "-public-host", address, "-external-url", f"http://{address}",
                       "-backend", self.backend, "-log-level", self.log_level]
            if self.backend == "filesystem":
                command += ["-filesystem-root", str(Path(self._base) / "storage")]
            with open(self.log_path, "ab") as out:
                self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                                 stderr=subprocess.STDOUT, env=env)
            if self._wait_ready():
                break
            self._terminate()
        else:
            log_text = self.log_path.read_text(errors="replace")[-2000:]
            self._remove_base()
            raise FakeGcsUnavailableError(f"fake-gcs-server did not become ready; it said:\n{log_text}")
        try:
            for bucket in self.buckets:
                self.create_bucket(bucket)
        except BaseException:
            self.stop()
            raise
        log.info("fake-gcs-server %s (pid %s) serving at %s", FAKE_GCS_VERSION, self.pid, self.endpoint_url)
        return self

    def _wait_ready(self) -> bool:
        """Wait until the server answers a bucket listing (its JSON API serving), retrying refused connections and
        5xx answers; False when the process exits or the start-up timeout passes."""
        url = f"{self.endpoint_url}/storage/v1/b?project={urllib.parse.quote(self.project)}"

        def ready() -> bool | None:
            assert self._process is not None
            if self._process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if answer.status == 200 and json.load(answer).get("kind") == "storage#buckets":
                        return True
            except urllib.error.HTTPError as e:
                if e.code < 500:
                    raise FakeGcsUnavailableError(
                        f"fake-gcs-server answered {e.code} to a bucket listing: {_error_message(e)}") from e
            except (urllib.error.URLError, OSError, ValueError):
                pass
            return None

        return poll(ready, self._startup_timeout_s, max_delay_s=0.1) is True

    def _remove_base(self) -> None:
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None

    def stop(self) -> None:
        """Stop the server by its pid and delete its temporary directory (log and filesystem backend)."""
        self._terminate()
        self._remove_base()

    # -- what clients need --------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._process is None:
            raise RuntimeError("FakeGcsServer is not started")
        return self._port

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:<port>``: the connector's ``fs.gs.storage.root.url``."""
        return f"http://127.0.0.1:{self.port}"

    def hadoop_conf(self, connector: GcsConnector = GCS_CONNECTOR) -> dict[str, str]:
        """The Hadoop settings for Google's ``connector`` to reach this server (Spark: prefix each with
        ``spark.hadoop.``, or use :meth:`spark_conf`)."""
        return {
            "fs.gs.impl": GCS_FILESYSTEM_CLASS,
            "fs.AbstractFileSystem.gs.impl": GCS_ABSTRACT_FILESYSTEM_CLASS,
            "fs.gs.storage.root.url": self.endpoint_url + "/",
            **connector.auth_settings("none"),
            "fs.gs.project.id": self.project,
            # gRPC (fs.gs.grpc.enable, false by default) would go to Google's own hosts; the JSON API is what the
            # server emulates.
            "fs.gs.grpc.enable": "false",
            # fake-gcs-server has no Objects: move (``POST .../o/<src>/moveTo/o/<dst>``, 400): the connector's rename
            # of a file is then a copy (``ifGenerationMatch=0``: never onto an existing object) and a delete, as it
            # is on a real bucket with this off.
            "fs.gs.operation.move.enable": "false",
            # A local server: fail quickly instead of waiting out production back-offs.
            "fs.gs.http.max.retry": "3",
            "fs.gs.http.connect-timeout": "5000",
            **HADOOP_35_GCS_SIZES,
        }

    def spark_conf(self, connector: GcsConnector = GCS_CONNECTOR) -> dict[str, str]:
        """:meth:`hadoop_conf` as ``spark.hadoop.*`` settings. The connector's jar goes on ``spark.jars`` with the
        others (``configure(..., extra_jars=[ensure_connector_jar(connector)])``)."""
        return {f"spark.hadoop.{k}": v for k, v in self.hadoop_conf(connector).items()}

    def uri(self, key: str = "", bucket: str | None = None) -> str:
        """``gs://<bucket>/<key>`` on this server (the first bucket by default)."""
        return f"gs://{bucket or self.buckets[0]}/{key.lstrip('/')}"

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None,
                 query: dict[str, str] | None = None) -> Any:
        url = f"{self.endpoint_url}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"Content-Type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(request, timeout=self._request_timeout_s) as answer:
                payload = answer.read()
        except urllib.error.HTTPError as e:
            raise GcsRequestError(method, url, e.code, _error_message(e)) from None
        return json.loads(payload) if payload else None

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` (no error if it exists)."""
        try:
            self._request("POST", "/storage/v1/b", {"name": name}, {"project": self.project})
        except GcsRequestError as e:
            if e.status != 409:  # 409: the bucket exists
                raise

    def bucket_names(self) -> list[str]:
        """Every bucket on the server."""
        answer = self._request("GET", "/storage/v1/b", query={"project": self.project})
        return sorted(b["name"] for b in answer.get("items", []))

    def objects(self, prefix: str = "", bucket: str | None = None, *, page_size: int = 1000) -> list[dict[str, Any]]:
        """The metadata (``name``, ``size``, ``generation``, ...) of every object under ``prefix``, in name
        order, across every page of the listing (``page_size`` objects a page)."""
        path = f"/storage/v1/b/{urllib.parse.quote(bucket or self.buckets[0], safe='')}/o"
        out: list[dict[str, Any]] = []
        token = ""
        while True:
            query = {"prefix": prefix, "maxResults": str(page_size)}
            if token:
                query["pageToken"] = token
            answer = self._request("GET", path, query=query)
            out.extend(answer.get("items", []))
            token = answer.get("nextPageToken", "")
            if not token:
                return out

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """The name of every object under ``prefix``."""
        return [o["name"] for o in self.objects(prefix, bucket)]

    def write(self, key: str, data: bytes, bucket: str | None = None) -> dict[str, Any]:
        """Create or replace object ``key`` with ``data`` (a simple media upload); its metadata."""
        path = f"/upload/storage/v1/b/{urllib.parse.quote(bucket or self.buckets[0], safe='')}/o"
        url = f"{self.endpoint_url}{path}?" + urllib.parse.urlencode({"uploadType": "media", "name": key})
        request = urllib.request.Request(url, data=data, method="POST",
                                         headers={"Content-Type": "application/octet-stream"})
        try:
            with urllib.request.urlopen(request, timeout=self._request_timeout_s) as answer:
                return dict(json.load(answer))
        except urllib.error.HTTPError as e:
            raise GcsRequestError("POST", url, e.code, _error_message(e)) from None

    def read(self, key: str, bucket: str | None = None) -> bytes:
        """The content of object ``key``."""
        name = urllib.parse.quote(key, safe="")
        url = f"{self.endpoint_url}/storage/v1/b/{urllib.parse.quote(bucket or self.buckets[0], safe='')}/o/{name}"
        try:
            with urllib.request.urlopen(url + "?alt=media", timeout=self._request_timeout_s) as answer:
                return bytes(answer.read())
        except urllib.error.HTTPError as e:
            raise GcsRequestError("GET", url, e.code, _error_message(e)) from None


def _error_message(error: urllib.error.HTTPError) -> str:
    """The message of a JSON API error answer (``{"error": {"message": ...}}``), or its body as text."""
    body = error.read().decode(errors="replace")
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body[:500]


def main(argv: list[str] | None = None) -> int:
    """``python -m harness.servers.fake_gcs [--connector [HADOOP_VERSION]]``: build the pinned fake-gcs-server
    if needed and print the binary's path; with ``--connector``, also fetch the GCS connector for that Hadoop (by
    default the installed pyspark's) and print the jar's path."""
    parser = argparse.ArgumentParser(prog="python -m harness.servers.fake_gcs", description=main.__doc__)
    parser.add_argument("--connector", nargs="?", const="", metavar="HADOOP_VERSION",
                        help="also fetch the GCS connector for this Hadoop (default: the installed pyspark's)")
    args = parser.parse_args(argv)
    try:
        print(ensure_binary())
        if args.connector is not None:
            connector = connector_for_hadoop(args.connector) if args.connector else running_connector()
            print(ensure_connector_jar(connector))
    except FakeGcsUnavailableError as e:
        print(f"checkpointfs: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.exit(main())
