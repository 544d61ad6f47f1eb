"""checkpointfs for Spark: the JVM shim ``io.checkpointfs.spark.DirectWriteCheckpointFileManager`` and its settings.

- :func:`configure` / :func:`spark_conf`: put the shim jar of the running Spark line, and the hadoop-aws and AWS SDK
  matching its Hadoop, on ``spark.jars``, select the shim with ``spark.sql.streaming.checkpointFileManagerClass``
  and set the ``fs.s3a.*`` options it relies on; with ``gcs=`` / ``azure=``, also Google's connector or
  hadoop-azure for the line and their ``fs.gs.*`` / ``fs.azure.*`` settings.
- :class:`JvmCheckpointFileManager`: the Python contract over a JVM manager inside a live SparkSession (py4j), so
  the conformance suite can run the shim and Spark's own managers.

Importing this package needs no pyspark; :mod:`checkpointfs.spark.jvm_manager` needs py4j (pyspark's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._jars import (
    JarSetError,
    ShimJarMissingError,
    dependency_dir,
    dependency_jars,
    hadoop_aws_coordinates,
    hadoop_version,
    running_line,
    shim_coordinates,
    shim_jar,
    spark_jars,
)
from .config import MANAGER_CLASS_KEY, S3A_CLASS, SHIM_CLASS, configure, s3a_settings, spark_conf
from .lines import LINES, SparkLine, UnsupportedSparkLineError, line_of

if TYPE_CHECKING:
    from .jvm_manager import JvmCheckpointFileManager

__all__ = [
    "MANAGER_CLASS_KEY",
    "S3A_CLASS",
    "SHIM_CLASS",
    "LINES",
    "JarSetError",
    "JvmCheckpointFileManager",
    "ShimJarMissingError",
    "SparkLine",
    "UnsupportedSparkLineError",
    "configure",
    "dependency_dir",
    "dependency_jars",
    "hadoop_aws_coordinates",
    "hadoop_version",
    "line_of",
    "running_line",
    "s3a_settings",
    "shim_coordinates",
    "shim_jar",
    "spark_conf",
    "spark_jars",
]


def __getattr__(name: str) -> Any:
    if name == "JvmCheckpointFileManager":
        from .jvm_manager import JvmCheckpointFileManager

        return JvmCheckpointFileManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
