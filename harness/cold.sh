#!/usr/bin/env bash
# `make test` as a new machine runs it (issue 34): a fresh clone of REF (default HEAD) with an empty home folder, so
# that no cache outside the repository helps: no pip, Maven, Ivy, Go or npm cache, no ~/.cache/checkpointfs (the
# servers are built, the line venvs made, the shim's dependencies fetched anew). What a new machine brings is kept:
# the system's JDK, Go, Node and Pythons (pyenv's root stays where it is installed), and the registry settings that
# live in the home folder (.npmrc, .gitconfig, pip's config) are copied into the new one.
#
#   harness/cold.sh [--dir DIR] [--ref REF] [--keep] [TARGET ...]   (default: test)
#
# The clone, the home and the log go under DIR (default: a new folder under ${TMPDIR:-/tmp}); DIR/cold.log gets one
# line with the start, end, duration and exit status. The home (several GB of caches) is deleted after a passing run
# unless --keep. `make cold` runs it.
set -euo pipefail

dir=""
ref=HEAD
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2;;
    --ref) ref="$2"; shift 2;;
    --keep) keep=1; shift;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    -*) echo "cold.sh: unknown option $1" >&2; exit 2;;
    *) break;;
  esac
done
[ $# -gt 0 ] || set -- test

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
commit="$(git -C "$repo" rev-parse --verify "$ref^{commit}")"
dir="${dir:-${TMPDIR:-/tmp}/checkpointfs-cold-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
home="$dir/home"
where="$dir/clone"
out="$dir/run.log"
rm -rf "$home" "$where"
mkdir -p "$home/.config"
for f in .npmrc .gitconfig .config/pip .pip; do
  if [ -e "$HOME/$f" ]; then cp -r "$HOME/$f" "$home/$f"; fi
done

pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
echo "cold.sh: make $* on a fresh clone of ${commit:0:12} with HOME=$home; log in $out" >&2
start=$(date +%s)
start_iso="$(date -u +%FT%TZ)"
set +e
{
  git clone --quiet --no-checkout "$repo" "$where" && git -C "$where" checkout --quiet --detach "$commit" &&
    env -u CHECKPOINTFS_CACHE -u CHECKPOINTFS_LINE_VENVS HOME="$home" PYENV_ROOT="$pyenv_root" make -C "$where" "$@"
} >"$out" 2>&1
status=$?
set -e
end=$(date +%s)
line="start=$start_iso end=$(date -u +%FT%TZ) duration_s=$((end - start)) exit=$status commit=${commit:0:12} log=$out"
echo "$line" >>"$dir/cold.log"
echo "cold.sh: $line" >&2
if [ "$status" != 0 ]; then
  tail -n 40 "$out" >&2 || true
elif [ "$keep" = 0 ]; then
  rm -rf "$home" "$where"
fi
exit "$status"
