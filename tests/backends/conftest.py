"""The real stores' tests reuse the conformance suite's table of expected failures."""

from __future__ import annotations

import pytest

from tests.conformance.cases import mark_expected_failures


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_expected_failures(items)


from tests.spark.conftest import small_logs  # noqa: E402, F401 - the Spark tests' fixture, shared here
from tests.spark_e2e.conftest import minio_pipeline  # noqa: E402, F401 - MinIO behind a recording proxy
