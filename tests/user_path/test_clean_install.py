"""The wheel with no extras in a clean venv, beside a user's own pytest project: installing checkpointfs changes
nothing there, the command works, and the opt-in fixtures say what to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.floors import oldest_python

from .conftest import REPO, newest_wheel

# One worker makes both venvs and runs every test on them (`make userpath` runs two at a time, --dist loadgroup).
pytestmark = pytest.mark.xdist_group("clean-install")

PYTHONS = {"oldest": lambda: oldest_python(REPO / "pyproject.toml")[1], "current": lambda: sys.executable}


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=600,
                          check=False)


@pytest.fixture(scope="module", params=sorted(PYTHONS))
def clean_venv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv with the wheel (no extras) and pytest, nothing else; its bin folder. One per Python, shared by the
    module's tests (none of them installs anything into it)."""
    interpreter = PYTHONS[request.param]()
    tmp_path = tmp_path_factory.mktemp(f"clean-{request.param}")
    venv = tmp_path / "venv"
    made = run(interpreter, "-m", "venv", venv, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    installed = run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    newest_wheel(), "pytest", cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    absent = run(venv / "bin" / "python", "-c", "import moto", cwd=tmp_path)
    assert absent.returncode != 0, "moto is installed: this is not the no-extras install"
    return venv / "bin"


def test_users_pytest_runs_as_before(clean_venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    done = run(clean_venv / "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    plugins = run(clean_venv / "python", "-c", "from importlib.metadata import entry_points; "
                  "print([e.value for e in entry_points(group='pytest11')])", cwd=project)
    assert "checkpointfs" not in plugins.stdout, "checkpointfs registers a pytest plugin on install"


def test_command_and_library_work_without_extras(clean_venv: Path, tmp_path: Path) -> None:
    helped = run(clean_venv / "checkpointfs", "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    for command in ("inspect", "verify", "doctor"):
        assert command in helped.stdout
    imported = run(clean_venv / "python", "-c", "import checkpointfs, checkpointfs.log, checkpointfs.sink, "
                   "checkpointfs.testing, checkpointfs.spark; print(checkpointfs.DirectWriteManager.__name__)",
                   cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "DirectWriteManager"


def test_opt_in_fixture_names_the_extra_to_install(clean_venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text('pytest_plugins = ["checkpointfs.testing.pytest_plugin"]\n')
    (project / "test_s3.py").write_text("def test_s3(embedded_s3):\n    assert embedded_s3.endpoint_url\n")
    done = run(clean_venv / "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    # the test extra's own requirements, read from the installed wheel's metadata: installable however the wheel
    # was installed (an index may not have checkpointfs)
    assert "pip install 'pytest>=8' 'moto[server]>=" in done.stdout, done.stdout
    assert "1 error" in done.stdout
