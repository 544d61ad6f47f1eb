"""The YARN tests' cluster and drivers: one MiniYARNCluster (a ResourceManager and 2 NodeManagers, tests/backends/
yarn.py) for the session, and ``spark-submit --master yarn`` runs of harness/job.py in client or cluster deploy mode
against the session's MinIO behind its recording proxy
(``minio_pipeline`` of tests/spark_e2e/conftest.py). Spark's own jars are the NodeManagers' local copy
(``spark.yarn.jars=local:...``: Spark preinstalled on every node); the shim, hadoop-aws and the AWS SDK come from
``spark.jars`` and reach the application master and the executors through YARN's distributed cache. The shim's
settings and the store's credentials go in an owner-only ``--properties-file``, never on the command line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.spark import spark_conf
from checkpointfs.spark.config import s3a_settings
from checkpointfs.spark.submit import spark_defaults_text
from harness.driver import Job
from harness.servers.spark_cluster import spark_home

from ..backends.yarn import MiniYarn
from ..spark_e2e.conftest import (
    Pipeline,
    minio_pipeline,  # noqa: F401 - MinIO behind a recording proxy
)

REPO = Path(__file__).resolve().parents[2]
APPLICATION_ID = re.compile(r"\bapplication_\d+_\d+\b")
EXECUTOR_CLASS = "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"
AM_CLASS = "org.apache.spark.deploy.yarn.ApplicationMaster"
"""The application master's class in cluster mode, where it runs the driver (client mode's is ExecutorLauncher)."""
YARN_CONF = {
    "spark.executor.instances": "2", "spark.executor.memory": "512m", "spark.executor.cores": "1",
    "spark.yarn.am.memory": "512m", "spark.driver.memory": "512m",
    # One attempt: a killed driver or application master ends the application, and the test resubmits it.
    "spark.yarn.maxAppAttempts": "1",
    "spark.ui.enabled": "false", "spark.yarn.submit.waitAppCompletion": "true",
    "spark.yarn.report.interval": "2s",
}


@pytest.fixture(scope="session")
def yarn_cluster() -> Iterator[MiniYarn]:
    """One MiniYARNCluster for the session (1 ResourceManager, 2 NodeManagers, 127.0.0.1), stopped by its pid."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
    with MiniYarn(node_managers=2) as cluster:
        yield cluster


@dataclass
class YarnJob(Job):
    """A ``spark-submit --master yarn`` process of harness/job.py; in cluster mode the driver (and its closing JSON
    line) lives in the application master's container."""

    cluster: MiniYarn | None = None
    deploy_mode: str = "client"

    def application_id(self) -> str | None:
        """The application's id, once spark-submit has logged it."""
        found = APPLICATION_ID.search(self.log_path.read_text(errors="replace"))
        return found.group(0) if found else None

    def tail(self, lines: int = 40) -> str:
        """The end of spark-submit's output; in cluster mode also of the driver's (the AM container's stdout and
        stderr)."""
        text = super().tail(lines)
        app = self.application_id()
        if self.deploy_mode == "cluster" and app is not None and self.cluster is not None:
            for name in ("stdout", "stderr"):
                for path in self.cluster.container_files(app, name)[:1]:
                    ends = path.read_text(errors="replace").splitlines()[-lines:]
                    text += f"\n--- {path.parent.name}/{name}:\n" + "\n".join(ends)
        return text

    def wait(self, timeout: float = 900) -> dict[str, Any]:
        """The job's outcome (its closing JSON line, read from the AM's stdout in cluster mode)."""
        if self.deploy_mode == "client":
            return super().wait(timeout)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"spark-submit did not finish within {timeout}s; log:\n{self.tail()}") from None
        app = self.application_id()
        assert app is not None and self.cluster is not None, self.tail()
        for stdout in self.cluster.container_files(app, "stdout"):
            for line in reversed(stdout.read_text(errors="replace").splitlines()):
                if line.startswith("{") and '"status"' in line:
                    return dict(json.loads(line))
        return {"status": "no result", "exit": self.process.returncode}


def container_pids(app: str, main_class: str) -> list[int]:
    """Pids of the JVMs running ``main_class`` in ``app``'s containers (from /proc: their command lines name the
    application's container dirs)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        text = b" ".join(args).decode(errors="replace")
        if main_class in text and app in text:
            pids.append(int(proc.name))
    return pids


def kill_containers(app: str, main_class: str) -> list[int]:
    """SIGKILL the process groups (each container is a session of its own: its launch script, its JVM and any Python
    child) of ``app``'s containers running ``main_class``; their pids."""
    pids = container_pids(app, main_class)
    for pid in pids:
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def submit(run: Pipeline, cluster: MiniYarn, deploy_mode: str, *job_args: str,
           extra_conf: Mapping[str, str] | None = None, repository: Path | None = None) -> YarnJob:
    """Start ``spark-submit --master yarn --deploy-mode <deploy_mode> --properties-file <private> harness/job.py
    --jars submitted ...`` on ``run``: the shim's settings, the store's and ``extra_conf`` in the file. With a
    ``repository`` (``dist/maven``), the shim comes by its Maven coordinates from there (``spark.jars.packages``)
    instead of ``spark.jars`` paths."""
    home = spark_home()
    site_packages = home.parent
    python = sys.executable
    shim = ({"packages": True, "repositories": repository.as_uri()} if repository is not None else {})
    conf = {**spark_conf(s3a_settings(run.server), **shim), **YARN_CONF,
            "spark.yarn.jars": f"local:{home / 'jars'}/*",
            "spark.yarn.stagingDir": (run.tmp_path / "staging").as_uri(),
            "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python, "spark.executorEnv.PYSPARK_PYTHON": python,
            "spark.yarn.appMasterEnv.PYTHONPATH": str(REPO), "spark.executorEnv.PYTHONPATH": str(REPO),
            # The containers' Spark ports (a cluster-mode driver's RPC, block managers) on loopback only.
            "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": "127.0.0.1", "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
            **(extra_conf or {})}
    n = len(run.jobs)
    properties = run.tmp_path / f"submit-{n}.conf"
    properties.touch(mode=0o600)
    properties.write_text(spark_defaults_text(conf))
    env = {**cluster.env(), "SPARK_HOME": str(home), "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python,
           # pyspark and py4j for the AM's and executors' Python: this venv's site-packages (no pyspark.zip in a
           # pip-installed pyspark); "local:" means present on every node, as it is here.
           "PYSPARK_ARCHIVES_PATH": f"local:{site_packages}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
           # spark-submit's (in client mode the driver's) temp files beside the test's own.
           "SPARK_SUBMIT_OPTS": f"-Djava.io.tmpdir={run.tmp_path}"}
    env.pop("CHECKPOINTFS_JOB_S3", None)
    command = [str(home / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", deploy_mode,
               "--properties-file", str(properties), str(REPO / "harness" / "job.py"), "--jars", "submitted",
               "--input", str(run.input_dir), "--output", run.output, "--checkpoint", run.checkpoint,
               "--master", "yarn", "--app-name", f"checkpointfs-yarn-{deploy_mode}-{n}", *job_args]
    log_path = run.tmp_path / f"submit-{n}.log"
    first_request = len(run.server.requests)
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                   start_new_session=True)
    job = YarnJob(process, log_path, first_request, module="spark-submit --master yarn", cluster=cluster,
                  deploy_mode=deploy_mode)
    run.jobs.append(job)
    return job
