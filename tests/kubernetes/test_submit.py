"""spark-submit's Kubernetes submit path against fabric8's mock API server: ``spark-submit --master
k8s://http://127.0.0.1:PORT --deploy-mode cluster`` with the shim's settings as ``spark_conf()`` makes them (less
the jars, which the image holds) creates a driver pod of the given image whose config map carries every one of
them. Nothing runs the pod: spark-submit is stopped once the pod and its config map exist."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.spark import spark_conf
from checkpointfs.spark.config import JARS_KEY, MANAGER_CLASS_KEY, PACKAGES_KEY
from checkpointfs.testing.readiness import NotReady, wait_ready
from harness.servers.k8s_mock import KubernetesMock
from harness.servers.spark_cluster import spark_home

pytestmark = [pytest.mark.spark]

IMAGE = "registry.example.com/spark-checkpointfs:4.3.0"
NAMESPACE = "default"
SUBMIT_TIMEOUT_S = 300
"""spark-submit's JVM start and the resources' creation on a busy 2-core machine."""
CONF_DIR = "/opt/spark/conf"


def java_properties(text: str) -> dict[str, str]:
    """``key=value`` lines of a Java properties file as Spark writes it (``\\:`` and ``\\=`` escaped)."""
    found = {}
    for line in text.splitlines():
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        found[key.replace("\\", "")] = value.replace("\\:", ":").replace("\\=", "=").replace("\\\\", "\\")
    return found


def test_cluster_mode_submit_puts_the_shims_settings_on_the_driver_pod(
    k8s_api: KubernetesMock, tmp_path: Path, record_property: Any
) -> None:
    """The driver pod has the image, mounts its config map over ``/opt/spark/conf`` (the image's own
    spark-defaults.conf is hidden there: the settings must come with the submission), and that config map's
    spark.properties holds every setting of ``spark_conf()`` with its value, and no jars."""
    shim = {k: v for k, v in spark_conf({"endpoint": "https://s3.eu-west-1.amazonaws.com", "region": "eu-west-1"},
                                        packages=True).items() if k != PACKAGES_KEY}
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", f"k8s://{k8s_api.url}",
               "--deploy-mode", "cluster", "--name", "checkpointfs-query",
               "--conf", f"spark.kubernetes.container.image={IMAGE}",
               "--conf", f"spark.kubernetes.namespace={NAMESPACE}",
               "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
               *[a for k, v in shim.items() for a in ("--conf", f"{k}={v}")],
               "local:///opt/spark/work-dir/my_query.py"]
    log = tmp_path / "submit.log"
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_CONF_DIR", None)
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        def driver_and_config_map() -> tuple[dict[str, Any], dict[str, Any]]:
            pods = k8s_api.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
            maps = k8s_api.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps")["items"]
            if pods and maps:
                return pods[0], maps[0]
            if process.poll() is not None:  # it may end (waitAppCompletion=false) once both exist, not before
                raise AssertionError(f"spark-submit exited ({process.returncode}) with {len(pods)} pods and "
                                     f"{len(maps)} config maps:\n{log.read_text()[-4000:]}")
            raise NotReady(f"{len(pods)} pods, {len(maps)} config maps")

        pod, config_map = wait_ready("spark-submit's driver pod", driver_and_config_map, SUBMIT_TIMEOUT_S,
                                     log_path=log)
        created_s = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    assert pod["metadata"]["labels"]["spark-role"] == "driver"
    [container] = pod["spec"]["containers"]
    assert container["image"] == IMAGE
    assert {"name": "SPARK_CONF_DIR", "value": CONF_DIR} in container["env"]
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == CONF_DIR]
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    properties = java_properties(config_map["data"]["spark.properties"])
    assert {k: properties.get(k) for k in shim} == shim
    assert MANAGER_CLASS_KEY in shim and properties["spark.kubernetes.container.image"] == IMAGE
    assert not [k for k in properties if k in (JARS_KEY, PACKAGES_KEY)], properties
    record_property("driver_pod_created_s", round(created_s, 1))
