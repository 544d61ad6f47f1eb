"""checkpointfs for Spark: the JVM shim ``io.checkpointfs.spark.DirectWriteCheckpointFileManager`` and its settings.

- :func:`configure` / :func:`spark_conf`: put the shim jar, hadoop-aws and the AWS SDK on ``spark.jars``, select the
  shim with ``spark.sql.streaming.checkpointFileManagerClass`` and set the ``fs.s3a.*`` options it relies on.
- :class:`JvmCheckpointFileManager`: the Python contract over a JVM manager inside a live SparkSession (py4j), so
  the conformance suite can run the shim and Spark's own managers.

Importing this package needs no pyspark; :mod:`checkpointfs.spark.jvm_manager` needs py4j (pyspark's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._jars import (
    SHIM_JAR,
    ShimJarMissingError,
    dependency_dir,
    dependency_jars,
    hadoop_aws_coordinates,
    hadoop_version,
    shim_jar,
)
from .config import MANAGER_CLASS_KEY, SHIM_CLASS, configure, s3a_settings, spark_conf

if TYPE_CHECKING:
    from .jvm_manager import JvmCheckpointFileManager

__all__ = [
    "MANAGER_CLASS_KEY",
    "SHIM_CLASS",
    "SHIM_JAR",
    "JvmCheckpointFileManager",
    "ShimJarMissingError",
    "configure",
    "dependency_dir",
    "dependency_jars",
    "hadoop_aws_coordinates",
    "hadoop_version",
    "s3a_settings",
    "shim_jar",
    "spark_conf",
]


def __getattr__(name: str) -> Any:
    if name == "JvmCheckpointFileManager":
        from .jvm_manager import JvmCheckpointFileManager

        return JvmCheckpointFileManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
