#!/usr/bin/env bash
# The per-line tests of `make lines`: each line's selection in that line's environment, JOBS lines at a time
# (default 2: a line's run keeps about one core busy, its Spark driver and the servers its session starts, so two
# fit the project's 2-core machines). Each line's environment is made first, one after another (pip is not run twice
# at once); then the lines run, each with its own pytest session, servers and temp dirs, its output kept in a log and
# printed whole when it ends, so that lines never interleave. Exit status: 0 when every line passed; the failed lines
# are named at the end.
#
#   harness/lines.sh LINE ...        (the Makefile passes its settings in the environment, see below)
#
# Environment: LINES_JOBS (2), MAIN_LINE and MAIN_PYTHON (the main line runs in the main venv), LINES_FROM_WHEEL
# (1: the line venvs install the wheel in dist/), LINES_WITHOUT_SHAPES (lines that leave out the `shapes` marker),
# LINE_MARKER, LINE_TESTS (space-separated paths), DEPS_DIR (the s3a jars: $CHECKPOINTFS_SPARK_DEPS).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${LINES_JOBS:-2}"
logs="$(mktemp -d "${TMPDIR:-/tmp}/checkpointfs-lines.XXXXXX")"
trap 'rm -rf "$logs"' EXIT

declare -A python installed
for line in "$@"; do
  if [ "$line" = "${MAIN_LINE:-}" ]; then
    python[$line]="$MAIN_PYTHON"; installed[$line]=0
  else
    python[$line]="$(CHECKPOINTFS_FROM_WHEEL="${LINES_FROM_WHEEL:-1}" bash "$repo/harness/line_env.sh" "$line")"
    installed[$line]="${LINES_FROM_WHEEL:-1}"
  fi
done

run_line() { # $1: line; output to $logs/$1.log, exit status to $logs/$1.status
  local line="$1" py="${python[$1]}" marker="${LINE_MARKER:-every_line}" start status
  case " ${LINES_WITHOUT_SHAPES:-} " in *" $line "*) marker="$marker and not shapes";; esac
  start=$(date +%s)
  {
    echo "== Spark $line: pyspark $("$py" -c 'import pyspark; print(pyspark.__version__)')"
    set +e
    # shellcheck disable=SC2086 # LINE_TESTS is a list of paths
    env SPARK_LOCAL_IP=127.0.0.1 CHECKPOINTFS_TEST_INSTALLED="${installed[$line]}" \
      CHECKPOINTFS_SPARK_DEPS="${DEPS_DIR:-$repo/jvm-shim/target/deps}" \
      $([ "${installed[$line]}" = 1 ] && echo PYTHONSAFEPATH=1) \
      "$(dirname "$py")/pytest" -q -p no:cacheprovider --import-mode=append -m "$marker" ${LINE_TESTS:-}
    status=$?
    set -e
    echo "== Spark $line: per-line tests took $(( $(date +%s) - start )) s (exit $status)"
  } >"$logs/$line.log" 2>&1 || true
  echo "${status:-1}" >"$logs/$line.status"
  cat "$logs/$line.log" >&2
}

running=()
for line in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  (cd "$repo" && run_line "$line") &
  running+=("$!")
done
wait "${running[@]}" || true

failed=()
for line in "$@"; do
  [ "$(cat "$logs/$line.status" 2>/dev/null || echo 1)" = 0 ] || failed+=("$line")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "== per-line tests failed on: ${failed[*]}" >&2
  exit 1
fi
