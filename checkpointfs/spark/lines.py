"""The Spark lines checkpointfs supports: the one place their versions are pinned.

Each line's facts were read off that line's own pyspark jars (``pyspark/jars``): the Scala and Hadoop versions it
ships and the package of Spark's ``CheckpointFileManager`` trait. The Makefile, the shim build, ``configure()`` and
the tests all read this table.
"""

from __future__ import annotations

from dataclasses import dataclass

OLD_TRAIT_PACKAGE = "org.apache.spark.sql.execution.streaming"
NEW_TRAIT_PACKAGE = "org.apache.spark.sql.execution.streaming.checkpointing"


@dataclass(frozen=True)
class SparkLine:
    """One maintained Spark line (``major.minor``) and what its pyspark ships."""

    line: str
    """``major.minor``, e.g. ``"3.5"``."""
    pyspark: str
    """The pyspark release tested and pinned for this line."""
    scala: str
    """Scala binary version (``2.12`` or ``2.13``)."""
    scala_full: str
    """The scala-library version in pyspark's jars."""
    hadoop: str
    """The Hadoop version in pyspark's jars (``hadoop-client-api``): hadoop-aws must match it."""
    trait_package: str
    """Package of Spark's ``CheckpointFileManager`` trait."""

    @property
    def conditional_create(self) -> bool:
        """Whether S3A itself sends put-if-absent creates (HADOOP-19256, Hadoop 3.4.2 and later)."""
        return tuple(int(p) for p in self.hadoop.split(".")) >= (3, 4, 2)

    @property
    def sdk_v1(self) -> bool:
        """Whether this line's hadoop-aws uses the AWS SDK for Java v1 (Hadoop 3.3.x)."""
        return self.hadoop.startswith("3.3.")


LINES: tuple[SparkLine, ...] = (
    SparkLine("3.5", "3.5.9", "2.12", "2.12.18", "3.3.4", OLD_TRAIT_PACKAGE),
    SparkLine("4.0", "4.0.5", "2.13", "2.13.16", "3.4.1", OLD_TRAIT_PACKAGE),
    SparkLine("4.1", "4.1.4", "2.13", "2.13.17", "3.4.2", NEW_TRAIT_PACKAGE),
    SparkLine("4.2", "4.2.1", "2.13", "2.13.18", "3.5.0", NEW_TRAIT_PACKAGE),
    SparkLine("4.3", "4.3.0", "2.13", "2.13.18", "3.5.0", NEW_TRAIT_PACKAGE),
)
"""Every supported line, oldest first."""

DEFAULT_LINE = LINES[-1]
"""The line of the repository's main development environment (``.venv``)."""


class UnsupportedSparkLineError(RuntimeError):
    """The running pyspark belongs to no supported line."""


def line_of(version: str) -> SparkLine:
    """The supported line of a pyspark version string (``"3.5.9"``, ``"4.1.0.dev1"``); raises
    :class:`UnsupportedSparkLineError` naming the supported lines otherwise."""
    parts = version.split(".")
    key = ".".join(parts[:2])
    for line in LINES:
        if line.line == key:
            return line
    supported = ", ".join(line.line for line in LINES)
    raise UnsupportedSparkLineError(
        f"pyspark {version} is not supported by checkpointfs: the supported Spark lines are {supported}")
