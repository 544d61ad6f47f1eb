"""MiniHdfs: Hadoop's MiniDFSCluster (one NameNode, one DataNode, WebHDFS on) in its own JVM on 127.0.0.1.

The launcher is jvm-hdfs/ (built by Maven into ~/.cache/checkpointfs/minihdfs/, see jvm-hdfs/build.sh); it prints
its ports and runs until its stdin closes or it gets SIGTERM. :meth:`MiniHdfs.stop` closes stdin, then signals the
pid it started, and waits for the process.
"""

from __future__ import annotations

import getpass
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Self

from checkpointfs.testing.server import ProcessServer

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "jvm-hdfs" / "build.sh"
READY = "MINIHDFS_READY "


class MiniHdfsUnavailableError(RuntimeError):
    """The launcher could not be built or the cluster did not start; the message says why."""


def launcher_dir() -> Path:
    """The cached launcher (jar + classpath), built with Maven first if absent."""
    done = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise MiniHdfsUnavailableError(f"building the HDFS launcher failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


class MiniHdfs(ProcessServer):
    """A MiniDFSCluster for tests. Use as a context manager or call :meth:`start`/:meth:`stop`."""

    def __init__(self, user: str | None = None, startup_timeout_s: float = 240.0) -> None:
        # The user Hadoop clients of this machine (Spark among them) run as: the cluster's superuser.
        self.user = user or os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
        self.rpc_port = 0
        self.http_port = 0
        self._startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[str] | None = None
        self._base: str | None = None
        self.log_path: Path | None = None

    def start(self) -> Self:
        """Build the launcher if needed, start the cluster and wait for its ports."""
        if self._process is not None:
            return self
        home = launcher_dir()
        java = shutil.which("java")
        if java is None:
            raise MiniHdfsUnavailableError("no Java runtime (java) on PATH")
        keep = self._base is not None  # a restart after kill(): the same files, not formatted again
        if self._base is None:
            self._base = tempfile.mkdtemp(prefix="checkpointfs-hdfs-")
        self.log_path = Path(self._base) / "minihdfs.log"
        classpath = f"{home / 'minihdfs.jar'}:{(home / 'classpath.txt').read_text().strip()}"
        with open(self.log_path, "a") as err:
            self._process = subprocess.Popen(
                [java, "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
                 "-cp", classpath, "io.checkpointfs.hdfs.MiniHdfs", str(Path(self._base) / "cluster"),
                 *(["--keep"] if keep else [])],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                env={**os.environ, "HADOOP_USER_NAME": self.user})
        try:
            ports = self._read_ports()
        except BaseException:
            self.stop()
            raise
        self.rpc_port, self.http_port = int(ports["rpc_port"]), int(ports["http_port"])
        return self

    def _read_ports(self) -> dict[str, Any]:
        assert self._process is not None and self._process.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(self._process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + self._startup_timeout_s
        while time.monotonic() < deadline:
            if not selector.select(timeout=1):
                if self._process.poll() is not None:
                    break
                continue
            line = self._process.stdout.readline()
            if not line:
                break
            if line.startswith(READY):
                return dict(json.loads(line[len(READY):]))
        raise MiniHdfsUnavailableError(f"MiniDFSCluster did not start; see {self.log_path}")

    def kill(self) -> None:
        """SIGKILL the cluster's JVM (a crash: no shutdown), keeping its files; :meth:`start` brings it back."""
        process, self._process = self._process, None
        if process is not None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()

    def stop(self) -> None:
        """Shut the cluster down by its pid (stdin closed, then SIGTERM, then SIGKILL) and delete its files."""
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()  # the launcher shuts the cluster down and exits 0
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.kill(process.pid, signal.SIGKILL)
                    process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None

    def storage_options(self) -> dict[str, Any]:
        """fsspec ``webhdfs`` options that reach this cluster."""
        return {"host": "127.0.0.1", "port": self.http_port, "user": self.user}

    def webhdfs_uri(self, path: str = "/") -> str:
        """``webhdfs://127.0.0.1:<http port>/<path>``."""
        return f"webhdfs://127.0.0.1:{self.http_port}/{path.lstrip('/')}"

    def hdfs_uri(self, path: str = "/") -> str:
        """``hdfs://127.0.0.1:<rpc port>/<path>``, for Spark."""
        return f"hdfs://127.0.0.1:{self.rpc_port}/{path.lstrip('/')}"
