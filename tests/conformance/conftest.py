"""Parametrizes the conformance suite over every registered implementation (see cases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cases import EXPECTED_FAILURES, FACTORIES, Case


@pytest.fixture(params=sorted(FACTORIES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    """One implementation under test, with a fresh root."""
    return FACTORIES[request.param](request, tmp_path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "case" not in callspec.params:
            continue
        name = getattr(item, "originalname", item.name)
        reason = EXPECTED_FAILURES.get((callspec.params["case"], name))
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
