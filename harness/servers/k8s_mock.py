"""fabric8's Kubernetes mock API server (``io.fabric8:kubernetes-server-mock``, the version of the kubernetes-client
pyspark ships) in CRUD mode, in its own JVM on 127.0.0.1: what ``spark-submit --master k8s://... --deploy-mode
cluster`` creates (the driver pod, its config map, its service) is stored and served back, and nothing runs.

The launcher is jvm-k8s/ (built by Maven into ~/.cache/checkpointfs/k8s-mock/, see jvm-k8s/build.sh). Ready is a
real answer: ``GET /api/v1/namespaces/default/pods`` gives a pod list. :meth:`KubernetesMock.stop` closes the
launcher's stdin, then signals the pid it started.

    with KubernetesMock() as api:
        api.url                                   # http://127.0.0.1:PORT, for k8s://http://127.0.0.1:PORT
        api.get("/api/v1/namespaces/default/pods")["items"]
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Self

from checkpointfs.testing.readiness import STARTUP_TIMEOUT_S, NotReady, ServerNotReadyError, wait_ready
from checkpointfs.testing.server import ProcessServer

from .spark_cluster import free_port

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "jvm-k8s" / "build.sh"
MAIN_CLASS = "io.checkpointfs.k8s.MockApiServer"


class KubernetesMockUnavailableError(RuntimeError):
    """The launcher could not be built or the server did not start; the message says why."""


def launcher_dir() -> Path:
    """The cached launcher (jar + classpath), built with Maven first if absent."""
    done = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise KubernetesMockUnavailableError(f"building the Kubernetes mock launcher failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


class KubernetesMock(ProcessServer):
    """The mock API server for tests. Use as a context manager or call :meth:`start`/:meth:`stop`."""

    def __init__(self, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        self.port = 0
        self._startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._base: Path | None = None
        self.log_path: Path | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        """Build the launcher if needed, start it on a free port and wait until it lists pods;
        :class:`KubernetesMockUnavailableError` names the deadline, the last answer and the end of its log."""
        if self._process is not None:
            return self
        home = launcher_dir()
        java = shutil.which("java")
        if java is None:
            raise KubernetesMockUnavailableError("no Java runtime (java) on PATH")
        self._base = Path(tempfile.mkdtemp(prefix="checkpointfs-k8s-"))
        self.log_path = self._base / "k8s-mock.log"
        self.port = free_port()
        classpath = f"{home / 'k8s-mock.jar'}:{(home / 'classpath.txt').read_text().strip()}"
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath, MAIN_CLASS,
                 str(self.port)], stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_ready(f"Kubernetes mock API server (pid {self.pid}, port {self.port})", self._lists_pods,
                       self._startup_timeout_s, exit_code=self._process.poll, log_path=self.log_path)
        except ServerNotReadyError as e:
            self.stop()
            raise KubernetesMockUnavailableError(str(e)) from None
        except BaseException:
            self.stop()
            raise
        return self

    def _lists_pods(self) -> None:
        try:
            answer = self.get("/api/v1/namespaces/default/pods")
        except (urllib.error.URLError, OSError) as e:
            raise NotReady(str(getattr(e, "reason", e))) from None
        if "items" not in answer:
            raise NotReady(f"a pod list without items: {answer}")

    def get(self, path: str) -> dict[str, Any]:
        """The JSON the server answers to ``GET path`` (``/api/v1/namespaces/NS/pods``)."""
        with urllib.request.urlopen(f"{self.url}{path}", timeout=10) as answer:
            result: dict[str, Any] = json.loads(answer.read())
        return result

    def stop(self) -> None:
        """Close the launcher's stdin (it shuts the server down), then stop its pid; remove its temp dir."""
        process = self._process
        if process is not None and process.stdin is not None:
            try:
                process.stdin.close()
            except OSError:
                pass
        self._terminate()
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None
