"""The fault matrix reuses the conformance suite's table of expected failures."""

from __future__ import annotations

import pytest

from tests.conformance.cases import mark_expected_failures


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_expected_failures(items)
