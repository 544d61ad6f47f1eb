"""The settings of :func:`checkpointfs.spark.spark_conf` for sessions whose builder the user does not control:
``spark-submit`` options and a ``spark-defaults.conf`` / ``--properties-file`` (a Spark Connect server, a job
submitted by a scheduler). The jars they name are local paths on the submitting machine; Spark ships them to
executors (``spark.jars``) on standalone, YARN and Kubernetes alike."""

from __future__ import annotations

from collections.abc import Mapping


def spark_defaults_text(conf: Mapping[str, str]) -> str:
    """``conf`` as ``spark-defaults.conf`` lines (``key value``), for ``spark-submit --properties-file``. Holds the
    secrets ``conf`` holds: write it with owner-only permissions."""
    return "".join(f"{key} {value}\n" for key, value in conf.items())


def submit_args(conf: Mapping[str, str]) -> list[str]:
    """``conf`` as ``spark-submit`` arguments: ``--jars`` for ``spark.jars``, ``--conf key=value`` for the rest
    (command lines are visible to other users of the machine: prefer :func:`spark_defaults_text` for secrets)."""
    args: list[str] = []
    for key, value in conf.items():
        args += ["--jars", value] if key == "spark.jars" else ["--conf", f"{key}={value}"]
    return args
