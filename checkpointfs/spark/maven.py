"""hadoop-aws and the AWS SDK jars for s3a://, fetched once with Spark's own Maven resolution into a cache outside
any project, so that :func:`checkpointfs.spark.configure` can name every jar on ``spark.jars``.

Why not ``spark.jars.packages``: Spark resolves packages when the driver JVM is launched (``spark-submit``) and
appends the resolved jars to ``spark.jars``; pyspark then re-applies every builder setting over that conf, so a
``spark.jars`` set in the builder (the shim jar) replaces the merged list. The driver, which got the resolved jars
on its own class path at launch, works; executors fetch only what ``spark.jars`` names and fail with
``ClassNotFoundException: org.apache.hadoop.fs.s3a.S3AFileSystem``. Local mode hides it: one JVM. Jars named on
``spark.jars`` are served to executors by every cluster manager (standalone, YARN, Kubernetes). ``configure(...,
packages=True)`` is the other way round: the shim's own Maven artifact on ``spark.jars.packages`` and no
``spark.jars`` at all, so the resolved list stands (it then needs a Maven repository holding the artifact, and a
builder that launches the JVM).

The resolution is Spark's own (``spark-submit --packages``: Ivy, with ``~/.m2``, the local Ivy cache and Maven
Central as resolvers, ``spark.jars.repositories`` and ``spark.jars.ivySettings`` honoured). hadoop-aws 3.4 and
later ask for the whole AWS SDK v2 ``bundle`` (over 500 MB); it is excluded and the SDK modules S3A uses (``s3``,
``s3-transfer-manager``, ``sts``) are fetched instead, at the SDK release of ``HADOOP_DEPS`` in
:mod:`checkpointfs.spark.lines`: the table the shim's build gathers from, so that the user's path and the build's
agree (hadoop-aws 3.4.1 declares an SDK release that Maven Central lacks one module of). Jars Spark already ships
(netty, httpclient, slf4j, ...) are left out. The result, a folder of jars under their Maven names
(``~/.cache/checkpointfs/s3a-jars/hadoop-<version>/jars``, usable as ``deps_dir=`` or ``$CHECKPOINTFS_SPARK_DEPS``;
``$CHECKPOINTFS_CACHE`` moves the root), is reused by every later call.

The connectors of ``configure(gcs=...)`` and ``configure(azure=...)`` are cached the same way: hadoop-azure and what
it needs beside Spark with Spark's resolution (:func:`resolved_azure_jars`, ``azure-jars/hadoop-<version>/``);
Google's shaded gcs-connector, which ``--packages`` cannot name (no classifier), as one checked download from the
repository Spark's resolution starts from (:func:`gcs_connector_jar`, ``gcs-connector/<version>/``).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path

from .lines import (
    AZURE_DEPS,
    AZURE_EXCLUDED,
    GCS_ARTIFACT,
    GCS_GROUP,
    HADOOP_DEPS,
    SDK_V2_BUNDLE,
    SDK_V2_MODULES,
    GcsConnector,
)

log = logging.getLogger(__name__)

CACHE_ENV = "CHECKPOINTFS_CACHE"
RESOLVE_TIMEOUT_S = 900
FETCH_TIMEOUT_S = 300
"""Seconds without progress before a download (the GCS connector's jar) is given up."""
REPOSITORY_ENV = "DEFAULT_ARTIFACT_REPOSITORY"
"""The Maven repository Spark's own resolution starts from (Spark reads the same variable); Maven Central without."""
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
_JAR_NAME = re.compile(r"^(?P<org>[^_]+)_(?P<artifact>.+?)-(?P<rev>\d[^-]*(?:-.*)?)\.jar$")


class JarResolutionError(RuntimeError):
    """Spark's Maven resolution of hadoop-aws failed (offline, no such version, ...)."""


def cache_root() -> Path:
    """``$CHECKPOINTFS_CACHE`` or ``~/.cache/checkpointfs``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "checkpointfs")


def s3a_jars_dir(hadoop_version: str) -> Path:
    """The folder that holds (or will hold) the s3a:// jars for ``hadoop_version``."""
    return cache_root() / "s3a-jars" / f"hadoop-{hadoop_version}"


def resolved_s3a_jars(hadoop_version: str) -> list[Path]:
    """hadoop-aws ``hadoop_version`` and the AWS SDK jars S3A needs, from the cache, resolving them with Spark's
    own Maven resolution on first use (a few seconds with a warm ``~/.m2``; downloads from Maven Central
    otherwise). Safe to call from concurrent processes. :class:`JarResolutionError` when resolution fails."""

    def fetch(folder: Path) -> list[Path]:
        ivy = folder / "ivy"
        packages = HADOOP_DEPS[hadoop_version].packages  # hadoop-aws (and the SDK v1 bundle for Hadoop 3.3.x)
        aws = packages[0]
        _spark_resolve(ivy, list(packages), exclude=[SDK_V2_BUNDLE])
        bundle = _dependency_rev(ivy, "org.apache.hadoop", "hadoop-aws", hadoop_version, SDK_V2_BUNDLE)
        if bundle is not None:  # SDK v2: the modules S3A uses, at the release the build's table names
            sdk = HADOOP_DEPS[hadoop_version].aws_sdk
            if sdk != bundle:
                log.info("hadoop-aws %s declares AWS SDK %s; using %s (checkpointfs/spark/lines.py says why)",
                         hadoop_version, bundle, sdk)
            _spark_resolve(ivy, [f"software.amazon.awssdk:{m}:{sdk}" for m in SDK_V2_MODULES])
        resolved = _without_sparks_own(sorted((ivy / "jars").glob("*.jar")))
        if not any("hadoop-aws" in j.name for j in resolved):
            raise JarResolutionError(f"Spark's resolution of {aws} produced no hadoop-aws jar in {ivy / 'jars'}")
        return _maven_named(resolved, folder / "jars")

    return _fetched_once(s3a_jars_dir(hadoop_version),
                         f"hadoop-aws {hadoop_version} and the AWS SDK jars S3A needs", "Spark's Maven resolution",
                         fetch)


def azure_jars_dir(hadoop_version: str) -> Path:
    """The folder that holds (or will hold) hadoop-azure ``hadoop_version`` and the jars it needs beside Spark."""
    return cache_root() / "azure-jars" / f"hadoop-{hadoop_version}"


def resolved_azure_jars(hadoop_version: str) -> list[Path]:
    """hadoop-azure ``hadoop_version`` and what it needs beside Spark (azure-storage, azure-keyvault-core,
    hadoop-shaded-guava, ...: :data:`~checkpointfs.spark.lines.AZURE_DEPS`), from the cache, resolved with Spark's
    own Maven resolution on first use, as :func:`resolved_s3a_jars` does. :class:`JarResolutionError` when the
    resolution fails or lacks a jar the table names."""
    deps = AZURE_DEPS[hadoop_version]

    def fetch(folder: Path) -> list[Path]:
        ivy = folder / "ivy"
        _spark_resolve(ivy, [deps.package], exclude=AZURE_EXCLUDED)
        jars = _maven_named(_without_sparks_own(sorted((ivy / "jars").glob("*.jar"))), folder / "jars")
        missing = sorted(set(deps.jar_names) - {j.name for j in jars})
        if missing:
            raise JarResolutionError(f"Spark's resolution of {deps.package} lacks {', '.join(missing)} (got "
                                     f"{', '.join(j.name for j in jars)})")
        return jars

    return _fetched_once(azure_jars_dir(hadoop_version),
                         f"hadoop-azure {hadoop_version} and the jars ABFS needs beside Spark",
                         "Spark's Maven resolution", fetch)


def gcs_connector_jar(connector: GcsConnector) -> Path:
    """Google's shaded ``connector`` jar, from the cache (``gcs-connector/<version>/``), downloaded on first use
    from the Maven repository Spark's resolution uses (``$DEFAULT_ARTIFACT_REPOSITORY``, else Maven Central; a copy
    in ``~/.m2/repository`` is taken first) and checked against the repository's SHA-1. Spark's resolution cannot
    name the shaded jar (``--packages`` takes no classifier), and the jar needs nothing beside it.
    :class:`JarResolutionError` when it cannot be had."""

    def fetch(folder: Path) -> list[Path]:
        path = (f"{GCS_GROUP.replace('.', '/')}/{GCS_ARTIFACT}/{connector.version}/{connector.jar_name}")
        target = folder / connector.jar_name
        local = Path.home() / ".m2" / "repository" / path
        if local.is_file():
            shutil.copyfile(local, target)
            return [target]
        repository = os.environ.get(REPOSITORY_ENV) or MAVEN_CENTRAL
        url = repository.rstrip("/") + "/" + path
        partial = target.with_suffix(".part")
        try:
            with urllib.request.urlopen(url + ".sha1", timeout=FETCH_TIMEOUT_S) as answer:
                expected = answer.read().decode().split()[0].strip().lower()
            digest = hashlib.sha1()  # the checksum Maven repositories publish
            with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as answer, partial.open("wb") as out:
                while chunk := answer.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
        except (OSError, ValueError) as e:
            partial.unlink(missing_ok=True)
            raise JarResolutionError(
                f"could not download {connector.coordinates} from {url}: {e}. A mirror: set ${REPOSITORY_ENV} (as "
                "for Spark's own resolution); or put the jar in a folder and pass it on extra_jars= with "
                "configure(gcs=...) left out") from e
        if digest.hexdigest() != expected:
            partial.unlink(missing_ok=True)
            raise JarResolutionError(f"{url}: SHA-1 {digest.hexdigest()} differs from the repository's {expected}")
        partial.replace(target)
        return [target]

    return _fetched_once(gcs_connector_dir(connector), f"Google's gcs-connector {connector.version} (shaded)",
                         "a download from the Maven repository", fetch)[0]


def gcs_connector_dir(connector: GcsConnector) -> Path:
    """The folder that holds (or will hold) ``connector``'s jar."""
    return cache_root() / "gcs-connector" / connector.version


def _fetched_once(folder: Path, what: str, how: str, fetch: Callable[[Path], list[Path]]) -> list[Path]:
    """The jars ``fetch(folder)`` gives, fetched once into ``folder`` and listed there (``listing.txt``), later
    calls reading the listing while every jar on it exists. One fetch at a time (a file lock), said at WARNING before
    and after: a one-time wait of seconds to a minute."""
    listing = folder / "listing.txt"
    cached = _read_listing(listing)
    if cached is not None:
        return cached
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cached = _read_listing(listing)
        if cached is not None:
            return cached
        started = time.monotonic()
        # WARNING, so that it shows at default logging: a one-time wait of seconds to a minute, said before it starts.
        log.warning("checkpointfs: fetching %s (once: later sessions reuse them) with %s into %s", what, how, folder)
        jars = fetch(folder)
        size = sum(j.stat().st_size for j in jars)
        log.warning("checkpointfs: fetched %d jars (%.0f MB) in %.0f s into %s", len(jars), size / 1e6,
                    time.monotonic() - started, folder)
        tmp = listing.with_suffix(".tmp")
        tmp.write_text("".join(f"{j}\n" for j in jars))
        tmp.replace(listing)
        return jars


def _maven_named(jars: list[Path], target: Path) -> list[Path]:
    """``jars`` (Ivy's ``org_artifact-rev.jar``) linked into ``target`` as ``artifact-rev.jar``, as Maven names
    them (the name checkpointfs looks for in a folder of s3a jars: ``hadoop-aws-<version>.jar``)."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir()
    named = []
    for jar in jars:
        match = _JAR_NAME.match(jar.name)
        link = target / (f"{match.group('artifact')}-{match.group('rev')}.jar" if match else jar.name)
        try:
            os.link(jar, link)
        except OSError:
            shutil.copyfile(jar, link)
        named.append(link)
    return sorted(named)


def _read_listing(listing: Path) -> list[Path] | None:
    if not listing.is_file():
        return None
    jars = [Path(line) for line in listing.read_text().splitlines() if line]
    return jars if jars and all(j.is_file() for j in jars) else None


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _spark_resolve(ivy: Path, packages: Sequence[str], exclude: Sequence[str] = ()) -> None:
    """Run ``spark-submit --packages`` (Spark's own resolver) on a script that does nothing: the packages land in
    ``ivy/jars``."""
    with tempfile.TemporaryDirectory(prefix="checkpointfs-resolve-") as tmp:
        script = Path(tmp) / "noop.py"
        script.write_text("")
        command = [str(_spark_home() / "bin" / "spark-submit"), "--master", "local[1]",
                   "--conf", f"spark.jars.ivy={ivy}", "--conf", "spark.ui.enabled=false",
                   "--packages", ",".join(packages)]
        if exclude:
            command += ["--exclude-packages", ",".join(exclude)]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_HOME": str(_spark_home())}
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        try:
            done = subprocess.run([*command, str(script)], env=env, capture_output=True, text=True,
                                  timeout=RESOLVE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise JarResolutionError(f"could not run Spark's resolver for {', '.join(packages)}: {e}") from e
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise JarResolutionError(
            f"Spark could not resolve {', '.join(packages)} (Maven Central unreachable, or a proxy or mirror "
            f"missing? spark.jars.repositories / spark.jars.ivySettings point Spark at a mirror). Alternatively "
            f"put hadoop-aws and the AWS SDK jars in a folder and pass deps_dir= or set $CHECKPOINTFS_SPARK_DEPS. "
            f"Spark said:\n{tail}")


def _dependency_rev(ivy: Path, org: str, name: str, rev: str, dependency: str) -> str | None:
    """The revision of ``dependency`` (``group:artifact``) that the Ivy descriptor of ``org:name:rev`` declares."""
    descriptor = ivy / "cache" / org / name / f"ivy-{rev}.xml"
    if not descriptor.is_file():
        raise JarResolutionError(f"Spark's resolution left no descriptor {descriptor}")
    dep_org, dep_name = dependency.split(":")
    for node in ET.parse(descriptor).getroot().iter("dependency"):
        if node.get("org") == dep_org and node.get("name") == dep_name:
            return node.get("rev")
    return None


def _without_sparks_own(jars: list[Path]) -> list[Path]:
    """``jars`` minus the artifacts Spark already ships in ``pyspark/jars`` (at whatever version)."""
    shipped = set()
    for jar in (_spark_home() / "jars").glob("*.jar"):
        match = re.match(r"^(?P<artifact>.+?)-\d", jar.name)
        if match:
            shipped.add(match.group("artifact"))
    kept = []
    for jar in jars:
        match = _JAR_NAME.match(jar.name)
        if match is None or match.group("artifact") not in shipped:
            kept.append(jar)
    return kept
