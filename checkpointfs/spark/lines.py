"""The Spark lines checkpointfs supports: the one place their versions are pinned.

Each line's facts were read off that line's own pyspark jars (``pyspark/jars``): the Scala and Hadoop versions it
ships and the package of Spark's ``CheckpointFileManager`` trait. Lines that are binary-compatible share one shim
jar (a :class:`JarGroup`), compiled against Spark and Hadoop artifacts from Maven Central, so building the shim needs
no pyspark. The Makefile, the shim build (``jvm-shim/build.sh`` and the wheel's build hook, which load this file by
path), ``configure()`` and the tests all read these tables.

Run ``python checkpointfs/spark/lines.py groups`` or ``... hadoop`` for the shell-readable tables the build uses.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

MAVEN_GROUP = "io.checkpointfs"
"""groupId of the shim artifacts (see :attr:`SparkLine.maven_artifact`)."""
OLD_TRAIT_PACKAGE = "org.apache.spark.sql.execution.streaming"
NEW_TRAIT_PACKAGE = "org.apache.spark.sql.execution.streaming.checkpointing"


@dataclass(frozen=True)
class JarGroup:
    """One shim jar: the Spark lines it serves share the Scala binary version, the trait package and how
    put-if-absent is sent. Versions are what the jar is compiled against (Maven Central)."""

    name: str
    """Source folder ``jvm-shim/src/<name>`` and jar ``checkpointfs/jars/checkpointfs-<name>.jar``."""
    scala: str
    """Scala binary version."""
    scala_full: str
    """scala-library to compile with: the oldest of the group's lines (2.x releases are backward compatible)."""
    spark_compile: str
    """spark-sql on Maven Central to compile against (the trait does not change within a group)."""
    hadoop_compile: str
    """hadoop-client-api and hadoop-aws to compile against: the oldest Hadoop of the group's lines."""
    aws_sdk_compile: str
    """The AWS SDK release that hadoop-aws ``hadoop_compile`` was built with (v1 ``1.x``, v2 ``2.x``)."""
    put_if_absent: str
    """How put-if-absent is sent, for docs/spark.md."""

    @property
    def jar_name(self) -> str:
        return f"checkpointfs-{self.name}.jar"


SPARK35 = JarGroup("spark35", "2.12", "2.12.18", "3.5.8", "3.3.4", "1.12.262",
                   "the shim's own PutObject / CompleteMultipartUpload with `If-None-Match: *` (AWS SDK v1 client "
                   "of S3A)")
SPARK40 = JarGroup("spark40", "2.13", "2.13.16", "4.0.2", "3.4.1", "2.24.6",
                   "the shim's own PutObject / CompleteMultipartUpload with `If-None-Match: *` (AWS SDK v2 client "
                   "of S3A)")
SPARK41 = JarGroup("spark41", "2.13", "2.13.17", "4.1.2", "3.4.2", "2.29.52",
                   "S3A conditional create (HADOOP-19256, `fs.option.create.conditional.overwrite`)")
JAR_GROUPS: tuple[JarGroup, ...] = (SPARK35, SPARK40, SPARK41)
"""Every shim jar the build makes (and the wheel carries)."""


@dataclass(frozen=True)
class HadoopDeps:
    """The run-time jars s3a:// needs beside one Hadoop version: hadoop-aws and its AWS SDK."""

    hadoop: str
    aws_sdk: str
    """The SDK release hadoop-project ``hadoop`` pins (``aws-java-sdk.version`` / ``aws-java-sdk-v2.version``)."""

    @property
    def sdk_v1(self) -> bool:
        return self.aws_sdk.startswith("1.")

    @property
    def packages(self) -> tuple[str, ...]:
        """Maven coordinates for ``spark.jars.packages`` when no local jars exist. hadoop-aws 3.4+ brings the SDK v2
        bundle itself; hadoop-aws 3.3.x declares its SDK v1 bundle as provided, so it is named here."""
        aws = f"org.apache.hadoop:hadoop-aws:{self.hadoop}"
        return (aws, f"com.amazonaws:aws-java-sdk-bundle:{self.aws_sdk}") if self.sdk_v1 else (aws,)


SDK_V2_BUNDLE = "software.amazon.awssdk:bundle"
"""The AWS SDK v2 in one jar (over 500 MB), which hadoop-aws 3.4+ declares; left out wherever checkpointfs names
jars."""
SDK_V2_MODULES = ("s3", "s3-transfer-manager", "sts")
"""The AWS SDK v2 modules S3A loads instead (the S3 client, its transfer manager, STS for assumed roles), fetched by
``configure()`` and named by the shim's POMs at the :class:`HadoopDeps` release."""

HADOOP_DEPS: dict[str, HadoopDeps] = {d.hadoop: d for d in (
    HadoopDeps("3.3.4", "1.12.262"),
    # hadoop-project 3.4.1 pins 2.24.6, but Maven Central has no s3-transfer-manager 2.24.6: the next patch release.
    HadoopDeps("3.4.1", "2.24.8"),
    HadoopDeps("3.4.2", "2.29.52"),
    HadoopDeps("3.5.0", "2.35.4"),
)}
"""hadoop-aws and AWS SDK per Hadoop version shipped by a supported line."""


@dataclass(frozen=True)
class GcsConnector:
    """One release of Google's Cloud Storage connector for Hadoop (``com.google.cloud.bigdataoss:gcs-connector``,
    its shaded jar: every dependency relocated under ``com.google.cloud.hadoop.repackaged``, so nothing clashes with
    Spark's jars and the jar needs nothing beside it), and the names its releases give the same settings."""

    version: str
    hadoop: str
    """The Hadoop versions it runs on, for messages and docs."""

    @property
    def coordinates(self) -> str:
        """``group:artifact:version:type:classifier`` (Maven's form; Spark's ``--packages`` cannot name a
        classifier)."""
        return f"{GCS_GROUP}:{GCS_ARTIFACT}:{self.version}:jar:shaded"

    @property
    def jar_name(self) -> str:
        return f"{GCS_ARTIFACT}-{self.version}-shaded.jar"

    @property
    def major(self) -> int:
        """2 for ``hadoop3-2.2.x``, 3 for ``3.x``."""
        return int(self.version.removeprefix("hadoop3-").split(".")[0])

    def auth_settings(self, auth: str, key_file: str | None = None) -> dict[str, str]:
        """The Hadoop settings that select ``auth`` (a key of :data:`GCS_AUTH`) on this release: 3.x names one
        ``fs.gs.auth.type``, 2.2.x switches service-account and null credentials on and off. ``key_file``: the
        service account's JSON key (``auth="service_account"``)."""
        if auth not in GCS_AUTH:
            raise ValueError(f"unknown GCS auth {auth!r}: one of {', '.join(GCS_AUTH)}")
        key = {"fs.gs.auth.service.account.json.keyfile": key_file} if key_file else {}
        if self.major >= 3:
            return {"fs.gs.auth.type": GCS_AUTH[auth], **key}
        legacy = {"none": {"fs.gs.auth.service.account.enable": "false", "fs.gs.auth.null.enable": "true"},
                  "service_account": {"fs.gs.auth.service.account.enable": "true"},
                  "compute_engine": {"fs.gs.auth.service.account.enable": "true"}}
        if auth not in legacy:
            raise ValueError(f"GCS auth {auth!r} needs gcs-connector 3.x; {self.version} (for Hadoop {self.hadoop}) "
                             f"offers {', '.join(legacy)}")
        return {**legacy[auth], **key}


GCS_GROUP = "com.google.cloud.bigdataoss"
GCS_ARTIFACT = "gcs-connector"
GCS_AUTH: dict[str, str] = {
    "none": "UNAUTHENTICATED",
    "service_account": "SERVICE_ACCOUNT_JSON_KEYFILE",
    "application_default": "APPLICATION_DEFAULT",
    "compute_engine": "COMPUTE_ENGINE",
}
"""The ``auth`` values ``configure(gcs=...)`` takes, and gcs-connector 3.x's ``fs.gs.auth.type`` for each."""
GCS_CONNECTOR = GcsConnector("3.1.18", "3.3.5 and later")
"""The connector for Hadoop 3.3.5 and later (Spark 4.0 to 4.3: Hadoop 3.4.1 to 3.5.0). The 3.x releases are built
against Hadoop 3.3.6 for Java 11 and call ``openFile()`` options that Hadoop 3.3.5 added
(``Options.OpenFileOptions``); 3.1 is the newest line that still runs on Java 11 and Hadoop 3.3 (4.0 is built
against Hadoop 3.4.2 for Java 17)."""
GCS_CONNECTOR_HADOOP_3_3 = GcsConnector("hadoop3-2.2.28", "3.2 to 3.3.4")
"""The connector for Hadoop before 3.3.5 (Spark 3.5: Hadoop 3.3.4): the 2.2 line, built against Hadoop 3.2.4 for
Java 8. The 3.x releases (3.0.0 on) use ``Options.OpenFileOptions``, which Hadoop 3.3.4 lacks: 3.1.18 fails with
``NoClassDefFoundError: org/apache/hadoop/fs/Options$OpenFileOptions`` as soon as Spark reads a file with
``openFile()``."""
GCS_FILESYSTEM_CLASS = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
GCS_ABSTRACT_FILESYSTEM_CLASS = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS"
"""The connector's FileContext binding (``fs.AbstractFileSystem.gs.impl``): without it Spark's FileContext-based
checkpoint manager cannot open ``gs://`` and Spark falls back to its FileSystem-based one."""
HADOOP_35_GCS_SIZES: dict[str, str] = {
    "fs.gs.block.size": str(64 * 1024 * 1024),
    "fs.gs.rewrite.max.chunk.size": str(512 * 1024 * 1024),
    "fs.gs.outputstream.buffer.size": str(8 * 1024 * 1024),
    "fs.gs.inputstream.inplace.seek.limit": str(8 * 1024 * 1024),
    "fs.gs.inputstream.min.range.request.size": str(2 * 1024 * 1024),
}
"""Hadoop 3.5.0 ships a GCS connector of its own (hadoop-gcp, ``org.apache.hadoop.fs.gs``; Spark does not ship its
jar) and its ``core-default.xml`` sets these sizes with unit suffixes (``64m``), which Google's connector reads with
``Configuration.getLong``: ``NumberFormatException: For input string: "64m"`` when the file system starts. The same
sizes as plain numbers work with every Hadoop. The same file names Hadoop's classes in ``fs.gs.impl`` and
``fs.AbstractFileSystem.gs.impl``, so those two must name Google's."""


def gcs_connector_for(hadoop: str) -> GcsConnector:
    """The pinned connector that runs on ``hadoop`` (``"3.3.4"``, ``"3.5.0"``)."""
    return GCS_CONNECTOR if _version(hadoop) >= (3, 3, 5) else GCS_CONNECTOR_HADOOP_3_3


@dataclass(frozen=True)
class AzureDeps:
    """hadoop-azure for one Hadoop version and the jars it needs beside Spark's (read off Spark's resolution of
    ``org.apache.hadoop:hadoop-azure:<hadoop>`` less what pyspark ships; ``jvm-shim/deps/azure-pom.xml`` gathers
    the same for the repository's tests)."""

    hadoop: str
    beside: tuple[str, ...]
    """``artifact-version`` of every jar beside hadoop-azure: what a fetch must produce."""

    @property
    def package(self) -> str:
        return f"org.apache.hadoop:hadoop-azure:{self.hadoop}"

    @property
    def jar_names(self) -> tuple[str, ...]:
        """The file names of hadoop-azure and every jar beside it (Maven's ``artifact-version.jar``)."""
        return (f"hadoop-azure-{self.hadoop}.jar", *(f"{b}.jar" for b in self.beside))


AZURE_EXCLUDED = ("commons-logging:commons-logging", "commons-codec:commons-codec",
                  "org.apache.httpcomponents:httpclient", "org.apache.httpcomponents:httpcore",
                  "com.fasterxml.jackson.core:jackson-core", "org.codehaus.jackson:jackson-core-asl",
                  "org.codehaus.jackson:jackson-mapper-asl", "org.slf4j:slf4j-api", "com.google.guava:guava")
"""Dependencies of hadoop-azure that Spark ships itself (``group:artifact``), left out of its resolution: loading an
older copy beside Spark's only shadows or conflicts (hadoop-azure 3.3.4 declares Guava 27, which Hadoop itself no
longer uses: it has hadoop-shaded-guava), and a POM-only entry in ``~/.m2`` (commons-logging's, from a Maven build's
dependency management) makes Spark's Ivy fail with "download failed"."""
AZURE_DEPS: dict[str, AzureDeps] = {d.hadoop: d for d in (
    AzureDeps("3.3.4", ("azure-storage-7.0.1", "azure-keyvault-core-1.0.0", "wildfly-openssl-1.0.7.Final",
                        "jetty-util-9.4.43.v20210629", "jetty-util-ajax-9.4.43.v20210629")),
    AzureDeps("3.4.1", ("azure-storage-7.0.1", "azure-keyvault-core-1.0.0", "hadoop-shaded-guava-1.3.0",
                        "wildfly-openssl-1.1.3.Final", "jetty-util-9.4.53.v20231009",
                        "jetty-util-ajax-9.4.53.v20231009")),
    AzureDeps("3.4.2", ("azure-storage-7.0.1", "azure-keyvault-core-1.0.0", "hadoop-shaded-guava-1.4.0",
                        "wildfly-openssl-2.1.4.Final", "jetty-util-9.4.57.v20241219",
                        "jetty-util-ajax-9.4.57.v20241219")),
    AzureDeps("3.5.0", ("azure-storage-7.0.1", "azure-keyvault-core-1.0.0", "hadoop-shaded-guava-1.5.0",
                        "HdrHistogram-2.1.12", "wildfly-openssl-2.2.5.Final")),
)}
"""hadoop-azure and what it needs beside Spark, per Hadoop version shipped by a supported line (Spark 3.5 ships
hadoop-shaded-guava 1.1.1, the one hadoop-azure 3.3.4 needs)."""


def _version(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("-")[0].split(".")[:3])


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
    group: JarGroup
    """The shim jar this line loads."""
    spark_cloud: str
    """spark-hadoop-cloud on Maven Central for this line's Scala (Spark's abortable manager; conformance suite)."""

    @property
    def conditional_create(self) -> bool:
        """Whether S3A itself sends put-if-absent creates (HADOOP-19256, Hadoop 3.4.2 and later)."""
        return _version(self.hadoop) >= (3, 4, 2)

    @property
    def gcs_connector(self) -> GcsConnector:
        """Google's connector for this line's Hadoop."""
        return gcs_connector_for(self.hadoop)

    @property
    def names_hadoop_gcp(self) -> bool:
        """Whether this line's Hadoop names its own GCS connector (hadoop-gcp) in ``core-default.xml``, with sizes
        Google's connector cannot read (:data:`HADOOP_35_GCS_SIZES`): Hadoop 3.5 and later."""
        return _version(self.hadoop) >= (3, 5)

    @property
    def azure_deps(self) -> AzureDeps:
        """hadoop-azure matching this line's Hadoop and what it needs beside Spark."""
        return AZURE_DEPS[self.hadoop]

    @property
    def abfs_direct(self) -> bool:
        """Whether the shim writes ``abfs://`` directly on this line: hadoop-azure 3.4.2 and later reach a
        flat-namespace account over its Blob endpoint (older ones delegate to Spark's manager)."""
        return _version(self.hadoop) >= (3, 4, 2)

    @property
    def sdk_v1(self) -> bool:
        """Whether this line's hadoop-aws uses the AWS SDK for Java v1 (Hadoop 3.3.x)."""
        return self.hadoop_deps.sdk_v1

    @property
    def hadoop_deps(self) -> HadoopDeps:
        """hadoop-aws and the AWS SDK matching this line's Hadoop."""
        return HADOOP_DEPS[self.hadoop]

    @property
    def maven_artifact(self) -> str:
        """The artifact id of this line's shim in the Maven repository ``make dist`` writes (group
        :data:`MAVEN_GROUP`), e.g. ``checkpointfs-spark-4.1_2.13``: one per line, not per jar group, because lines
        sharing a jar differ in the hadoop-aws and AWS SDK their POM names."""
        return f"checkpointfs-spark-{self.line}_{self.scala}"


SPARK_CLOUD_212 = "3.5.7"
SPARK_CLOUD_213 = "4.1.2"
SPARK_CLOUD_40 = "4.0.2"
LINES: tuple[SparkLine, ...] = (
    SparkLine("3.5", "3.5.9", "2.12", "2.12.18", "3.3.4", OLD_TRAIT_PACKAGE, SPARK35, SPARK_CLOUD_212),
    SparkLine("4.0", "4.0.5", "2.13", "2.13.16", "3.4.1", OLD_TRAIT_PACKAGE, SPARK40, SPARK_CLOUD_40),
    SparkLine("4.1", "4.1.4", "2.13", "2.13.17", "3.4.2", NEW_TRAIT_PACKAGE, SPARK41, SPARK_CLOUD_213),
    SparkLine("4.2", "4.2.1", "2.13", "2.13.18", "3.5.0", NEW_TRAIT_PACKAGE, SPARK41, SPARK_CLOUD_213),
    SparkLine("4.3", "4.3.0", "2.13", "2.13.18", "3.5.0", NEW_TRAIT_PACKAGE, SPARK41, SPARK_CLOUD_213),
)
"""Every supported line, oldest first."""

DEFAULT_LINE = LINES[-1]
"""The line of the repository's main development environment (``.venv``)."""


KAFKA_CONNECTORS: dict[str, str] = {
    "3.5": "3.5.7",  # no 3.5.8 or 3.5.9
    "4.0": "4.0.0",  # 4.0.1-4.0.4 are there, but not their spark-token-provider-kafka-0-10
    "4.1": "4.1.1",  # 4.1.2 and 4.1.3 lack their token provider too; no 4.1.4
    "4.2": "4.2.0",  # no 4.2.1
    "4.3": "4.2.0",  # no 4.3.x at all: the nearest line's connector
}
"""Spark's Kafka connector (``org.apache.spark:spark-sql-kafka-0-10_<scala>``) tested with each line (the Kafka tests,
tests/spark_e2e/test_kafka.py): the newest release of the line whose connector and token provider Maven Central
holds (as seen from here, 2026-11), else the nearest line's. Its kafka-clients: 3.4.1 (3.5.7), 3.9.0 (4.0.0),
3.9.1 (4.1.1), 3.9.2 (4.2.0)."""


SPARK_TEST_JARS: dict[str, tuple[str, str]] = {
    "3.5": ("3.5.9", "3.2.16"),
    "4.0": ("4.0.4", "3.2.19"),  # no 4.0.5 test-jars
    "4.1": ("4.1.3", "3.2.19"),  # no 4.1.4 test-jars
    "4.2": ("4.2.0", "3.2.19"),  # no 4.2.1 test-jars
    "4.3": ("4.2.0", "3.2.19"),  # no 4.3.x at all: the nearest line's
}
"""Spark's test-jars (``spark-core``, ``spark-catalyst``, ``spark-sql`` ``:tests``) whose CheckpointFileManager suites
run against each line's own Spark jars (harness/spark_suites.py), with the ScalaTest release Spark's build of them
tests with: the newest release of the line that Maven Central holds (as seen from here, 2026-11), else the nearest
line's (on 4.3, the 4.2.0 suites run against pyspark 4.3.0's jars, against which their subclasses are compiled)."""


class UnsupportedSparkLineError(RuntimeError):
    """The running pyspark belongs to no supported line."""


def supported_lines() -> str:
    """The supported lines, for messages (``"3.5, 4.0, ..."``)."""
    return ", ".join(line.line for line in LINES)


def line_of(version: str) -> SparkLine:
    """The supported line of a pyspark version string (``"3.5.9"``, ``"4.1.0.dev1"``); raises
    :class:`UnsupportedSparkLineError` naming the supported lines otherwise."""
    parts = version.split(".")
    key = ".".join(parts[:2])
    for line in LINES:
        if line.line == key:
            return line
    raise UnsupportedSparkLineError(
        f"pyspark {version} is not supported by checkpointfs: the supported Spark lines are {supported_lines()} "
        f"(pyspark {', '.join(line.pyspark for line in LINES)} are tested)")


def _main(argv: list[str]) -> int:
    """Shell-readable tables for the build: ``groups`` (one jar group a line: name scala scala_full spark hadoop
    sdk) or ``hadoop`` (hadoop sdk scala-binaries... : the runtime deps to gather, with the spark-hadoop-cloud per
    Scala version) or ``cloud`` (scala spark-hadoop-cloud) or ``kafka`` (line scala spark-sql-kafka-0-10)."""
    what = argv[0] if argv else "groups"
    if what == "groups":
        for g in JAR_GROUPS:
            print(g.name, g.scala, g.scala_full, g.spark_compile, g.hadoop_compile, g.aws_sdk_compile)
    elif what == "hadoop":
        for d in HADOOP_DEPS.values():
            print(d.hadoop, d.aws_sdk)
    elif what == "cloud":
        for scala, version in sorted({(line.scala, line.spark_cloud) for line in LINES}):
            print(scala, version)
    elif what == "kafka":
        for line in LINES:
            print(line.line, line.scala, KAFKA_CONNECTORS[line.line])
    else:
        print(f"usage: lines.py groups|hadoop|cloud|kafka (got {what!r})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
