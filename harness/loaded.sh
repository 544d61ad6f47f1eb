#!/usr/bin/env bash
# The suite under load (issue 23): runs a make target on a fresh clone, RUNS times in a row, while stress-ng keeps
# CPUS cores busy (`stress-ng --cpu 2` by default: both cores of the project's machines), and logs each run's start,
# end, duration and exit status. stress-ng is started once, before the first run, and stopped by its pid after the
# last (also when this script is interrupted).
#
#   harness/loaded.sh [--runs N] [--cpus N] [--dir DIR] [--ref REF] [--keep] [TARGET ...]   (default: test)
#   harness/loaded.sh [--runs N] [--cpus N] [--dir DIR] --here -- COMMAND [ARG ...]
#
# Each run clones this repository anew (the commit REF, default HEAD: uncommitted changes are not in it) into
# DIR/run-N and runs `make TARGET ...` there; its output goes to DIR/run-N.log, and DIR/loaded.log gets one line per
# run. A passing run's clone is deleted unless --keep; a failing one is kept to look at. --here runs COMMAND in this
# checkout instead (no clone): a small-scale check, e.g. one test file under load. DIR defaults to a new folder under
# ${TMPDIR:-/tmp}. Exit status: 0 when every run passed. Needs stress-ng (Debian: apt-get install stress-ng).
# `make loaded` runs it (LOADED_RUNS, LOADED_TARGET, LOADED_CPUS).
set -euo pipefail

runs=3
cpus=2
dir=""
ref=HEAD
keep=0
here=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2;;
    --cpus) cpus="$2"; shift 2;;
    --dir) dir="$2"; shift 2;;
    --ref) ref="$2"; shift 2;;
    --keep) keep=1; shift;;
    --here) here=1; shift;;
    --) shift; break;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    -*) echo "loaded.sh: unknown option $1" >&2; exit 2;;
    *) break;;
  esac
done
if [ "$here" = 1 ] && [ $# -eq 0 ]; then echo "loaded.sh: --here needs a command after --" >&2; exit 2; fi
[ $# -gt 0 ] || set -- test
command -v stress-ng >/dev/null 2>&1 || { echo "loaded.sh: stress-ng is not installed (apt-get install stress-ng)" >&2; exit 1; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
commit="$(git -C "$repo" rev-parse --verify "$ref^{commit}")"
if [ "$here" = 0 ] && [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "loaded.sh: note: $repo has uncommitted changes; the clones run commit ${commit:0:12} without them" >&2
fi
dir="${dir:-${TMPDIR:-/tmp}/checkpointfs-loaded-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
summary="$dir/loaded.log"

stress_pid=""
stop_stress() {
  if [ -n "$stress_pid" ] && kill -0 "$stress_pid" 2>/dev/null; then
    kill -TERM "$stress_pid" 2>/dev/null || true
    wait "$stress_pid" 2>/dev/null || true
    echo "$(date -u +%FT%TZ) stress-ng (pid $stress_pid) stopped" >>"$summary"
  fi
  stress_pid=""
}
trap stop_stress EXIT
trap 'stop_stress; exit 130' INT TERM

# A safety net: stress-ng ends by itself after 12 hours even if this script is killed with SIGKILL.
stress-ng --cpu "$cpus" --timeout 12h --quiet &
stress_pid=$!
{
  echo "# $(date -u +%FT%TZ) $(nproc) cores; stress-ng --cpu $cpus (pid $stress_pid); $runs run(s) of" \
    "$([ "$here" = 1 ] && echo "'$*' in $repo" || echo "make $* on fresh clones of ${commit:0:12}")"
} >>"$summary"
echo "loaded.sh: stress-ng --cpu $cpus (pid $stress_pid); logs in $dir" >&2

failed=0
for run in $(seq 1 "$runs"); do
  out="$dir/run-$run.log"
  start=$(date +%s)
  start_iso="$(date -u +%FT%TZ)"
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "$here" = 1 ]; then
    where="$repo"
    set +e
    (cd "$repo" && "$@") >"$out" 2>&1
    status=$?
    set -e
  else
    where="$dir/run-$run"
    rm -rf "$where"
    set +e
    {
      git clone --quiet --no-checkout "$repo" "$where" && git -C "$where" checkout --quiet --detach "$commit" &&
        make -C "$where" "$@"
    } >"$out" 2>&1
    status=$?
    set -e
  fi
  end=$(date +%s)
  line="run=$run start=$start_iso end=$(date -u +%FT%TZ) duration_s=$((end - start)) exit=$status"
  line="$line load_before=\"$load_before\" load_after=\"$(cut -d' ' -f1-3 /proc/loadavg)\" log=$out"
  echo "$line" >>"$summary"
  echo "loaded.sh: $line" >&2
  if [ "$status" != 0 ]; then
    failed=$((failed + 1))
    tail -n 40 "$out" >&2 || true
  elif [ "$here" = 0 ] && [ "$keep" = 0 ]; then
    rm -rf "$where"
  fi
done
stop_stress
echo "# $((runs - failed)) passed, $failed failed" >>"$summary"
echo "loaded.sh: $((runs - failed)) of $runs run(s) passed; $summary" >&2
[ "$failed" = 0 ]
