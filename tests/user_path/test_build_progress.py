"""The wheel's build of the shim says what it is doing on the terminal pip runs in, although pip keeps the build's
own output until it fails (setup.py, ``Progress``)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import os, runpy, sys
# as pip runs a build: its output goes to a pipe pip reads, the terminal stays the session's
pipe = open(sys.argv[1], "w")
os.dup2(pipe.fileno(), 1)
os.dup2(pipe.fileno(), 2)
runpy.run_path(sys.argv[2], run_name="setup_under_test")["build_jars"]()
"""


def test_the_shim_build_reports_each_jar_group_on_the_terminal(tmp_path: Path) -> None:
    """Under a terminal whose standard streams are a pipe (pip's capture), each jar group's line reaches the
    terminal and the pipe. The jars go to a folder of their own, from the build cache `make setup` filled."""
    captured = tmp_path / "captured.log"
    groups = subprocess.run([sys.executable, str(REPO / "checkpointfs" / "spark" / "lines.py"), "groups"],
                            check=True, capture_output=True, text=True).stdout.split("\n")
    names = [line.split()[0] for line in groups if line.strip()]
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal, /dev/tty
        os.environ["CHECKPOINTFS_JARS_OUT"] = str(tmp_path / "jars")
        os.execv(sys.executable, [sys.executable, "-c", CHILD, str(captured), str(REPO / "setup.py")])
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    _, status = os.waitpid(pid, 0)
    text = shown.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text + captured.read_text()
    assert "checkpointfs: compiling the Spark shim jars with Maven" in text
    for name in names:
        assert f"checkpointfs: {name} " in text or f"checkpointfs: building {name} " in text, text
        assert f"jvm-shim: {name} " in captured.read_text() or f"jvm-shim: building {name} " in captured.read_text()
    assert sorted(p.name for p in (tmp_path / "jars").iterdir()) == sorted(f"checkpointfs-{n}.jar" for n in names)
