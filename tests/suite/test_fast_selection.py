"""`make check`'s selection collects in a venv with only the `test` extra: no pyspark (so no py4j), no google-auth,
no Azure SDK. The collection runs in a child interpreter where those imports fail as they would there; a module that
needs one must skip at collection (``pytest.importorskip`` at its top), never error."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ABSENT = ("pyspark", "py4j", "google", "azure")
"""Top-level packages of the spark, gcs and azure extras."""

RUN = "import sys; sys.path[:0] = sys.argv[1:3]; import pytest; sys.exit(pytest.main(sys.argv[3:]))"
"""A child interpreter without site-packages (``-S``) that takes the shadow folder and the checkout as its path."""


def without_extras(shadow: Path) -> Path:
    """A folder of links to this venv's installed packages, less the extras' (:data:`ABSENT`): what a venv with
    only the `test` extra holds."""
    site = Path(sysconfig.get_paths()["purelib"])
    shadow.mkdir()
    for entry in site.iterdir():
        top = re.split(r"[-.]", entry.name)[0].lower()
        if top in ABSENT or top.split("_")[0] in ABSENT:
            continue
        (shadow / entry.name).symlink_to(entry)
    return shadow


def fast_selection() -> list[str]:
    """The pytest arguments of `make check`'s selection, read from the Makefile (FAST_TESTS)."""
    text = (REPO / "Makefile").read_text()
    match = re.search(r"^FAST_TESTS := (.*?)\n(?=\S)", text, re.MULTILINE | re.DOTALL)
    assert match is not None, "no FAST_TESTS in the Makefile"
    words = match.group(1).replace("\\\n", " ")
    marker = re.search(r'-m "([^"]+)"', words)
    assert marker is not None, words
    ignored = re.findall(r"--ignore=(\S+)", words)
    return ["-m", " ".join(marker.group(1).split()), *(f"--ignore={path}" for path in ignored)]


def test_make_checks_selection_collects_without_the_optional_extras(tmp_path: Path) -> None:
    shadow = without_extras(tmp_path / "site")
    assert not (shadow / "py4j").exists() and (shadow / "pytest").exists()
    collected = subprocess.run(
        [sys.executable, "-S", "-c", RUN, str(shadow), str(REPO), "--collect-only", "-q", "-p", "no:cacheprovider",
         *fast_selection(), "tests"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert collected.returncode == 0, collected.stdout[-4000:] + collected.stderr[-2000:]
    assert " error" not in collected.stdout.lower().splitlines()[-1], collected.stdout[-4000:]
    assert "tests collected" in collected.stdout.splitlines()[-1]
