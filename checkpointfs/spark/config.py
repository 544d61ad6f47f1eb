"""Spark settings that put the checkpointfs shim in charge of streaming checkpoints on s3a://, gs:// and abfs://."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from ._jars import check_jar_set, resolve_line, shim_coordinates, spark_jars
from .lines import SparkLine
from .maven import gcs_connector_jar, resolved_azure_jars, resolved_s3a_jars
from .stores import StoreSettings, azure_settings, gcs_settings

log = logging.getLogger(__name__)

SHIM_CLASS = "io.checkpointfs.spark.DirectWriteCheckpointFileManager"
"""The value of ``spark.sql.streaming.checkpointFileManagerClass`` that selects the shim."""
MANAGER_CLASS_KEY = "spark.sql.streaming.checkpointFileManagerClass"
FILE_CONTEXT_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
FILE_SYSTEM_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
ABORTABLE_STREAM_MANAGER = "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager"
"""Spark's own managers (class names; here, not in jvm_manager, so that naming them needs no py4j)."""
S3A_CLASS = "io.checkpointfs.spark.CheckpointS3AFileSystem"
"""The value of ``spark.hadoop.fs.s3a.impl`` that :func:`spark_conf` sets with the shim: S3A, except that RocksDB's
SST uploads into a checkpoint directory the shim writes are one PutObject each, with no probe (docs/contract.md,
"Local files uploaded into a checkpoint")."""
S3A_CLASS_KEY = "spark.hadoop.fs.s3a.impl"
PLUGIN_CLASS = "io.checkpointfs.spark.CheckpointfsPlugin"
"""The Spark plugin that registers the shim's metrics (protocol.json's table) with Spark's metrics system, on the
driver and on each executor: source ``plugin.io.checkpointfs.spark.CheckpointfsPlugin`` (docs/operations.md)."""
PLUGINS_KEY = "spark.plugins"
REQUEST_COUNTER_CLASS = "io.checkpointfs.spark.RequestCounter"
"""The AWS SDK v2 interceptor that counts the requests S3A sends for the shim's calls (Hadoop 3.4 and later)."""
INTERCEPTORS_KEY = "spark.hadoop.fs.s3a.audit.execution.interceptors"
PACKAGES_KEY = "spark.jars.packages"
REPOSITORIES_KEY = "spark.jars.repositories"
JARS_KEY = "spark.jars"
APPENDED_KEYS = (JARS_KEY, PACKAGES_KEY, REPOSITORIES_KEY, PLUGINS_KEY, INTERCEPTORS_KEY)
"""The comma-separated list settings :func:`configure` may set: it adds its items to what the builder already has,
in the builder's order first, each item once (a user's own jars, packages, repositories, plugins and interceptors
stay). It sets no class path setting."""

S3A_DEFAULTS: dict[str, str] = {
    # Put-if-absent commits: S3A's conditional create (HADOOP-19256) on Hadoop 3.4.2+; the shim honours the same
    # setting where it sends the conditional writes itself, and refuses to start on s3a:// without it.
    "fs.s3a.create.conditional.enabled": "true",
    # Checksums are not generated or validated by default in Hadoop 3.5.0; stated here because S3-compatible
    # stores (moto among them) differ in what they accept.
    "fs.s3a.checksum.generation": "false",
    "fs.s3a.checksum.validation": "false",
}
"""Hadoop settings for s3a:// that the shim relies on."""

_FRIENDLY_KEYS = {
    "endpoint": "fs.s3a.endpoint",
    "endpoint_url": "fs.s3a.endpoint",
    "region": "fs.s3a.endpoint.region",
    "access_key": "fs.s3a.access.key",
    "aws_access_key_id": "fs.s3a.access.key",
    "secret_key": "fs.s3a.secret.key",
    "aws_secret_access_key": "fs.s3a.secret.key",
    "session_token": "fs.s3a.session.token",
    "path_style": "fs.s3a.path.style.access",
}


@runtime_checkable
class S3Endpoint(Protocol):
    """Anything with ``hadoop_conf()`` giving ``fs.s3a.*`` settings, such as
    :class:`checkpointfs.testing.EmbeddedS3`."""

    def hadoop_conf(self) -> dict[str, str]: ...


def s3a_settings(s3: S3Endpoint | Mapping[str, str] | None) -> dict[str, str]:
    """The ``fs.s3a.*`` settings for ``s3``: an endpoint object (EmbeddedS3), a mapping of ``fs.s3a.*`` keys or of
    the short keys ``endpoint``, ``region``, ``access_key``, ``secret_key``, ``session_token``, ``path_style``, or
    None (the defaults only: credentials and endpoint come from the cluster's own configuration)."""
    settings = dict(S3A_DEFAULTS)
    if s3 is None:
        return settings
    if isinstance(s3, S3Endpoint):
        settings.update(s3.hadoop_conf())
        # A local test endpoint: fail over quickly instead of waiting out production back-offs. S3A's optimized
        # copyFromLocalFile (the SDK transfer manager; RocksDB state stores upload their SST files with it) fails
        # against moto's server, the classic one works.
        settings.update({"fs.s3a.retry.interval": "20ms", "fs.s3a.retry.throttle.interval": "20ms",
                         "fs.s3a.connection.establish.timeout": "5000",  # ms: Hadoop 3.3 takes no unit
                         "fs.s3a.optimized.copy.from.local.enabled": "false"})
        return settings
    for key, value in s3.items():
        if key.startswith("fs.s3a."):
            settings[key] = str(value)
        elif key in _FRIENDLY_KEYS:
            settings[_FRIENDLY_KEYS[key]] = str(value).lower() if isinstance(value, bool) else str(value)
        else:
            raise ValueError(f"unknown S3 setting {key!r}: use fs.s3a.* keys or one of {', '.join(_FRIENDLY_KEYS)}")
    endpoint = settings.get("fs.s3a.endpoint", "")
    if endpoint.startswith("http://"):
        settings.setdefault("fs.s3a.connection.ssl.enabled", "false")
        settings.setdefault("fs.s3a.path.style.access", "true")
    if "fs.s3a.access.key" in settings and "fs.s3a.aws.credentials.provider" not in settings:
        settings["fs.s3a.aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider" if "fs.s3a.session.token" in settings
            else "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
    return settings


def spark_conf(
    s3: S3Endpoint | Mapping[str, str] | None = None,
    *,
    gcs: StoreSettings | None = None,
    azure: StoreSettings | None = None,
    deps_dir: str | os.PathLike[str] | None = None,
    extra_jars: Iterable[str | os.PathLike[str]] = (),
    manager_class: str | None = SHIM_CLASS,
    line: SparkLine | str | None = None,
    s3a_class: str | None = S3A_CLASS,
    packages: bool = False,
    repositories: str | Iterable[str] | None = None,
) -> dict[str, str]:
    """The Spark settings, as a plain dict, that route streaming checkpoints through the shim.

    ``line``: the Spark line to configure (a :class:`~checkpointfs.spark.lines.SparkLine` or a version such as
    ``"3.5"``); by default the line of the installed pyspark. An unsupported line raises
    :class:`~checkpointfs.spark.lines.UnsupportedSparkLineError` naming the supported ones.

    - ``spark.jars``: the shim jar of that line, hadoop-aws and the AWS SDK jars matching its Hadoop (from
      ``deps_dir``, ``$CHECKPOINTFS_SPARK_DEPS`` or the repository build), then ``extra_jars``. Where no folder of s3a
      jars is found, hadoop-aws matching the line's Hadoop and its AWS SDK (for Hadoop 3.3.x, the SDK v1 bundle) are
      fetched once with Spark's own Maven resolution into a cache (:func:`checkpointfs.spark.maven.resolved_s3a_jars`):
      every jar is named on ``spark.jars``, which the driver and every executor load (``spark.jars.packages`` would
      not reach executors beside a ``spark.jars`` set in the builder: see that module).
    - ``packages=True``: ``spark.jars.packages`` instead, naming the line's shim artifact
      (:func:`~checkpointfs.spark.shim_coordinates`, whose POM brings hadoop-aws and the AWS SDK), and
      ``spark.jars.repositories`` from ``repositories`` (URLs, e.g. ``file:///path/to/dist/maven``); no
      ``spark.jars``, so neither ``deps_dir`` nor ``extra_jars`` (a ``spark.jars`` set in the same builder would
      replace the resolved jars on executors). Spark resolves packages only when the builder launches the JVM (the
      first session of a plain Python process): under ``spark-submit``, a notebook's or shell's running JVM, give
      ``--packages`` to the launch instead. That, and needing a Maven repository that holds the artifact, is why
      local ``spark.jars`` paths stay the default.
    - ``spark.sql.streaming.checkpointFileManagerClass``: ``manager_class`` (the shim by default; None leaves Spark's
      default manager in place, for comparisons).
    - ``spark.hadoop.fs.s3a.*``: :func:`s3a_settings` of ``s3``.
    - ``gcs``: ``gs://`` on Google's connector (None: not set up). Its shaded jar for the line's Hadoop
      (:attr:`SparkLine.gcs_connector`) goes on ``spark.jars``, downloaded once into the cache
      (:func:`checkpointfs.spark.maven.gcs_connector_jar`) unless ``extra_jars`` holds a ``gcs-connector`` jar, and
      ``spark.hadoop.fs.gs.*`` are :func:`checkpointfs.spark.stores.gcs_settings` of ``gcs`` (``{}``: the
      connector's defaults, credentials from the cluster).
    - ``azure``: ``abfs://`` on hadoop-azure (None: not set up). hadoop-azure matching the line's Hadoop and what
      it needs beside Spark go on ``spark.jars``, fetched once with Spark's resolution
      (:func:`checkpointfs.spark.maven.resolved_azure_jars`) unless ``extra_jars`` holds hadoop-azure, and
      ``spark.hadoop.fs.azure.*`` are :func:`checkpointfs.spark.stores.azure_settings` of ``azure``.
    - ``spark.hadoop.fs.s3a.impl``: ``s3a_class`` (:data:`S3A_CLASS` by default) when the manager is the shim, so
      that RocksDB state stores upload their SST files with one request each; None keeps S3A's own class (or the
      one the cluster sets).
    - ``spark.plugins``: :data:`PLUGIN_CLASS` when the manager is the shim (its metrics in Spark's metrics system),
      and on lines whose Hadoop is 3.4 or later ``spark.hadoop.fs.s3a.audit.execution.interceptors``:
      :data:`REQUEST_COUNTER_CLASS` (the requests of each operation). Both are lists: merge them with a value of
      your own (:func:`configure` does).

    The jar set is checked before it is returned (:func:`~checkpointfs.spark._jars.check_jar_set`): every local jar
    exists, hadoop-aws (and hadoop-azure) match the line's Hadoop; :class:`~checkpointfs.spark.JarSetError` names
    the jar and the version otherwise. Raises :class:`~checkpointfs.spark.ShimJarMissingError` when the shim jar was
    not built. Secrets in the returned dict are the ones given: never log it.
    """
    spark_line = resolve_line(line)
    repos = [repositories] if isinstance(repositories, str) else list(repositories or ())
    if packages:
        extra = list(extra_jars)
        if gcs is not None or azure is not None:
            raise ValueError("gcs= and azure= name their connectors' jars on spark.jars, which packages=True leaves "
                             "out (a spark.jars in the same builder would replace the resolved jars on executors): "
                             "use packages=False, or add the connectors to spark.jars.packages yourself and give "
                             "their settings as spark.hadoop.fs.gs.* / fs.azure.* keys")
        if deps_dir is not None or extra:
            raise ValueError("packages=True names the shim's Maven coordinates on spark.jars.packages and sets no "
                             "spark.jars: pass no deps_dir= or extra_jars= (a spark.jars in the same builder would "
                             "replace the resolved jars on executors); add other libraries as packages too")
        conf = {PACKAGES_KEY: shim_coordinates(spark_line)}
        if repos:
            conf[REPOSITORIES_KEY] = ",".join(repos)
    else:
        if repos:
            raise ValueError("repositories= is for packages=True (spark.jars.repositories)")
        jars = spark_jars(spark_line, deps_dir, list(extra_jars))
        if not _holds(jars, "hadoop-aws-"):
            jars[1:1] = [os.fspath(j) for j in resolved_s3a_jars(spark_line.hadoop)]
        if gcs is not None and not _holds(jars, "gcs-connector-"):
            jars.append(os.fspath(gcs_connector_jar(spark_line.gcs_connector)))
        if azure is not None and not _holds(jars, "hadoop-azure-"):
            jars.extend(os.fspath(j) for j in resolved_azure_jars(spark_line.hadoop))
        jars = _one_per_name(jars)
        check_jar_set(jars, spark_line, wanted=_connectors(azure))
        conf = {"spark.jars": ",".join(jars)}
    if manager_class is not None:
        conf[MANAGER_CLASS_KEY] = manager_class
    if manager_class == SHIM_CLASS and s3a_class is not None:
        conf[S3A_CLASS_KEY] = s3a_class
    if manager_class == SHIM_CLASS:
        conf[PLUGINS_KEY] = PLUGIN_CLASS
        if not spark_line.sdk_v1:
            conf[INTERCEPTORS_KEY] = REQUEST_COUNTER_CLASS
    for key, value in s3a_settings(s3).items():
        conf[f"spark.hadoop.{key}"] = value
    for store, settings in ((gcs, gcs_settings), (azure, azure_settings)):
        if store is not None:
            conf.update({f"spark.hadoop.{key}": value for key, value in settings(store, spark_line).items()})
    return conf


def _holds(jars: list[str], prefix: str) -> bool:
    """Whether a jar of ``jars`` has a file name starting with ``prefix`` (``hadoop-aws-``)."""
    return any(os.path.basename(j).startswith(prefix) for j in jars)


def _connectors(azure: StoreSettings | None) -> tuple[str, ...]:
    """The connectors that must be on ``spark.jars`` at the line's Hadoop version: hadoop-aws, and hadoop-azure when
    ``abfs://`` is set up."""
    return ("hadoop-aws", "hadoop-azure") if azure is not None else ("hadoop-aws",)


def _one_per_name(jars: list[str]) -> list[str]:
    """``jars`` less those whose file name an earlier one has: Spark refuses one name from two paths (hadoop-aws
    3.5.0 and hadoop-azure 3.5.0 both need wildfly-openssl 2.2.5, fetched into each one's folder)."""
    seen: set[str] = set()
    kept = []
    for jar in jars:
        name = os.path.basename(jar)
        if name not in seen:
            seen.add(name)
            kept.append(jar)
    return kept


BuilderT = TypeVar("BuilderT")


def configure(
    builder: BuilderT,
    s3: S3Endpoint | Mapping[str, str] | None = None,
    *,
    gcs: StoreSettings | None = None,
    azure: StoreSettings | None = None,
    deps_dir: str | os.PathLike[str] | None = None,
    extra_jars: Iterable[str | os.PathLike[str]] = (),
    manager_class: str | None = SHIM_CLASS,
    line: SparkLine | str | None = None,
    s3a_class: str | None = S3A_CLASS,
    packages: bool = False,
    repositories: str | Iterable[str] | None = None,
) -> BuilderT:
    """Apply :func:`spark_conf` to a ``SparkSession.Builder`` (anything with ``.config(key, value)``) and return it.

    Example::

        spark = configure(SparkSession.builder.appName("q"), {"endpoint": "https://s3.eu-west-1.amazonaws.com",
                                                             "region": "eu-west-1"}).getOrCreate()
        # or by Maven coordinates, resolved by Spark when the session's JVM starts:
        spark = configure(SparkSession.builder, s3, packages=True,
                          repositories="file:///path/to/checkpointfs/dist/maven").getOrCreate()
        # gs:// and abfs:// too, their connectors fetched for the running line:
        spark = configure(SparkSession.builder, s3, gcs={"project": "my-project"},
                          azure={"account": "myaccount", "account_key": key}).getOrCreate()

    The merged ``spark.jars`` (the builder's own first) is checked as :func:`spark_conf` checks its own: a jar of the
    builder's that does not exist, or a hadoop-aws of another Hadoop, raises
    :class:`~checkpointfs.spark.JarSetError` before the session starts.
    """
    target: Any = builder
    settings = spark_conf(s3, gcs=gcs, azure=azure, deps_dir=deps_dir, extra_jars=extra_jars,
                          manager_class=manager_class, line=line, s3a_class=s3a_class, packages=packages,
                          repositories=repositories)
    existing = getattr(builder, "_options", None)
    for key in APPENDED_KEYS:
        if key in settings and isinstance(existing, Mapping):
            settings[key] = _append_to_list(existing.get(key), settings[key])
    if JARS_KEY in settings:
        jars = _one_per_name(settings[JARS_KEY].split(","))
        check_jar_set(jars, resolve_line(line), wanted=_connectors(azure))
        settings[JARS_KEY] = ",".join(jars)
    for key, value in settings.items():
        target = target.config(key, value)
    return builder


def _append_to_list(current: object, value: str) -> str:
    """The items of the comma-separated ``value`` added to the list ``current`` (a builder's value, None when
    unset), each item once, the builder's first."""
    items = [item.strip() for item in str(current or "").split(",") if item.strip()]
    return ",".join([*items, *(item for item in dict.fromkeys(value.split(",")) if item and item not in items)])
