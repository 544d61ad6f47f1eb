"""What a test run left running: every process started under one run tag that is still alive at its end.

``harness/parts.sh`` gives each ``make test`` (and ``make test-all``) run a tag, ``CHECKPOINTFS_RUN_TAG``, in the
environment of everything it starts; every child inherits it, also the daemons that leave their parent (a Spark
standalone master and its workers, a Connect server, a driver in a session of its own). At the end this module
reads each process's environment from ``/proc`` and names the ones still carrying the tag, less itself and its
ancestors (the make and shells that run it). Those are ended (SIGTERM, then SIGKILL after a grace period) and the
run fails: nothing the suite started may outlive it.

    python -m harness.leftovers [--tag TAG] [--grace S] [--report-only]

Standard library only, so that it runs whether or not the set-up step got as far as the venv.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TAG_ENV = "CHECKPOINTFS_RUN_TAG"
"""The environment variable that marks every process of one test run."""
PROC = Path("/proc")
_SECRET = re.compile(r"(?i)((?:secret|password|passwd|token|key)[\w.-]*[=:])\S+")

log = logging.getLogger("checkpointfs.leftovers")


@dataclass(frozen=True)
class Leftover:
    """A process that carries the run's tag and is not one of the checker's ancestors."""

    pid: int
    ppid: int
    pgid: int
    command: str

    def describe(self) -> str:
        """One line: pid, parent, process group and the command line (secrets in it redacted)."""
        return f"pid {self.pid} (parent {self.ppid}, group {self.pgid}): {self.command}"


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:  # gone meanwhile, or not ours to read
        return None


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, pgid, state) of ``pid`` from /proc/PID/stat; None when it is gone."""
    raw = _read(PROC / str(pid) / "stat")
    if raw is None:
        return None
    text = raw.decode(errors="replace")
    rest = text[text.rfind(")") + 2:].split()
    return int(rest[1]), int(rest[2]), rest[0]


def ancestors(pid: int) -> set[int]:
    """``pid`` and every process above it up to init."""
    seen: set[int] = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        stat = _stat(pid)
        if stat is None:
            break
        pid = stat[0]
    return seen


def tagged(tag: str) -> list[Leftover]:
    """Live processes whose environment holds ``TAG_ENV=tag``, less this process's ancestors and zombies."""
    needle = f"{TAG_ENV}={tag}".encode()
    mine = ancestors(os.getpid())
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid in mine:
            continue
        environ = _read(entry / "environ")
        if environ is None or needle not in environ.split(b"\0"):
            continue
        stat = _stat(pid)
        if stat is None or stat[2] == "Z":
            continue
        cmdline = (_read(entry / "cmdline") or b"").replace(b"\0", b" ").decode(errors="replace").strip()
        command = _SECRET.sub(r"\1***", cmdline)
        found.append(Leftover(pid, stat[0], stat[1], command[:300]))
    return sorted(found, key=lambda p: p.pid)


def end(processes: list[Leftover], grace_s: float) -> list[Leftover]:
    """SIGTERM each, wait up to ``grace_s`` for them to go, SIGKILL what remains; returns those still alive."""
    for process in processes:
        _signal(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    alive = processes
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _alive(p.pid)]
    for process in alive:
        _signal(process.pid, signal.SIGKILL)
    time.sleep(0.2)
    return [p for p in alive if _alive(p.pid)]


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[2] != "Z"


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when nothing of the run is alive; 1 after naming and ending what was; 2 without a tag."""
    parser = argparse.ArgumentParser(prog="python -m harness.leftovers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default=os.environ.get(TAG_ENV), help=f"the run's tag (default: ${TAG_ENV})")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("--report-only", action="store_true", help="name them, end nothing")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if not args.tag:
        log.error("leftovers: no run tag (--tag, or $%s)", TAG_ENV)
        return 2
    found = tagged(args.tag)
    if not found:
        log.info("leftovers: nothing of run %s is still running", args.tag)
        return 0
    log.error("leftovers: %d process(es) of run %s outlived it:", len(found), args.tag)
    for process in found:
        log.error("  %s", process.describe())
    if not args.report_only:
        stubborn = end(found, args.grace)
        for process in stubborn:
            log.error("  could not end pid %d", process.pid)
    return 1


if __name__ == "__main__":
    sys.exit(main())
