#!/usr/bin/env bash
# Builds the Kubernetes mock API server launcher (jvm-k8s/) with Maven into a cache outside the repository, once per version of
# its sources: ~/.cache/checkpointfs/k8s-mock/<hash>/{k8s-mock.jar,classpath.txt}. The classpath names the jars of
# kubernetes-server-mock in the local Maven repository. Prints the cache folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${CHECKPOINTFS_CACHE:-$HOME/.cache/checkpointfs}"
hash="$(cat "$here/pom.xml" "$here/build.sh" $(find "$here/src" -type f | sort) | sha256sum | cut -c1-16)"
out="$cache/k8s-mock/$hash"
if [ -f "$out/k8s-mock.jar" ] && [ -f "$out/classpath.txt" ]; then
  # the classpath points into ~/.m2: still valid only while those jars are there
  if tr ':' '\n' < "$out/classpath.txt" | head -n 20 | while read -r jar; do [ -f "$jar" ] || exit 1; done; then
    echo "$out"; exit 0
  fi
fi
command -v mvn >/dev/null 2>&1 || { echo "jvm-k8s/build.sh: Maven (mvn) and a JDK 17 are needed to build the Kubernetes mock launcher" >&2; exit 1; }
echo "jvm-k8s: building the Kubernetes mock launcher with Maven (first run downloads kubernetes-server-mock)" >&2
mvn -q -B -Dstyle.color=never --no-transfer-progress -f "$here/pom.xml" clean package 2>&1 \
  | sed -e "s/\x1b\[[0-9;]*m//g" -e "/^$/d" >&2
mkdir -p "$out.tmp.$$"
cp "$here/target/checkpointfs-k8s-mock-0.1.0.jar" "$out.tmp.$$/k8s-mock.jar"
cp "$here/target/classpath.txt" "$out.tmp.$$/classpath.txt"
rm -rf "$out" && mv "$out.tmp.$$" "$out"
echo "$out"
