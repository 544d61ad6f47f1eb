"""Build hook: every wheel (``pip wheel .``, ``pip install .``) carries the shim jar of every Spark line.

Before the package's files are copied, ``bash jvm-shim/build.sh --jars-only`` compiles the shim with Maven, once per
jar group of ``checkpointfs/spark/lines.py``, into ``checkpointfs/jars/`` (a no-op while the jars are newer than the
sources). It needs Maven and a JDK 17, and no pyspark. Editable installs skip it: ``make setup`` builds the jars
there. Everything else is declared in pyproject.toml.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildShimJars(build_py):
    """``build_py`` that first builds the shim jars with Maven (jvm-shim/build.sh)."""

    def run(self) -> None:
        if not getattr(self, "editable_mode", False):
            build_jars()
        super().run()


def build_jars() -> None:
    script = ROOT / "jvm-shim" / "build.sh"
    if not script.is_file():
        raise SystemExit(f"checkpointfs: {script} is missing; build the wheel from a checkout or the sdist, which "
                         "carry the shim's sources")
    missing = [tool for tool in ("bash", "mvn", "javac") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(
            "checkpointfs: building the package compiles its Spark shim (Scala) with Maven and a JDK 17, and "
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not on PATH. Install Maven 3.8+ and a JDK 17 "
            "(e.g. apt-get install maven openjdk-17-jdk-headless), or install a prebuilt checkpointfs wheel")
    env = {**os.environ, "CHECKPOINTFS_PYTHON": sys.executable}  # reads lines.py; the build env's own interpreter
    result = subprocess.run(["bash", str(script), "--jars-only"], env=env, check=False,
                            stdout=sys.stderr, stderr=sys.stderr)
    if result.returncode != 0:
        raise SystemExit(f"checkpointfs: the Maven build of the Spark shim failed (exit {result.returncode}); its "
                         "output is above")


setup(cmdclass={"build_py": BuildShimJars})
