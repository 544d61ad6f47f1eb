"""Spark's own CheckpointFileManager suites, unmodified, against a store a test fixture started.

Spark ships ``CheckpointFileManagerTests`` (and, from 4.1, ``ChecksumCheckpointFileManagerSuite``) in its test-jars on
Maven Central. This module runs them with ScalaTest's ``Runner`` in a JVM of its own, once per manager: the shim as
Spark loads it, and Spark's own FileContext, FileSystem and abortable-stream managers beside it. The tests are
Spark's bytecode; what a subclass must supply (the manager, a directory to work in, the leak checks that Spark's own
subclasses make on the local disk) is in ``jvm-sparktests/src`` (``OnStore.java`` and one ``SparkSuitesOnStore.java``
per trait package).

- :func:`spark_test_jars`: the line's test-jars and ScalaTest (``checkpointfs.spark.lines.SPARK_TEST_JARS``), copied
  once by Maven (``jvm-sparktests/pom.xml``) into ``~/.cache/checkpointfs/spark-suites/jars/``;
- :func:`suite_classes`: the subclasses, compiled once per pyspark version and source with ``javac`` against the
  running pyspark's own jars, into ``~/.cache/checkpointfs/spark-suites/classes/``;
- :func:`run`: one JVM (the running pyspark's jars, the shim jar, hadoop-aws and its SDK, spark-hadoop-cloud, the
  test-jars) running the suites of the managers asked for against the store whose ``fs.s3a.*`` settings are given;
  the outcome of every test read from ScalaTest's JUnit XML reports.

The store's settings (credentials included) go to the JVM in a properties file readable by this user only, deleted
after the run; nothing prints them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from checkpointfs.spark._jars import conformance_jars, dependency_jars, shim_jar
from checkpointfs.spark.lines import NEW_TRAIT_PACKAGE, SPARK_TEST_JARS, SparkLine

REPO = Path(__file__).resolve().parent.parent
SOURCES = REPO / "jvm-sparktests"
POM = SOURCES / "pom.xml"
CACHE = Path(os.environ.get("CHECKPOINTFS_CACHE", Path.home() / ".cache" / "checkpointfs")) / "spark-suites"
PACKAGE = "io.checkpointfs.sparksuites"
MANAGERS = ("shim", "filecontext", "filesystem", "abortable")
"""The managers the suites run against: the shim (``spark.sql.streaming.checkpointFileManagerClass``), Spark's
FileContext- and FileSystem-based managers, Spark's AbortableStreamBasedCheckpointFileManager (spark-hadoop-cloud)."""
TRAIT_SUITE = "CheckpointFileManagerTests"
CHECKSUM_SUITE = "ChecksumCheckpointFileManagerSuite"
_CLASS_STEMS = {"shim": "Shim", "filecontext": "FileContext", "filesystem": "FileSystem", "abortable": "Abortable"}
MAVEN_TIMEOUT_S = 600
JAVAC_TIMEOUT_S = 300


class SparkSuitesError(RuntimeError):
    """The suites could not be set up or run (Maven, javac or the JVM failed); the message carries their output."""


@dataclass(frozen=True)
class Outcome:
    """One of Spark's tests in one run: its suite (``CheckpointFileManagerTests`` or
    ``ChecksumCheckpointFileManagerSuite``), the manager it ran against (:data:`MANAGERS`), its name, ``passed``,
    ``failed`` or ``skipped``, and the failure's message."""

    suite_kind: str
    manager: str
    test: str
    status: str
    message: str = ""


@dataclass(frozen=True)
class SuiteRun:
    """What one JVM of the suites did: every test's outcome, its exit status, its wall time and its output."""

    outcomes: tuple[Outcome, ...]
    returncode: int
    seconds: float
    output: str

    def of(self, manager: str) -> list[Outcome]:
        """The outcomes of the suites run against ``manager``."""
        return [o for o in self.outcomes if o.manager == manager]

    def failed(self, manager: str) -> dict[tuple[str, str], str]:
        """(suite kind, test name) -> message of every test of ``manager`` that did not pass."""
        return {(o.suite_kind, o.test): o.message for o in self.of(manager) if o.status != "passed"}


def suites_of(line: SparkLine) -> tuple[str, ...]:
    """The suites the line's test-jars hold: the trait's, and from 4.1 (the trait in ``...checkpointing``) the
    checksum manager's."""
    return (TRAIT_SUITE, CHECKSUM_SUITE) if line.trait_package == NEW_TRAIT_PACKAGE else (TRAIT_SUITE,)


def suite_class(manager: str, suite_kind: str) -> str:
    """The ScalaTest class (``jvm-sparktests/src``) of ``suite_kind`` against ``manager``."""
    return f"{PACKAGE}.SparkSuitesOnStore${_CLASS_STEMS[manager]}{'Tests' if suite_kind == TRAIT_SUITE else 'Checksum'}"


_SUITES_BY_CLASS = {suite_class(m, kind): (kind, m) for m in MANAGERS for kind in (TRAIT_SUITE, CHECKSUM_SUITE)}


def suite_class_names(line: SparkLine, managers: Iterable[str]) -> list[str]:
    """The ScalaTest classes of the line's suites against ``managers``."""
    return [suite_class(manager, kind) for manager in managers for kind in suites_of(line)]


def _digest(paths: Iterable[Path]) -> str:
    sha = hashlib.sha256()
    for path in sorted(paths):
        sha.update(str(path.relative_to(SOURCES)).encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:16]


def _publish(work: Path, final: Path) -> Path:
    """Move the folder ``work`` to ``final`` unless another process got there first (then drop it)."""
    try:
        work.rename(final)
    except OSError:
        if not final.is_dir():
            raise
        shutil.rmtree(work, ignore_errors=True)
    return final


def spark_test_jars(line: SparkLine) -> list[Path]:
    """Spark's test-jars for ``line`` and ScalaTest, copied by Maven once into the cache (test-jars alone, without
    Spark's own jars: the line's pyspark brings those)."""
    spark, scalatest = SPARK_TEST_JARS[line.line]
    final = CACHE / "jars" / f"spark-{spark}_{line.scala}-scalatest-{scalatest}-{_digest([POM])}"
    if not final.is_dir():
        mvn = shutil.which("mvn")
        if mvn is None:
            raise SparkSuitesError("Maven (mvn) is needed to fetch Spark's test-jars: install Maven 3.8+ and a JDK 17")
        final.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        command = [mvn, "-q", "-B", "--no-transfer-progress", "-Dstyle.color=never", "-f", str(POM),
                   "dependency:copy-dependencies", f"-DoutputDirectory={work}", f"-Dspark.tests.version={spark}",
                   f"-Dscala.binary.version={line.scala}", f"-Dscalatest.version={scalatest}"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S, check=False)
        if done.returncode != 0 or not list(work.glob("spark-sql_*-tests.jar")):
            shutil.rmtree(work, ignore_errors=True)
            raise SparkSuitesError(f"Maven could not copy Spark {spark}'s test-jars (Scala {line.scala}):\n"
                                   f"{(done.stdout + done.stderr)[-4000:]}")
        _publish(work, final)
    return sorted(final.glob("*.jar"))


def pyspark_jars() -> Path:
    """The folder of the running pyspark's Spark jars."""
    import pyspark

    folder = Path(pyspark.__file__).resolve().parent / "jars"
    if not folder.is_dir():
        raise SparkSuitesError(f"no Spark jars beside pyspark {pyspark.__version__} ({folder})")
    return folder


def _java_tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(java_home) / "bin" / name)] if java_home else []
    candidates += [c for c in (shutil.which(name),) if c]
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise SparkSuitesError(f"no {name} (a JDK 17) on PATH or in $JAVA_HOME")


def cloud_jars(line: SparkLine) -> list[Path]:
    """spark-hadoop-cloud for ``line`` (Spark's abortable manager), gathered by ``bash jvm-shim/build.sh``."""
    jars = conformance_jars(line, shim_dir=REPO / "jvm-shim")
    if not jars:
        raise SparkSuitesError(f"spark-hadoop-cloud {line.spark_cloud} was not gathered into jvm-shim/target/test-deps:"
                               " run `bash jvm-shim/build.sh` (`make setup` does)")
    return jars


def suite_classes(line: SparkLine) -> Path:
    """The suites' subclasses for the running pyspark, compiled with javac against its own jars, the test-jars and
    spark-hadoop-cloud, cached per pyspark version and source (a folder of classes)."""
    import pyspark

    variant = "checkpointing" if line.trait_package == NEW_TRAIT_PACKAGE else "streaming"
    sources = sorted([*(SOURCES / "src" / "common").rglob("*.java"), *(SOURCES / "src" / variant).rglob("*.java")])
    final = CACHE / "classes" / f"{pyspark.__version__}-{_digest(sources)}"
    if not final.is_dir():
        final.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        classpath = [str(pyspark_jars() / "*"), *map(str, spark_test_jars(line)), *map(str, cloud_jars(line))]
        command = [_java_tool("javac"), "-nowarn", "-encoding", "UTF-8", "-d", str(work),
                   "-cp", os.pathsep.join(classpath), *map(str, sources)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S, check=False)
        if done.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            raise SparkSuitesError(f"javac failed on jvm-sparktests/src ({variant}) against pyspark "
                                   f"{pyspark.__version__}:\n{(done.stdout + done.stderr)[-4000:]}")
        _publish(work, final)
    return final


def classpath(line: SparkLine) -> list[str]:
    """The JVM's class path: the suites' subclasses, the running pyspark's jars, the shim, hadoop-aws and its SDK,
    spark-hadoop-cloud, Spark's test-jars and ScalaTest."""
    deps = dependency_jars(line=line)
    if not deps:
        raise SparkSuitesError(f"no hadoop-aws {line.hadoop} jars: run `bash jvm-shim/build.sh` (`make setup` does) or "
                               "set $CHECKPOINTFS_SPARK_DEPS")
    return [str(suite_classes(line)), str(pyspark_jars() / "*"), str(shim_jar(line)),
            *map(str, deps), *map(str, cloud_jars(line)), *map(str, spark_test_jars(line))]


def _outcomes(reports: Path) -> tuple[Outcome, ...]:
    """Every test case of ScalaTest's JUnit XML reports in ``reports``, in report order."""
    outcomes = []
    for report in sorted(reports.glob("*.xml")):
        root = ElementTree.parse(report).getroot()
        for suite in root.iter("testsuite"):
            for case in suite.iter("testcase"):
                problem = case.find("failure")
                if problem is None:
                    problem = case.find("error")
                status = ("failed" if problem is not None else "skipped" if case.find("skipped") is not None
                          else "passed")
                message = (problem.get("message") or problem.text or "").strip() if problem is not None else ""
                kind, manager = _SUITES_BY_CLASS[case.get("classname") or suite.get("name") or ""]
                outcomes.append(Outcome(kind, manager, case.get("name", ""), status, message))
    return tuple(outcomes)


def run(line: SparkLine, managers: Iterable[str], hadoop_conf: Mapping[str, str], root: str, *,
        timeout_s: float = 600) -> SuiteRun:
    """Run the line's suites against each of ``managers`` (:data:`MANAGERS`) in one JVM, each test in a fresh
    directory below ``root`` (an ``s3a://`` URI) of the store that ``hadoop_conf`` (``fs.s3a.*``) reaches."""
    chosen = list(managers)
    unknown = sorted(set(chosen) - set(MANAGERS))
    if unknown:
        raise ValueError(f"unknown manager(s) {unknown}: expected some of {MANAGERS}")
    cp = classpath(line)
    with tempfile.TemporaryDirectory(prefix="checkpointfs-spark-suites-") as folder:
        work = Path(folder)
        settings = work / "store.properties"
        settings.touch(mode=0o600)
        settings.write_text("".join(f"{key}={_escaped(value)}\n" for key, value in hadoop_conf.items()))
        reports = work / "reports"
        command = [_java_tool("java"), "-cp", os.pathsep.join(cp),
                   f"-Dcheckpointfs.suites.conf={settings}", f"-Dcheckpointfs.suites.root={root}",
                   "org.scalatest.tools.Runner", "-oW", "-u", str(reports)]
        for name in suite_class_names(line, chosen):
            command += ["-s", name]
        started = time.monotonic()
        try:
            done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as e:
            raise SparkSuitesError(f"Spark's suites did not finish within {timeout_s} s") from e
        seconds = time.monotonic() - started
        output = done.stdout + done.stderr
        outcomes = _outcomes(reports) if reports.is_dir() else ()
        if not outcomes:
            raise SparkSuitesError(f"ScalaTest reported no test (exit {done.returncode}):\n{output[-6000:]}")
        return SuiteRun(outcomes, done.returncode, seconds, output)


def _escaped(value: str) -> str:
    """``value`` as a java.util.Properties value."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")
