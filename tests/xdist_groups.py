"""Scheduling the JVM tests over two xdist workers by the server each needs (``pytest -n 2 --dist loadgroup``).

pytest-xdist's own ``loadgroup`` reads ``xdist_group`` markers by renaming each item's node id, which pytest 9 no
longer lets a plugin do (xdist 3.8 sets ``item._nodeid``; pytest 9.2 keeps the id in ``item._id``): the groups are
silently ignored and every test is scheduled alone, so each worker starts every server. This module schedules by the
same groups through xdist's public hooks instead. Each worker, as it collects, writes the group of every test (its
own ``xdist_group`` marker, else tests/conftest.py's ``server_group``) to a file in a folder the controller chose;
the controller's scheduler, a ``LoadScopeScheduling`` whose scope is that group (or the test itself when it has
none), reads them once every worker has collected. A group's tests then all run on one worker, which alone starts
that server.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

GROUPS_KEY = "checkpointfs_groups_dir"
"""The key of ``workerinput`` that names the folder where workers write their tests' groups."""


def write_groups(config: pytest.Config, groups: dict[str, str]) -> None:
    """On a worker: record the group of each collected test (node id -> group) for the controller's scheduler."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or GROUPS_KEY not in workerinput:
        return
    folder = Path(workerinput[GROUPS_KEY])
    target = folder / f"{workerinput['workerid']}.json"
    temp = folder / f".{workerinput['workerid']}.tmp"
    temp.write_text(json.dumps(groups))
    os.replace(temp, target)


def prepare(config: pytest.Config) -> None:
    """On the controller under ``--dist loadgroup`` (from ``pytest_configure``, before the workers start): the
    folder the workers write their groups to."""
    if getattr(config, "workerinput", None) is None and config.getoption("dist", "no") == "loadgroup":
        folder = tempfile.mkdtemp(prefix="checkpointfs-xdist-groups-")
        config._checkpointfs_groups_dir = folder  # type: ignore[attr-defined]
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """On the controller: tell each worker where to write its groups (only under ``--dist loadgroup``)."""
    folder = getattr(node.config, "_checkpointfs_groups_dir", None)
    if folder is not None:
        node.workerinput[GROUPS_KEY] = folder


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``: a scheduler that keeps each server's tests on one worker."""
    folder = getattr(config, "_checkpointfs_groups_dir", None)
    if config.getvalue("dist") != "loadgroup" or folder is None:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ServerGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """Scope = the server group a worker recorded for the test; a test without one is a scope of its own."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                merged: dict[str, str] = {}
                for path in sorted(Path(folder).glob("*.json")):
                    merged.update(json.loads(path.read_text()))
                self.groups = merged
            group = self.groups.get(nodeid)
            return f"group:{group}" if group else nodeid

    return ServerGroupScheduling(config, log)
