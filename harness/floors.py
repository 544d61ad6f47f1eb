"""The dependency floors job: pyproject.toml's lower bounds, installed exactly, on the oldest Python it declares.

``python -m harness.floors [-- PYTEST_ARGS...]`` makes (or reuses) a venv with Python ``requires-python``'s minimum
(3.10), installs every runtime dependency and the ``test``, ``gcs`` and ``azure`` extras at the version its ``>=``
names (and ``dev``'s floor of pytest-xdist, to run two at a time), checkpointfs itself editable from this checkout,
and runs pytest there with ``PYTEST_ARGS`` (``make floors`` passes the fast selection, two at a time: no Spark, no
JVM, no MinIO or HDFS). A floor that does not work fails the job; raise it in pyproject.toml.

The venv lives in ``~/.cache/checkpointfs/venvs/floors-py<version>`` (``$CHECKPOINTFS_CACHE`` moves it) and is
rebuilt when the floors change.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import tomllib

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
_FLOOR = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+(?:\[[^\]]+\])?)\s*>=\s*(?P<version>[^,;\s]+)")


RUNNER = "pytest-xdist"
"""The one tool beside the floors: the job runs its tests two at a time, at ``dev``'s floor of pytest-xdist."""

FLOOR_EXTRAS = ("test", "gcs", "azure")
"""The extras whose floors are installed with the runtime dependencies' (``gcs``: google-auth and requests;
``azure``: azure-storage-blob and azure-core)."""


def floor_pins(pyproject: Path, extras: Sequence[str] = FLOOR_EXTRAS) -> list[str]:
    """``name==version`` for every dependency (and those of ``extras``) that names a ``>=`` lower bound."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in extras:
        requirements += project.get("optional-dependencies", {}).get(extra, [])
    pins = []
    for requirement in requirements:
        match = _FLOOR.match(requirement)
        if match is None:
            raise SystemExit(f"harness.floors: {requirement!r} in {pyproject} names no lower bound (>=)")
        pins.append(f"{match['name']}=={match['version']}")
    return pins


def oldest_python(pyproject: Path) -> tuple[str, str]:
    """The minimum version of ``requires-python`` and an interpreter of it (on PATH, or a pyenv version)."""
    declared = tomllib.loads(pyproject.read_text())["project"]["requires-python"]
    match = re.match(r"^>=\s*(\d+\.\d+)", declared)
    if match is None:
        raise SystemExit(f"harness.floors: cannot read a minimum from requires-python {declared!r}")
    version = match.group(1)
    candidates = [shutil.which(f"python{version}") or ""]
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True)
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return version, candidate
    raise SystemExit(f"harness.floors: no Python {version} here (requires-python {declared!r}); install it "
                     f"(e.g. pyenv install {version}) to check the floors")


def ensure_venv(pyproject: Path) -> Path:
    """The floors venv's python, made or refreshed while its stamp (interpreter, pins, checkout) differs."""
    version, interpreter = oldest_python(pyproject)
    pins = floor_pins(pyproject)
    runner = [p for p in floor_pins(pyproject, ("dev",)) if p.startswith(RUNNER + "==")]
    cache = Path(os.environ.get("CHECKPOINTFS_CACHE") or Path.home() / ".cache" / "checkpointfs")
    venv = cache / "venvs" / f"floors-py{version}"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    stamp_text = hashlib.sha256("\n".join([interpreter, *pins, *runner, str(REPO)]).encode()).hexdigest()
    if python.is_file() and stamp.is_file() and stamp.read_text() == stamp_text:
        return python
    log.info("floors: preparing %s (Python %s): %s", venv, version, " ".join(pins))
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([interpreter, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *pins, *runner], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(REPO)], check=True)
    stamp.write_text(stamp_text)
    return python


def main(argv: Sequence[str] | None = None) -> int:
    """Install the floors and run pytest with the arguments after ``--``."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    pyproject = REPO / "pyproject.toml"
    python = ensure_venv(pyproject)
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                            check=True).stdout.split()
    log.info("floors: %s", " ".join(p for p in listed if p.split("==")[0].lower() in _names(pyproject)))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=REPO, env=env,
                          check=False).returncode


def _names(pyproject: Path) -> set[str]:
    return {re.split(r"[\[=]", pin)[0].lower() for pin in floor_pins(pyproject)}


if __name__ == "__main__":
    raise SystemExit(main())
