#!/usr/bin/env bash
# Builds the checkpointfs Spark shim, one jar per group of binary-compatible Spark lines, and gathers the jars Spark
# needs for s3a://. Every version comes from checkpointfs/spark/lines.py (no pyspark needed: the shim is compiled
# against Maven Central's Spark and Hadoop artifacts).
#
#   checkpointfs/jars/checkpointfs-<group>.jar     the shims (spark35, spark40, spark41), bundled into the Python package
#   jvm-shim/target/deps/hadoop-<version>/*.jar    hadoop-aws + its AWS SDK, for every Hadoop version a line ships
#   jvm-shim/target/deps/hadoop-azure-<version>/*.jar   hadoop-azure (ABFS) for the Hadoop versions 3.4.2 and later,
#                                                   whose lines the shim writes abfs:// directly on (tests only)
#   jvm-shim/target/test-deps/spark-hadoop-cloud-<version>/*.jar   Spark's abortable manager, for the conformance suite
#
# Before Maven, gen_protocol.py writes io.checkpointfs.spark.Protocol from checkpointfs/protocol/protocol.json (the
# write protocol's facts, stated once) into jvm-shim/target/generated/protocol. Maven then runs the shim's unit
# suites (src/test/scala, against the golden tables tests/protocol/golden_*.json; no Spark started): a failing suite
# fails the build.
#
# Idempotent: does nothing when the jars are newer than the sources, protocol.json, the generator and lines.py, and
# the dependency folders exist.
# Usage: bash jvm-shim/build.sh [--force] [--jars-only]
#   --jars-only: only the shim jars, without the unit suites (what the wheel's build hook runs: an sdist has no
#   tests/); CHECKPOINTFS_JARS_OUT=dir puts them there.
#   CHECKPOINTFS_PYTHON: the interpreter that reads lines.py and runs gen_protocol.py (default python3).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
lines="$repo/checkpointfs/spark/lines.py"
protocol="$repo/checkpointfs/protocol/protocol.json"
generator="$here/gen_protocol.py"
golden=("$repo"/tests/protocol/golden_*.json)
python="${CHECKPOINTFS_PYTHON:-$(command -v python3 || command -v python)}"
jars_out="${CHECKPOINTFS_JARS_OUT:-$repo/checkpointfs/jars}"
force=0 jars_only=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --jars-only) jars_only=1 ;;
    *) echo "usage: bash jvm-shim/build.sh [--force] [--jars-only]" >&2; exit 2 ;;
  esac
done

groups="$("$python" "$lines" groups)"
hadoops="$("$python" "$lines" hadoop)"
clouds="$("$python" "$lines" cloud)"

sources=("$here/pom.xml" "$here/src" "$here/build.sh" "$lines" "$protocol" "$generator")
for g in "${golden[@]}"; do [ -f "$g" ] && sources+=("$g"); done
jar_up_to_date() { # $1: jar
  [ -f "$1" ] && [ -z "$(find "${sources[@]}" -newer "$1" -print -quit)" ]
}

# A cache outside the repository ($CHECKPOINTFS_CACHE or ~/.cache/checkpointfs, as for the test servers), so that a
# fresh clone does not compile what an earlier build compiled from the same sources: the jars under shim/<key>/, the
# key a hash of every source file's path and content (the same inputs as jar_up_to_date), written only after Maven
# built the jar and its unit suites passed; the gathered dependency folders under shim-deps/<folder>/, which depend
# only on the versions in their names. --force bypasses it.
cache="${CHECKPOINTFS_CACHE:-$HOME/.cache/checkpointfs}"
sources_key() {
  (cd "$repo" && find "${sources[@]#"$repo/"}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) \
    | sha256sum | cut -c1-16
}
file_key() { sha256sum "$1" | cut -c1-8; }
from_cache() { # $1: cached file or folder, $2: where it goes
  [ "$force" = 0 ] && [ -e "$1" ] || return 1
  rm -rf "$2.tmp" && mkdir -p "$(dirname "$2")" && cp -R "$1" "$2.tmp" && rm -rf "$2" && mv "$2.tmp" "$2"
}
to_cache() { # $1: built file or folder, $2: its place in the cache
  rm -rf "$2.tmp.$$" && mkdir -p "$(dirname "$2")" && cp -R "$1" "$2.tmp.$$" && rm -rf "$2" && mv "$2.tmp.$$" "$2" \
    || echo "jvm-shim: could not keep ${1#$repo/} in $cache (the next fresh clone builds it again)" >&2
}

mvn_quiet() {
  mvn -q -B -Dstyle.color=never --no-transfer-progress "$@" 2>&1 | sed -e "s/\x1b\[[0-9;]*m//g" -e "/^$/d" >&2
  return "${PIPESTATUS[0]}"
}

if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "jvm-shim/build.sh: the checkpointfs Spark shim is built with Maven and a JDK 17, and $(command -v mvn >/dev/null 2>&1 && echo "javac" || echo "mvn") is not on PATH: install Maven 3.8+ and a JDK 17 (e.g. apt-get install maven openjdk-17-jdk-headless)" >&2
  exit 1
fi

test_args=()
[ "$jars_only" = 1 ] && test_args=(-Dmaven.test.skip=true -DskipTests)

mkdir -p "$jars_out"
"$python" "$generator" "$protocol" "$here/target/generated/protocol"
key="$(sources_key)"
total="$(grep -c . <<< "$groups")" n=0
while read -r group scala_full_bin scala_full spark hadoop sdk; do
  jar="$jars_out/checkpointfs-$group.jar" n=$((n + 1))
  if [ "$force" = 0 ] && jar_up_to_date "$jar"; then continue; fi
  cached="$cache/shim/$key/checkpointfs-$group.jar"
  if from_cache "$cached" "$jar"; then
    echo "jvm-shim: $group built from these sources before: ${cached/#$HOME/\~}" >&2
    continue
  fi
  echo "jvm-shim: building $group ($n of $total; Scala $scala_full, compiled against Spark $spark, Hadoop $hadoop) with Maven" >&2
  mvn_quiet -f "$here/pom.xml" clean package -Dshim.group="$group" -Dscala.version="$scala_full" \
    -Dscala.binary.version="$scala_full_bin" -Dspark.version="$spark" -Dhadoop.version="$hadoop" \
    -Daws.sdk.version="$sdk" ${test_args[@]+"${test_args[@]}"}
  cp "$here/target/$group/checkpointfs-$group.jar" "$jar.tmp"
  mv -f "$jar.tmp" "$jar"
  [ "$jars_only" = 1 ] || to_cache "$jar" "$cached" # a jar whose unit suites ran and passed
done <<< "$groups"
rm -f "$jars_out/checkpointfs-spark.jar" # the single jar of earlier versions
[ "$jars_only" = 1 ] && exit 0

while read -r hadoop sdk; do
  dir="$here/target/deps/hadoop-$hadoop"
  if [ "$force" = 0 ] && ls "$dir"/hadoop-aws-*.jar >/dev/null 2>&1; then continue; fi
  from_cache "$cache/shim-deps/deps/hadoop-$hadoop-sdk-$sdk-$(file_key "$here/deps/pom.xml")" "$dir" && continue
  echo "jvm-shim: gathering hadoop-aws $hadoop and AWS SDK $sdk into ${dir#$repo/}" >&2
  sdk_major="v${sdk%%.*}"
  mvn_quiet -f "$here/deps/pom.xml" package -Dhadoop.version="$hadoop" -Daws.sdk.version="$sdk" -Dsdk="$sdk_major"
  to_cache "$dir" "$cache/shim-deps/deps/hadoop-$hadoop-sdk-$sdk-$(file_key "$here/deps/pom.xml")"
done <<< "$hadoops"

while read -r hadoop sdk; do
  case "$hadoop" in 3.3.*|3.4.0|3.4.1) continue ;; esac # ABFS reaches a flat namespace's Blob endpoint from 3.4.2
  dir="$here/target/deps/hadoop-azure-$hadoop"
  if [ "$force" = 0 ] && ls "$dir"/hadoop-azure-*.jar >/dev/null 2>&1; then continue; fi
  from_cache "$cache/shim-deps/deps/hadoop-azure-$hadoop-$(file_key "$here/deps/azure-pom.xml")" "$dir" && continue
  echo "jvm-shim: gathering hadoop-azure $hadoop into ${dir#$repo/}" >&2
  mvn_quiet -f "$here/deps/azure-pom.xml" package -Dhadoop.version="$hadoop"
  to_cache "$dir" "$cache/shim-deps/deps/hadoop-azure-$hadoop-$(file_key "$here/deps/azure-pom.xml")"
done <<< "$hadoops"

while read -r scala version; do
  dir="$here/target/test-deps/spark-hadoop-cloud-$version"
  if [ "$force" = 0 ] && ls "$dir"/*.jar >/dev/null 2>&1; then continue; fi
  from_cache "$cache/shim-deps/test-deps/spark-hadoop-cloud_$scala-$version" "$dir" && continue
  echo "jvm-shim: gathering spark-hadoop-cloud_$scala $version into ${dir#$repo/}" >&2
  mvn_quiet dependency:copy -Dartifact="org.apache.spark:spark-hadoop-cloud_$scala:$version" -DoutputDirectory="$dir"
  to_cache "$dir" "$cache/shim-deps/test-deps/spark-hadoop-cloud_$scala-$version"
done <<< "$clouds"
echo "jvm-shim: shim jars in ${jars_out#$repo/}; s3a dependencies in jvm-shim/target/deps" >&2
