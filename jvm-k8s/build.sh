#!/usr/bin/env bash
# Builds the Kubernetes mock API server launcher (jvm-k8s/) with Maven into a cache outside the repository, once per
# version of its sources: ~/.cache/checkpointfs/k8s-mock/<hash>/{k8s-mock.jar,classpath.txt} (harness/jvm_launcher.sh).
# Prints the cache folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../harness/jvm_launcher.sh" "$here" k8s-mock
