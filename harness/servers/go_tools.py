"""Test servers built from Go sources (MinIO, fake-gcs-server): each pinned, built once with ``go install`` into a
cache outside any repository, and reused by every later session."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """``$CHECKPOINTFS_CACHE`` or ``~/.cache/checkpointfs``: where built servers and fetched jars are kept, outside
    any repository."""
    return Path(os.environ.get("CHECKPOINTFS_CACHE") or Path.home() / ".cache" / "checkpointfs")


def cached_binary(name: str, version: str, override_env: str) -> Path:
    """Where the pinned binary ``name`` of ``version`` is (or will be) cached; ``$override_env`` names another."""
    override = os.environ.get(override_env)
    return Path(override) if override else cache_dir() / name / version / name


def go_install(module: str, version: str, target: Path, unavailable: type[Exception]) -> Path:
    """``target``, the binary of ``module@version``, built with ``go install`` first if absent (a few minutes, once).
    One build at a time (a file lock beside it, for concurrent test sessions), into a temporary GOBIN renamed into
    place, so an interrupted build never leaves a half-written binary in the cache. Raises ``unavailable`` with the
    reason when Go is missing or the build fails."""
    if target.is_file() and os.access(target, os.X_OK):
        return target
    go = shutil.which("go")
    if go is None:
        raise unavailable(f"{target.name} is not built at {target} and the Go toolchain (go) is not on PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file() and os.access(target, os.X_OK):
            return target
        log.warning("building %s %s with go install into %s (one time, a few minutes)", target.name, version,
                    target.parent)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as gobin:
            env = {**os.environ, "GOBIN": gobin, "GOFLAGS": os.environ.get("GOFLAGS", "-buildvcs=false")}
            done = subprocess.run([go, "install", f"{module}@{version}"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, check=False)
            if done.returncode != 0:
                raise unavailable(f"go install {module}@{version} failed:\n{done.stdout[-4000:]}")
            os.replace(Path(gobin) / module.rsplit("/", 1)[-1], target)
    return target
