#!/usr/bin/env bash
# Builds the MiniDFSCluster launcher (jvm-hdfs/) with Maven into a cache outside the repository, once per version of
# its sources: ~/.cache/checkpointfs/minihdfs/<hash>/{minihdfs.jar,classpath.txt} (harness/jvm_launcher.sh). The
# classpath names the jars of hadoop-minicluster in the local Maven repository. Prints the cache folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../harness/jvm_launcher.sh" "$here" minihdfs
