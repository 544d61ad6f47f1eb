"""MiniYarn: Hadoop's MiniYARNCluster (one ResourceManager, N NodeManagers) in its own JVM on 127.0.0.1, for
``spark-submit --master yarn``.

The launcher is jvm-hdfs/'s ``io.checkpointfs.yarn.MiniYarn`` (one Maven build with the MiniDFSCluster launcher, the
same hadoop-minicluster classpath). It prints its ResourceManager's addresses and a ``HADOOP_CONF_DIR`` (the whole
live configuration as ``yarn-site.xml``) once every NodeManager has registered; :meth:`MiniYarn.start` then waits
until the ResourceManager's REST API counts every NodeManager as running. :meth:`MiniYarn.stop` closes the
launcher's stdin, then signals the pid it started, and waits for it. Containers run as processes of this user,
their work and log dirs under :attr:`MiniYarn.work_dir`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Self

from checkpointfs.testing.readiness import STARTUP_TIMEOUT_S, NotReady, ServerNotReadyError, wait_ready
from checkpointfs.testing.server import ProcessServer

from .hdfs import MiniHdfsUnavailableError, launch, ready_line, stop_launcher

READY = "MINIYARN_READY "


class MiniYarn(ProcessServer):
    """A MiniYARNCluster for tests. Use as a context manager or call :meth:`start`/:meth:`stop`."""

    def __init__(self, node_managers: int = 2, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        self.node_managers = node_managers
        self.rm_address = ""
        self.rm_webapp = ""
        self.conf_dir = Path()
        self.work_dir = Path()
        self.log_path: Path | None = None
        self._startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[str] | None = None
        self._base: str | None = None

    def start(self) -> Self:
        """Build the launcher if needed, start the cluster and wait until the ResourceManager reports every
        NodeManager running; :class:`MiniHdfsUnavailableError` names the deadline, the last answer and the end of the
        cluster's log."""
        if self._process is not None:
            return self
        self._base = tempfile.mkdtemp(prefix="checkpointfs-yarn-")
        self.log_path = Path(self._base) / "miniyarn.log"
        started = time.monotonic()
        # MiniYARNCluster puts its work dirs under target/ of the current directory: the temp dir.
        self._process = launch("io.checkpointfs.yarn.MiniYarn", [self._base, str(self.node_managers)],
                               self.log_path, cwd=self._base)
        try:
            ready = ready_line(self._process, READY, "MiniYARNCluster", self._startup_timeout_s, self.log_path)
            self.rm_address, self.rm_webapp = str(ready["rm_address"]), str(ready["rm_webapp"])
            self.conf_dir, self.work_dir = Path(ready["conf_dir"]), Path(ready["work_dir"])
            remaining = max(1.0, self._startup_timeout_s - (time.monotonic() - started))
            wait_ready(f"MiniYARNCluster (pid {self.pid}, ResourceManager {self.rm_address})", self._nodes_running,
                       remaining, exit_code=self._process.poll, log_path=self.log_path)
        except ServerNotReadyError as e:
            self.stop()
            raise MiniHdfsUnavailableError(str(e)) from None
        except BaseException:
            self.stop()
            raise
        return self

    def rest(self, path: str) -> Any:
        """A GET of the ResourceManager's REST API (``/ws/v1/cluster/...``), its JSON answer."""
        with urllib.request.urlopen(f"http://{self.rm_webapp}/ws/v1/cluster/{path}", timeout=30) as answer:
            return json.loads(answer.read())

    def _nodes_running(self) -> None:
        try:
            nodes = (self.rest("nodes").get("nodes") or {}).get("node", [])
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise NotReady(f"ResourceManager REST: {type(e).__name__}: {getattr(e, 'reason', e)}") from None
        running = [n for n in nodes if n.get("state") == "RUNNING"]
        if len(running) < self.node_managers:
            raise NotReady(f"{len(running)} of {self.node_managers} NodeManagers RUNNING: {nodes}")

    def applications(self) -> list[dict[str, Any]]:
        """Every application the ResourceManager knows, as its REST API describes them."""
        return list((self.rest("apps").get("apps") or {}).get("app", []))

    def env(self) -> dict[str, str]:
        """The environment for ``spark-submit --master yarn`` against this cluster (``HADOOP_CONF_DIR``)."""
        return {**os.environ, "HADOOP_CONF_DIR": str(self.conf_dir), "YARN_CONF_DIR": str(self.conf_dir)}

    def container_files(self, application_id: str, name: str) -> list[Path]:
        """The files called ``name`` (``stdout``, ``stderr``) in the log dirs of ``application_id``'s containers,
        in container order (the first is the application master's)."""
        return sorted(self.work_dir.glob(f"*/{application_id}/container_*/{name}"),
                      key=lambda p: p.parent.name)

    def stop(self) -> None:
        """Shut the cluster down by its pid (stdin closed, then SIGTERM, then SIGKILL) and delete its files."""
        process, self._process = self._process, None
        if process is not None:
            stop_launcher(process, 60)
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None
