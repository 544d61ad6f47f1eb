"""The real stores' tests reuse the conformance suite's table of expected failures; fake-gcs-server and Google's
Cloud Storage connector for the ``gcs`` tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.servers.fake_gcs import FakeGcsServer, GcsConnector, ensure_connector_jar, running_connector
from tests.conformance.cases import mark_expected_failures


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_expected_failures(items)


from tests.spark.conftest import small_logs  # noqa: E402, F401 - the Spark tests' fixture, shared here
from tests.spark_e2e.conftest import minio_pipeline  # noqa: E402, F401 - MinIO behind a recording proxy


@pytest.fixture(scope="session")
def fake_gcs_server() -> Iterator[FakeGcsServer]:
    """One fake-gcs-server for the session (harness.servers.fake_gcs.FakeGcsServer): 127.0.0.1, a free port,
    plain HTTP, objects in memory, bucket ``checkpointfs-gcs``; ready once it answers a bucket listing; stopped by
    its pid at the end. The binary is built once with ``go install`` into ~/.cache/checkpointfs (``make backends``
    does it ahead)."""
    with FakeGcsServer(["checkpointfs-gcs"]) as server:
        yield server


@pytest.fixture(scope="session")
def gcs_connector() -> GcsConnector:
    """Google's Cloud Storage connector for Hadoop for the running Spark line's Hadoop (the pinned shaded jar),
    fetched once by Maven into ~/.cache/checkpointfs (``make backends`` does it ahead)."""
    connector = running_connector()
    ensure_connector_jar(connector)
    return connector
