#!/usr/bin/env bash
# Builds a test launcher (a small Maven module: pom.xml and src/, such as jvm-hdfs/ and jvm-k8s/) into a cache outside
# the repository, once per version of its sources: ~/.cache/checkpointfs/<NAME>/<hash>/{<NAME>.jar,classpath.txt}.
# The classpath names the module's runtime jars in the local Maven repository. Prints the cache folder.
#   bash harness/jvm_launcher.sh MODULE_DIR NAME
set -euo pipefail
module="$(cd "$1" && pwd)"
name="$2"
cache="${CHECKPOINTFS_CACHE:-$HOME/.cache/checkpointfs}"
hash="$(cat "$module/pom.xml" "$module/build.sh" "${BASH_SOURCE[0]}" $(find "$module/src" -type f | sort) \
  | sha256sum | cut -c1-16)"
out="$cache/$name/$hash"
if [ -f "$out/$name.jar" ] && [ -f "$out/classpath.txt" ]; then
  # the classpath points into ~/.m2: still valid only while those jars are there
  if tr ':' '\n' < "$out/classpath.txt" | head -n 20 | while read -r jar; do [ -f "$jar" ] || exit 1; done; then
    echo "$out"; exit 0
  fi
fi
command -v mvn >/dev/null 2>&1 || {
  echo "$(basename "$module")/build.sh: Maven (mvn) and a JDK 17 are needed to build the $name launcher" >&2; exit 1; }
echo "$(basename "$module"): building the $name launcher with Maven (the first run downloads its dependencies)" >&2
mvn -q -B -Dstyle.color=never --no-transfer-progress -f "$module/pom.xml" clean package 2>&1 \
  | sed -e "s/\x1b\[[0-9;]*m//g" -e "/^$/d" >&2
jars=("$module"/target/checkpointfs-*.jar)
mkdir -p "$out.tmp.$$"
cp "${jars[0]}" "$out.tmp.$$/$name.jar"
cp "$module/target/classpath.txt" "$out.tmp.$$/classpath.txt"
rm -rf "$out" && mv "$out.tmp.$$" "$out"
echo "$out"
