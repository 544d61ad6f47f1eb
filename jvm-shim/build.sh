#!/usr/bin/env bash
# Builds the checkpointfs Spark shim and gathers the jars Spark needs for s3a://.
#
#   checkpointfs/jars/checkpointfs-spark.jar   the shim, bundled into the Python package
#   jvm-shim/target/deps/*.jar                 hadoop-aws (the Hadoop version pyspark ships) + the AWS SDK v2 modules
#   jvm-shim/target/test-deps/*.jar            spark-hadoop-cloud, for the conformance suite
#
# Idempotent: does nothing when the bundled jar is newer than the sources and the pom and the jar folders are there.
# Usage: bash jvm-shim/build.sh [--force]   (CHECKPOINTFS_PYTHON=path/to/python: the interpreter with pyspark;
#                                             default: the repository's .venv)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
out_jar="$repo/checkpointfs/jars/checkpointfs-spark.jar"
python="${CHECKPOINTFS_PYTHON:-$repo/.venv/bin/python}"

up_to_date() {
  [ -f "$out_jar" ] || return 1
  ls "$here"/target/deps/hadoop-aws-*.jar >/dev/null 2>&1 || return 1
  ls "$here"/target/test-deps/*.jar >/dev/null 2>&1 || return 1
  [ -z "$(find "$here/pom.xml" "$here/src" "$here/build.sh" -newer "$out_jar" -print -quit)" ]
}

if [ "${1:-}" != "--force" ] && up_to_date; then
  exit 0
fi

if ! command -v mvn >/dev/null 2>&1; then
  echo "jvm-shim/build.sh: Maven (mvn) is not installed; install Maven 3.8+ and a JDK 17 (e.g. apt-get install maven openjdk-17-jdk-headless)" >&2
  exit 1
fi
if ! pyspark_jars="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' 2>/dev/null)"; then
  echo "jvm-shim/build.sh: $python cannot import pyspark; install checkpointfs with the [spark] extra first (make setup)" >&2
  exit 1
fi
if [ ! -f "$pyspark_jars/spark-sql_2.13-4.3.0.jar" ]; then
  echo "jvm-shim/build.sh: $pyspark_jars has no spark-sql_2.13-4.3.0.jar; the shim is built for pyspark 4.3.0" >&2
  exit 1
fi

echo "jvm-shim: building the Spark shim with Maven (first run downloads plugins and hadoop-aws from Maven Central)" >&2
mvn -q -B -Dstyle.color=never --no-transfer-progress -f "$here/pom.xml" -Dpyspark.jars="$pyspark_jars" clean package 2>&1 | sed -e "s/\x1b\[[0-9;]*m//g" -e "/^$/d" >&2
mkdir -p "$(dirname "$out_jar")"
cp "$here/target/checkpointfs-spark-0.1.0.jar" "$out_jar.tmp"
mv -f "$out_jar.tmp" "$out_jar"
echo "jvm-shim: $out_jar and $(ls "$here"/target/deps/*.jar | wc -l) dependency jars in jvm-shim/target/deps" >&2
