"""The settings of :func:`checkpointfs.spark.spark_conf` for sessions whose builder the user does not control:
``spark-submit`` options and a ``spark-defaults.conf`` / ``--properties-file`` (a Spark Connect server, a job
submitted by a scheduler). The jars they name are local paths on the submitting machine; Spark ships them to
executors (``spark.jars``) on standalone, YARN and Kubernetes alike."""

from __future__ import annotations

from collections.abc import Mapping

_OPTIONS = {"spark.jars": "--jars", "spark.jars.packages": "--packages", "spark.jars.repositories": "--repositories"}


def spark_defaults_text(conf: Mapping[str, str]) -> str:
    """``conf`` as ``spark-defaults.conf`` lines (``key value``), for ``spark-submit --properties-file``. Holds the
    secrets ``conf`` holds: write it with owner-only permissions."""
    return "".join(f"{key} {value}\n" for key, value in conf.items())


def submit_args(conf: Mapping[str, str]) -> list[str]:
    """``conf`` as ``spark-submit`` arguments: ``--jars``, ``--packages`` and ``--repositories`` for ``spark.jars``,
    ``spark.jars.packages`` and ``spark.jars.repositories``, ``--conf key=value`` for the rest (command lines are
    visible to other users of the machine: prefer :func:`spark_defaults_text` for secrets)."""
    args: list[str] = []
    for key, value in conf.items():
        option = _OPTIONS.get(key)
        args += [option, value] if option else ["--conf", f"{key}={value}"]
    return args
