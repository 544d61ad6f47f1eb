"""Which JVM jars a Spark session needs: the shim jar of the running Spark line (bundled in the package) and the
hadoop-aws + AWS SDK jars matching that line's Hadoop (gathered by the repository build, or fetched by Spark).

:func:`spark_jars` is the one place that decides the jar list for a session; :func:`hadoop_aws_coordinates` the
Maven coordinates of hadoop-aws for ``spark-submit --packages`` users and :func:`shim_coordinates` those of the shim's
own artifact (``configure()`` names local jars on ``spark.jars`` by default, fetching them once with
:mod:`checkpointfs.spark.maven` where none exist; ``packages=True`` names the shim's coordinates instead).
"""

from __future__ import annotations

import os
import re
import urllib.parse
import zipfile
from functools import lru_cache
from pathlib import Path

from .lines import LINES, MAVEN_GROUP, SparkLine, UnsupportedSparkLineError, line_of

PACKAGE_DIR = Path(__file__).resolve().parent.parent
JARS_DIR = PACKAGE_DIR / "jars"
"""Where the shim jars are: built by ``bash jvm-shim/build.sh`` (``make setup``) or the wheel's build hook."""
REPO_SHIM_DIR = PACKAGE_DIR.parent / "jvm-shim"
DEPS_ENV = "CHECKPOINTFS_SPARK_DEPS"
"""Environment variable naming a folder of s3a:// jars: hadoop-aws and its AWS SDK, either directly in it (for one
Hadoop version) or in ``hadoop-<version>/`` subfolders (the layout of ``jvm-shim/target/deps``)."""


class ShimJarMissingError(FileNotFoundError):
    """The shim jar was not built: run ``bash jvm-shim/build.sh`` (``make setup`` does it)."""


class JarSetError(FileNotFoundError):
    """A session's jar set would not work: a jar file named on ``spark.jars`` is missing, or a connector that must
    match Spark's Hadoop (hadoop-aws, hadoop-azure) is absent or of another version. The message names the jar and
    the version wanted."""


def running_line() -> SparkLine:
    """The supported line of the pyspark installed here (asked from pyspark itself); raises
    :class:`~checkpointfs.spark.lines.UnsupportedSparkLineError` for other versions or without pyspark."""
    try:
        from pyspark.version import __version__ as version
    except ImportError as e:
        raise UnsupportedSparkLineError(
            "pyspark is not installed here, so checkpointfs cannot tell which Spark line to configure: install "
            f"pyspark ({', '.join(line.pyspark for line in LINES)} are supported) or pass line=") from e
    return line_of(str(version))


def resolve_line(line: SparkLine | str | None) -> SparkLine:
    """``line`` as a :class:`SparkLine`: a SparkLine, a version string (``"3.5"``, ``"3.5.9"``) or None (the
    running pyspark)."""
    if line is None:
        return running_line()
    if isinstance(line, SparkLine):
        return line
    return line_of(line)


def shim_jar(line: SparkLine | str | None = None) -> Path:
    """The shim jar for ``line`` (default: the running pyspark's); :class:`ShimJarMissingError` if not built."""
    spark_line = resolve_line(line)
    jar = JARS_DIR / spark_line.group.jar_name
    if not jar.is_file():
        raise ShimJarMissingError(
            f"{jar} does not exist: the checkpointfs Spark shim for Spark {spark_line.line} was not built. Install "
            "checkpointfs from a wheel (pip builds every shim jar), or run `bash jvm-shim/build.sh` in the "
            "checkpointfs repository (`make setup` does it; it needs Maven and a JDK 17)")
    return jar


@lru_cache(maxsize=8)
def shim_manifest(jar: Path) -> dict[str, str]:
    """The main attributes of a shim jar's manifest (the group and versions it was built for)."""
    with zipfile.ZipFile(jar) as archive:
        text = archive.read("META-INF/MANIFEST.MF").decode("utf-8")
    attributes: dict[str, str] = {}
    for entry in text.replace("\r\n", "\n").replace("\n ", "").splitlines():
        key, sep, value = entry.partition(": ")
        if sep:
            attributes[key] = value
    return attributes


def hadoop_version(line: SparkLine | str | None = None) -> str:
    """The Hadoop version Spark ships on ``line`` (default: the running pyspark's): hadoop-aws must match it."""
    return resolve_line(line).hadoop


def hadoop_aws_coordinates(line: SparkLine | str | None = None) -> str:
    """Maven coordinates (``--packages``) for s3a:// on ``line``: hadoop-aws matching its Hadoop (plus the AWS SDK
    v1 bundle for Hadoop 3.3.x, which hadoop-aws only names as provided)."""
    return ",".join(resolve_line(line).hadoop_deps.packages)


def shim_coordinates(line: SparkLine | str | None = None) -> str:
    """Maven coordinates of the shim for ``line`` (``io.checkpointfs:checkpointfs-spark-4.3_2.13:<version>``): the
    artifact ``make dist`` writes to ``dist/maven/``, whose POM brings hadoop-aws and the AWS SDK of the line."""
    from .. import __version__

    return f"{MAVEN_GROUP}:{resolve_line(line).maven_artifact}:{__version__}"


def _holds_hadoop_aws(folder: Path, hadoop: str) -> bool:
    return (folder / f"hadoop-aws-{hadoop}.jar").is_file()


def _deps_in(folder: Path, hadoop: str) -> Path | None:
    """``folder`` or its ``hadoop-<version>`` subfolder when it holds hadoop-aws ``hadoop``; raise when it holds
    another hadoop-aws only (a mismatch would fail later with a ClassNotFoundException that says nothing)."""
    for candidate in (folder / f"hadoop-{hadoop}", folder):
        if _holds_hadoop_aws(candidate, hadoop):
            return candidate
    others = sorted(p.name for p in folder.glob("hadoop-aws-*.jar")) + sorted(
        f"{p.name}/" for p in folder.glob("hadoop-*") if p.is_dir())
    if others:
        raise FileNotFoundError(
            f"{folder} holds s3a jars for another Hadoop ({', '.join(others)}), but this Spark ships Hadoop {hadoop}: "
            f"hadoop-aws must match it. Gather hadoop-aws-{hadoop}.jar and its AWS SDK there (in hadoop-{hadoop}/), "
            "or leave the folder out so that Spark fetches them")
    return None


def dependency_dir(deps_dir: str | os.PathLike[str] | None = None,
                   line: SparkLine | str | None = None) -> Path | None:
    """The folder of s3a:// jars for ``line``: from ``deps_dir``, else ``$CHECKPOINTFS_SPARK_DEPS``, else the
    repository build (``jvm-shim/target/deps``); each may hold the jars directly or per Hadoop version in
    ``hadoop-<version>/``. None when none of them holds the matching hadoop-aws."""
    hadoop = resolve_line(line).hadoop
    if deps_dir is not None:
        found = _deps_in(Path(deps_dir), hadoop)
        if found is None:
            raise FileNotFoundError(f"{deps_dir} holds no hadoop-aws-{hadoop}.jar (nor hadoop-{hadoop}/)")
        return found
    env = os.environ.get(DEPS_ENV)
    if env:
        found = _deps_in(Path(env), hadoop)
        if found is not None:
            return found
    repo = REPO_SHIM_DIR / "target" / "deps" / f"hadoop-{hadoop}"
    return repo if _holds_hadoop_aws(repo, hadoop) else None


def dependency_jars(deps_dir: str | os.PathLike[str] | None = None,
                    line: SparkLine | str | None = None) -> list[Path]:
    """hadoop-aws and the AWS SDK jars for ``line`` (empty when no folder of them is found; see
    :func:`dependency_dir`)."""
    folder = dependency_dir(deps_dir, line)
    return sorted(folder.glob("*.jar")) if folder else []


def spark_jars(line: SparkLine | str | None = None, deps_dir: str | os.PathLike[str] | None = None,
               extra_jars: tuple[str | os.PathLike[str], ...] | list[str | os.PathLike[str]] = ()) -> list[str]:
    """Every jar a session on ``line`` loads for the shim: the shim jar, the local s3a jars (if any), then
    ``extra_jars``. Where no local s3a jars exist, :func:`~checkpointfs.spark.configure` adds the ones
    :func:`checkpointfs.spark.maven.resolved_s3a_jars` fetches."""
    spark_line = resolve_line(line)
    jars = [shim_jar(spark_line), *dependency_jars(deps_dir, spark_line)]
    return [os.fspath(j) for j in jars] + [os.fspath(j) for j in extra_jars]


def conformance_jars(line: SparkLine | str | None = None, *, shim_dir: Path = REPO_SHIM_DIR) -> list[Path]:
    """Jars only the conformance suite needs (Spark's spark-hadoop-cloud for ``line``), from the repository build
    under ``shim_dir`` (a checkout's ``jvm-shim``; by default the one beside this package, which an installed wheel
    does not have: pass the checkout's). Empty when they were not built (``make setup`` builds them)."""
    version = resolve_line(line).spark_cloud
    return sorted((shim_dir / "target" / "test-deps" / f"spark-hadoop-cloud-{version}").glob("*.jar"))


def abfs_jars(line: SparkLine | str | None = None, *, shim_dir: Path = REPO_SHIM_DIR) -> list[Path]:
    """hadoop-azure and what it needs beside Spark for ``line``'s Hadoop, from the repository build under
    ``shim_dir`` (jvm-shim/build.sh gathers them into ``target/deps/hadoop-azure-<version>`` for Hadoop 3.4.2 and
    later: Spark 4.1+), less the jars hadoop-aws's folder brings already (Spark refuses one name from two paths).
    Empty when they were not gathered."""
    hadoop = resolve_line(line).hadoop
    deps = shim_dir / "target" / "deps"
    folder = deps / f"hadoop-azure-{hadoop}"
    s3a = {j.name for j in (deps / f"hadoop-{hadoop}").glob("*.jar")}
    return sorted(j for j in folder.glob("*.jar") if j.name not in s3a) if folder.is_dir() else []


HADOOP_MATCHED = {"hadoop-aws": "s3a://", "hadoop-azure": "abfs://"}
"""Connectors that must be the very version of the Hadoop Spark ships, and the scheme each serves."""


def check_jar_set(jars: list[str], line: SparkLine, *, wanted: tuple[str, ...] = ("hadoop-aws",)) -> None:
    """Refuse, with :class:`JarSetError` naming the jar and the version, a ``spark.jars`` list (``jars``) for
    ``line`` where a local jar file (a path or a ``file:`` URL; other URLs are the cluster's to fetch) does not exist,
    where a connector of :data:`HADOOP_MATCHED` is of another Hadoop version, or where one of ``wanted`` is
    missing. Spark itself would start and fail later, at the first use of the scheme, with a
    ``ClassNotFoundException`` that names no jar."""
    names: dict[str, list[str]] = {}
    for jar in jars:
        parsed = urllib.parse.urlsplit(jar)
        local = parsed.scheme in ("", "file")
        path = Path(urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else jar)
        if local and not path.is_file():
            raise JarSetError(f"{jar} does not exist: it is named on spark.jars, so Spark would start without it. "
                              "Fix the path, or leave it out (configure() fetches the connectors it sets up)")
        match = re.match(r"^(?P<artifact>.+?)-(?P<version>\d[^/]*)\.jar$", path.name)
        if match:
            names.setdefault(match.group("artifact"), []).append(match.group("version"))
    for artifact, scheme in HADOOP_MATCHED.items():
        versions = names.get(artifact, [])
        other = sorted(v for v in versions if v != line.hadoop)
        if other:
            raise JarSetError(
                f"spark.jars holds {artifact}-{other[0]}.jar, but Spark {line.line} ships Hadoop {line.hadoop}: "
                f"{scheme} needs {artifact}-{line.hadoop}.jar (the same version as Spark's Hadoop), or it fails at "
                "its first use with a ClassNotFoundException or NoSuchMethodError")
        if artifact in wanted and not versions:
            raise JarSetError(
                f"spark.jars holds no {artifact}-{line.hadoop}.jar: {scheme} needs it (the same version as the Hadoop "
                f"Spark {line.line} ships) and what it needs beside Spark; configure() fetches them when no folder "
                "of them is given")
