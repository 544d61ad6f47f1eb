"""The GCS tests reuse the conformance suite's table of expected failures (strict xfails: emulator gaps)."""

from __future__ import annotations

import pytest

from tests.conformance.cases import mark_expected_failures


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_expected_failures(items)
