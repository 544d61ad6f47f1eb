"""A pytest plugin for harness/outside_gate.py (``-p tests.suite.collect_marks``): at the end of collection it
writes every collected test's node id, markers and ``covered_by`` (the keyword of its ``extended`` or
``comparison`` marker) to the JSON file ``$CHECKPOINTFS_COLLECTED`` names."""

from __future__ import annotations

import json
import os

import pytest

COLLECTED_ENV = "CHECKPOINTFS_COLLECTED"


def pytest_collection_finish(session: pytest.Session) -> None:
    path = os.environ.get(COLLECTED_ENV)
    if not path:
        return
    items = []
    for item in session.items:
        markers = sorted({mark.name for mark in item.iter_markers()})
        covered_by = next((mark.kwargs["covered_by"] for mark in item.iter_markers()
                           if mark.name in ("extended", "comparison") and "covered_by" in mark.kwargs), None)
        items.append({"nodeid": item.nodeid, "markers": markers, "covered_by": covered_by})
    with open(path, "w") as out:
        json.dump(items, out)
