"""Streaming query shapes written in Java (``harness/jvm/io/checkpointfs/harness/Shapes.java``), for what pyspark
cannot express: ``flatMapGroupsWithState`` (Scala/Java only) and real-time mode on Spark 4.1 (``Trigger.RealTime``
came to pyspark in 4.2).

:func:`jar` compiles the source with ``javac`` against the running pyspark's own jars (Spark 3.5 is Scala 2.12,
4.x Scala 2.13: one jar per pyspark version) and caches it under ``~/.cache/checkpointfs/jvm-shapes/``; the jar goes on
the session's ``spark.jars`` (``python -m harness.job --query fmgws`` and ``--real-time`` put it there). The other
functions call the Java methods of a running session through py4j.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SOURCE_ROOT = Path(__file__).resolve().parent / "jvm"
SOURCE = SOURCE_ROOT / "io" / "checkpointfs" / "harness" / "Shapes.java"
SOURCES_SINCE: dict[Path, tuple[int, int]] = {
    SOURCE: (3, 5),
    SOURCE.with_name("RealTimeStateful.java"): (4, 3),
}
"""Each Java source and the first Spark line it compiles on: ``RealTimeStateful`` implements transformWithState's
``StatefulProcessor`` (Spark 4.0's API), used only by real-time mode's stateful shapes (Spark 4.3)."""
CLASS_NAME = "io.checkpointfs.harness.Shapes"
CACHE = Path.home() / ".cache" / "checkpointfs" / "jvm-shapes"
JAR_NAME = "shapes.jar"
JAVAC_TIMEOUT_S = 300


class ShapesBuildError(RuntimeError):
    """``javac`` is missing or failed on Shapes.java; the message carries its output."""


def pyspark_jars() -> Path:
    """The folder of the running pyspark's Spark jars (``pyspark/jars``, or ``$SPARK_HOME/jars``)."""
    import pyspark

    folder = Path(pyspark.__file__).resolve().parent / "jars"
    if not folder.is_dir() and os.environ.get("SPARK_HOME"):
        folder = Path(os.environ["SPARK_HOME"]) / "jars"
    if not folder.is_dir():
        raise ShapesBuildError(f"no Spark jars beside pyspark {pyspark.__version__} ({folder})")
    return folder


def _javac() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(java_home) / "bin" / "javac")] if java_home else []
    candidates += [c for c in (shutil.which("javac"), "/usr/bin/javac") if c]
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise ShapesBuildError("no javac (a JDK 17) on PATH or in $JAVA_HOME: the query shapes are compiled at test time")


def _line_sources() -> list[Path]:
    """The Java sources that compile on the running pyspark's line (:data:`SOURCES_SINCE`)."""
    import pyspark

    line = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
    return [source for source, since in SOURCES_SINCE.items() if line >= since]


def jar() -> Path:
    """The Shapes jar for the running pyspark, compiled on first use and cached under
    ``~/.cache/checkpointfs/jvm-shapes/<pyspark version>-<sources sha>/shapes.jar``."""
    return compiled_jar(_line_sources(), JAR_NAME)


def compiled_jar(sources: Sequence[Path], jar_name: str) -> Path:
    """A jar of the Java files ``sources`` (under :data:`SOURCE_ROOT`), compiled against the running pyspark's jars
    on first use and cached under ``~/.cache/checkpointfs/jvm-shapes/<pyspark version>-<sources sha>/<jar_name>``.

    The build happens in a temporary folder beside the cache entry, renamed into place when complete: processes
    that race both compile, one rename wins, the other's copy is dropped; a reader never sees a partial jar."""
    import pyspark

    digest = hashlib.sha256(b"".join(source.read_bytes() for source in sources)).hexdigest()[:16]
    final = CACHE / f"{pyspark.__version__}-{digest}"
    if (final / jar_name).is_file():
        return final / jar_name
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=CACHE))
    try:
        classes = work / "classes"
        command = [_javac(), "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
                   "-cp", str(pyspark_jars() / "*"), *(str(source) for source in sources)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise ShapesBuildError(f"javac failed on {[s.name for s in sources]} against pyspark "
                                   f"{pyspark.__version__}:\n{(done.stdout + done.stderr)[-4000:]}")
        with zipfile.ZipFile(work / jar_name, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: checkpointfs harness\n\n")
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        shutil.rmtree(classes)
        try:
            work.rename(final)
        except OSError:  # another process put its (identical) build in place first
            if not (final / jar_name).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final / jar_name


def _shapes(session: Any) -> Any:
    """The Java class ``Shapes`` in ``session``'s JVM (its jar must be on ``spark.jars``)."""
    from py4j.java_gateway import JavaClass

    shapes = session._jvm.io.checkpointfs.harness.Shapes
    if not isinstance(shapes, JavaClass):  # py4j answers a JavaPackage for a class it cannot load
        raise RuntimeError(f"{CLASS_NAME} is not in the session's JVM: put harness.jvm_shapes.jar() on spark.jars")
    return shapes


def flat_map_groups_with_state_dedup(frame: Any) -> Any:
    """``frame`` (streaming, with ``id LONG`` and ``key STRING``) deduplicated by id through Java's
    ``flatMapGroupsWithState`` (a Boolean state per id, append mode, no timeout): a pyspark DataFrame with the
    columns ``id`` and ``key``, each id once, the first time it is seen."""
    session = frame.sparkSession
    jdf = _shapes(session).flatMapGroupsWithStateDedup(frame._jdf)
    from pyspark.sql import DataFrame

    return DataFrame(jdf, session)  # pyspark 4.x makes it its classic (py4j) DataFrame; 3.5 takes the session too


def start_real_time_kafka(session: Any, *, bootstrap: str, source_topic: str, sink_topic: str, checkpoint: str,
                          batch_duration: str = "5 seconds") -> Any:
    """Start a real-time mode query (``Trigger.RealTime(batch_duration)``, Spark 4.1 on) copying the records of
    Kafka topic ``source_topic`` (from its earliest offsets) to ``sink_topic``, checkpointing at ``checkpoint``; a
    pyspark ``StreamingQuery``. On older lines the Java side raises UnsupportedOperationException."""
    from pyspark.sql.streaming.query import StreamingQuery

    jquery = _shapes(session).startRealTimeKafka(session._jsparkSession, bootstrap, source_topic, sink_topic,
                                                 checkpoint, batch_duration)
    return StreamingQuery(jquery)


def transform_with_state_running_count(frame: Any) -> Any:
    """``frame`` (streaming, with ``key STRING``) through the JVM's ``transformWithState`` (Spark 4.3 here: the
    operator real-time mode allows), keeping a running count per key in a ``ValueState``: a pyspark DataFrame with
    the columns ``key`` and ``count``, each batch emitting the count so far of every key it saw."""
    from pyspark.sql import DataFrame

    session = frame.sparkSession
    jvm = session._jvm
    jdf = jvm.io.checkpointfs.harness.RealTimeStateful.runningCount(frame._jdf)
    return DataFrame(jdf, session)
