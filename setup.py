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
from typing import TextIO

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
    progress = Progress.open()
    progress.say("checkpointfs: compiling the Spark shim jars with Maven (a few minutes on a first build; "
                 "`pip -v` shows Maven's own output)")
    process = subprocess.Popen(["bash", str(script), "--jars-only"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace")
    assert process.stdout is not None
    for line in process.stdout:
        sys.stderr.write(line)  # pip shows it with -v, and on failure
        if line.startswith("jvm-shim:"):
            progress.say(f"checkpointfs: {line.removeprefix('jvm-shim:').strip()}")
    returncode = process.wait()
    progress.close()
    if returncode != 0:
        raise SystemExit(f"checkpointfs: the Maven build of the Spark shim failed (exit {returncode}); its "
                         "output is above")


class Progress:
    """Where the build's progress lines go: the terminal pip runs in. pip keeps a build's own output until it fails
    (or shows it with ``-v``), so a build of a few minutes would otherwise show only pip's spinner; when standard
    error is not that terminal, the lines are also written to ``/dev/tty`` if there is one (none in CI)."""

    def __init__(self, terminal: TextIO | None) -> None:
        self._terminal = terminal

    @classmethod
    def open(cls) -> Progress:
        if sys.stderr.isatty():
            return cls(None)
        try:
            return cls(open("/dev/tty", "w"))
        except OSError:
            return cls(None)

    def say(self, line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        if self._terminal is not None:
            try:
                self._terminal.write(line + "\n")
                self._terminal.flush()
            except OSError:
                self._terminal = None

    def close(self) -> None:
        if self._terminal is not None:
            self._terminal.close()


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import build_jars
    setup(cmdclass={"build_py": BuildShimJars})
