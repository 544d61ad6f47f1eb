"""Where the JVM jars are: the shim bundled in the package, hadoop-aws and the AWS SDK gathered by the build."""

from __future__ import annotations

import os
import zipfile
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
SHIM_JAR = PACKAGE_DIR / "jars" / "checkpointfs-spark.jar"
"""The shim jar, built by ``bash jvm-shim/build.sh`` (``make setup``) and shipped inside the Python package."""
REPO_SHIM_DIR = PACKAGE_DIR.parent / "jvm-shim"
DEPS_ENV = "CHECKPOINTFS_SPARK_DEPS"
"""Environment variable naming a folder of jars for s3a:// (hadoop-aws and the AWS SDK v2)."""
HADOOP_AWS_GROUP_ARTIFACT = "org.apache.hadoop:hadoop-aws"


class ShimJarMissingError(FileNotFoundError):
    """The shim jar was not built: run ``bash jvm-shim/build.sh`` (``make setup`` does it)."""


def shim_jar() -> Path:
    """The path of the shim jar; :class:`ShimJarMissingError` if it was not built."""
    if not SHIM_JAR.is_file():
        raise ShimJarMissingError(
            f"{SHIM_JAR} does not exist: the checkpointfs Spark shim was not built. Run `bash jvm-shim/build.sh` "
            "in the checkpointfs repository (`make setup` does it; it needs Maven and a JDK 17)")
    return SHIM_JAR


@lru_cache(maxsize=1)
def shim_manifest() -> dict[str, str]:
    """The main attributes of the shim jar's manifest (versions it was built for)."""
    with zipfile.ZipFile(shim_jar()) as jar:
        text = jar.read("META-INF/MANIFEST.MF").decode("utf-8")
    attributes: dict[str, str] = {}
    for line in text.replace("\r\n", "\n").replace("\n ", "").splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            attributes[key] = value
    return attributes


def hadoop_version() -> str:
    """The Hadoop version the shim was built for (the one pyspark 4.3.0 ships)."""
    return shim_manifest().get("Checkpointfs-Hadoop-Version", "3.5.0")


def hadoop_aws_coordinates() -> str:
    """Maven coordinates of the hadoop-aws that matches the Hadoop inside Spark, for ``spark.jars.packages``."""
    return f"{HADOOP_AWS_GROUP_ARTIFACT}:{hadoop_version()}"


def dependency_dir(deps_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder of s3a:// jars: ``deps_dir``, else ``$CHECKPOINTFS_SPARK_DEPS``, else ``jvm-shim/target/deps`` of
    the repository checkout this package runs from; None when none of them holds hadoop-aws."""
    candidates = [deps_dir, os.environ.get(DEPS_ENV), REPO_SHIM_DIR / "target" / "deps"]
    for candidate in candidates:
        if candidate and any(Path(candidate).glob("hadoop-aws-*.jar")):
            return Path(candidate)
    if deps_dir is not None:
        raise FileNotFoundError(f"{deps_dir} holds no hadoop-aws-*.jar")
    return None


def dependency_jars(deps_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """hadoop-aws and the AWS SDK jars (empty when no folder of them is found; see :func:`dependency_dir`)."""
    folder = dependency_dir(deps_dir)
    return sorted(folder.glob("*.jar")) if folder else []


def conformance_jars() -> list[Path]:
    """Jars only the conformance suite needs (Spark's spark-hadoop-cloud), from the repository build."""
    return sorted((REPO_SHIM_DIR / "target" / "test-deps").glob("*.jar"))
