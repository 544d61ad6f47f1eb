"""Parametrizes the conformance suite over every registered implementation (see cases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import EVERY_LINE
from .cases import (
    DIRECTORY_BUCKET_PROFILES,
    EMULATOR_IMPLEMENTATIONS,
    FACTORIES,
    JVM_IMPLEMENTATIONS,
    Case,
    mark_expected_failures,
)

PER_LINE_IMPLEMENTATION = "jvm-shim"
"""The implementation whose conformance cases `make lines` runs on every Spark line (on S3 Standard's rules: its
directory-bucket profiles, ``jvm-shim|directory-bucket...``, run on the main line, and on another line with
``make lines TEST_LINES=3.5 LINE_TESTS=tests/conformance LINE_MARKER="spark and directory_bucket"``)."""


@pytest.fixture(params=sorted(FACTORIES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    """One implementation under test, with a fresh root."""
    return FACTORIES[request.param](request, tmp_path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_expected_failures(items)
    here = Path(__file__).parent
    for item in items:
        callspec = getattr(item, "callspec", None)
        implementation = str(callspec.params.get("case", "")).split("|", 1)[0] if callspec is not None else ""
        # Per line, the shim's own cases; Spark's managers (comparisons) run on the main line only (`make unit`).
        if implementation in JVM_IMPLEMENTATIONS:
            item.add_marker(pytest.mark.spark)
        if callspec is not None and str(callspec.params.get("case", "")) in EMULATOR_IMPLEMENTATIONS:
            item.add_marker(pytest.mark.emulator)
        case_id = str(callspec.params.get("case", "")) if callspec is not None else ""
        if item.path.parent == here and case_id == PER_LINE_IMPLEMENTATION:
            item.add_marker(getattr(pytest.mark, EVERY_LINE))
        if case_id.endswith(DIRECTORY_BUCKET_PROFILES):
            item.add_marker(pytest.mark.directory_bucket)
