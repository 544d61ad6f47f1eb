"""Where a test run's time goes: each test's phases and each fixture's set-up, appended to one JSON-lines file.

With ``$CHECKPOINTFS_TIMINGS`` set (``harness/parts.sh`` sets it for ``make test`` and ``make test-all``), every
pytest session of the run, xdist workers and per-line venvs included, appends one record per test phase (``setup``,
``call``, ``teardown``: nodeid, markers, outcome, seconds) and one per fixture set-up that took at least
``MIN_FIXTURE_S`` (name, scope, seconds: a server start, a SparkSession, a cluster). Records are single lines
written with O_APPEND, so concurrent sessions do not interleave them. ``python -m harness.suite_times`` aggregates
them. Without the variable nothing is recorded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

import pytest

from harness.timings import TIMINGS_ENV, record

MIN_FIXTURE_S = 0.5
"""Fixture set-ups shorter than this are not recorded (they are counted in their test's set-up phase anyway)."""


def _line() -> str:
    """The Spark line of this session (per-line runs use their own pyspark), or "-" without pyspark."""
    try:
        import pyspark

        return ".".join(pyspark.__version__.split(".")[:2])
    except ImportError:
        return "-"


class TimingsRecorder:
    """The pytest plugin: registered by tests/conftest.py when ``$CHECKPOINTFS_TIMINGS`` is set."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.line = _line()
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")

    def _write(self, fields: dict[str, Any]) -> None:
        kind = fields.pop("kind")
        record(kind, **fields, line=self.line, worker=self.worker)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        markers = sorted(getattr(report, "checkpointfs_markers", ()))
        self._write({"kind": "test", "nodeid": report.nodeid, "phase": report.when, "outcome": report.outcome,
                     "seconds": round(report.duration, 3), "markers": markers})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        report.checkpointfs_markers = sorted({mark.name for mark in item.iter_markers()
                                              if mark.name not in ("parametrize", "usefixtures", "filterwarnings")})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any],
                             request: pytest.FixtureRequest) -> Generator[None, Any, None]:
        start = time.monotonic()
        yield
        seconds = time.monotonic() - start
        if seconds >= MIN_FIXTURE_S:
            self._write({"kind": "fixture", "fixture": fixturedef.argname, "scope": fixturedef.scope,
                         "seconds": round(seconds, 3), "nodeid": request.node.nodeid})


def register(config: pytest.Config) -> None:
    """Registers the recorder when ``$CHECKPOINTFS_TIMINGS`` names a file; on xdist's controller it records only
    what the workers report back (test phases), the workers record their own fixtures."""
    path = os.environ.get(TIMINGS_ENV)
    if not path or config.pluginmanager.has_plugin("checkpointfs-timings"):
        return
    worker = getattr(config, "workerinput", None) is not None
    controller = not worker and config.getoption("dist", "no") != "no"
    if controller:  # xdist's controller receives the workers' reports too: they are recorded once, in the workers
        return
    config.pluginmanager.register(TimingsRecorder(path), "checkpointfs-timings")
