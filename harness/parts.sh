#!/usr/bin/env bash
# Runs a gate's parts (make targets) in order under one run tag, times each, and checks at the end that nothing the
# run started is still alive (harness/leftovers.py). `make test` and `make test-all` are this script.
#
#   harness/parts.sh [--keep-going] [--name NAME] PART ...
#
# Every process the parts start inherits CHECKPOINTFS_RUN_TAG (a new one unless already set), which is how the
# leftover check finds what outlived the run, daemons in sessions of their own included. Each test session appends
# its tests' and fixtures' durations to $CHECKPOINTFS_TIMINGS (tests/timings.py; default: a file in a new folder
# under ${TMPDIR:-/tmp}, named at the end), and this script adds one record per part; `python -m harness.suite_times`
# turns that file into benchmarks/results/suite_times.json and docs/testing.md's table.
# Without --keep-going the first failing part ends the run (as make would); with it every part runs and the failed
# ones are named. SIGTERM and Ctrl-C end the running part (its pytest tears down what its fixtures started) and the
# leftover check still runs. Exit status: 0 when every part passed and nothing was left running.
set -uo pipefail

keep_going=0
name=test
while [ $# -gt 0 ]; do
  case "$1" in
    --keep-going) keep_going=1; shift;;
    --name) name="$2"; shift 2;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    *) break;;
  esac
done
[ $# -gt 0 ] || { echo "parts.sh: name at least one make target" >&2; exit 2; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="$(command -v python3)"
export CHECKPOINTFS_RUN_TAG="${CHECKPOINTFS_RUN_TAG:-$name-$(date -u +%Y%m%dT%H%M%S)-$$}"
if [ -z "${CHECKPOINTFS_TIMINGS:-}" ]; then
  CHECKPOINTFS_TIMINGS="$(mktemp -d "${TMPDIR:-/tmp}/checkpointfs-$name.XXXXXX")/timings.jsonl"
fi
export CHECKPOINTFS_TIMINGS
: >>"$CHECKPOINTFS_TIMINGS"

failed=()
summary=()
current=""
interrupted=0
# Each part runs in a process group of its own (job control), so that a signal reaches all of it: make, the shells
# of its recipes and every pytest session in them.
set -m
on_signal() { interrupted=1; [ -n "$current" ] && kill -TERM -- "-$current" 2>/dev/null; }
trap on_signal TERM INT

start_all=$(date +%s)
for part in "$@"; do
  echo "== $name: $part (run $CHECKPOINTFS_RUN_TAG)" >&2
  start=$(date +%s)
  make --no-print-directory -C "$repo" "$part" &
  current=$!
  wait "$current"; status=$?
  # a signal interrupts `wait`: wait again for the part to finish tearing down
  while kill -0 "$current" 2>/dev/null; do wait "$current"; status=$?; done
  current=""
  seconds=$(( $(date +%s) - start ))
  printf '{"kind": "part", "gate": "%s", "part": "%s", "seconds": %d, "exit": %d, "start": %d, "end": %d}\n' \
    "$name" "$part" "$seconds" "$status" "$start" "$(date +%s)" >>"$CHECKPOINTFS_TIMINGS"
  summary+=("$(printf '%-12s %4d min %02d s  exit %d' "$part" $((seconds / 60)) $((seconds % 60)) "$status")")
  if [ "$status" != 0 ]; then
    failed+=("$part")
    [ "$keep_going" = 1 ] && [ "$interrupted" = 0 ] || break
  fi
  [ "$interrupted" = 0 ] || break
done
total=$(( $(date +%s) - start_all ))

leftover_status=0
"$python" "$repo/harness/leftovers.py" || leftover_status=$?

{
  echo "== $name: parts"
  for line in "${summary[@]}"; do echo "   $line"; done
  printf '   %-12s %4d min %02d s\n' total $((total / 60)) $((total % 60))
  echo "   timings: $CHECKPOINTFS_TIMINGS"
} >&2
if [ "$interrupted" = 1 ]; then echo "== $name: interrupted" >&2; exit 130; fi
if [ "${#failed[@]}" -gt 0 ]; then echo "== $name: failed: ${failed[*]}" >&2; exit 1; fi
[ "$leftover_status" = 0 ] || { echo "== $name: processes outlived the run (above)" >&2; exit 1; }
echo "== $name: passed" >&2
