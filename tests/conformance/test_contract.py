"""The conformance suite (tests/conformance/suite.py) against every implementation registered in cases.py."""

from __future__ import annotations

from .suite import ContractSuite


class TestContract(ContractSuite):
    """docs/contract.md against each case of the ``case`` fixture (tests/conformance/conftest.py)."""
