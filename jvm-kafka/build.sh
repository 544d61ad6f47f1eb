#!/usr/bin/env bash
# Test Kafka, built with Maven into a cache outside the repository, once, then reused:
#   build.sh broker              Apache Kafka <kafka.version of pom.xml> (kafka_2.13 and its runtime jars, copied from
#                                Maven Central) and KafkaTool into ~/.cache/checkpointfs/kafka-<version>/libs;
#   build.sh connector SCALA VER Spark's spark-sql-kafka-0-10_SCALA:VER and the jars it needs beyond pyspark's into
#                                ~/.cache/checkpointfs/spark-kafka/<SCALA>-<VER>/.
# Each prints its folder. A folder is rebuilt when the sources that made it change (a hash in its `.built` stamp).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${CHECKPOINTFS_CACHE:-$HOME/.cache/checkpointfs}"
what="${1:-broker}"
mkdir -p "$cache"
exec 9>"$cache/.jvm-kafka.lock"
flock 9  # one build at a time per cache (concurrent test runs, a fresh clone's make test)
mvn_quiet() {
  command -v mvn >/dev/null 2>&1 || { echo "jvm-kafka/build.sh: Maven (mvn) and a JDK 17 are needed" >&2; exit 1; }
  mvn -q -B -Dstyle.color=never --no-transfer-progress "$@" 2>&1 | sed -e "s/\x1b\[[0-9;]*m//g" -e "/^$/d" >&2
  return "${PIPESTATUS[0]}"
}
if [ "$what" = broker ]; then
  version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"
  hash="$(cat "$here/pom.xml" "$here/build.sh" $(find "$here/src" -type f | sort) | sha256sum | cut -c1-16)"
  out="$cache/kafka-$version"
  if [ "$(cat "$out/.built" 2>/dev/null)" = "$hash" ]; then echo "$out"; exit 0; fi
  echo "jvm-kafka: building Kafka $version with Maven (first run downloads kafka_2.13 and its jars)" >&2
  mvn_quiet -f "$here/pom.xml" clean package
  tmp="$out.tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp/libs"
  cp "$here/target/libs/"*.jar "$tmp/libs/"
  cp "$here/target/checkpointfs-kafka-0.1.0.jar" "$tmp/libs/"
  rm -rf "$here/target"
  echo "$hash" > "$tmp/.built"
  rm -rf "$out" && mv "$tmp" "$out"
  echo "$out"
elif [ "$what" = connector ]; then
  scala="$2"; version="$3"
  hash="$(cat "$here/connector/pom.xml" "$here/connector/settings.xml" | sha256sum | cut -c1-16)"
  out="$cache/spark-kafka/$scala-$version"
  if [ "$(cat "$out/.built" 2>/dev/null)" = "$hash" ]; then echo "$out"; exit 0; fi
  echo "jvm-kafka: gathering spark-sql-kafka-0-10_$scala $version with Maven" >&2
  tmp="$out.tmp.$$"; rm -rf "$tmp"; mkdir -p "$tmp"
  work="$(mktemp -d)"; trap 'rm -rf "$work" "$tmp"' EXIT
  cp "$here/connector/pom.xml" "$work/pom.xml"
  mvn_quiet -f "$work/pom.xml" -gs "$here/connector/settings.xml" -Dscala.binary="$scala" -Dspark.kafka.version="$version" -Dconnector.out="$tmp" package
  echo "$hash" > "$tmp/.built"
  rm -rf "$out" && mv "$tmp" "$out"
  echo "$out"
else
  echo "usage: jvm-kafka/build.sh broker | connector SCALA VERSION" >&2; exit 2
fi
