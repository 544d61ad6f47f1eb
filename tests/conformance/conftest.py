"""Parametrizes the conformance suite over every registered implementation (see cases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cases import FACTORIES, Case, mark_expected_failures


@pytest.fixture(params=sorted(FACTORIES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    """One implementation under test, with a fresh root."""
    return FACTORIES[request.param](request, tmp_path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_expected_failures(items)
