"""A Spark standalone cluster on this machine, for tests: one master and N workers, each its own JVM, started with
pyspark's own ``bin/spark-class`` on 127.0.0.1 (free ports, web UIs on loopback), work and log dirs in a temp dir,
stopped by the pids it started. Executors are child processes of the workers (same process group): stopping a
worker's group stops its executors too.

    with StandaloneCluster(workers=2) as cluster:
        SparkSession.builder.master(cluster.master_url) ...

Tests kill parts of it on purpose: :meth:`StandaloneCluster.kill_executors`, :meth:`StandaloneCluster.kill_worker`,
and :meth:`StandaloneCluster.ensure_workers` to bring a killed worker back.

Ready is what the master says, not a log line: the master's web UI (``/json/``) answers with status ALIVE (elected
leader) and lists each started worker, by its own host and port, ALIVE with its cores. Both waits poll with
:func:`~checkpointfs.testing.readiness.wait_ready` for up to :data:`START_TIMEOUT_S`; a miss names the daemon, the
deadline, the master's last answer and the end of the daemon's log.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from checkpointfs.testing.readiness import STARTUP_TIMEOUT_S, NotReady, ServerNotReadyError, wait_ready

log = logging.getLogger(__name__)

T = TypeVar("T")

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
START_TIMEOUT_S = STARTUP_TIMEOUT_S
"""How long a master or a worker may take to be ready (300 s: three JVMs start at once on 2 cores)."""
MASTER_STARTED = r"Starting Spark master at (spark://[^\s\"]+)"
MASTER_UI = r"Bound MasterWebUI to [^,]+, and started at (http://[^\s\"]+)"
WORKER_STARTED = r"Starting Spark worker ([^\s:\"]+):(\d+) with"


class ClusterStartError(RuntimeError):
    """A master or worker did not come up in time (the message carries the end of its log)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    """The installed pyspark's folder: it carries ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def children(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name, in parentheses, may hold spaces: the parent pid is the 2nd field after it
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@dataclass
class Daemon:
    """A master or worker JVM started by the cluster: its pid (also its process group) and its log."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_for_log(self, pattern: str, timeout: float = START_TIMEOUT_S) -> re.Match[str]:
        """The first match of ``pattern`` in the log; :class:`ClusterStartError` if the JVM exits or time runs
        out first."""
        regex = re.compile(pattern)

        def logged() -> re.Match[str]:
            match = regex.search(self.log_path.read_text(errors="replace"))
            if match is None:
                raise NotReady(f"no {pattern!r} in its log yet")
            return match

        return self.wait(logged, timeout)

    def wait(self, probe: Callable[[], T], timeout: float = START_TIMEOUT_S) -> T:
        """:func:`~checkpointfs.testing.readiness.wait_ready` on this daemon (its exit fails the wait at once);
        :class:`ClusterStartError` naming it, the deadline, the last answer and the end of its log."""
        try:
            return wait_ready(f"Spark {self.name} (pid {self.pid})", probe, timeout, exit_code=self.process.poll,
                              log_path=self.log_path)
        except ServerNotReadyError as e:
            raise ClusterStartError(str(e)) from None

    def stop(self, sig: int = signal.SIGKILL) -> None:
        """Signal the daemon's whole process group (the JVM and the executors it launched) and reap it."""
        if self.alive():
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=30)


class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` and ``memory`` each) on 127.0.0.1, started from ``home``
    (pyspark's by default) with ``env`` added to their environment (and to their executors', which inherit it)."""

    def __init__(self, workers: int = 2, *, cores: int = 1, memory: str = "1g", daemon_memory: str = "256m",
                 base_dir: str | os.PathLike[str] | None = None, home: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.workers_wanted = workers
        self.home = home or spark_home()
        """The Spark home the daemons start from (pyspark's own by default; a baked image's, see
        :mod:`harness.spark_image`)."""
        self.extra_env = dict(env or {})
        self.cores = cores
        self.memory = memory
        self.daemon_memory = daemon_memory
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="checkpointfs-cluster-"))
        self.master: Daemon | None = None
        self.workers: list[Daemon] = []
        self.master_port = 0
        self.master_ui = ""
        """The master's web UI, ``http://127.0.0.1:PORT`` (its ``/json/`` is the readiness signal)."""
        self._started = 0

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT``."""
        return f"spark://127.0.0.1:{self.master_port}"

    def master_state(self) -> dict[str, Any]:
        """The master's own view (``/json/``: ``status``, ``workers`` with ``host``, ``port``, ``state``,
        ``cores``...); :class:`~checkpointfs.testing.readiness.NotReady` while the UI does not answer."""
        try:
            with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=10) as answer:
                state: dict[str, Any] = json.loads(answer.read())
        except urllib.error.HTTPError as e:
            raise NotReady(f"{self.master_ui}/json/: HTTP {e.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise NotReady(f"{self.master_ui}/json/: {getattr(e, 'reason', e)}") from None
        return state

    def env(self) -> dict[str, str]:
        """The environment of the daemons (also right for drivers that join the cluster): loopback only."""
        env = dict(os.environ)
        env.update(self.extra_env)
        env.update({
            "SPARK_HOME": str(self.home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": self.daemon_memory,
            "SPARK_LOG_DIR": str(self.base_dir / "logs"),
            "SPARK_NO_DAEMONIZE": "1",
        })
        return env

    def _spawn(self, name: str, *args: str) -> Daemon:
        self._started += 1
        log_path = self.base_dir / f"{name}.log"
        with log_path.open("wb") as out:
            process = subprocess.Popen([str(self.home / "bin" / "spark-class"), *args], stdout=out,
                                       stderr=subprocess.STDOUT, env=self.env(), start_new_session=True,
                                       cwd=self.base_dir)
        return Daemon(name, process, log_path)

    # -- life cycle ---------------------------------------------------------------------------------------------
    def start(self) -> StandaloneCluster:
        """Start the master and wait until it is ALIVE (its UI says so), then the workers; return once the master
        lists every worker ALIVE with its cores."""
        if shutil.which("java") is None:
            raise ClusterStartError("no Java runtime on PATH: Spark cannot start")
        (self.base_dir / "logs").mkdir(parents=True, exist_ok=True)
        self.master = master = self._spawn("master", MASTER_CLASS, "--host", "127.0.0.1", "--port",
                                           str(free_port()), "--webui-port", str(free_port()))
        # the ports it bound (Spark moves to the next port when one is taken), from its log
        self.master_port = int(master.wait_for_log(MASTER_STARTED).group(1).rsplit(":", 1)[1])
        self.master_ui = master.wait_for_log(MASTER_UI).group(1)

        def alive() -> None:
            status = self.master_state().get("status")
            if status != "ALIVE":
                raise NotReady(f"master status {status}")

        master.wait(alive)
        self.ensure_workers()
        return self

    def ensure_workers(self) -> None:
        """Start workers until ``workers`` of them are alive (after a test killed one), and wait until the master
        lists each new one ALIVE with its cores."""
        self.workers = [w for w in self.workers if w.alive()]
        started = []
        while len(self.workers) < self.workers_wanted:
            index = self._started
            work_dir = self.base_dir / f"work-{index}"
            work_dir.mkdir()
            worker = self._spawn(f"worker-{index}", WORKER_CLASS, self.master_url, "--host", "127.0.0.1",
                                 "--port", "0", "--webui-port", str(free_port()), "--cores", str(self.cores),
                                 "--memory", self.memory, "--work-dir", str(work_dir))
            self.workers.append(worker)
            started.append(worker)
        for worker in started:
            self._wait_registered(worker)

    def _wait_registered(self, worker: Daemon) -> None:
        """Until the master lists ``worker`` (found by the host and port it logged) ALIVE with its cores."""
        host, port = worker.wait_for_log(WORKER_STARTED).groups()

        def registered() -> None:
            listed = [w for w in self.master_state().get("workers", [])
                      if w.get("host") == host and str(w.get("port")) == port]
            if not listed:
                raise NotReady(f"the master does not list worker {host}:{port} yet")
            if listed[-1].get("state") != "ALIVE" or listed[-1].get("cores") != self.cores:
                raise NotReady(f"the master lists worker {host}:{port} as {listed[-1].get('state')} with "
                               f"{listed[-1].get('cores')} cores")

        worker.wait(registered)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL, every worker's process group (with its executors) and the master's."""
        for daemon in [*self.workers, *([self.master] if self.master else [])]:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if daemon.alive():
                    try:
                        os.killpg(daemon.pid, sig)
                        daemon.process.wait(timeout=10)
                    except (ProcessLookupError, subprocess.TimeoutExpired):
                        pass
        for pid in self.executor_pids():  # reparented executors of a worker killed alone
            os.kill(pid, signal.SIGKILL)
        self.workers = []
        self.master = None
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- faults -------------------------------------------------------------------------------------------------
    def executor_pids(self) -> list[int]:
        """Pids of the executor JVMs the workers launched (alive ones), oldest first."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or not _alive(int(entry.name)):
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if EXECUTOR_CLASS.encode() in cmdline and str(self.base_dir).encode() in environ + b"".join(cmdline):
                pids.append(int(entry.name))
        return sorted(pids)

    def kill_executors(self, count: int | None = None) -> list[int]:
        """SIGKILL ``count`` executors (all when None), oldest first; returns their pids."""
        pids = self.executor_pids()[:count]
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        return pids

    def wait_for_executors(self, count: int, timeout: float = START_TIMEOUT_S) -> list[int]:
        """Wait until ``count`` executors are alive; their pids."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = self.executor_pids()
            if len(pids) >= count:
                return pids
            time.sleep(0.2)
        raise ClusterStartError(f"fewer than {count} executors alive after {timeout}s")

    def kill_worker(self, index: int = 0) -> int:
        """SIGKILL the worker JVM ``index`` alone (its executors notice and exit, as on a lost machine); its pid."""
        worker = self.workers[index]
        os.kill(worker.pid, signal.SIGKILL)
        worker.process.wait(timeout=30)
        return worker.pid
