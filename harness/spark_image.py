"""A Spark home laid out as docs/kubernetes.md's image: the running line's pyspark home with the shim jar and its
s3a:// jars added to ``jars/`` and the settings in ``conf/spark-defaults.conf``, so that a driver or a worker started
from it needs no ``spark.jars``, no ``spark.jars.packages`` and none of the shim's settings of its own.

The new home is built in a folder of the caller's (a temp dir, never the repository): its ``jars/`` holds symlinks to
pyspark's jars and copies of the added ones, its ``conf/`` the given ``spark-defaults.conf``; every other entry of
pyspark's home (``bin/``, ``sbin/``, the Python package) is a symlink to pyspark's own.

    home = bake_spark_home(tmp / "spark", defaults_text)
    StandaloneCluster(home=home)      # workers whose executors load the jars from home/jars
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable
from pathlib import Path

from checkpointfs.spark._jars import hadoop_version, shim_jar
from checkpointfs.spark.maven import resolved_s3a_jars
from harness.servers.spark_cluster import spark_home

log = logging.getLogger(__name__)

DEFAULTS_FILE = "spark-defaults.conf"


def image_jars() -> list[Path]:
    """The jars the image adds to Spark's ``jars/``: the shim of the running line, hadoop-aws matching its Hadoop and
    the AWS SDK jars hadoop-aws needs (fetched once by Spark's resolution, as ``configure()`` fetches them)."""
    return [shim_jar(), *resolved_s3a_jars(hadoop_version())]


def bake_spark_home(target: Path, defaults: str, jars: Iterable[Path] | None = None) -> Path:
    """Build the image's Spark home in ``target`` (which must not exist): pyspark's home with ``jars`` (default
    :func:`image_jars`) copied into ``jars/`` and ``defaults`` as ``conf/spark-defaults.conf``; returns ``target``."""
    source = spark_home()
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name not in ("jars", "conf"):
            (target / entry.name).symlink_to(entry)
    (target / "jars").mkdir()
    for jar in (source / "jars").glob("*.jar"):
        (target / "jars" / jar.name).symlink_to(jar)
    added = list(image_jars() if jars is None else jars)
    for jar in added:
        if (target / "jars" / jar.name).exists():
            raise FileExistsError(f"{jar.name} is in Spark's own jars/ already: the image would hold it twice")
        shutil.copy2(jar, target / "jars" / jar.name)
    (target / "conf").mkdir()
    (target / "conf" / DEFAULTS_FILE).write_text(defaults)
    log.info("baked a Spark home in %s: %d jars added", target, len(added))
    return target
