"""harness/leftovers.py: it finds every live process that carries a run's tag, daemons that left their parent
included, and nothing else; it ends them."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from harness.leftovers import TAG_ENV, ancestors, end, main, tagged


def _start(tag: str, *, new_session: bool) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env={**os.environ, TAG_ENV: tag},
                            start_new_session=new_session)


def test_finds_the_tagged_processes_and_only_them() -> None:
    tag, other = f"t-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    mine = [_start(tag, new_session=False), _start(tag, new_session=True)]
    theirs = _start(other, new_session=False)
    try:
        found = {p.pid for p in tagged(tag)}
        assert found == {p.pid for p in mine}
        assert main(["--tag", tag, "--grace", "5"]) == 1
        for process in mine:
            assert process.wait(timeout=10) != 0  # ended by the check
        assert tagged(tag) == []
        assert main(["--tag", tag]) == 0
        assert theirs.poll() is None  # another run's process is left alone
    finally:
        end(tagged(other), grace_s=5)
        theirs.wait(timeout=10)


def test_never_counts_itself_or_its_ancestors() -> None:
    # a shell carrying the tag runs the check: the shell (its parent) and the check itself are the only tagged
    # processes, and neither is reported
    tag = f"t-{uuid.uuid4().hex}"
    check = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m harness.leftovers --report-only; echo done"],
        env={**os.environ, TAG_ENV: tag}, capture_output=True, text=True, timeout=60, check=False)
    assert check.stdout.strip() == "done"
    assert f"nothing of run {tag} is still running" in check.stderr
    assert os.getpid() in ancestors(os.getpid())


def test_a_process_that_ignores_sigterm_is_killed() -> None:
    tag = f"t-{uuid.uuid4().hex}"
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
         "print('ready', flush=True); time.sleep(120)"],
        env={**os.environ, TAG_ENV: tag}, stdout=subprocess.PIPE)
    assert stubborn.stdout is not None and stubborn.stdout.readline() == b"ready\n"
    assert end(tagged(tag), grace_s=0.5) == []
    assert stubborn.wait(timeout=10) == -9
