#!/usr/bin/env bash
# Makes (or reuses) the environment of one Spark line: ~/.cache/checkpointfs/venvs/spark-<line> with that line's pinned pyspark, the test
# dependencies and checkpointfs. The pins come from checkpointfs/spark/lines.py (the one place they live).
#
#   bash harness/line_env.sh LINE        e.g. 3.5; prints the venv's python on stdout
#
# Reused while its stamp matches: the pyspark pin, pyproject.toml and, when checkpointfs comes from a wheel, that
# wheel's contents. checkpointfs is installed from the newest wheel in dist/ when $CHECKPOINTFS_WHEEL names one or
# CHECKPOINTFS_FROM_WHEEL=1 (make dist builds it: what users install), else editable from this checkout.
# pyspark comes from $PYSPARK_SDISTS/pyspark-<pin>.tar.gz when that file exists (default /tmp/pyspark-dl), else from
# the package index.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
line="${1:?usage: harness/line_env.sh LINE}"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
sdists="${PYSPARK_SDISTS:-/tmp/pyspark-dl}"

pin="$("$python" - "$repo/checkpointfs/spark/lines.py" "$line" <<'PY'
import runpy, sys
lines = runpy.run_path(sys.argv[1])["LINES"]
match = [l.pyspark for l in lines if l.line == sys.argv[2]]
if not match:
    sys.exit(f"harness/line_env.sh: no Spark line {sys.argv[2]!r}; supported: {', '.join(l.line for l in lines)}")
print(match[0])
PY
)"

# Kept outside the checkout, like pip's and Maven's caches, so that a fresh clone reuses it: only checkpointfs is
# reinstalled when the wheel (or the checkout, for an editable install) differs.
venvs="${CHECKPOINTFS_LINE_VENVS:-${CHECKPOINTFS_CACHE:-$HOME/.cache/checkpointfs}/venvs}"
venv="$venvs/spark-$line"
vpy="$venv/bin/python"
wheel="${CHECKPOINTFS_WHEEL:-}"
if [ -z "$wheel" ] && [ "${CHECKPOINTFS_FROM_WHEEL:-0}" = 1 ]; then
  wheel="$(ls -t "$repo"/dist/checkpointfs-*.whl 2>/dev/null | head -1 || true)"
  [ -n "$wheel" ] || { echo "harness/line_env.sh: no wheel in dist/ (run make dist)" >&2; exit 1; }
fi
source_id="editable $repo"
# A wheel is known by its RECORD (every file's hash), not its bytes: a rebuild of the same sources is the same wheel.
[ -n "$wheel" ] && source_id="wheel $("$python" -c "import hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(hashlib.sha256(z.read(next(n for n in z.namelist() if n.endswith('.dist-info/RECORD')))).hexdigest()[:16])" "$wheel")"
stamp_text="pyspark[connect]==$pin pyarrow<20; pyproject $(sha256sum "$repo/pyproject.toml" | cut -c1-16); checkpointfs $source_id"
stamp="$venv/.installed"

if [ -x "$vpy" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ]; then
  echo "$vpy"
  exit 0
fi

echo "spark-$line: preparing $venv (pyspark $pin, checkpointfs $source_id)" >&2
[ -x "$vpy" ] || "$python" -m venv "$venv"
pip=("$vpy" -m pip install -q --disable-pip-version-check)
"${pip[@]}" --upgrade pip >&2
if "$vpy" -c "import sys, pyspark; sys.exit(pyspark.__version__ != '$pin')" 2>/dev/null; then
  :  # the pinned pyspark is there already (a stamp changed for another reason)
elif [ -f "$sdists/pyspark-$pin.tar.gz" ]; then
  "${pip[@]}" "$sdists/pyspark-$pin.tar.gz" >&2
else
  "${pip[@]}" "pyspark==$pin" >&2
fi
if [ -n "$wheel" ]; then
  "${pip[@]}" --force-reinstall --no-deps "$wheel" >&2
  "${pip[@]}" "${wheel}[test]" >&2
else
  "${pip[@]}" -e "$repo[test]" >&2
fi
# pyspark's own extra for the query shapes' Python state (applyInPandasWithState, transformWithStateInPandas:
# pandas, pyarrow, protobuf); pandas 3 is newer than every supported line, and the newest pyarrow needs NumPy 2,
# which pyspark 3.5 refuses (pyarrow 19 runs on both).
"${pip[@]}" "pyspark[connect]==$pin" "pandas>=2.2,<3" "pyarrow>=18,<20" >&2
# The pin must survive the installs above (nothing may pull in another pyspark).
"$vpy" -c "import pyspark, sys; sys.exit(0 if pyspark.__version__ == '$pin' else 'pyspark ' + pyspark.__version__ + ' != $pin')"
echo "$stamp_text" > "$stamp"
echo "$vpy"
