"""MiniHdfs: Hadoop's MiniDFSCluster (one NameNode, one DataNode, WebHDFS on) in its own JVM on 127.0.0.1.

The launcher is jvm-hdfs/ (built by Maven into ~/.cache/checkpointfs/minihdfs/, see jvm-hdfs/build.sh); it prints
its ports once the NameNode is out of safe mode with a live DataNode, and runs until its stdin closes or it gets
SIGTERM. :meth:`MiniHdfs.start` then waits for a real round trip over WebHDFS (mkdir, create, list, delete: what
the tests do first) before it returns; a restart after :meth:`MiniHdfs.kill` waits the same way.
:meth:`MiniHdfs.stop` closes stdin, then signals the pid it started, and waits for the process.
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
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Self

from checkpointfs.testing.readiness import STARTUP_TIMEOUT_S, NotReady, ServerNotReadyError, wait_ready
from checkpointfs.testing.server import ProcessServer

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "jvm-hdfs" / "build.sh"
READY = "MINIHDFS_READY "
PROBE_DIR = "/.checkpointfs-ready"
"""Where the readiness round trip writes (and deletes) its file."""


class MiniHdfsUnavailableError(RuntimeError):
    """The launcher could not be built or the cluster did not start; the message says why."""


def launcher_dir() -> Path:
    """The cached launcher (jar + classpath), built with Maven first if absent."""
    done = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise MiniHdfsUnavailableError(f"building the HDFS launcher failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def launch(main_class: str, args: list[str], log_path: Path, cwd: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``main_class`` of the launcher jar (built first if absent) in a JVM of its own: stdin and stdout piped
    (it prints its ready line there and stops when stdin closes), stderr appended to ``log_path``."""
    home = launcher_dir()
    java = shutil.which("java")
    if java is None:
        raise MiniHdfsUnavailableError("no Java runtime (java) on PATH")
    classpath = f"{home / 'minihdfs.jar'}:{(home / 'classpath.txt').read_text().strip()}"
    with open(log_path, "a") as err:
        return subprocess.Popen(
            [java, "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
             "-cp", classpath, main_class, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, cwd=cwd, env=env)


def ready_line(process: subprocess.Popen[str], marker: str, what: str, timeout_s: float,
               log_path: Path | None) -> dict[str, Any]:
    """The JSON object after ``marker`` on the first stdout line of a launcher (jvm-hdfs/) that starts with it,
    waited for as long as ``timeout_s``; :class:`ServerNotReadyError` names the last line seen and the log's end."""
    assert process.stdout is not None
    stdout = process.stdout
    selector = selectors.DefaultSelector()
    selector.register(stdout, selectors.EVENT_READ)
    seen = ["no line yet"]

    def ready() -> dict[str, Any]:
        while selector.select(timeout=0):
            line = stdout.readline()
            if not line:
                raise NotReady("its stdout closed")
            if line.startswith(marker):
                return dict(json.loads(line[len(marker):]))
            seen[0] = line.strip()
        raise NotReady(f"no {marker.strip()} line on its stdout yet (last: {seen[0]})")

    return wait_ready(f"{what} (pid {process.pid})", ready, timeout_s, exit_code=process.poll, log_path=log_path)


def stop_launcher(process: subprocess.Popen[str], timeout_s: float) -> None:
    """Stop a launcher of jvm-hdfs/ by its pid: close its stdin (it shuts its cluster down and exits 0), after
    ``timeout_s`` SIGTERM, 15 s later SIGKILL; then wait for it and close its stdout."""
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


class MiniHdfs(ProcessServer):
    """A MiniDFSCluster for tests. Use as a context manager or call :meth:`start`/:meth:`stop`."""

    def __init__(self, user: str | None = None, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        # The user Hadoop clients of this machine (Spark among them) run as: the cluster's superuser.
        self.user = user or os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
        self.rpc_port = 0
        self.http_port = 0
        self._startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[str] | None = None
        self._base: str | None = None
        self.log_path: Path | None = None

    def start(self) -> Self:
        """Build the launcher if needed, start the cluster (on its own files again after :meth:`kill`), read its
        ports and wait until it serves a WebHDFS round trip; :class:`MiniHdfsUnavailableError` names the deadline,
        the last answer and the end of the cluster's log."""
        if self._process is not None:
            return self
        keep = self._base is not None  # a restart after kill(): the same files, not formatted again
        if self._base is None:
            self._base = tempfile.mkdtemp(prefix="checkpointfs-hdfs-")
        self.log_path = Path(self._base) / "minihdfs.log"
        started = time.monotonic()
        self._process = launch("io.checkpointfs.hdfs.MiniHdfs",
                               [str(Path(self._base) / "cluster"), *(["--keep"] if keep else [])], self.log_path,
                               env={**os.environ, "HADOOP_USER_NAME": self.user})
        try:
            ports = self._read_ports()
            self.rpc_port, self.http_port = int(ports["rpc_port"]), int(ports["http_port"])
            remaining = max(1.0, self._startup_timeout_s - (time.monotonic() - started))
            wait_ready(f"MiniDFSCluster (pid {self.pid}, WebHDFS on {self.http_port})", self._round_trip, remaining,
                       exit_code=self._process.poll, log_path=self.log_path)
        except ServerNotReadyError as e:
            self.stop(keep_files=keep)
            raise MiniHdfsUnavailableError(str(e)) from None
        except BaseException:
            self.stop(keep_files=keep)
            raise
        return self

    def _read_ports(self) -> dict[str, Any]:
        """The launcher's ``MINIHDFS_READY`` line (it prints it once out of safe mode with a live DataNode)."""
        assert self._process is not None
        return ready_line(self._process, READY, "MiniDFSCluster", self._startup_timeout_s, self.log_path)

    def _webhdfs(self, method: str, path: str, op: str, data: bytes | None = None, **params: str) -> Any:
        query = urllib.parse.urlencode({"op": op, "user.name": self.user, **params})
        url = f"http://127.0.0.1:{self.http_port}/webhdfs/v1{path}?{query}"
        request = urllib.request.Request(url, data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def _round_trip(self) -> None:
        """What the tests do first, over WebHDFS: make a directory, create a file in it (through the DataNode),
        list it and delete it. Raises :class:`NotReady` with the answer while any step fails."""
        name = f"{PROBE_DIR}/{os.getpid()}-{time.monotonic_ns()}"
        try:
            self._webhdfs("PUT", PROBE_DIR, "MKDIRS")
            where = self._webhdfs("PUT", name, "CREATE", overwrite="true", noredirect="true")
            request = urllib.request.Request(where["Location"], data=b"ready", method="PUT",
                                             headers={"Content-Type": "application/octet-stream"})
            with urllib.request.urlopen(request, timeout=30):
                pass
            listed = self._webhdfs("GET", PROBE_DIR, "LISTSTATUS")["FileStatuses"]["FileStatus"]
            if name.rsplit("/", 1)[1] not in {f["pathSuffix"] for f in listed}:
                raise NotReady(f"WebHDFS LISTSTATUS {PROBE_DIR} does not show the file just created")
            self._webhdfs("DELETE", PROBE_DIR, "DELETE", recursive="true")
        except urllib.error.HTTPError as e:
            raise NotReady(f"WebHDFS: HTTP {e.code} {e.read()[:300]!r}") from None
        except (urllib.error.URLError, OSError, KeyError, ValueError) as e:
            raise NotReady(f"WebHDFS: {type(e).__name__}: {getattr(e, 'reason', e)}") from None

    def kill(self) -> None:
        """SIGKILL the cluster's JVM (a crash: no shutdown), keeping its files; :meth:`start` brings it back."""
        process, self._process = self._process, None
        if process is not None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()

    def stop(self, keep_files: bool = False) -> None:
        """Shut the cluster down by its pid (stdin closed, then SIGTERM, then SIGKILL) and delete its files (unless
        ``keep_files``: a restart that failed leaves them for the test's own clean-up and a look)."""
        process, self._process = self._process, None
        if process is not None:
            stop_launcher(process, 30)
        if self._base is not None and not keep_files:
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
